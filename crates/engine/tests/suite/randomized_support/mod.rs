//! Shared by the randomized tests (`randomized.rs`: runs on 1, 2 and 4 worker threads;
//! `randomized_joining.rs`: runs during which a process joins): generated dataflow programs,
//! a sequential interpreter of them, their construction as dataflows with checking operators,
//! and the runs.
//!
//! Each seed generates a small program: one or two inputs fed over several epochs, each
//! record by a randomly chosen worker, and a pipeline of stages: map, filter, flat_map,
//! exchange, broadcast, branch followed by concat or by a two-input notification join,
//! delay (at top level and directly in loop bodies), keyed per-time count and sum, a
//! notification-driven buffer, regions (nested scopes with the same timestamp), and
//! iterative loops nested up to two deep whose bodies are random pipelines themselves. Some programs are built as two identical dataflows
//! on each worker, watched by one probe. Workers step at random moments: sometimes not
//! at all between epochs, sometimes a few times, sometimes until the probe passes the
//! epoch; some close inputs early. In every run
//!
//! * the `(epoch, record)` multiset it produces must equal that of a sequential
//!   interpreter of the same program description;
//! * on every worker, checking operators (inserted between random stages and at the
//!   end; some receive through an exchange) and the buffer and join stages check that no
//!   message arrives at a time its input frontier has passed or at or before a time
//!   already notified, that frontiers never move backwards, and that no notification is
//!   delivered while the input frontier can still reach its time;
//! * whenever a worker has waited for the probe to pass an epoch, every output at
//!   earlier epochs must already have been produced;
//! * the run must terminate (each run has a deadline, enforced from a helper thread).
//!
//! Failures name the seed, the worker count and the program. Environment variables:
//! `TIMELY_RANDOM_SEEDS=N` runs seeds `0..N` per worker count (default 60),
//! `TIMELY_RANDOM_SEED=S` runs only seed `S`, `TIMELY_RANDOM_VERBOSE=1` prints each
//! program.
//!
//! Modules: `program` (randomness, program descriptions, the generator), `reference` (the
//! sequential interpreter), `dataflow` (building a program as a dataflow, the checking
//! operators), `run` (running a program on a number of workers and comparing).

use crate::common;

mod dataflow;
pub mod program;
pub mod reference;
pub mod run;

use std::time::Duration;

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
    let count = std::env::var("TIMELY_RANDOM_SEEDS")
        .ok()
        .map(|s| s.trim().parse().expect("TIMELY_RANDOM_SEEDS is a number"))
        .unwrap_or(DEFAULT_SEEDS);
    (0..count).collect()
}
