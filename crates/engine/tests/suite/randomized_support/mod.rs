//! Shared by the randomized tests (`randomized.rs`: runs on 1, 2 and 4 worker threads;
//! `randomized_joining.rs`: runs during which a process joins; `randomized_leaving.rs`: runs
//! during which a process leaves, or one joins and then one leaves): generated dataflow
//! programs, a sequential interpreter of them, their construction as dataflows with checking
//! operators, and the runs.
//!
//! Each seed generates a small program: one or two inputs fed over several epochs, each
//! record by a randomly chosen worker, and a pipeline of stages: map, filter, flat_map,
//! exchange, broadcast, branch followed by concat or by a two-input notification join,
//! delay (at top level and directly in loop bodies), keyed per-time count and sum, a
//! notification-driven buffer, regions (nested scopes with the same timestamp), and
//! iterative loops nested up to two deep whose bodies are random pipelines themselves.
//! Some programs are built as two identical dataflows on each worker, watched by one probe.
//! Workers step at random moments: sometimes not at all between epochs, sometimes a few
//! times, sometimes until the probe passes the epoch; some close inputs early. In every run
//!
//! * the `(epoch, record)` multiset it produces must equal that of a sequential
//!   interpreter of the same program description over the records its workers fed (all of
//!   them unless a process leaves or joins: see `run.rs`);
//! * on every worker, checking operators (inserted between random stages and at the
//!   end; some receive through an exchange) and the buffer and join stages check that no
//!   message arrives at a time its input frontier has passed or at or before a time
//!   already notified, that frontiers never move backwards, and that no notification is
//!   delivered while the input frontier can still reach its time;
//! * whenever a worker has waited for the probe to pass an epoch, every output at
//!   earlier epochs must already have been produced;
//! * the run must terminate (each run has a deadline, enforced from a helper thread), a
//!   leaver's too, and the others must see it depart while their inputs are still open.
//!
//! Failures name the seed, the worker count and the program. Environment variables:
//! `TIMELY_RANDOM_SEEDS=N` runs seeds `0..N` per worker count (default 60; `A..B`: seeds
//! `A..B`, to split a large batch over several test processes, each of which has only some
//! thousands of loopback ports for the runs on clusters),
//! `TIMELY_RANDOM_SEED=S` runs only seed `S`, `TIMELY_RANDOM_VERBOSE=1` prints each
//! program.
//!
//! Modules: `program` (randomness, program descriptions, the generator), `reference` (the
//! sequential interpreter), `dataflow` (building a program as a dataflow, the checking
//! operators), `worker` (one worker's part of a run: feeding, stepping, joining, leaving),
//! `cluster` (loopback processes), `run` (running a program and comparing its output with
//! the reference over what its workers fed). This file: seeds and batches of runs.

use crate::common;

mod cluster;
mod dataflow;
pub mod program;
pub mod reference;
pub mod run;
mod worker;

use program::{generate, Program};
use run::{run, Plan, Setup};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Records are kept below this bound by every stage.
const M: u64 = 1000;
/// Seeds run by default per worker count.
const DEFAULT_SEEDS: u64 = 60;
/// A run that takes longer than this is reported as not terminating.
const DEADLINE: Duration = Duration::from_secs(20);
/// Programs whose reference evaluation handles more records than this are regenerated.
const WORK_CAP: usize = 60_000;

// ---------------------------------------------------------------------------------------
// Seeds.

pub fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("TIMELY_RANDOM_SEED") {
        return vec![seed.trim().parse().expect("TIMELY_RANDOM_SEED is a number")];
    }
    let Ok(text) = std::env::var("TIMELY_RANDOM_SEEDS") else {
        return (0..DEFAULT_SEEDS).collect();
    };
    let number = |s: &str| -> u64 { s.trim().parse().expect("TIMELY_RANDOM_SEEDS is N or A..B") };
    match text.split_once("..") {
        Some((first, end)) => (number(first)..number(end)).collect(),
        None => (0..number(&text)).collect(),
    }
}

// ---------------------------------------------------------------------------------------
// Batches of runs.

/// Runs every `(seed, program, setup)` of `runs` and fails listing every failed run. After
/// two runs that did not terminate it stops: their threads are left behind.
pub fn run_batch(label: &str, runs: impl IntoIterator<Item = (u64, Arc<Program>, Setup)>) {
    let verbose = std::env::var("TIMELY_RANDOM_VERBOSE").is_ok();
    let start = Instant::now();
    let (mut ran, mut hung, mut failures) = (0, 0, Vec::new());
    for (seed, program, setup) in runs {
        if verbose {
            eprintln!("seed {} ({:?}): {}", seed, setup, program.describe());
        }
        ran += 1;
        if let Err(failure) = run(seed, &program, setup) {
            eprintln!("FAILED {}", failure);
            hung += usize::from(failure.contains("did not terminate"));
            failures.push(failure);
            if hung >= 2 {
                failures.push("(stopped after two runs that did not terminate)".to_string());
                break;
            }
        }
    }
    eprintln!("{} programs {} in {:?}, {} failed", ran, label, start.elapsed(), failures.len());
    assert!(failures.is_empty(), "{} of {} programs failed:\n{}", failures.len(), ran, failures.join("\n"));
}

/// Runs with membership changes: the first `N / 3` seeds from `A` on (`TIMELY_RANDOM_SEEDS=N`,
/// default 60, `A` = 0; or `A..A+N`) whose programs have no broadcast (its output depends on
/// the number of workers, see `run.rs`), or only seed `TIMELY_RANDOM_SEED=S`; `plan` draws
/// each run's changes from its seed and program.
pub fn run_with_changes(label: &str, plan: impl Fn(u64, &Program) -> Plan) {
    let wanted = match std::env::var("TIMELY_RANDOM_SEED") {
        Ok(_) => 1,
        Err(_) => (seeds().len() / 3).max(1),
    };
    let first = seeds().first().copied().unwrap_or(0);
    let candidates: Vec<u64> = match std::env::var("TIMELY_RANDOM_SEED") {
        Ok(_) => seeds(),
        Err(_) => (first..first + 100_000).collect(),
    };
    let runs: Vec<(u64, Arc<Program>, Setup)> = candidates
        .into_iter()
        .map(|seed| (seed, Arc::new(generate(seed))))
        .filter(|(_, program)| !program.describe().contains("broadcast"))
        .map(|(seed, program)| {
            let setup = Setup::Cluster(plan(seed, &program));
            (seed, program, setup)
        })
        .take(wanted)
        .collect();
    assert_eq!(runs.len(), wanted, "too few generated programs qualify (those with a broadcast do not)");
    run_batch(label, runs);
}
