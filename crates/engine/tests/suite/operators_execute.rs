//! Tests of `timely_engine::execute`: results come back in worker order and equal a
//! sequential reference on 1, 2 and 4 workers, and a panicking worker makes `execute` return
//! its error instead of hanging the others.
//!
//! Helpers shared with the other `operators_*.rs` tests are in `operators_support`.

use crate::operators_support::*;
use std::sync::mpsc;
use std::time::Duration;
use timely_engine::dataflow::{InputHandle, Scope};
use timely_engine::{Config, ExecuteError};

#[test]
fn execute_results_equal_a_sequential_reference_on_1_2_4_workers() {
    let indices = run(4, |worker| (worker.index(), worker.peers()));
    assert_eq!(indices, vec![(0, 4), (1, 4), (2, 4), (3, 4)], "results come back in worker order");
    let input = sample(200);
    let expected = grouped(&input, |x| x % 7, |x| x * x);
    for workers in [1, 2, 4] {
        let got = unary_output(workers, input.clone(), |s| {
            s.flat_map(|x| [x, x])
                .exchange(|x| *x)
                .filter(|x| x % 11 != 100)
                .map(|x| (x % 7, x))
                .aggregate(|_key, x, sum: &mut u64| *sum += x * x, |key, sum| (key, sum / 2))
                .delay(|_, t| *t)
        });
        assert_eq!(got, expected, "{} workers", workers);
    }
    assert_eq!(timely_engine::execute(Config::Thread, |w| w.peers()).expect("execute"), vec![1]);
}

// ---------------------------------------------------------------------------------------
// Error paths
// ---------------------------------------------------------------------------------------

#[test]
fn a_panicking_worker_makes_execute_return_an_error() {
    let result = timely_engine::execute(Config::Thread, |_worker| -> () { panic!("boom in the worker") });
    match result {
        Err(ExecuteError::Worker(message)) => assert!(message.contains("boom in the worker"), "{}", message),
        other => panic!("expected a worker error, got {:?}", other),
    }
}

// Two workers, an exchange and a probe; worker 1 panics after sending while worker 0
// waits for its probe: `execute` must return worker 1's panic within seconds.
#[test]
fn a_panicking_worker_does_not_hang_the_others() {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let result = timely_engine::execute(Config::Process(2), |worker| {
            let mut input = InputHandle::new();
            let probe = worker
                .dataflow(|scope: &Scope<u64>| scope.input_from(&mut input).exchange(|x: &u64| *x).probe());
            input.send(worker.index() as u64);
            input.advance_to(1);
            if worker.index() == 1 {
                panic!("worker one fails mid-run");
            }
            worker.step_while(|| probe.less_than(input.time()));
        });
        let _ = sender.send(result);
    });
    match receiver.recv_timeout(Duration::from_secs(5)) {
        Ok(Err(ExecuteError::Worker(message))) => {
            assert!(message.contains("worker one fails mid-run"), "{}", message)
        }
        Ok(other) => panic!("expected a worker error, got {:?}", other),
        Err(_) => panic!("execute hung for 5 s after worker 1 panicked (the other worker never stops)"),
    }
}
