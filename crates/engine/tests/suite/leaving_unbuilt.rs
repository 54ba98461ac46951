//! A dataflow that the workers that stay built before they saw a leave's notice, and that the
//! leaver never builds (`docs/rescaling.md`, "Dataflows built during a leave"). The stayers
//! counted the leaver's initial capabilities there; the leaver's `Left`, sent as soon as its
//! program returned, retires them. But a plain exchange there already sent the leaver records,
//! and a keyed count its membership announcements, which nothing can ever take: the run stops
//! with an error naming the dataflow and the workers instead of hanging (before, neither ever
//! completed: the keyed count never even let the leaver go).

use crate::common;
use crate::common::loopback_cluster as config;
use crate::leaving_support::counted::{build_parts, Parts, Seen};
use crate::leaving_support::leave_without_building;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use timely_engine::Worker;

/// The longest a test may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(60);

/// Records each stayer feeds per round; enough that some go to every worker.
const RECORDS: u64 = 40;

/// Rounds the stayers feed: the first before the leave is asked for.
const ROUNDS: u64 = 3;

/// Runs three processes of `threads` workers; the workers of processes 0 and 2 build the
/// `parts` of the counted dataflow at once and feed a round, then process 1 leaves without
/// ever building it; the stayers feed the other rounds and wait for the dataflow to complete.
/// Returns each process's outcome and what the stayers saw.
fn run(threads: usize, parts: Parts) -> (Vec<Result<(), String>>, Seen) {
    let (processes, leaver) = (3, 1);
    let addresses = common::free_addresses(processes);
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let fed = Arc::new(AtomicUsize::new(0));
    let stayers = (processes - 1) * threads;
    let program = {
        let seen = seen.clone();
        move |worker: &mut Worker| {
            let index = worker.index();
            if index / threads == leaver {
                return leave_without_building(worker, index == leaver * threads, &fed, stayers);
            }
            let (mut input, probe) = build_parts(worker, &seen, parts);
            let state = worker.state().clone();
            for round in 0..ROUNDS {
                let mine: Vec<u64> = (0..RECORDS).map(|i| (index as u64) << 32 | round << 16 | i).collect();
                seen.lock().unwrap().fed.extend(mine.iter().map(|&x| (round, x)));
                mine.into_iter().for_each(|x| input.send(x));
                input.advance_to(round + 1);
                (0..5).for_each(|_| _ = worker.step());
                if round == 0 {
                    assert!(state.rescaling().leaves().leaving().is_empty(), "built before the notice");
                    fed.fetch_add(1, Ordering::SeqCst);
                }
            }
            input.close();
            worker.step_while(|| !probe.done());
        }
    };
    let runs: Vec<_> = (0..processes)
        .map(|process| {
            let (config, program) = (config(&addresses, process, processes, threads, None), program.clone());
            std::thread::spawn(move || timely_engine::execute(config, program))
        })
        .collect();
    let outcomes = runs
        .into_iter()
        .map(|run| match run.join() {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err("panicked".to_owned()),
        })
        .collect();
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    (outcomes, seen)
}

/// A dataflow that sent a leaver messages where the leaver never builds it stops the run,
/// naming the dataflow and the leaver, instead of hanging: a plain exchange sends it records,
/// a keyed count its membership announcements (of the leaver's departure).
fn stranded_messages_stop_the_run(threads: usize, parts: Parts) {
    let (outcomes, _seen) = common::within(LIMIT, move || run(threads, parts));
    let errors: Vec<&String> = outcomes.iter().filter_map(|outcome| outcome.as_ref().err()).collect();
    let named = errors.iter().find(|error| error.contains("left the cluster without ever building it"));
    let Some(named) = named else { panic!("no process names the stranded dataflow: {outcomes:?}") };
    assert!(named.contains("dataflow 0 cannot complete"), "names the dataflow: {named}");
    let leavers: Vec<String> = (threads..2 * threads).map(|w| format!("worker {w} left")).collect();
    assert!(leavers.iter().any(|leaver| named.contains(leaver)), "names a leaver: {named}");
    assert!(outcomes[0].is_err() && outcomes[2].is_err(), "every stayer stops: {outcomes:?}");
}

const EXCHANGE: Parts = Parts { exchange: true, count: false };
const KEYED_COUNT: Parts = Parts { exchange: false, count: true };

#[test]
fn records_stranded_on_a_leaver_that_never_built_their_dataflow_stop_the_run() {
    stranded_messages_stop_the_run(1, EXCHANGE);
}

#[test]
fn records_stranded_on_a_pair_of_leavers_stop_the_run() {
    stranded_messages_stop_the_run(2, EXCHANGE);
}

#[test]
fn a_keyed_count_the_leaver_never_built_stops_the_run() {
    stranded_messages_stop_the_run(1, KEYED_COUNT);
}

#[test]
fn a_keyed_count_a_pair_of_leavers_never_built_stops_the_run() {
    stranded_messages_stop_the_run(2, KEYED_COUNT);
}
