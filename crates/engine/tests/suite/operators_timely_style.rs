//! Tests of the operators and conveniences a program written for timely reaches for:
//! `map_in_place`, `branch_when`, `unary_notify_from`/`binary_notify_from` (notifications
//! requested before any record arrives), `Capability` as a map key equal to its time,
//! signed integer timestamps, and `iterator.to_stream(&scope)`.

use crate::operators_support::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use timely_engine::dataflow::operators::{Capability, Captured, ToStream};
use timely_engine::dataflow::{Exchange, Pipeline};

#[test]
fn map_in_place_changes_every_record_and_keeps_its_time() {
    let records = sample(200);
    for workers in [1, 2] {
        let got = unary_output(workers, records.clone(), |s| s.map_in_place(|x| *x = *x * 3 + 1));
        assert_eq!(got, reference(&records, |t, x| [(t, x * 3 + 1)]), "{} workers", workers);
    }
}

#[test]
fn branch_when_splits_whole_batches_by_time() {
    let records = sample(300);
    for workers in [1, 2] {
        let got = unary_output(workers, records.clone(), |s| {
            let (early, late) = s.branch_when(|time| *time >= 12);
            early.map(|x| (0u8, x)).concat(&late.map(|x| (1u8, x)))
        });
        let expected = reference(&records, |t, x| [(t, (u8::from(t >= 12), x))]);
        assert_eq!(got, expected, "{} workers", workers);
    }
}

#[test]
fn unary_notify_from_delivers_the_initial_notifications_in_a_loop_without_records() {
    // The barrier: notified at 0, then at each next time, with nothing but progress moving.
    for workers in [1, 2] {
        let seen = run(workers, |worker| {
            let seen = Rc::new(RefCell::new(Vec::new()));
            let out = seen.clone();
            worker.dataflow::<usize, _>(|scope| {
                let (handle, stream) = scope.feedback::<()>(1);
                stream
                    .unary_notify_from(
                        Pipeline,
                        "Barrier",
                        [0, 2],
                        move |_input, _output: &mut _, notificator| {
                            while let Some((capability, count)) = notificator.next() {
                                out.borrow_mut().push((*capability.time(), count));
                                if *capability.time() < 5 {
                                    notificator.notify_at(capability.delayed(&(capability.time() + 1)));
                                }
                            }
                        },
                    )
                    .connect_loop(handle);
            });
            while worker.step_or_park(None) {}
            seen.take()
        });
        // Time 2 was asked for twice: at start and from time 1's notification.
        let expected = vec![(0, 1), (1, 1), (2, 2), (3, 1), (4, 1), (5, 1)];
        assert!(seen.iter().all(|s| *s == expected), "{} workers: {:?}", workers, seen);
    }
}

#[test]
fn binary_notify_from_counts_records_of_both_inputs_from_an_initial_notification() {
    let left = sample(100);
    let right: Timed = sample(60).into_iter().map(|(t, x)| (t + 2, x)).collect();
    for workers in [1, 2] {
        let got = dataflow_output(workers, vec![left.clone(), right.clone()], |s| {
            let mut counts: HashMap<u64, u64> = HashMap::new();
            s[0].binary_notify_from(
                &s[1],
                Exchange::new(|x| *x),
                Exchange::new(|x| *x),
                "Count",
                [0],
                move |a, b, output, notificator| {
                    a.for_each(|time, data| {
                        *counts.entry(*time.time()).or_default() += data.drain(..).count() as u64
                    });
                    b.for_each(|time, data| {
                        *counts.entry(*time.time()).or_default() += data.drain(..).count() as u64
                    });
                    notificator.for_each(|capability, _, notificator| {
                        output.session(&capability).give(counts.remove(capability.time()).unwrap_or(0));
                        if *capability.time() < 11 {
                            notificator.notify_at(capability.delayed(&(capability.time() + 1)));
                        }
                    });
                },
            )
        });
        // Every worker is notified at each time 0..=11 and sends its own count.
        let mut totals = HashMap::new();
        for (time, count) in &got {
            *totals.entry(*time).or_insert(0) += count;
        }
        let mut expected: HashMap<u64, u64> = (0..12).map(|t| (t, 0)).collect();
        for (time, _) in left.iter().chain(&right) {
            *expected.get_mut(time).unwrap() += 1;
        }
        assert_eq!(totals, expected, "{} workers", workers);
        assert_eq!(got.len(), 12 * workers, "one count per time per worker");
    }
}

#[test]
// A capability hashes by its time, which never changes: its shared change batch does not
// take part in the key.
#[allow(clippy::mutable_key_type)]
fn a_capability_keys_a_map_and_equals_its_time() {
    let records = sample(200);
    for workers in [1, 2] {
        let got = unary_output(workers, records.clone(), |s| {
            s.unary_frontier(Pipeline, "Stash", |_capability, _info| {
                let mut stash: HashMap<Capability<u64>, Vec<u64>> = HashMap::new();
                move |input, frontier, output| {
                    input.for_each(|time, data| stash.entry(time.retain()).or_default().append(data));
                    for (time, records) in
                        stash.iter_mut().filter(|(time, _)| !frontier.less_equal(time.time()))
                    {
                        assert!(*time == *time.time(), "a capability equals its time");
                        output.session(time).give_vec(records);
                    }
                    stash.retain(|_, records| !records.is_empty());
                    assert!(stash.len() <= 20, "one entry per pending time");
                }
            })
        });
        assert_eq!(got, reference(&records, |t, x| [(t, x)]), "{} workers", workers);
    }
}

#[test]
fn signed_timestamps_start_at_the_minimum_and_advance_through_negative_times() {
    let captured: Captured<i64, i64> = Captured::new();
    let shared = captured.clone();
    run(2, move |worker| {
        let (index, peers) = (worker.index() as i64, worker.peers() as i64);
        let (mut input, probe) = worker.dataflow::<i64, _>(|scope| {
            let (input, stream) = scope.new_input::<i64>();
            let stream = stream.exchange(|x| x.unsigned_abs());
            stream.capture_into(&shared);
            (input, stream.probe())
        });
        for time in -5i64..5 {
            input.advance_to(time);
            if time.rem_euclid(peers) == index {
                input.send(time * 10);
            }
            step_until(worker, || !probe.less_than(&time));
        }
    });
    let expected: Vec<(i64, i64)> = (-5i64..5).map(|t| (t, t * 10)).collect();
    assert_eq!(captured.extract(), expected);
}

#[test]
fn an_iterator_becomes_a_stream_of_its_items() {
    for workers in [1, 2] {
        let captured: Captured<u64, u32> = Captured::new();
        let shared = captured.clone();
        run(workers, move |worker| {
            let (index, peers) = (worker.index(), worker.peers());
            worker.dataflow::<u64, _>(|scope| {
                (0..1000u32)
                    .filter(move |x| *x as usize % peers == index)
                    .to_stream(scope)
                    .capture_into(&shared);
            });
        });
        let expected: Vec<(u64, u32)> = (0..1000).map(|x| (0, x)).collect();
        assert_eq!(captured.extract(), expected, "{} workers", workers);
    }
}
