//! Helpers of the tests of processes leaving a running cluster.

pub mod counted;
mod hold;

pub use hold::{hold_leaver, leave_without_building, leave_without_building_stepping_on};

use crate::common::loopback_cluster as config;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use timely_engine::Worker;

/// Runs `program` on `processes` processes of `threads` workers (threads of this test, on
/// `addresses`) and fails if one of them failed.
pub fn run_processes<F>(addresses: &[String], processes: usize, threads: usize, program: F)
where
    F: Fn(&mut Worker) + Clone + Send + Sync + 'static,
{
    let runs: Vec<_> = (0..processes)
        .map(|process| {
            let (config, program) = (config(addresses, process, processes, threads, None), program.clone());
            std::thread::spawn(move || timely_engine::execute(config, program))
        })
        .collect();
    for (process, run) in runs.into_iter().enumerate() {
        run.join().expect("process thread").unwrap_or_else(|error| panic!("process {process}: {error}"));
    }
}

/// A process of a run with a join, started on a thread of the test.
type Process = std::thread::JoinHandle<Result<Vec<()>, timely_engine::ExecuteError>>;

/// Runs `program` on `initial` processes of `threads` workers (threads of this test, on
/// `addresses`, which has room for one more), and starts process `initial` as a joiner served
/// by worker `server` once a worker sets `join_now`. Any failure of a process fails the test at
/// once, naming it (the others would wait for it).
pub fn run_with_join<F>(
    addresses: &[String],
    (initial, threads, server): (usize, usize, usize),
    join_now: &Arc<AtomicBool>,
    program: F,
) where
    F: Fn(&mut Worker) + Clone + Send + Sync + 'static,
{
    let start = |config: timely_communication::Config| -> Process {
        let program = program.clone();
        std::thread::spawn(move || timely_engine::execute(config, program))
    };
    let mut runs: Vec<Option<Process>> =
        (0..initial).map(|process| Some(start(config(addresses, process, initial, threads, None)))).collect();
    let mut joined = false;
    while runs.iter().any(Option::is_some) {
        if !joined && join_now.load(Ordering::SeqCst) {
            runs.push(Some(start(config(addresses, initial, initial, threads, Some(server)))));
            joined = true;
        }
        for (process, slot) in runs.iter_mut().enumerate() {
            if !slot.as_ref().is_some_and(|run| run.is_finished()) {
                continue;
            }
            if let Err(error) = slot.take().expect("a finished process").join().expect("process thread") {
                panic!("process {process}: {error}");
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}
