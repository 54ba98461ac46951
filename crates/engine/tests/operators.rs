//! Integration tests of every operator and handle, through the public API only.
//!
//! Most tests build a dataflow around one or two inputs fed with `(time, record)` pairs
//! (`dataflow_output`), capture what reaches the end on every worker, and compare it with
//! a sequential reference computed in the test. Tests that must watch the engine step by
//! step (probes, capabilities, notifications, input handles) drive one worker in this
//! thread with `timely_engine::example`. The error paths at the end check that misuse is
//! reported rather than hanging.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::Duration;
use timely_engine::dataflow::operators::{
    hash_of, Capability, CapabilityError, CapabilitySet, Captured, InputError,
};
use timely_engine::dataflow::{Exchange, ExchangeData, InputHandle, Pipeline, ProbeHandle, Scope, Stream};
use timely_engine::scheduling::Activator;
use timely_engine::{Config, ExecuteError, Product, Timestamp, Worker};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// `(time, record)` pairs in time order.
type Timed = Vec<(u64, u64)>;

fn config(workers: usize) -> Config {
    if workers == 1 {
        Config::Thread
    } else {
        Config::Process(workers)
    }
}

/// Runs `func` on `workers` workers; fails the test if a worker fails.
fn run<R: Send + 'static>(workers: usize, func: impl Fn(&mut Worker) -> R + Send + Sync + 'static) -> Vec<R> {
    timely_engine::execute(config(workers), func).expect("execute failed")
}

/// `count` records over times 0, 1, 2, ... (ten per time), with repeated values.
fn sample(count: u64) -> Timed {
    (0..count).map(|i| (i / 10, (i * 37 + 11) % 53)).collect()
}

/// Feeds `records` into `input` and closes it: every worker advances through the same
/// times, worker `index` sends every `peers`-th record.
fn feed(input: &mut InputHandle<u64, u64>, records: &[(u64, u64)], index: usize, peers: usize) {
    for (i, &(time, record)) in records.iter().enumerate() {
        if time > *input.time() {
            input.advance_to(time);
        }
        if i % peers == index {
            input.send(record);
        }
    }
    input.close();
}

/// Builds `build` over one input per element of `inputs` on `workers` workers, feeds the
/// inputs, and returns the `(time, record)`s that reach the stream `build` returns.
fn dataflow_output<D, F>(workers: usize, inputs: Vec<Timed>, build: F) -> Vec<(u64, D)>
where
    D: ExchangeData + Ord,
    F: Fn(&[Stream<u64, u64>]) -> Stream<u64, D> + Send + Sync + 'static,
{
    let captured = Captured::new();
    let shared = captured.clone();
    run(workers, move |worker| {
        let mut handles: Vec<InputHandle<u64, u64>> = inputs.iter().map(|_| InputHandle::new()).collect();
        worker.dataflow(|scope| {
            let streams: Vec<_> = handles.iter_mut().map(|h| scope.input_from(h)).collect();
            build(&streams).capture_into(&shared);
        });
        for (handle, records) in handles.iter_mut().zip(inputs.iter()) {
            feed(handle, records, worker.index(), worker.peers());
        }
    });
    captured.extract()
}

/// `dataflow_output` for one input.
fn unary_output<D, F>(workers: usize, records: Timed, build: F) -> Vec<(u64, D)>
where
    D: ExchangeData + Ord,
    F: Fn(&Stream<u64, u64>) -> Stream<u64, D> + Send + Sync + 'static,
{
    dataflow_output(workers, vec![records], move |streams| build(&streams[0]))
}

/// The sorted `(time, output)` pairs of applying `logic` to each record sequentially.
fn reference<D: Ord, I: IntoIterator<Item = (u64, D)>>(
    records: &[(u64, u64)],
    logic: impl Fn(u64, u64) -> I,
) -> Vec<(u64, D)> {
    let mut out: Vec<_> = records.iter().flat_map(|&(t, x)| logic(t, x)).collect();
    out.sort();
    out
}

/// Steps `worker` until `condition` holds; fails after many steps.
fn step_until(worker: &mut Worker, mut condition: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if condition() {
            return;
        }
        worker.step();
    }
    panic!("condition still false after 10000 steps");
}

/// Steps `worker` a few times, to let anything that could happen happen.
fn step_a_while(worker: &mut Worker) {
    for _ in 0..50 {
        worker.step();
    }
}

/// A source that sends nothing and hands its capability and activator to the test, which
/// then controls the source's output frontier from outside (as an input handle does).
#[allow(clippy::type_complexity)]
fn held_capability<T: Timestamp>(
    scope: &Scope<T>,
) -> (Stream<T, u64>, Rc<RefCell<Option<Capability<T>>>>, Activator) {
    let slot = Rc::new(RefCell::new(None));
    let activator = Rc::new(RefCell::new(None));
    let (s, a) = (slot.clone(), activator.clone());
    let stream = scope.source("Held", move |capability, info| {
        *s.borrow_mut() = Some(capability);
        *a.borrow_mut() = Some(info.activator);
        |_output| {}
    });
    let activator = activator.borrow_mut().take().expect("the source's constructor ran");
    (stream, slot, activator)
}

