//! Randomized runs of generated dataflow programs on a cluster that a process joins while the
//! program runs (two processes of one worker, a third joining at a random epoch).
//!
//! The programs, the sequential reference and the checking operators are those of
//! `randomized.rs`, in `randomized_support`. `TIMELY_RANDOM_SEEDS=N` runs the first `N / 3`
//! seeds whose programs qualify (default 20; `A..B`: the first `(B - A) / 3` from `A` on),
//! `TIMELY_RANDOM_SEED=S` runs only seed `S`.

use crate::randomized_support::program::Rng;
use crate::randomized_support::run::Plan;
use crate::randomized_support::run_with_changes;

/// Programs on two processes of one worker, a third process joining at a random epoch:
/// outputs equal the reference over the records fed, and every checking operator (no message
/// behind a frontier, no early notification) holds on every worker, the joined one included.
/// The joined worker feeds its share of the records too, from where its bootstrap server's
/// inputs were (its earlier records at the first epoch it may feed). Per-key counts and sums
/// (`count_by_key`, `aggregate`) go through a keyed exchange and must stay exact across the
/// join. Programs whose output depends on the number of workers (broadcasts) are left out.
#[test]
fn random_programs_with_a_process_joining() {
    run_with_changes("with a process joining", |seed, program| {
        let epoch = Rng::new(seed).below(program.max_epoch + 1);
        Plan { processes: 2, join: Some(epoch), leave: None }
    });
}
