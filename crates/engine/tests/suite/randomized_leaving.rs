//! Randomized runs of generated dataflow programs on a cluster that a process leaves while the
//! program runs (`docs/rescaling.md`, "Leaving a running cluster"): three processes of one
//! worker, one of them leaving at a random epoch, or two of them at the same epoch; and two
//! processes, a third joining at a random epoch and then one of the three, the joined one
//! included, leaving at a later one, or two of the three leaving at once after the join.
//!
//! The programs, the sequential reference and the checking operators are those of
//! `randomized.rs`, in `randomized_support`; `randomized_support/run.rs` explains the expected
//! output: the reference over the records the workers actually fed, since a leaver feeds its
//! share only up to its leave and a joined worker only from its join. A leaver calls
//! `worker.leave()` when its own loop over epochs reaches the leave epoch (before feeding it;
//! the epoch after the last: once it fed everything), after the planned join completed, as
//! joins and leaves happen one at a time; sometimes it steps a few times with its inputs
//! still open, then closes them and returns. The others keep their inputs open, past every
//! epoch, until they see it depart, so the leave completes in a running cluster.
//!
//! `TIMELY_RANDOM_SEEDS=N` runs the first `N / 3` seeds whose programs qualify (default 20)
//! per test (`A..B`: the first `(B - A) / 3` from `A` on), `TIMELY_RANDOM_SEED=S` runs only
//! seed `S`, and `TIMELY_RANDOM_LEAVE=W@E` makes worker `W`'s process leave at epoch `E`.

use crate::randomized_support::program::{mix, Program, Rng};
use crate::randomized_support::run::{Leave, Plan};
use crate::randomized_support::run_with_changes;

/// The leave's worker and epoch: `TIMELY_RANDOM_LEAVE=W@E` (to replay a failure with another
/// leave), or drawn from `rng`: any of `workers`, at an epoch in `first..=max_epoch + 1`.
fn leave(rng: &mut Rng, workers: u64, first: u64, program: &Program) -> Leave {
    if let Ok(text) = std::env::var("TIMELY_RANDOM_LEAVE") {
        let (worker, epoch) = text.trim().split_once('@').expect("TIMELY_RANDOM_LEAVE is WORKER@EPOCH");
        return Leave {
            worker: worker.parse().expect("a worker index"),
            epoch: epoch.parse().expect("an epoch"),
            also: None,
        };
    }
    let worker = rng.below(workers) as usize;
    Leave { worker, epoch: rng.range(first, program.max_epoch + 1), also: None }
}

/// Programs on three processes of one worker, one of them (process 0, 1 or 2, drawn from the
/// seed) leaving at a random epoch: outputs equal the reference over the records fed (the
/// leaver's only up to its leave), every checking operator holds on every worker (the leaver
/// too, while it drains), the leaver's run ends, and the others see it depart and no longer
/// list it among the members. Keyed counts and sums stay exact: the keyed exchanges route
/// each time by a membership every worker agrees on. Broadcasts are left out.
#[test]
fn random_programs_with_a_process_leaving() {
    run_with_changes("with a process leaving", |seed, program| {
        let mut rng = Rng::new(mix(seed, 0x1EAF));
        Plan { processes: 3, join: None, leave: Some(leave(&mut rng, 3, 0, program)) }
    });
}

/// Programs on three processes of one worker, two of them leaving when they reach the same
/// random epoch, each on its own (so the two leaves often overlap: each asked for before its
/// process heard of the other's): the one that stays ends with the reference's outputs, and
/// sees both depart. (Before `Drained`, a leaver could go while a stayer's announcement of
/// the other leave was on its way to it, and keyed counts never completed that time.)
#[test]
fn random_programs_with_two_processes_leaving_at_once() {
    run_with_changes("with two processes leaving at once", |seed, program| {
        let mut rng = Rng::new(mix(seed, 0x2EA5));
        let Leave { worker, epoch, .. } = leave(&mut rng, 3, 0, program);
        let also = (worker + 1 + rng.below(2) as usize) % 3;
        Plan { processes: 3, join: None, leave: Some(Leave { worker, epoch, also: Some(also) }) }
    });
}

/// Programs on two processes of one worker, a third joining at a random epoch and then one
/// of the three (the joined one included) leaving at a later random epoch; the joined worker
/// feeds its share of the records too. The same checks as with a leave alone.
#[test]
fn random_programs_with_a_join_then_a_leave() {
    run_with_changes("with a join, then a leave", |seed, program| {
        let mut rng = Rng::new(mix(seed, 0x101E));
        let join = rng.below(program.max_epoch + 1);
        Plan { processes: 2, join: Some(join), leave: Some(leave(&mut rng, 3, join, program)) }
    });
}

/// Programs on two processes of one worker, a third joining at a random epoch, and then two
/// of the three (the joined one among them or not) leaving when they reach the same later
/// random epoch, each on its own: the leaves overlap on a cluster whose membership already
/// changed once, and the joined worker fed its share too. The one that stays ends with the
/// reference's outputs and sees both depart.
#[test]
fn random_programs_with_a_join_then_two_leaving_at_once() {
    run_with_changes("with a join, then two processes leaving at once", |seed, program| {
        let mut rng = Rng::new(mix(seed, 0x21E5));
        let join = rng.below(program.max_epoch + 1);
        let Leave { worker, epoch, .. } = leave(&mut rng, 3, join, program);
        let also = (worker + 1 + rng.below(2) as usize) % 3;
        Plan { processes: 2, join: Some(join), leave: Some(Leave { worker, epoch, also: Some(also) }) }
    });
}
