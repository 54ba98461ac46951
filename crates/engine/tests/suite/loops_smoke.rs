use timely_engine::dataflow::operators::Captured;
use timely_engine::dataflow::InputHandle;
use timely_engine::{Config, Product};

#[test]
fn collatz_steps_in_an_iterative_scope() {
    for workers in [1usize, 2] {
        let captured: Captured<u64, (u64, u64)> = Captured::new();
        let shared = captured.clone();
        timely_engine::execute(Config::Process(workers), move |worker| {
            let mut input = InputHandle::new();
            worker.dataflow::<u64, _>(|scope| {
                let start = scope.input_from(&mut input).map(|x: u64| (x, x, 0u64));
                let done = scope.iterative::<u64, _>(|inner| {
                    let (handle, cycle) = inner.feedback(Product::new(0, 1));
                    let entered = start.enter(inner).concat(&cycle);
                    let (more, finished) = entered.branch(|_t, &(_, x, _)| x == 1);
                    more.map(|(s, x, n)| (s, if x % 2 == 0 { x / 2 } else { 3 * x + 1 }, n + 1))
                        .exchange(|&(_, x, _)| x)
                        .connect_loop(handle);
                    finished.leave(scope)
                });
                done.map(|(s, _, n)| (s, n)).capture_into(&shared);
            });
            if worker.index() == 0 {
                for x in 1..=10u64 {
                    input.send(x);
                }
            }
        })
        .unwrap();
        let steps: Vec<_> = captured.extract().into_iter().map(|(_, r)| r).collect();
        assert_eq!(
            steps,
            vec![(1, 0), (2, 1), (3, 7), (4, 2), (5, 5), (6, 8), (7, 16), (8, 3), (9, 19), (10, 6)],
            "workers {}",
            workers
        );
    }
}
