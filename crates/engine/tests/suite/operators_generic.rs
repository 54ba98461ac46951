//! Tests of the generic operators, whose logic the user writes: `source`, `sink`, `unary`,
//! `unary_frontier`, `unary_notify`, `binary`, `binary_frontier` and `binary_notify` (their
//! capabilities, frontiers, notifications and state).
//!
//! Helpers shared with the other `operators_*.rs` tests are in `operators_support`.

use crate::operators_support::*;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use timely_engine::dataflow::operators::{Capability, Captured};
use timely_engine::dataflow::{Exchange, InputHandle, Pipeline};

// ---------------------------------------------------------------------------------------
// Generic operators
// ---------------------------------------------------------------------------------------

#[test]
fn source_downgrades_its_capability_and_reactivates_itself() {
    for workers in [1, 2] {
        let captured: Captured<u64, u64> = Captured::new();
        let shared = captured.clone();
        run(workers, move |worker| {
            worker.dataflow(|scope| {
                scope
                    .source("Countdown", |capability, info| {
                        let mut capability = Some(capability);
                        move |output| {
                            if let Some(cap) = capability.as_mut() {
                                let t = *cap.time();
                                output.session(cap).give(t * 10);
                                if t == 4 {
                                    capability = None;
                                } else {
                                    cap.downgrade(&(t + 1));
                                    info.activator.activate();
                                }
                            }
                        }
                    })
                    .capture_into(&shared)
            })
        });
        let expected: Vec<(u64, u64)> = (0..5).flat_map(|t| vec![(t, t * 10); workers]).collect();
        assert_eq!(captured.extract(), expected, "source on {} workers", workers);
    }
}

#[test]
fn sink_sees_every_record_and_the_final_empty_frontier() {
    let input = sample(35);
    let count = Rc::new(RefCell::new(0usize));
    let frontiers = Rc::new(RefCell::new(Vec::new()));
    let (c, f) = (count.clone(), frontiers.clone());
    let records = input.clone();
    timely_engine::example(move |worker| {
        let mut handle = InputHandle::new();
        worker.dataflow(|scope| {
            scope.input_from(&mut handle).sink(Pipeline, "Count", move |input, frontier| {
                input.for_each(|_time, data| *c.borrow_mut() += data.len());
                f.borrow_mut().push(frontier.frontier().to_vec());
            })
        });
        feed(&mut handle, &records, 0, 1);
    });
    assert_eq!(*count.borrow(), input.len());
    let frontiers = frontiers.borrow();
    assert_eq!(frontiers.last(), Some(&vec![]), "the sink saw its input complete: {:?}", frontiers);
    assert!(
        frontiers.windows(2).all(|w| w[0] <= w[1] || w[1].is_empty()),
        "frontiers only advance: {:?}",
        frontiers
    );
}

#[test]
fn unary_uses_its_initial_capability_and_keeps_state() {
    let input = sample(30);
    let got = unary_output(1, input.clone(), |s| {
        s.unary(Pipeline, "Number", |capability, _info| {
            let mut initial = Some(capability);
            let mut next = 0u64;
            move |input, output| {
                if let Some(cap) = initial.take() {
                    output.session(&cap).give((u64::MAX, 0));
                }
                input.for_each(|time, data| {
                    let mut session = output.session(&time);
                    for x in data.drain(..) {
                        next += 1;
                        session.give((next, x));
                    }
                });
            }
        })
    });
    let mut expected: Vec<(u64, (u64, u64))> =
        input.iter().zip(1..).map(|(&(t, x), n)| (t, (n, x))).collect();
    expected.insert(0, (0, (u64::MAX, 0)));
    expected.sort();
    assert_eq!(got, expected);
}

