//! Tests of nested scopes: regions pass records through with their times, iterative scopes
//! nest a loop inside a loop, and a loop built wrong (feedback that does not advance, a loop
//! handle never connected) is reported rather than hanging.
//!
//! Helpers shared with the other `operators_*.rs` tests are in `operators_support`.

use crate::operators_support::*;
use timely_engine::dataflow::operators::{hash_of, Captured};
use timely_engine::Product;

// ---------------------------------------------------------------------------------------
// Scopes
// ---------------------------------------------------------------------------------------

#[test]
fn region_scopes_pass_records_through_with_their_times() {
    let input = sample(40);
    let got = unary_output(2, input.clone(), |s| {
        let scope = s.scope().clone();
        scope.region(|region| {
            assert_eq!(region.address().len(), scope.address().len() + 1);
            let inner = s.enter(region).map(|x| x + 1);
            let nested =
                region.region(|deeper| inner.enter(deeper).exchange(|x| *x).map(|x| x * 2).leave(region));
            nested.leave(&scope)
        })
    });
    assert_eq!(got, reference(&input, |t, x| [(t, (x + 1) * 2)]));
}

type Outer = Product<u64, u64>;
type Inner = Product<Outer, u64>;

/// For each input `n`, an outer loop runs `n` iterations; in outer iteration `i` an inner
/// loop adds 1 to an accumulator `n - i` times, so the result is `n (n + 1) / 2`. Captures
/// the results, and the times at which records finish each loop.
#[allow(clippy::type_complexity)]
fn nested_loops(
    workers: usize,
    input: Timed,
) -> (Vec<(u64, (u64, u64))>, Vec<(Outer, u64)>, Vec<(Inner, (u64, u64))>) {
    let outer_done = Captured::new();
    let inner_done = Captured::new();
    let (o, i) = (outer_done.clone(), inner_done.clone());
    let results = unary_output(workers, input, move |s| {
        let scope = s.scope().clone();
        scope.iterative::<u64, _>(|outer| {
            let (outer_loop, outer_cycle) = outer.feedback(Product::new(0, 1));
            // (n, remaining outer iterations, accumulator)
            let state = s.map(|n| (n, n, 0u64)).enter(outer).concat(&outer_cycle);
            let (busy, finished) = state.branch(|_t, &(_, k, _)| k == 0);
            let added = outer.iterative::<u64, _>(|inner| {
                let (inner_loop, inner_cycle) = inner.feedback(Product::new(Product::new(0, 0), 1));
                // (n, k, accumulator, countdown)
                let entered = busy.map(|(n, k, acc)| (n, k, acc, k)).enter(inner).concat(&inner_cycle);
                let (counting, done) = entered.branch(|_t, r| r.3 == 0);
                counting
                    .map(|(n, k, acc, c)| (n, k, acc + 1, c - 1))
                    .exchange(hash_of)
                    .connect_loop(inner_loop);
                done.map(|(n, k, _, _)| (n, k)).capture_into(&i);
                done.map(|(n, k, acc, _)| (n, k, acc)).leave(outer)
            });
            added.map(|(n, k, acc)| (n, k - 1, acc)).exchange(hash_of).connect_loop(outer_loop);
            finished.map(|(n, _, _)| n).capture_into(&o);
            finished.map(|(n, _, acc)| (n, acc)).leave(&scope)
        })
    });
    (results, outer_done.extract(), inner_done.extract())
}

#[test]
fn nested_iterative_scopes_run_a_loop_inside_a_loop() {
    let input: Timed = (0..7u64).map(|n| (n / 4, n)).collect();
    for workers in [1, 2, 4] {
        let (results, outer_done, inner_done) = nested_loops(workers, input.clone());
        assert_eq!(
            results,
            reference(&input, |t, n| [(t, (n, n * (n + 1) / 2))]),
            "results on {} workers",
            workers
        );
        let mut expected_outer: Vec<(Outer, u64)> =
            input.iter().map(|&(t, n)| (Product::new(t, n), n)).collect();
        expected_outer.sort();
        assert_eq!(outer_done, expected_outer, "a record leaves the outer loop at iteration n");
        let mut expected_inner: Vec<(Inner, (u64, u64))> = input
            .iter()
            .flat_map(|&(t, n)| (1..=n).map(move |k| (Product::new(Product::new(t, n - k), k), (n, k))))
            .collect();
        expected_inner.sort();
        assert_eq!(inner_done, expected_inner, "the inner loop runs k iterations in outer iteration n - k");
    }
}

// ---------------------------------------------------------------------------------------
// Error paths
// ---------------------------------------------------------------------------------------

#[test]
#[should_panic(expected = "does not advance")]
fn a_loop_whose_feedback_does_not_advance_is_rejected() {
    timely_engine::example(|worker| {
        worker.dataflow::<u64, _>(|scope| {
            let stream = scope.to_stream(0..3u64);
            scope.iterative::<u64, _>(|inner| {
                let (handle, cycle) = inner.feedback(Product::new(0, 0));
                stream.enter(inner).concat(&cycle).filter(|x| *x > 5).connect_loop(handle);
            });
        })
    });
}

#[test]
fn an_unconnected_loop_handle_makes_dataflow_panic_clearly() {
    let result = std::panic::catch_unwind(|| {
        timely_engine::example(|worker| {
            worker.dataflow::<u64, _>(|scope| {
                scope.iterative::<u64, _>(|inner| {
                    let (_handle, cycle) = inner.feedback::<u64>(Product::new(0, 1));
                    cycle.leave(scope);
                });
            })
        })
    });
    let payload = result.expect_err("building a loop without connect_loop must fail");
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(
        message.contains("Feedback") && message.contains("connect_loop"),
        "unclear message: {:?}",
        message
    );
}
