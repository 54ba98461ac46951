//! Leaves asked for at the same moment by several processes, each before it heard of the
//! others' (processes started by hand can do this; the launcher runs one leave at a time).
//! While one process stays, the leaves complete and its counts are exact; when every process
//! would leave, every process stops with an error that says so instead of dissolving the
//! cluster with records lost.

use crate::common;
use crate::leaving_support::counted::{build_counted, check_delivered_and_counted, Seen};

use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;
use timely_engine::Worker;

/// The longest a test may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(120);

/// The epoch at which the leavers ask to leave.
const LEAVE_AT: u64 = 3;

/// Runs 6 epochs of the counted dataflow on `processes` processes of one worker; the
/// processes in `leavers` ask to leave at [`LEAVE_AT`], all before any of them steps again (a
/// barrier of the leavers' threads), then close their input and return. Returns each
/// process's outcome and what the workers saw.
fn run(processes: usize, leavers: &'static [usize]) -> (Vec<Result<(), String>>, Seen) {
    let addresses = common::free_addresses(processes);
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let together = Arc::new(Barrier::new(leavers.len()));
    let program = {
        let seen = seen.clone();
        move |worker: &mut Worker| {
            let leaves = leavers.contains(&worker.index());
            let (mut input, probe) = build_counted(worker, &seen);
            for epoch in 0..6u64 {
                if leaves && epoch == LEAVE_AT {
                    together.wait();
                    worker.leave().expect("no leave was heard of yet");
                    input.close();
                    return;
                }
                let mine: Vec<u64> = (0..4).map(|i| epoch * 1_000 + worker.index() as u64 * 10 + i).collect();
                seen.lock().unwrap().fed.extend(mine.iter().map(|&x| (epoch, x)));
                mine.into_iter().for_each(|x| input.send(x));
                input.advance_to(epoch + 1);
                worker.step_while(|| probe.less_than(input.time()));
            }
            input.close();
            worker.step_while(|| !probe.done());
        }
    };
    let outcomes = (0..processes)
        .map(|process| {
            let (config, program) =
                (common::loopback_cluster(&addresses, process, processes, 1, None), program.clone());
            std::thread::spawn(move || {
                timely_engine::execute(config, program).map(|_| ()).map_err(|e| e.to_string())
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|run| run.join().map_err(|_| "panicked".to_owned()).and_then(|outcome| outcome))
        .collect();
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    (outcomes, seen)
}

/// Processes 1 and 2 of three leave at once: process 0 stays, both leaves complete, and every
/// record is delivered once and every key counted once with a sequential program's count.
#[test]
fn two_processes_leave_at_once_while_one_stays() {
    let (outcomes, seen) = common::within(LIMIT, || run(3, &[1, 2]));
    for (process, outcome) in outcomes.iter().enumerate() {
        assert!(outcome.is_ok(), "process {process}: {outcome:?}");
    }
    check_delivered_and_counted(&seen, "two leaves at once");
}

/// Both processes of two ask to leave at once: no process would stay, and each stops with an
/// error saying so (the first to see it) or naming the process that stopped first.
#[test]
fn when_every_process_leaves_at_once_the_run_stops_with_an_error() {
    let (outcomes, _) = common::within(LIMIT, || run(2, &[0, 1]));
    let errors: Vec<&String> =
        outcomes.iter().map(|outcome| outcome.as_ref().expect_err("no process may end well")).collect();
    assert!(
        errors.iter().any(|error| error.contains("every process of the cluster is leaving: processes 0, 1")),
        "one process says why: {errors:?}"
    );
    for (process, error) in errors.iter().enumerate() {
        let other = 1 - process;
        assert!(
            error.contains("every process of the cluster is leaving")
                || error.contains(&format!("process {other}")),
            "process {process} says why or names process {other}: {error}"
        );
    }
}