/// The probe's frontier as a sorted vector.
fn frontier<T: Timestamp>(probe: &ProbeHandle<T>) -> Vec<T> {
    let mut elements = probe.frontier().into_elements();
    elements.sort();
    elements
}

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
// Probes
// ---------------------------------------------------------------------------------------

#[test]
fn probe_reports_less_than_less_equal_done_and_frontier() {
    timely_engine::example(|worker| {
        let mut input: InputHandle<u64, u64> = InputHandle::new();
        let probe = worker.dataflow(|scope| scope.input_from(&mut input).probe());
        assert_eq!(frontier(&probe), vec![0]);
        assert!(probe.less_equal(&0) && !probe.less_than(&0) && probe.less_than(&1) && !probe.done());
        input.advance_to(5);
        step_until(worker, || !probe.less_than(&5));
        assert_eq!(frontier(&probe), vec![5]);
        assert!(probe.less_equal(&5) && !probe.less_than(&5) && probe.less_than(&6) && !probe.less_equal(&4));
        assert!(!probe.done());
        input.close();
        step_until(worker, || probe.done());
        assert!(frontier(&probe).is_empty());
        assert!(!probe.less_equal(&u64::MAX));
    });
}

#[test]
fn probe_with_several_streams_reports_their_combined_frontier() {
    timely_engine::example(|worker| {
        let (mut a, mut b) = (InputHandle::<u64, u64>::new(), InputHandle::<u64, u64>::new());
        let probe = ProbeHandle::new();
        assert!(probe.done(), "a probe that watches nothing is done");
        worker.dataflow(|scope| {
            scope.input_from(&mut a).probe_with(&probe);
            scope.input_from(&mut b).probe_with(&probe);
        });
        a.advance_to(5);
        b.advance_to(3);
        step_until(worker, || !probe.less_than(&3));
        step_a_while(worker);
        assert_eq!(frontier(&probe), vec![3], "the earlier input holds the probe back");
        b.close();
        step_until(worker, || !probe.less_than(&5));
        assert_eq!(frontier(&probe), vec![5]);
        a.close();
        step_until(worker, || probe.done());
    });
}

// ---------------------------------------------------------------------------------------
// Aggregation, capture, to_stream
// ---------------------------------------------------------------------------------------

/// Per-time sums of `value(x)` grouped by `key(x)`, sorted.
fn grouped(
    records: &[(u64, u64)],
    key: impl Fn(u64) -> u64,
    value: impl Fn(u64) -> u64,
) -> Vec<(u64, (u64, u64))> {
    let mut groups: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for &(t, x) in records {
        *groups.entry((t, key(x))).or_insert(0) += value(x);
    }
    groups.into_iter().map(|((t, k), v)| (t, (k, v))).collect()
}

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

// ---------------------------------------------------------------------------------------
// Capabilities
// ---------------------------------------------------------------------------------------

#[test]
fn capability_holds_the_probe_until_downgraded_or_dropped() {
    timely_engine::example(|worker| {
        let (probe, slot, activator) = worker.dataflow(|scope: &Scope<u64>| {
            let (stream, slot, activator) = held_capability(scope);
            (stream.probe(), slot, activator)
        });
        step_a_while(worker);
        assert_eq!(frontier(&probe), vec![0], "the capability at 0 holds the probe");

        slot.borrow_mut().as_mut().expect("held").downgrade(&3);
        assert_eq!(*slot.borrow().as_ref().expect("held").time(), 3);
        activator.activate();
        step_until(worker, || !probe.less_than(&3));
        assert_eq!(frontier(&probe), vec![3]);

        let later = slot.borrow().as_ref().expect("held").delayed(&7);
        assert_eq!(*later.time(), 7);
        activator.activate();
        step_a_while(worker);
        assert_eq!(frontier(&probe), vec![3], "a delayed copy does not release the original");

        drop(slot.borrow_mut().take());
        activator.activate();
        step_until(worker, || !probe.less_than(&7));
        assert_eq!(frontier(&probe), vec![7], "dropping the original leaves the delayed copy");
        step_a_while(worker);
        assert!(!probe.done(), "the probe stays until every capability is dropped");

        drop(later);
        activator.activate();
        step_until(worker, || probe.done());
    });
}

#[test]
fn capability_try_delayed_and_try_downgrade_reject_earlier_times() {
    timely_engine::example(|worker| {
        let (probe, slot, activator) = worker.dataflow(|scope: &Scope<u64>| {
            let (stream, slot, activator) = held_capability(scope);
            (stream.probe(), slot, activator)
        });
        let mut capability = slot.borrow_mut().take().expect("held");
        capability.downgrade(&4);
        let error = capability.try_delayed(&2).expect_err("2 is earlier than 4");
        assert_eq!(error, CapabilityError::NotInFuture { held: "4".into(), requested: "2".into() });
        assert!(error.to_string().contains("earlier"), "{}", error);
        assert!(capability.try_downgrade(&3).is_err());
        assert_eq!(*capability.time(), 4, "a failed downgrade leaves the capability as it was");
        assert_eq!(capability.try_delayed(&4).map(|c| *c.time()), Ok(4));
        capability.try_downgrade(&6).expect("6 is later");
        activator.activate();
        step_until(worker, || !probe.less_than(&6));
        assert_eq!(frontier(&probe), vec![6]);
        drop(capability);
        activator.activate();
        step_until(worker, || probe.done());
    });
}

