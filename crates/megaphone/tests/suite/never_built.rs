//! Keyed operators that the workers that stay built before they saw a leave's notice and that
//! the leaver never builds (`docs/megaphone.md`, "Operators built during a leave"). The stayers
//! counted the leaver in; its `Left`, sent once its program returned without building them,
//! tells them it never will, and they drop it as absent, as if it had announced so itself:
//! word count and the keyed sum equal the sequential references over every record fed, the
//! records fed before the leaver left and the moves sent after it left included, and no bin
//! stays with the leaver (before, the leave and the dataflow never completed). A move sent
//! before the leaver left reaches it too; the leaver hands its copy to a worker that stays,
//! which retires it, and the results are exact as well (before, the run stopped with an
//! error: nothing could take that copy).

use crate::common::{
    self, build_keyed, counts_reference, leave_without_building, leave_without_building_stepping_on,
    sums_reference, within, Rng,
};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use timely_engine::dataflow::operators::Captured;
use timely_engine::Worker;
use timely_megaphone::{Bins, Command};

/// The longest a run may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(90);

/// Rounds fed before the stayers wait for the leaver to be gone (with one move at most, in the
/// first round: random moves before then are `built_during_leave`'s).
const EARLY_ROUNDS: u64 = 3;

/// Rounds in all.
const ROUNDS: u64 = 8;

/// What a run fed, both outputs, and each process's outcome.
type Outcome =
    (Vec<(u64, u64, u64)>, Vec<(u64, (u64, u64))>, Vec<(u64, (u64, u64, usize))>, Vec<Result<(), String>>);

/// Three processes of `threads` workers; process 1 leaves once the others built the keyed
/// dataflow and fed a round, and never builds it. With `early_move`, worker 0 moves a bin in
/// that first round, before the leave: its command reaches the leaver. With `steps_on`, the
/// leaver's program does not return during its leave: it steps on until its leave is complete.
fn run(threads: usize, seed: u64, early_move: bool, steps_on: bool) -> Outcome {
    let (processes, leaver) = (3, 1);
    let addresses = common::free_addresses(processes);
    let sent: Arc<Mutex<Vec<(u64, u64, u64)>>> = Arc::default();
    let (counts, sums) = (Captured::new(), Captured::new());
    let bins = Bins::new(16).unwrap();
    let built = Arc::new(AtomicUsize::new(0));
    let stayers = (processes - 1) * threads;
    let program = {
        let (sent, counts, sums) = (sent.clone(), counts.clone(), sums.clone());
        move |worker: &mut Worker| {
            let index = worker.index();
            if index / threads == leaver {
                let first = index == leaver * threads;
                return match steps_on {
                    true => leave_without_building_stepping_on(worker, first, &built, stayers),
                    false => leave_without_building(worker, first, &built, stayers),
                };
            }
            let state = worker.state().clone();
            let leaves = state.rescaling().leaves();
            let mut rng = Rng::new(seed ^ (index as u64) << 32);
            let mut keyed = build_keyed(worker, bins, &counts, &sums);
            assert!(leaves.leaving().is_empty(), "built before the notice");
            let workers = processes * threads;
            for round in 0..ROUNDS {
                if round == 1 {
                    built.fetch_add(1, Ordering::SeqCst);
                }
                if round == EARLY_ROUNDS {
                    while !gone_yet(&leaves.departed(), leaver, threads) {
                        worker.step();
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                let records: Vec<(u64, u64, u64)> =
                    (0..20).map(|_| (round, rng.below(30), rng.below(100))).collect();
                records.iter().for_each(|&(_, key, value)| keyed.data.send((key, value)));
                sent.lock().unwrap().extend(records);
                // After the leave, stayers move bins in turn, to any worker, the leaver's too
                // (the operator overrides moves to a worker that left).
                if early_move && round == 0 && index == 0 {
                    keyed.control.send(Command::Move { bin: 0, worker: 2 * threads });
                }
                if round >= EARLY_ROUNDS && round as usize % workers == index {
                    let moved: BTreeSet<usize> =
                        (0..1 + rng.below(3)).map(|_| rng.below(bins.count() as u64) as usize).collect();
                    for bin in moved {
                        keyed.control.send(Command::Move { bin, worker: rng.below(workers as u64) as usize });
                    }
                }
                keyed.data.advance_to(round + 1);
                keyed.control.advance_to(round + 1);
                (0..3).for_each(|_| _ = worker.step());
            }
            keyed.data.close();
            keyed.control.close();
            worker.step_while(|| !keyed.probe.done());
        }
    };
    let outcomes = common::outcomes(common::start_processes(&addresses, processes, threads, program));
    let sent = std::mem::take(&mut *sent.lock().unwrap());
    (sent, counts.extract(), sums.extract(), outcomes)
}

/// True once every worker of process `leaver` is among `departed`.
fn gone_yet(departed: &[usize], leaver: usize, threads: usize) -> bool {
    (leaver * threads..(leaver + 1) * threads).all(|w| departed.contains(&w))
}

/// Runs and checks both operators against the references.
fn check(threads: usize, seed: u64, early_move: bool, steps_on: bool) {
    let (mut sent, counts, sums, outcomes) = within(LIMIT, move || run(threads, seed, early_move, steps_on));
    for (process, outcome) in outcomes.iter().enumerate() {
        assert!(outcome.is_ok(), "process {process}: {outcome:?}");
    }
    sent.sort();
    assert_eq!(counts, counts_reference(&sent), "word counts differ from the reference");
    let without: Vec<_> = sums.iter().map(|&(time, (key, sum, _))| (time, (key, sum))).collect();
    assert_eq!(without, sums_reference(&sent, 2), "keyed sums differ from the reference");
    let leavers = threads..2 * threads;
    let by_leaver = sums.iter().find(|&&(_, (_, _, worker))| leavers.contains(&worker));
    assert!(by_leaver.is_none(), "a leaver held a bin: {by_leaver:?}");
}

#[test]
fn keyed_operators_the_leaver_never_built_complete_exactly() {
    check(1, 11, false, false);
}

#[test]
fn keyed_operators_a_pair_of_leavers_never_built_complete_exactly() {
    check(2, 12, false, false);
}

/// A move sent before the leaver left reaches the leaver, which never builds the operator: its
/// copy is forwarded to a worker that stays and retired there, and the run completes exactly
/// (before, it stopped with an error naming the dataflow and the leaver).
#[test]
fn a_command_sent_to_a_leaver_that_never_built_the_operator_is_retired() {
    check(1, 13, true, false);
}

#[test]
fn a_command_sent_to_a_pair_of_leavers_that_never_built_the_operator_is_retired() {
    check(2, 14, true, false);
}

/// The leaver's program does not return during its leave: it steps on until its leave is
/// complete, never building the keyed operators. Before, the stayers' operators waited for its
/// `Left` to drop it as absent before they sealed it, and the leaver sent `Left` only once
/// drained, which waited for their seals: the leave never completed.
#[test]
fn keyed_operators_a_leaver_stepping_on_never_built_complete_exactly() {
    check(1, 15, false, true);
}

#[test]
fn keyed_operators_a_pair_of_leavers_stepping_on_never_built_complete_exactly() {
    check(2, 16, true, true);
}
