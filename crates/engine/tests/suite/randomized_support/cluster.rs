//! Runs on loopback "processes": threads of this test, each running `timely_engine::execute`
//! with its own `Config::Cluster` of one worker, connected over loopback TCP. A process joins
//! once worker 0 says it reached the plan's join epoch; leaves are the workers' own doing
//! (`worker.rs`). Odd seeds run with a receive budget of 0: every message spills.

use super::common;
use super::run::Plan;
use super::worker::{run_worker, Run};
use super::DEADLINE;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Runs `run` on `plan.processes` processes, and the joining one if planned; every process's
/// failure, named by process.
pub(super) fn execute(plan: Plan, run: Run) -> Result<(), String> {
    let processes = plan.processes;
    let addresses = common::free_addresses(processes + usize::from(plan.join.is_some()));
    let start = |process: usize, join: Option<usize>| {
        let mut config = common::loopback_cluster(&addresses, process, processes, 1, join);
        if run.seed % 2 == 1 {
            // Odd seeds spill every message from another process (a receive budget of 0), so
            // that spilling and the pullers' per-activation limit meet joins and leaves too.
            if let timely_communication::Config::Cluster(cluster) = &mut config {
                cluster.receive_budget.bytes = 0;
            }
        }
        let (run, status) = (run.clone(), run.clone());
        std::thread::Builder::new()
            .name(format!("randomized-{}-process-{}", run.seed, process))
            .spawn(move || {
                let result = timely_engine::execute(config, move |worker| run_worker(worker, &run));
                let ended = match &result {
                    Ok(_) => "process ended (ok)".to_string(),
                    Err(error) => format!("process ended (failed: {})", error),
                };
                status.status(process, ended);
                result
            })
            .expect("spawn a process thread")
    };
    let mut runs: Vec<_> = (0..processes).map(|process| start(process, None)).collect();
    if plan.join.is_some() {
        let begun = Instant::now();
        while !run.asked.load(Ordering::SeqCst) && begun.elapsed() < DEADLINE {
            std::thread::sleep(Duration::from_millis(1));
        }
        runs.push(start(processes, Some(plan.server())));
    }
    let failures: Vec<String> = runs
        .into_iter()
        .enumerate()
        .filter_map(|(process, run)| match run.join() {
            Ok(Ok(_)) => None,
            Ok(Err(error)) => Some(format!("process {}: {}", process, error)),
            Err(_) => Some(format!("process {} panicked", process)),
        })
        .collect();
    match failures.is_empty() {
        true => Ok(()),
        false => Err(failures.join("; ")),
    }
}