#[test]
fn capability_set_keeps_minimal_times_and_drives_the_frontier() {
    type P = Product<u64, u64>;
    let p = Product::new;
    timely_engine::example(|worker| {
        let (probe, slot, activator) = worker.dataflow(|scope: &Scope<P>| {
            let (stream, slot, activator) = held_capability(scope);
            (stream.probe(), slot, activator)
        });
        let times = |set: &CapabilitySet<P>| {
            let mut times: Vec<P> = set.iter().map(|c| *c.time()).collect();
            times.sort();
            times
        };
        let mut set = CapabilitySet::from_elem(slot.borrow_mut().take().expect("held"));
        set.insert(set.delayed(&p(2, 2)));
        assert_eq!(times(&set), vec![p(0, 0)], "a later time is covered by (0, 0)");

        set.downgrade(&[p(1, 0), p(0, 1)]);
        assert_eq!(times(&set), vec![p(0, 1), p(1, 0)]);
        set.insert(set.delayed(&p(1, 1)));
        assert_eq!(times(&set), vec![p(0, 1), p(1, 0)], "(1, 1) is covered");
        assert!(set.try_delayed(&p(0, 0)).is_err(), "(0, 0) is before every element");
        assert_eq!(*set.delayed(&p(0, 5)).time(), p(0, 5));
        activator.activate();
        step_until(worker, || frontier(&probe) == vec![p(0, 1), p(1, 0)]);

        let mut other = CapabilitySet::new();
        assert!(other.is_empty());
        other.insert(set.delayed(&p(3, 3)));
        other.insert(set.delayed(&p(2, 4)));
        assert_eq!(times(&other), vec![p(2, 4), p(3, 3)], "incomparable times are both kept");
        other.insert(set.delayed(&p(2, 3)));
        assert_eq!(times(&other), vec![p(2, 3)], "(2, 3) covers both");

        set.downgrade(&[p(2, 0)]);
        activator.activate();
        step_until(worker, || frontier(&probe) == vec![p(2, 0)]);
        set.downgrade(&[]);
        assert!(set.is_empty());
        activator.activate();
        step_a_while(worker);
        assert_eq!(frontier(&probe), vec![p(2, 3)], "the other set still holds (2, 3)");
        drop(other);
        activator.activate();
        step_until(worker, || probe.done());
    });
}

// ---------------------------------------------------------------------------------------
// Input handles
// ---------------------------------------------------------------------------------------

#[test]
fn input_handle_sends_advances_and_closes_every_attachment() {
    let captured = timely_engine::example(|worker| {
        let mut input = InputHandle::new();
        assert_eq!(*input.time(), 0);
        let captured = worker.dataflow(|scope: &Scope<u64>| {
            let first = scope.input_from(&mut input).map(|x: u64| (1u64, x));
            let second = scope.input_from(&mut input).map(|x: u64| (2u64, x));
            first.concat(&second).capture()
        });
        input.send(1);
        let mut batch = vec![2, 3];
        input.send_batch(&mut batch);
        assert!(batch.is_empty(), "send_batch takes the records");
        input.advance_to(2);
        assert_eq!(*input.time(), 2);
        input.advance_to(2);
        input.send(4);
        assert!(!input.is_closed());
        input.close();
        assert!(input.is_closed());
        input.close();
        captured
    });
    let expected: Vec<(u64, (u64, u64))> = [1, 2]
        .iter()
        .flat_map(|&tag| [(0, (tag, 1)), (0, (tag, 2)), (0, (tag, 3)), (2, (tag, 4))])
        .collect::<Vec<_>>();
    let mut expected = expected;
    expected.sort();
    assert_eq!(captured.extract(), expected);
}

#[test]
fn input_handle_rejects_going_back_and_sending_after_close() {
    timely_engine::example(|worker| {
        let mut input = InputHandle::new();
        let captured = worker.dataflow(|scope: &Scope<u64>| scope.input_from(&mut input).capture());
        input.advance_to(5);
        let error = input.try_advance_to(3).expect_err("3 is before 5");
        assert_eq!(error, InputError::TimeNotAdvancing { current: "5".into(), requested: "3".into() });
        assert!(error.to_string().contains("only move forward"), "{}", error);
        assert_eq!(*input.time(), 5, "a failed advance leaves the time");
        input.send(7u64);
        input.close();
        assert_eq!(input.try_send_batch(&mut vec![8]), Err(InputError::Closed));
        assert_eq!(input.try_advance_to(9), Err(InputError::Closed));
        while worker.step() {}
        assert_eq!(captured.extract(), vec![(5, 7)], "nothing sent after close arrives");
    });
}

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