#[test]
fn unary_frontier_emits_each_time_once_complete_and_never_sees_it_again() {
    let input = sample(70);
    for workers in [1, 2] {
        let got = unary_output(workers, input.clone(), |s| {
            s.unary_frontier(Exchange::new(|_x: &u64| 0), "SortPerTime", |_capability, _info| {
                let mut stash: BTreeMap<u64, (Capability<u64>, Vec<u64>)> = BTreeMap::new();
                let mut emitted: Vec<u64> = Vec::new();
                move |input, frontier, output| {
                    input.for_each(|time, data| {
                        assert!(
                            !emitted.contains(time.time()),
                            "records at time {} after it was complete",
                            time.time()
                        );
                        stash
                            .entry(*time.time())
                            .or_insert_with(|| (time.retain(), Vec::new()))
                            .1
                            .append(data);
                    });
                    while let Some(entry) = stash.first_entry() {
                        if frontier.less_equal(entry.key()) {
                            break;
                        }
                        let (capability, mut records) = entry.remove();
                        records.sort();
                        emitted.push(*capability.time());
                        output.session(&capability).give(records);
                    }
                }
            })
        });
        let mut expected: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for &(t, x) in &input {
            expected.entry(t).or_default().push(x);
        }
        let expected: Vec<(u64, Vec<u64>)> = expected
            .into_iter()
            .map(|(t, mut v)| {
                (t, {
                    v.sort();
                    v
                })
            })
            .collect();
        assert_eq!(got, expected, "one sorted batch per time on {} workers", workers);
    }
}

#[test]
fn unary_notify_delivers_in_time_order_after_the_frontier_with_merged_counts() {
    // (time, merged requests, frontier had passed the time)
    let delivered = Rc::new(RefCell::new(Vec::new()));
    let (log, observed) = (delivered.clone(), delivered.clone());
    timely_engine::example(move |worker| {
        let delivered = observed;
        let mut input = InputHandle::new();
        let probe = worker.dataflow(|scope| {
            scope
                .input_from(&mut input)
                .unary_notify(Pipeline, "Notify", move |input, output, notificator| {
                    input.for_each(|time, data| {
                        notificator.notify_at(time.retain());
                        for x in data.drain(..) {
                            notificator.notify_at(time.delayed(&x));
                        }
                    });
                    notificator.for_each(|capability, count, notificator| {
                        let passed = !notificator.frontier(0).less_equal(capability.time());
                        log.borrow_mut().push((*capability.time(), count, passed));
                        output.session(&capability).give(count);
                    });
                })
                .probe()
        });
        input.send_batch(&mut vec![5u64, 2, 9, 2]);
        step_a_while(worker);
        assert!(delivered.borrow().is_empty(), "nothing is complete yet");
        input.advance_to(1);
        input.send_batch(&mut vec![2u64, 7]);
        step_until(worker, || !probe.less_than(&1));
        assert_eq!(*delivered.borrow(), vec![(0, 1, true)]);
        input.advance_to(3);
        step_until(worker, || !probe.less_than(&3));
        assert_eq!(*delivered.borrow(), vec![(0, 1, true), (1, 1, true), (2, 3, true)]);
        input.close();
    });
    let expected = vec![(0, 1, true), (1, 1, true), (2, 3, true), (5, 1, true), (7, 1, true), (9, 1, true)];
    assert_eq!(*delivered.borrow(), expected);
}

#[test]
fn binary_merges_two_inputs() {
    let (left, right) = (sample(30), sample(20));
    let got = dataflow_output(2, vec![left.clone(), right.clone()], |s| {
        s[0].binary(&s[1], Pipeline, Pipeline, "Tag", |_capability, _info| {
            |input1, input2, output| {
                input1.for_each(|time, data| {
                    output.session(&time).give_iterator(data.drain(..).map(|x| (0u64, x)))
                });
                input2.for_each(|time, data| {
                    output.session(&time).give_iterator(data.drain(..).map(|x| (1u64, x)))
                });
            }
        })
    });
    let mut expected = reference(&left, |t, x| [(t, (0, x))]);
    expected.extend(reference(&right, |t, x| [(t, (1, x))]));
    expected.sort();
    assert_eq!(got, expected);
}

