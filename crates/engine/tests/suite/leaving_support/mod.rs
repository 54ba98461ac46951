//! Helpers of the tests of processes leaving a running cluster.

pub mod counted;
mod hold;

pub use hold::{hold_leaver, leave_without_building, leave_without_building_stepping_on};

use crate::common::loopback_cluster as config;
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
