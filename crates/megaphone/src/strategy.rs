//! Planning migrations: from "the table we want" and a strategy to timed commands.
//!
//! [`plan`] compares the current table with a target table and spreads the moves over
//! times according to a [`Strategy`]: all at one time, one bin per time step (fluid), or in
//! batches in which no worker sends or receives more than a given number of bins (batched).
//! [`rebalance`] computes a target table that spreads the bins evenly over some workers while
//! moving as few bins as possible. This module owns only these pure functions;
//! sending the commands is the caller's business.

use crate::error::MegaphoneError;
use crate::table::{Command, RoutingTable};
use std::collections::BTreeSet;

/// How the moves of one reconfiguration are spread over time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Every move at the first time: one large migration.
    AllAtOnce,
    /// One bin per time step: many small migrations, one after the other.
    Fluid,
    /// Batches of moves, one batch per time step, in which every worker sends at most
    /// `per_worker` bins and receives at most `per_worker` bins, so that the moves of a batch
    /// do not queue behind each other on one worker.
    Batched {
        /// The most bins a worker sends (and receives) in one batch; at least 1.
        per_worker: usize,
    },
}

/// One bin changing owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Move {
    bin: usize,
    from: usize,
    to: usize,
}

/// The commands that turn `current` into `target`, at `start`, `start + 1`, ... as
/// `strategy` says; bins whose owner does not change are not moved. The result is in time
/// order; sending every command at its time makes `target` the table in force from the
/// last command's time on.
///
/// # Errors
///
/// [`MegaphoneError::TableSizes`] when the tables differ in size, and
/// [`MegaphoneError::EmptyBatches`] for `Batched { per_worker: 0 }`.
pub fn plan(
    current: &RoutingTable,
    target: &RoutingTable,
    strategy: Strategy,
    start: u64,
) -> Result<Vec<(u64, Command)>, MegaphoneError> {
    let (current, target) = (current.owners(), target.owners());
    if current.len() != target.len() {
        return Err(MegaphoneError::TableSizes { current: current.len(), target: target.len() });
    }
    let moves: Vec<Move> = (0..current.len())
        .filter(|&bin| current[bin] != target[bin])
        .map(|bin| Move { bin, from: current[bin], to: target[bin] })
        .collect();
    let steps: Vec<Vec<Move>> = match strategy {
        Strategy::AllAtOnce => vec![moves],
        Strategy::Fluid => moves.into_iter().map(|m| vec![m]).collect(),
        Strategy::Batched { per_worker: 0 } => return Err(MegaphoneError::EmptyBatches),
        Strategy::Batched { per_worker } => batches(moves, per_worker),
    };
    Ok(steps
        .into_iter()
        .filter(|step| !step.is_empty())
        .zip(start..)
        .flat_map(|(step, time)| {
            step.into_iter().map(move |m| (time, Command::Move { bin: m.bin, worker: m.to }))
        })
        .collect())
}

/// Groups `moves` greedily, in bin order, into batches where no worker sends or receives
/// more than `per_worker` bins. Every batch takes at least the first remaining move.
fn batches(mut remaining: Vec<Move>, per_worker: usize) -> Vec<Vec<Move>> {
    let workers = remaining.iter().map(|m| m.from.max(m.to) + 1).max().unwrap_or(0);
    let mut steps = Vec::new();
    while !remaining.is_empty() {
        let (mut sent, mut received) = (vec![0; workers], vec![0; workers]);
        let (batch, rest): (Vec<Move>, Vec<Move>) = remaining.into_iter().partition(|m| {
            let fits = sent[m.from] < per_worker && received[m.to] < per_worker;
            if fits {
                sent[m.from] += 1;
                received[m.to] += 1;
            }
            fits
        });
        steps.push(batch);
        remaining = rest;
    }
    steps
}

/// A table that spreads `current`'s bins evenly over `workers` (each owns `bins / n` or one
/// more, for `n` distinct workers), keeping every bin whose owner is among them and within its
/// share. Pass `0..peers` for a cluster with no gaps, or the workers present (`members`) once
/// some have left or are about to: bins of workers not listed all move.
///
/// # Errors
///
/// [`MegaphoneError::NoWorkers`] when `workers` is empty.
pub fn rebalance(
    current: &RoutingTable,
    workers: impl IntoIterator<Item = usize>,
) -> Result<RoutingTable, MegaphoneError> {
    let workers: BTreeSet<usize> = workers.into_iter().collect();
    if workers.is_empty() {
        return Err(MegaphoneError::NoWorkers);
    }
    let bins = current.owners().len();
    let width = current.owners().iter().chain(workers.iter()).max().map_or(0, |&w| w + 1);
    let loads = current.loads(width);
    // The `bins % n` larger shares go to the workers that own the most now.
    let mut by_load: Vec<usize> = workers.iter().copied().collect();
    by_load.sort_by_key(|&worker| (std::cmp::Reverse(loads[worker]), worker));
    let mut quota = vec![0; width];
    for (rank, &worker) in by_load.iter().enumerate() {
        quota[worker] = bins / workers.len() + usize::from(rank < bins % workers.len());
    }
    // Keep bins within their owner's share; the rest go to workers below their share.
    let mut owners = current.owners().to_vec();
    let mut kept = vec![0; width];
    let mut surplus = Vec::new();
    for (bin, &owner) in owners.iter().enumerate() {
        if kept[owner] < quota[owner] {
            kept[owner] += 1;
        } else {
            surplus.push(bin);
        }
    }
    let mut receivers =
        workers.iter().flat_map(|&worker| std::iter::repeat_n(worker, quota[worker] - kept[worker]));
    for bin in surplus {
        owners[bin] = receivers.next().expect("the shares add up to the number of bins");
    }
    RoutingTable::from_owners(owners)
}

#[cfg(test)]
mod tests {
    use crate::bins::Bins;
    use crate::strategy::{batches, rebalance, Move};
    use crate::table::RoutingTable;

    #[test]
    fn batches_are_non_interfering_and_cover_every_move() {
        let moves = vec![
            Move { bin: 0, from: 0, to: 2 },
            Move { bin: 1, from: 0, to: 3 },
            Move { bin: 2, from: 1, to: 2 },
            Move { bin: 3, from: 1, to: 3 },
        ];
        let steps = batches(moves.clone(), 1);
        assert_eq!(steps.len(), 2);
        for step in &steps {
            for (i, a) in step.iter().enumerate() {
                for b in &step[i + 1..] {
                    assert!(a.from != b.from && a.to != b.to, "{a:?} and {b:?} interfere");
                }
            }
        }
        assert_eq!(steps.concat().len(), moves.len());
        assert_eq!(batches(moves, 2).len(), 1);
    }

    #[test]
    fn rebalancing_an_even_table_moves_nothing() {
        let table = RoutingTable::round_robin(Bins::new(16).unwrap(), 4).unwrap();
        assert_eq!(rebalance(&table, 0..4).unwrap(), table);
    }
}
