//! Processes leaving a running cluster (`docs/rescaling.md`, "Leaving a running cluster"), on
//! loopback: each "process" is a thread of this test running `timely_engine::execute` with its
//! own `Config::Cluster`. Every worker feeds records each epoch into a plain `exchange` and a
//! keyed `count_by_key`; the workers of one process call `leave()` at an epoch, close their
//! input and return. The leaving process must end in order, the others go on and end in
//! order, every record fed is seen exactly once, and every (epoch, key) is counted once, on
//! one worker, with the count of a sequential program. A leaver whose loop still feeds a
//! record back to itself goes only once the record is through.

use crate::common;
use crate::common::loopback_cluster as config;
use crate::leaving_support::run_processes;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use timely_engine::dataflow::{InputHandle, Pipeline, ProbeHandle};
use timely_engine::{Product, Worker};

/// The longest a test may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(120);

/// Distinct keys of the count.
const KEYS: u64 = 7;

/// What the workers of one run saw: `(worker, epoch, record)` from the exchange and
/// `(worker, epoch, key, count)` from the count; and what they fed: `(epoch, record)`.
#[derive(Default)]
struct Seen {
    exchanged: Vec<(usize, u64, u64)>,
    counted: Vec<(usize, u64, u64, u64)>,
    fed: Vec<(u64, u64)>,
    /// The records of the dataflow the others build after the leave: fed and received.
    after: (Vec<u64>, Vec<u64>),
    /// Its counts per key (one epoch): `(key, count)` from every worker.
    after_counts: Vec<(u64, u64)>,
}

/// The records worker `index` feeds in `epoch`.
fn records(index: usize, epoch: u64) -> Vec<u64> {
    (0..(index as u64 + epoch) % 4 + 2).map(|i| epoch * 10_000 + index as u64 * 100 + i).collect()
}

/// Runs `epochs` epochs on `processes` processes of `threads` workers; process `leaver` leaves
/// at epoch `leave_at`.
fn run(processes: usize, threads: usize, leaver: usize, leave_at: u64, epochs: u64) -> Seen {
    let addresses = common::free_addresses(processes);
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let program = {
        let seen = seen.clone();
        move |worker: &mut Worker| {
            let index = worker.index();
            let leaves = index / threads == leaver;
            let mut input = InputHandle::new();
            let probe = ProbeHandle::new();
            let (exchanged, counted) = (seen.clone(), seen.clone());
            worker.dataflow(|scope| {
                let records = scope.input_from(&mut input);
                records
                    .exchange(|x: &u64| x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7)
                    .inspect_time(move |epoch, x| {
                        exchanged.lock().unwrap().exchanged.push((index, *epoch, *x))
                    })
                    .probe_with(&probe);
                records
                    .map(|x| x % KEYS)
                    .count_by_key()
                    .inspect_time(move |epoch, (key, n)| {
                        counted.lock().unwrap().counted.push((index, *epoch, *key, *n))
                    })
                    .probe_with(&probe);
            });
            for epoch in 0..epochs {
                if leaves && epoch == leave_at {
                    worker.leave().expect("nothing refuses the leave");
                    assert!(worker.is_leaving());
                    input.close();
                    return;
                }
                let mine = records(index, epoch);
                seen.lock().unwrap().fed.extend(mine.iter().map(|x| (epoch, *x)));
                for x in mine {
                    input.send(x);
                }
                input.advance_to(epoch + 1);
                worker.step_while(|| probe.less_than(input.time()));
            }
            // The leaver is gone while this worker's input is still open: the leave completed
            // in a running cluster, not at its end.
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            let gone: Vec<usize> = (leaver * threads..(leaver + 1) * threads).collect();
            while worker.state().rescaling().leaves().departed() != gone {
                assert!(std::time::Instant::now() < deadline, "the leaver did not go");
                worker.step();
            }
            assert!(worker.state().members().iter().all(|w| w / threads != leaver));
            // A dataflow built once the leaver is gone counts only the workers present: it
            // completes without waiting for the leaver's initial capabilities.
            let mut input = InputHandle::<u64, u64>::new();
            let probe = ProbeHandle::new();
            let (received, counted) = (seen.clone(), seen.clone());
            worker.dataflow(|scope| {
                let records = scope.input_from(&mut input);
                records
                    .exchange(|x: &u64| *x)
                    .inspect(move |x| received.lock().unwrap().after.1.push(*x))
                    .probe_with(&probe);
                records
                    .map(|x| x % KEYS)
                    .count_by_key()
                    .inspect(move |(key, n)| counted.lock().unwrap().after_counts.push((*key, *n)))
                    .probe_with(&probe);
            });
            let mine: Vec<u64> = (0..5).map(|i| index as u64 * 100 + i).collect();
            seen.lock().unwrap().after.0.extend(&mine);
            mine.into_iter().for_each(|x| input.send(x));
            input.close();
            worker.step_while(|| !probe.done());
        }
    };
    run_processes(&addresses, processes, threads, program);
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    seen
}

