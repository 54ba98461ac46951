//! Tests of the built-in operators on streams, each against a sequential reference:
//! record-at-a-time operators (`map`, `flat_map`, `filter`, the `inspect` variants,
//! `exchange`, `broadcast`, `concat`/`concatenate`, `partition`, `branch`, `delay`) and
//! aggregation (`aggregate`, `count_by_key`), capture and `to_stream`.
//!
//! Helpers shared with the other `operators_*.rs` tests are in `operators_support`.

use crate::operators_support::*;
use std::cell::RefCell;
use std::rc::Rc;
use timely_engine::dataflow::operators::{hash_of, Captured};
use timely_engine::dataflow::{InputHandle, Scope};

// ---------------------------------------------------------------------------------------
// Record-at-a-time operators
// ---------------------------------------------------------------------------------------

#[test]
fn map_flat_map_filter_match_reference_on_1_2_4_workers() {
    let input = sample(60);
    for workers in [1, 2, 4] {
        let got = unary_output(workers, input.clone(), |s| s.map(|x| x * 3 + 1));
        assert_eq!(got, reference(&input, |t, x| [(t, x * 3 + 1)]), "map on {} workers", workers);
        let got = unary_output(workers, input.clone(), |s| s.flat_map(|x| 0..x % 4));
        assert_eq!(
            got,
            reference(&input, |t, x| (0..x % 4).map(move |y| (t, y))),
            "flat_map on {} workers",
            workers
        );
        let got = unary_output(workers, input.clone(), |s| s.filter(|x| x % 3 == 0));
        assert_eq!(
            got,
            reference(&input, |t, x| (x % 3 == 0).then_some((t, x))),
            "filter on {} workers",
            workers
        );
    }
}

#[test]
fn inspect_variants_see_every_record_with_its_time() {
    let input = sample(45);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let seen_timed = Rc::new(RefCell::new(Vec::new()));
    let batches = Rc::new(RefCell::new(Vec::new()));
    let (a, b, c) = (seen.clone(), seen_timed.clone(), batches.clone());
    let records = input.clone();
    let passed = timely_engine::example(move |worker| {
        let mut handle = InputHandle::new();
        let captured = worker.dataflow(|scope| {
            scope
                .input_from(&mut handle)
                .inspect(move |x| a.borrow_mut().push(*x))
                .inspect_time(move |t, x| b.borrow_mut().push((*t, *x)))
                .inspect_batch(move |t, data| c.borrow_mut().push((*t, data.to_vec())))
                .capture()
        });
        feed(&mut handle, &records, 0, 1);
        captured
    });
    assert_eq!(passed.extract(), reference(&input, |t, x| [(t, x)]), "inspect passes records on");
    assert_eq!(*seen.borrow(), input.iter().map(|&(_, x)| x).collect::<Vec<_>>());
    assert_eq!(*seen_timed.borrow(), input);
    let batches = batches.borrow();
    assert!(batches.iter().all(|(_, data)| !data.is_empty()), "no empty batches");
    let flattened: Vec<(u64, u64)> =
        batches.iter().flat_map(|(t, data)| data.iter().map(move |x| (*t, *x))).collect();
    assert_eq!(flattened, input, "batches carry the records with their times");
}

#[test]
fn exchange_routes_each_record_to_hash_mod_peers() {
    let input = sample(80);
    for workers in [1, 2, 4] {
        let got = unary_output(workers, input.clone(), |s| {
            let index = s.scope().index() as u64;
            s.exchange(hash_of).map(move |x| (index, x))
        });
        assert_eq!(got.len(), input.len(), "every record arrives once on {} workers", workers);
        for (time, (worker, x)) in &got {
            assert_eq!(
                *worker,
                hash_of(x) % workers as u64,
                "record {} at time {} on worker {} of {}",
                x,
                time,
                worker,
                workers
            );
        }
        let mut records: Vec<(u64, u64)> = got.iter().map(|&(t, (_, x))| (t, x)).collect();
        records.sort();
        assert_eq!(records, reference(&input, |t, x| [(t, x)]));
    }
}

#[test]
fn broadcast_delivers_every_record_to_every_worker() {
    let input = sample(25);
    for workers in [1, 3] {
        let got = unary_output(workers, input.clone(), |s| {
            let index = s.scope().index() as u64;
            s.broadcast().map(move |x| (x, index))
        });
        let expected = reference(&input, |t, x| (0..workers as u64).map(move |w| (t, (x, w))));
        assert_eq!(got, expected, "broadcast on {} workers", workers);
    }
}