/// Pairs of left and right records with equal keys at equal times, sorted.
fn join_reference(
    left: &[(u64, u64)],
    right: &[(u64, u64)],
    key: impl Fn(u64) -> u64,
) -> Vec<(u64, (u64, u64))> {
    let key = &key;
    let mut out: Vec<_> = left
        .iter()
        .flat_map(|&(t1, x)| {
            right
                .iter()
                .filter(move |&&(t2, y)| t1 == t2 && key(x) == key(y))
                .map(move |&(_, y)| (t1, (x, y)))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn binary_frontier_joins_per_time_once_both_inputs_are_complete() {
    let (left, right) = (sample(40), sample(30).into_iter().map(|(t, x)| (t, x + 1)).collect::<Vec<_>>());
    for workers in [1, 3] {
        let got = dataflow_output(workers, vec![left.clone(), right.clone()], |s| {
            let key = |x: &u64| x % 4;
            s[0].binary_frontier(
                &s[1],
                Exchange::new(key),
                Exchange::new(key),
                "Join",
                |_capability, _info| {
                    // Per time: a capability, the left records, the right records.
                    type Sides = (Capability<u64>, Vec<u64>, Vec<u64>);
                    let mut stash: BTreeMap<u64, Sides> = BTreeMap::new();
                    move |input1, frontier1, input2, frontier2, output| {
                        input1.for_each(|time, data| {
                            stash
                                .entry(*time.time())
                                .or_insert_with(|| (time.retain(), vec![], vec![]))
                                .1
                                .append(data)
                        });
                        input2.for_each(|time, data| {
                            stash
                                .entry(*time.time())
                                .or_insert_with(|| (time.retain(), vec![], vec![]))
                                .2
                                .append(data)
                        });
                        let complete: Vec<u64> = stash
                            .keys()
                            .copied()
                            .filter(|t| !frontier1.less_equal(t) && !frontier2.less_equal(t))
                            .collect();
                        for t in complete {
                            let (capability, xs, ys) = stash.remove(&t).expect("stashed");
                            let mut session = output.session(&capability);
                            for &x in &xs {
                                session
                                    .give_iterator(ys.iter().filter(|&&y| x % 4 == y % 4).map(|&y| (x, y)));
                            }
                        }
                    }
                },
            )
        });
        assert_eq!(got, join_reference(&left, &right, |x| x % 4), "join on {} workers", workers);
    }
}

#[test]
fn binary_notify_counts_both_inputs_per_time() {
    let (left, right) = (sample(45), sample(23));
    for workers in [1, 2] {
        let got = dataflow_output(workers, vec![left.clone(), right.clone()], |s| {
            let mut counts: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
            s[0].binary_notify(
                &s[1],
                Exchange::new(|_: &u64| 0),
                Exchange::new(|_: &u64| 0),
                "Counts",
                move |in1, in2, output, n| {
                    in1.for_each(|time, data| {
                        counts.entry(*time.time()).or_default().0 += data.len() as u64;
                        n.notify_at(time.retain());
                    });
                    in2.for_each(|time, data| {
                        counts.entry(*time.time()).or_default().1 += data.len() as u64;
                        n.notify_at(time.retain());
                    });
                    n.for_each(|capability, _count, n| {
                        assert!(
                            !n.frontier(0).less_equal(capability.time())
                                && !n.frontier(1).less_equal(capability.time())
                        );
                        let c = counts.remove(capability.time()).expect("counted");
                        output.session(&capability).give(c);
                    });
                },
            )
        });
        let mut expected: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        left.iter().for_each(|&(t, _)| expected.entry(t).or_default().0 += 1);
        right.iter().for_each(|&(t, _)| expected.entry(t).or_default().1 += 1);
        assert_eq!(got, expected.into_iter().collect::<Vec<_>>(), "binary_notify on {} workers", workers);
    }
}
