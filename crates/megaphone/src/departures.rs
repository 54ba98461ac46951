//! Processes that leave the cluster: which workers left the routing table, and where their
//! bins go.
//!
//! When a process leaves, the command operator (C) of each of its workers sends a [`Leave`]
//! at a time of its choosing (the worker's *cutoff*) to every worker's router (F), like a
//! command (`commands`). From its cutoff on, the worker owns no bin: the table in force at a
//! time moves each bin of such a worker to a worker outside the leaving process, by a rule
//! every worker computes alike from the table at that time ([`Departed::evacuate`]). A move a
//! program sends later to a departed worker is overridden the same way, so no bin returns.
//!
//! This module owns that rule and the set of departed workers; when a `Leave` is sent and
//! when routing may stop for a leaver are `commands`' and `router`'s.

use crate::table::RoutingTable;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Worker `worker` leaves with its process: from this record's time on it owns no bin, and
/// no worker of its process receives bins. Sent by the operator itself (never by a program),
/// from the command operator of `worker`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Leave {
    /// The worker whose command operator sent it: it owns no bin from this time on, routes
    /// no record at it or later, and needs no command after it.
    pub worker: usize,
    /// The first worker of the leaving process.
    pub first: usize,
    /// The number of workers of the leaving process (`first..first + count`).
    pub count: usize,
    /// The worker indices in use when it was sent: bins go to those that do not leave.
    pub peers: usize,
    /// The worker built the operator during its own leave and took no part in it (its cutoff
    /// is the operator's first time): a worker that built it before it saw the leave, and so
    /// counted the leaver in, drops the leaving process as if it had never been there, which
    /// is what the workers that built it after the notice did.
    pub absent: bool,
}

impl Leave {
    /// The workers that leave.
    pub fn workers(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.count
    }
}

/// The workers that left the routing table by some time, and the indices in use then.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Departed {
    /// Workers that own no bin.
    evicted: BTreeSet<usize>,
    /// Workers that receive no bin: those of every process that leaves.
    excluded: BTreeSet<usize>,
    peers: usize,
}

impl Departed {
    /// `workers` left before the operator was built, out of `peers` indices in use.
    pub fn new(workers: impl IntoIterator<Item = usize>, peers: usize) -> Self {
        let evicted: BTreeSet<usize> = workers.into_iter().collect();
        Departed { excluded: evicted.clone(), evicted, peers }
    }

    /// The workers that may own bins: those in use that are not excluded.
    pub fn present(&self) -> Vec<usize> {
        (0..self.peers).filter(|worker| !self.excluded.contains(worker)).collect()
    }

    /// True when no worker left.
    pub fn is_empty(&self) -> bool {
        self.excluded.is_empty()
    }

    /// Records `leave`.
    pub fn add(&mut self, leave: &Leave) {
        self.evicted.insert(leave.worker);
        self.excluded.extend(leave.workers());
        self.peers = self.peers.max(leave.peers);
    }

    /// Moves every bin among `bins` whose owner in `table` is evicted to a worker that is not
    /// excluded (indices `0..peers`), each to the one with the fewest bins then (the lowest
    /// index among equals), bins in ascending order. Every worker computes the same table from
    /// the same inputs.
    ///
    /// # Panics
    ///
    /// If every worker departed: a leave never takes the last process.
    pub fn evacuate(&self, table: &mut RoutingTable, bins: impl IntoIterator<Item = usize>) {
        let orphans: BTreeSet<usize> =
            bins.into_iter().filter(|&bin| self.evicted.contains(&table.owner(bin))).collect();
        if orphans.is_empty() {
            return;
        }
        let width = self.peers.max(table.owners().iter().max().map_or(0, |&w| w + 1));
        let mut loads: BTreeSet<(usize, usize)> = table
            .loads(width)
            .into_iter()
            .enumerate()
            .filter(|(worker, _)| !self.excluded.contains(worker))
            .map(|(worker, load)| (load, worker))
            .collect();
        assert!(!loads.is_empty(), "every worker of the keyed operator left: no worker can own its bins");
        for bin in orphans {
            let (load, worker) = loads.pop_first().expect("a worker stays");
            table.set(bin, worker);
            loads.insert((load + 1, worker));
        }
    }

    /// Like [`Departed::evacuate`] over every bin.
    pub fn evacuate_all(&self, table: &mut RoutingTable) {
        if !self.evicted.is_empty() {
            let bins = table.owners().len();
            self.evacuate(table, 0..bins);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::departures::{Departed, Leave};
    use crate::table::RoutingTable;

    #[test]
    fn bins_of_departed_workers_go_to_the_least_loaded_workers_that_stay() {
        // Workers 2 and 3 (one process) leave; worker 0 owns 3 bins, worker 1 one.
        let mut table = RoutingTable::from_owners(vec![0, 0, 0, 1, 2, 2, 3, 3]).unwrap();
        let mut departed = Departed::new([], 4);
        departed.add(&Leave { worker: 2, first: 2, count: 2, peers: 4, absent: false });
        departed.evacuate_all(&mut table);
        // Worker 3 keeps its bins until its own leave, but receives none.
        assert_eq!(table.owners(), &[0, 0, 0, 1, 1, 1, 3, 3]);
        departed.add(&Leave { worker: 3, first: 2, count: 2, peers: 4, absent: false });
        departed.evacuate_all(&mut table);
        assert_eq!(table.owners(), &[0, 0, 0, 1, 1, 1, 0, 1]);
        // A later move to a departed worker is overridden.
        table.set(0, 3);
        departed.evacuate(&mut table, [0]);
        assert_eq!(table.owner(0), 0, "worker 0 has 3 bins, worker 1 has 4");
    }

    #[test]
    fn workers_without_bins_take_bins_too() {
        // Worker 2 joined and owns nothing yet; worker 0's process leaves.
        let mut table = RoutingTable::from_owners(vec![0, 1, 0, 1]).unwrap();
        let mut departed = Departed::new([], 3);
        departed.add(&Leave { worker: 0, first: 0, count: 1, peers: 3, absent: false });
        departed.evacuate_all(&mut table);
        assert_eq!(table.owners(), &[2, 1, 2, 1]);
    }

    #[test]
    #[should_panic(expected = "every worker of the keyed operator left")]
    fn the_last_workers_cannot_leave() {
        let mut table = RoutingTable::from_owners(vec![0, 1]).unwrap();
        let mut departed = Departed::new([1], 2);
        departed.add(&Leave { worker: 0, first: 0, count: 1, peers: 2, absent: false });
        departed.evacuate_all(&mut table);
    }
}
