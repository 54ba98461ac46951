//! Dataflows built while a process leaves (`docs/rescaling.md`, "Dataflows built during a
//! leave"): the workers that stay build a dataflow after the leave's notice and before the
//! leaver went, and the leaver builds it too or never does. Either way the dataflow completes,
//! every record fed is delivered once and every key is counted once with a sequential
//! program's count. The leaver is held in its leave (an operator of its first dataflow keeps
//! its capability) until every other worker has built the new dataflow, so the build always
//! falls inside the leave.

use crate::common;
use crate::leaving_support::run_processes;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use timely_engine::dataflow::{InputHandle, ProbeHandle};
use timely_engine::Worker;

/// The longest a test may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(120);

/// Distinct keys of the count.
const KEYS: u64 = 5;

/// What the workers saw of the dataflow built during the leave.
#[derive(Default)]
struct Seen {
    fed: Vec<u64>,
    received: Vec<u64>,
    counts: Vec<(u64, u64)>,
    /// Per worker that built it: the workers leaving and gone when it did.
    built_during: Vec<(usize, Vec<usize>, Vec<usize>)>,
}

/// Builds the dataflow of the test on `worker`: an exchange and a keyed count of what it feeds.
fn build_counted(worker: &mut Worker, seen: &Arc<Mutex<Seen>>) -> (InputHandle<u64, u64>, ProbeHandle<u64>) {
    let mut input = InputHandle::new();
    let probe = ProbeHandle::new();
    let (received, counted) = (seen.clone(), seen.clone());
    worker.dataflow(|scope| {
        let records = scope.input_from(&mut input);
        records
            .exchange(|x: &u64| x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 9)
            .inspect(move |x| received.lock().unwrap().received.push(*x))
            .probe_with(&probe);
        records
            .map(|x| x % KEYS)
            .count_by_key()
            .inspect(move |(key, n)| counted.lock().unwrap().counts.push((*key, *n)))
            .probe_with(&probe);
    });
    (input, probe)
}

/// Three processes of `threads` workers; process 1 leaves, and builds the second dataflow
/// during its leave when `leaver_builds`.
fn run(threads: usize, leaver_builds: bool) -> Seen {
    let processes = 3;
    let addresses = common::free_addresses(processes);
    let seen: Arc<Mutex<Seen>> = Arc::default();
    // Stayers that have built the second dataflow; the leaver is held until all have.
    let built = Arc::new(AtomicUsize::new(0));
    let stayers = (processes - 1) * threads;
    let program = {
        let seen = seen.clone();
        move |worker: &mut Worker| {
            let index = worker.index();
            let leaver = index / threads == 1;
            let released = built.clone();
            worker.dataflow::<u64, _>(|scope| {
                scope.source::<u64, _, _>("Hold", move |capability, info| {
                    let mut held = Some(capability);
                    move |_output| {
                        if !leaver || released.load(Ordering::SeqCst) == stayers {
                            held = None;
                        } else if held.is_some() {
                            info.activator.activate();
                        }
                    }
                });
            });
            let state = worker.state().clone();
            let leaves = state.rescaling().leaves();
            if leaver {
                if index == threads {
                    worker.leave().expect("nothing refuses the leave");
                }
                while !worker.is_leaving() {
                    worker.step();
                }
                if leaver_builds {
                    let (mut input, _probe) = build_counted(worker, &seen);
                    // Released by the leave: it refuses records and holds no capability.
                    assert!(input.try_send(1).is_err());
                }
                return;
            }
            while leaves.leaving().is_empty() {
                worker.step();
            }
            let during = (index, leaves.leaving(), leaves.departed());
            let (mut input, probe) = build_counted(worker, &seen);
            seen.lock().unwrap().built_during.push(during);
            built.fetch_add(1, Ordering::SeqCst);
            let mine: Vec<u64> = (0..20).map(|i| index as u64 * 1000 + i).collect();
            seen.lock().unwrap().fed.extend(&mine);
            mine.into_iter().for_each(|x| input.send(x));
            input.close();
            worker.step_while(|| !probe.done());
        }
    };
    run_processes(&addresses, processes, threads, program);
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    seen
}

/// Checks that the dataflow built during the leave delivered and counted what was fed.
fn check(seen: &Seen, threads: usize) {
    let leavers: Vec<usize> = (threads..2 * threads).collect();
    assert_eq!(seen.built_during.len(), 2 * threads);
    for (worker, leaving, departed) in &seen.built_during {
        assert_eq!((leaving, departed), (&leavers, &vec![]), "worker {worker} built outside the leave");
    }
    let (mut fed, mut received) = (seen.fed.clone(), seen.received.clone());
    fed.sort();
    received.sort();
    assert_eq!(received, fed, "every record fed is delivered once");
    let mut expected: BTreeMap<u64, u64> = BTreeMap::new();
    fed.iter().for_each(|x| *expected.entry(x % KEYS).or_default() += 1);
    let mut counts = seen.counts.clone();
    counts.sort();
    assert_eq!(counts, expected.into_iter().collect::<Vec<_>>(), "one count per key");
}

#[test]
fn a_dataflow_the_leaver_never_builds_completes_on_the_others() {
    common::within(LIMIT, || check(&run(1, false), 1));
}

#[test]
fn a_dataflow_the_leaver_builds_during_its_leave_completes() {
    common::within(LIMIT, || check(&run(1, true), 1));
}

#[test]
fn a_pair_of_leaving_workers_that_never_build_it_is_not_waited_for() {
    common::within(LIMIT, || check(&run(2, false), 2));
}