/// Checks that every (epoch, key) fed was counted once, on one worker, with the count of a
/// sequential program.
fn check_counts(seen: &Seen) {
    let mut expected: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for &(epoch, x) in &seen.fed {
        *expected.entry((epoch, x % KEYS)).or_default() += 1;
    }
    let mut counted: BTreeMap<(u64, u64), Vec<(usize, u64)>> = BTreeMap::new();
    for &(worker, epoch, key, n) in &seen.counted {
        counted.entry((epoch, key)).or_default().push((worker, n));
    }
    let split: Vec<_> = counted.iter().filter(|(_, results)| results.len() > 1).collect();
    assert!(split.is_empty(), "keys counted on several workers: {split:?}");
    let got: BTreeMap<(u64, u64), u64> = counted.iter().map(|(k, v)| (*k, v[0].1)).collect();
    assert_eq!(got, expected, "counts per epoch and key");
}

/// Checks what a run saw against what it fed.
fn check(seen: &Seen, leavers: std::ops::Range<usize>, leave_at: u64) {
    let mut fed = seen.fed.clone();
    fed.sort();
    let mut exchanged: Vec<(u64, u64)> = seen.exchanged.iter().map(|&(_, e, x)| (e, x)).collect();
    exchanged.sort();
    assert_eq!(exchanged, fed, "the exchange delivers every record once");
    check_counts(seen);
    let (mut fed_after, mut received_after) = seen.after.clone();
    fed_after.sort();
    received_after.sort();
    assert!(!fed_after.is_empty());
    assert_eq!(received_after, fed_after, "the dataflow built after the leave delivers every record once");
    let mut expected_after: BTreeMap<u64, u64> = BTreeMap::new();
    fed_after.iter().for_each(|x| *expected_after.entry(x % KEYS).or_default() += 1);
    let mut counts_after: Vec<(u64, u64)> = seen.after_counts.clone();
    counts_after.sort();
    assert_eq!(
        counts_after,
        expected_after.into_iter().collect::<Vec<_>>(),
        "one count per key after the leave"
    );
    for &(worker, epoch, _) in &seen.exchanged {
        assert!(!leavers.contains(&worker) || epoch <= leave_at, "worker {worker} got a record at {epoch}");
    }
}

#[test]
fn the_last_process_leaves_and_the_others_count_on() {
    let seen = common::within(LIMIT, || run(3, 1, 2, 3, 8));
    check(&seen, 2..3, 3);
}

#[test]
fn process_0_leaves() {
    let seen = common::within(LIMIT, || run(3, 1, 0, 2, 6));
    check(&seen, 0..1, 2);
}

#[test]
fn a_process_of_two_workers_leaves_a_pair() {
    let seen = common::within(LIMIT, || run(2, 2, 1, 2, 6));
    check(&seen, 2..4, 2);
}

/// A leaver that dies during its leave (its connections close without goodbye) is a lost
/// peer: the others stop with an error naming it instead of waiting for it.
#[test]
fn a_leaver_that_dies_mid_leave_stops_the_others_with_an_error() {
    let outcomes = common::within(LIMIT, || {
        let addresses = common::free_addresses(3);
        let program = move |worker: &mut Worker| {
            let mut input = InputHandle::new();
            let probe = ProbeHandle::new();
            worker.dataflow(|scope| {
                scope.input_from(&mut input).map(|x: u64| x % KEYS).count_by_key().probe_with(&probe);
            });
            for epoch in 0..1_000u64 {
                if worker.index() == 2 && epoch == 3 {
                    worker.leave().expect("nothing refuses the leave");
                    // Dies before it drained: no goodbye.
                    worker.fail();
                    panic!("the leaver dies");
                }
                input.send(epoch);
                input.advance_to(epoch + 1);
                worker.step_while(|| probe.less_than(input.time()));
            }
        };
        let runs: Vec<_> = (0..3)
            .map(|process| {
                let (config, program) = (config(&addresses, process, 3, 1, None), program);
                std::thread::spawn(move || {
                    timely_engine::execute(config, program).map(|_| ()).map_err(|e| e.to_string())
                })
            })
            .collect();
        runs.into_iter()
            .map(|run| run.join().map_err(|_| "panicked".to_owned()).and_then(|r| r))
            .collect::<Vec<_>>()
    });
    for (process, outcome) in outcomes.iter().enumerate().take(2) {
        let error = outcome.as_ref().expect_err("a stayer must not end well");
        assert!(
            error.contains("process 2"),
            "process {process}: the error names the lost process 2: {error}"
        );
    }
    assert!(outcomes[2].is_err(), "the leaver failed");
}