#[test]
fn concat_and_concatenate_merge_streams() {
    let input = sample(30);
    let got = unary_output(2, input.clone(), |s| s.concat(&s.map(|x| x + 100)));
    assert_eq!(got, reference(&input, |t, x| [(t, x), (t, x + 100)]));
    let got = unary_output(2, input.clone(), |s| {
        s.scope().concatenate(vec![s.clone(), s.map(|x| x + 100), s.filter(|x| x % 2 == 0).map(|x| x + 1000)])
    });
    let expected = reference(&input, |t, x| {
        let mut out = vec![(t, x), (t, x + 100)];
        out.extend((x % 2 == 0).then_some((t, x + 1000)));
        out
    });
    assert_eq!(got, expected);
}

#[test]
fn partition_routes_records_to_their_parts() {
    let input = sample(40);
    let got = unary_output(2, input.clone(), |s| {
        let parts = s.partition(3, |x| (x % 3, x * 2));
        assert_eq!(parts.len(), 3);
        let tagged: Vec<_> = parts.iter().enumerate().map(|(i, p)| p.map(move |y| (i as u64, y))).collect();
        s.scope().concatenate(tagged)
    });
    assert_eq!(got, reference(&input, |t, x| [(t, (x % 3, x * 2))]));
}

#[test]
fn branch_splits_by_a_predicate_of_time_and_record() {
    let input = sample(40);
    let got = unary_output(2, input.clone(), |s| {
        let (no, yes) = s.branch(|t, x| (t + x) % 2 == 0);
        no.map(|x| (false, x)).concat(&yes.map(|x| (true, x)))
    });
    assert_eq!(got, reference(&input, |t, x| [(t, ((t + x) % 2 == 0, x))]));
}

#[test]
fn delay_moves_records_to_their_new_times() {
    let input = sample(50);
    let later = |t: u64, x: u64| (t / 2 + 1) * 2 + x % 3;
    let got = unary_output(2, input.clone(), move |s| s.delay(move |x, t| later(*t, *x)));
    assert_eq!(got, reference(&input, |t, x| [(later(t, x), x)]));
}

#[test]
fn delay_releases_records_only_once_their_new_time_is_complete() {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let log = seen.clone();
    timely_engine::example(move |worker| {
        let mut input = InputHandle::new();
        let probe = worker.dataflow(|scope| {
            scope
                .input_from(&mut input)
                .delay(|x, t| t + x)
                .inspect_time(move |t, x| log.borrow_mut().push((*t, *x)))
                .probe()
        });
        input.send_batch(&mut vec![3u64, 0]);
        step_a_while(worker);
        assert!(seen.borrow().is_empty(), "time 0 is not complete yet: {:?}", seen.borrow());
        input.advance_to(1);
        step_until(worker, || !probe.less_than(&1));
        assert_eq!(*seen.borrow(), vec![(0, 0)]);
        input.advance_to(3);
        step_a_while(worker);
        assert_eq!(*seen.borrow(), vec![(0, 0)], "time 3 is not complete yet");
        input.advance_to(4);
        step_until(worker, || !probe.less_than(&4));
        assert_eq!(*seen.borrow(), vec![(0, 0), (3, 3)]);
    });
}

// ---------------------------------------------------------------------------------------
// Aggregation, capture, to_stream
// ---------------------------------------------------------------------------------------

#[test]
fn aggregate_and_count_by_key_match_reference_on_1_2_4_workers() {
    let input = sample(120);
    for workers in [1, 2, 4] {
        let got = unary_output(workers, input.clone(), |s| {
            s.map(|x| (x % 5, x)).aggregate(|_key, x, sum: &mut u64| *sum += x, |key, sum| (key, sum))
        });
        assert_eq!(got, grouped(&input, |x| x % 5, |x| x), "aggregate on {} workers", workers);
        let got = unary_output(workers, input.clone(), |s| s.map(|x| x % 4).count_by_key());
        assert_eq!(got, grouped(&input, |x| x % 4, |_| 1), "count_by_key on {} workers", workers);
    }
}

#[test]
fn to_stream_produces_every_item_on_every_worker_at_time_zero() {
    let captured: Captured<u64, u64> = Captured::new();
    let shared = captured.clone();
    run(3, move |worker| worker.dataflow(|scope| scope.to_stream(0..4u64).capture_into(&shared)));
    let expected: Vec<(u64, u64)> = (0..4).flat_map(|x| [(0, x); 3]).collect();
    assert_eq!(captured.extract(), expected);

    // More items than one activation sends: the source re-activates itself until done.
    let big = timely_engine::example(|worker| {
        worker.dataflow(|scope: &Scope<u64>| scope.to_stream(0..50_000u64).capture())
    });
    let records = big.extract();
    assert_eq!(records.len(), 50_000);
    assert!(records.iter().all(|&(t, _)| t == 0));
    assert_eq!(records.iter().map(|&(_, x)| x).sum::<u64>(), 50_000 * 49_999 / 2);
}