/// After process 2 of three left, a fourth process joins (told with `gone` that process 2
/// left, served by worker 0) and feeds too: every (epoch, key) is counted once, exactly, and
/// the joined worker takes a share of the keys.
#[test]
fn a_process_joins_after_another_left() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let seen = common::within(LIMIT, || {
        let addresses = common::free_addresses(4);
        let seen: Arc<Mutex<Seen>> = Arc::default();
        let (departed, joined) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let program = {
            let (seen, departed, joined) = (seen.clone(), departed.clone(), joined.clone());
            move |worker: &mut Worker| {
                let index = worker.index();
                let mut input = InputHandle::new();
                let probe = ProbeHandle::new();
                let counted = seen.clone();
                worker.dataflow(|scope| {
                    scope
                        .input_from(&mut input)
                        .map(|x| x % KEYS)
                        .count_by_key()
                        .inspect_time(move |epoch, (key, n)| {
                            counted.lock().unwrap().counted.push((index, *epoch, *key, *n))
                        })
                        .probe_with(&probe);
                });
                let joiner = worker.bootstrap();
                let mut epoch = *input.time();
                let mut after_join = 0;
                loop {
                    if index == 2 && epoch == 2 {
                        worker.leave().expect("nothing refuses the leave");
                        input.close();
                        return;
                    }
                    if index == 0 && worker.state().rescaling().leaves().departed() == vec![2] {
                        departed.store(true, Ordering::SeqCst);
                    }
                    if joiner {
                        joined.store(true, Ordering::SeqCst);
                    }
                    if joined.load(Ordering::SeqCst) {
                        after_join += 1;
                    }
                    if after_join > 6 && epoch >= 8 {
                        break;
                    }
                    let mine = records(index, epoch);
                    seen.lock().unwrap().fed.extend(mine.iter().map(|x| (epoch, *x)));
                    mine.into_iter().for_each(|x| input.send(x));
                    epoch += 1;
                    input.advance_to(epoch);
                    worker.step_while(|| probe.less_than(input.time()));
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        };
        let mut runs: Vec<_> = (0..3)
            .map(|process| {
                let (config, program) = (config(&addresses, process, 3, 1, None), program.clone());
                std::thread::spawn(move || timely_engine::execute(config, program).map(|_| ()))
            })
            .collect();
        while !departed.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut joining = config(&addresses, 3, 3, 1, Some(0));
        if let timely_communication::Config::Cluster(cluster) = &mut joining {
            cluster.gone = vec![2];
        }
        runs.push(std::thread::spawn(move || timely_engine::execute(joining, program).map(|_| ())));
        for (process, run) in runs.into_iter().enumerate() {
            run.join().expect("process thread").unwrap_or_else(|error| panic!("process {process}: {error}"));
        }
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        seen
    });
    check_counts(&seen);
    assert!(seen.counted.iter().any(|&(worker, ..)| worker == 3), "the joined worker counted no key");
    assert!(seen.fed.iter().any(|&(_, x)| x / 100 % 100 == 3), "the joined worker fed nothing");
}

/// A loop whose body is a notification-driven buffer, on three processes; worker 1 feeds one
/// record and leaves at once, and the others let its time complete only once they heard of
/// the leave. Its buffer's last release is to the loop's feedback operator, which runs earlier
/// in the scheduling order, so in the next step: the leaver must not go in between (it holds
/// no capability then, but the record in its queue is counted everywhere). It once did, and
/// the others' frontier stayed at 0 for good.
#[test]
fn a_leaver_goes_only_after_its_loop_fed_back_what_it_released() {
    common::within(LIMIT, || {
        let processes = 3;
        let addresses = common::free_addresses(processes);
        let seen: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
        let seen_by_all = seen.clone();
        let program = move |worker: &mut Worker| {
            let index = worker.index();
            let mut input: InputHandle<u64, u64> = InputHandle::new();
            let probe = ProbeHandle::new();
            let (seen_here, passes) = (seen_by_all.clone(), 2);
            worker.dataflow::<u64, _>(|scope| {
                let stream = scope.input_from(&mut input);
                scope
                    .iterative::<u64, _>(|inner| {
                        let (handle, cycle) = inner.feedback::<u64>(Product::new(0, 1));
                        // (branch: false first, true second)
                        let (done, again) = stream
                            .enter(inner)
                            .concat(&cycle)
                            .branch(move |time: &Product<u64, u64>, _: &u64| time.inner < passes);
                        let mut stash: BTreeMap<Product<u64, u64>, Vec<u64>> = BTreeMap::new();
                        again
                            .unary_notify(Pipeline, "Buffer", move |input, output, notificator| {
                                input.for_each(|capability, data| {
                                    stash.entry(*capability.time()).or_default().append(data);
                                    notificator.notify_at(capability.retain());
                                });
                                notificator.for_each(|capability, _, _| {
                                    if let Some(mut records) = stash.remove(capability.time()) {
                                        output.session(&capability).give_vec(&mut records);
                                    }
                                });
                            })
                            .connect_loop(handle);
                        done.leave(scope)
                    })
                    .inspect_time(move |epoch, x| seen_here.lock().unwrap().push((*epoch, *x)))
                    .probe_with(&probe);
            });
            if index == 1 {
                input.send(7);
                worker.leave().expect("nothing refuses the leave");
                input.close();
                return;
            }
            while worker.state().rescaling().leaves().leaving() != [1] {
                worker.step();
            }
            input.advance_to(1);
            while worker.state().rescaling().leaves().departed() != [1] {
                worker.step();
            }
            input.close();
            worker.step_while(|| !probe.done());
        };
        run_processes(&addresses, processes, 1, program);
        assert_eq!(*seen.lock().unwrap(), vec![(0, 7)], "the record leaves the loop once");
    });
}

/// What a run whose leaver keeps feeding saw, besides [`Seen`]: `(worker, epoch, count)` from
/// a count per time behind an exchange (emitted at its notification), the records each leaver
/// had refused, and the epoch at which each leaver's dataflows were gone.
#[derive(Default)]
struct Feeding {
    per_time: Vec<(usize, u64, u64)>,
    refused: Vec<(usize, u64, u64)>,
    went: Vec<(usize, u64)>,
}

/// Runs `epochs` epochs on `processes` processes of `threads` workers, every worker feeding
/// `records` each epoch with `try_send`. The first worker of process `leaver` calls `leave()`
/// in epoch `leave_at`, halfway through its records; the leaving process's workers never
/// close their input and go on feeding and stepping, each until its dataflows are gone.
/// `Seen::fed` holds the records accepted.
fn run_feeding(
    processes: usize,
    threads: usize,
    leaver: usize,
    leave_at: u64,
    epochs: u64,
) -> (Seen, Feeding) {
    use timely_engine::dataflow::operators::InputError;
    let addresses = common::free_addresses(processes);
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let feeding: Arc<Mutex<Feeding>> = Arc::default();
    let program = {
        let (seen, feeding) = (seen.clone(), feeding.clone());
        move |worker: &mut Worker| {
            let index = worker.index();
            let leaves = index / threads == leaver;
            let mut input = InputHandle::new();
            let probe = ProbeHandle::new();
            let (exchanged, counted, per_time) = (seen.clone(), seen.clone(), feeding.clone());
            worker.dataflow(|scope| {
                let records = scope.input_from(&mut input);
                let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
                records
                    .exchange(|x: &u64| x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7)
                    .inspect_time(move |epoch, x| {
                        exchanged.lock().unwrap().exchanged.push((index, *epoch, *x))
                    })
                    .unary_notify(Pipeline, "CountPerTime", move |input, output, notificator| {
                        input.for_each(|time, data| {
                            *counts.entry(*time.time()).or_default() += data.len() as u64;
                            notificator.notify_at(time.retain());
                        });
                        notificator.for_each(|time, _, _| {
                            let count = counts.remove(time.time()).unwrap_or_default();
                            output.session(&time).give(count);
                        });
                    })
                    .inspect_time(move |epoch, n| per_time.lock().unwrap().per_time.push((index, *epoch, *n)))
                    .probe_with(&probe);
                records
                    .map(|x| x % KEYS)
                    .count_by_key()
                    .inspect_time(move |epoch, (key, n)| {
                        counted.lock().unwrap().counted.push((index, *epoch, *key, *n))
                    })
                    .probe_with(&probe);
            });
            let feed = |input: &mut InputHandle<u64, u64>, epoch: u64, records: &[u64]| {
                for &x in records {
                    match input.try_send(x) {
                        Ok(()) => seen.lock().unwrap().fed.push((epoch, x)),
                        Err(InputError::Leaving) => feeding.lock().unwrap().refused.push((index, epoch, x)),
                        Err(other) => panic!("worker {index}: {other}"),
                    }
                }
            };
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            let mut epoch = 0;
            while if leaves { worker.has_dataflows() } else { epoch < epochs } {
                assert!(
                    std::time::Instant::now() < deadline,
                    "worker {index} is still there in epoch {epoch}"
                );
                let mine = records(index, epoch);
                let (first, second) = mine.split_at(mine.len() / 2);
                feed(&mut input, epoch, first);
                if index == leaver * threads && epoch == leave_at {
                    worker.leave().expect("nothing refuses the leave");
                }
                feed(&mut input, epoch, second);
                epoch += 1;
                input.advance_to(epoch);
                worker.step_while(|| probe.less_than(input.time()));
            }
            if leaves {
                assert!(input.is_released() && !input.is_closed(), "worker {index}: released, never closed");
                assert!(probe.done(), "worker {index}: a probe of a dataflow gone shows no more times");
                assert!(!worker.step(), "worker {index}: a step after it went has nothing to do");
                feeding.lock().unwrap().went.push((index, epoch));
                return;
            }
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            let gone: Vec<usize> = (leaver * threads..(leaver + 1) * threads).collect();
            while worker.state().rescaling().leaves().departed() != gone {
                assert!(std::time::Instant::now() < deadline, "the leaver did not go");
                worker.step();
            }
            input.close();
            worker.step_while(|| !probe.done());
        }
    };
    run_processes(&addresses, processes, threads, program);
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    let feeding = std::mem::take(&mut *feeding.lock().unwrap());
    (seen, feeding)
}

/// Checks a run of [`run_feeding`]: the exchange delivers every accepted record once and no
/// refused one, the counts per time and per (time, key) are those of a sequential program over
/// the accepted records, the leaver accepted what it sent before its `leave()` and refused
/// what it sent after, and every leaver went while its program was feeding.
fn check_feeding(seen: &Seen, feeding: &Feeding, leavers: std::ops::Range<usize>, leave_at: u64) {
    let mut fed = seen.fed.clone();
    fed.sort();
    let mut exchanged: Vec<(u64, u64)> = seen.exchanged.iter().map(|&(_, e, x)| (e, x)).collect();
    exchanged.sort();
    assert_eq!(exchanged, fed, "the exchange delivers every accepted record once, and nothing else");
    let mut expected: BTreeMap<u64, u64> = BTreeMap::new();
    fed.iter().for_each(|(epoch, _)| *expected.entry(*epoch).or_default() += 1);
    let mut per_time: BTreeMap<u64, u64> = BTreeMap::new();
    feeding.per_time.iter().for_each(|&(_, epoch, n)| *per_time.entry(epoch).or_default() += n);
    assert_eq!(per_time, expected, "records counted per time");
    check_counts(seen);
    let caller = leavers.start;
    let theirs = records(caller, leave_at);
    let (before, after) = theirs.split_at(theirs.len() / 2);
    assert!(before.iter().all(|x| fed.contains(&(leave_at, *x))), "what it sent before leave() counts");
    assert!(
        after.iter().all(|x| feeding.refused.contains(&(caller, leave_at, *x))),
        "what it sent after is refused"
    );
    assert!(feeding.refused.iter().all(|(worker, ..)| leavers.contains(worker)), "only leavers refuse");
    let mut went: Vec<usize> = feeding.went.iter().map(|&(worker, _)| worker).collect();
    went.sort();
    assert_eq!(went, leavers.collect::<Vec<_>>(), "every leaver went");
}

#[test]
fn a_leaver_that_keeps_feeding_and_never_closes_its_input_still_goes() {
    let (seen, feeding) = common::within(LIMIT, || run_feeding(3, 1, 1, 3, 10));
    check_feeding(&seen, &feeding, 1..2, 3);
}

/// The second worker of the leaving process hears of the leave at the start of a step, with
/// the records it sent since its last step not yet handed on: they count too.
#[test]
fn a_pair_of_workers_that_keeps_feeding_leaves_and_loses_nothing() {
    let (seen, feeding) = common::within(LIMIT, || run_feeding(2, 2, 0, 2, 8));
    check_feeding(&seen, &feeding, 0..2, 2);
}
