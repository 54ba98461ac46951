//! Routing tables and the commands that change them over time.
//!
//! A [`RoutingTable`] says which worker owns each bin. A [`Command`] on the control stream
//! at time `c` changes the table from `c` on; the table in force at time `t` is the initial
//! one after every command with time `<= t` (commands at one time form a set: moving one bin
//! to two workers at one time is an error; `normalize` checks them). Which table is in force
//! when is `schedule`'s business.
//!
//! This module owns these data structures and their rules only.

use crate::bins::Bins;
use crate::error::MegaphoneError;
use serde::{Deserialize, Serialize};

/// A reconfiguration command, sent on a stateful operator's control stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Command {
    /// From the command's time on, worker `worker` owns bin `bin` (its state moves there).
    Move {
        /// The bin.
        bin: usize,
        /// Its new owner.
        worker: usize,
    },
}

/// The owner of every bin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutingTable {
    owners: Vec<usize>,
}

impl RoutingTable {
    /// The initial table of every stateful operator: bin `b` on worker `b % peers`.
    ///
    /// # Errors
    ///
    /// [`MegaphoneError::NoWorkers`] when `peers` is zero.
    pub fn round_robin(bins: Bins, peers: usize) -> Result<Self, MegaphoneError> {
        if peers == 0 {
            return Err(MegaphoneError::NoWorkers);
        }
        Ok(RoutingTable { owners: (0..bins.count()).map(|bin| bin % peers).collect() })
    }

    /// Like [`RoutingTable::round_robin`] over `workers` (ascending): bin `b` on
    /// `workers[b % workers.len()]`, the initial table of an operator built after workers left.
    ///
    /// # Errors
    ///
    /// [`MegaphoneError::NoWorkers`] when `workers` is empty.
    pub fn round_robin_over(bins: Bins, workers: &[usize]) -> Result<Self, MegaphoneError> {
        if workers.is_empty() {
            return Err(MegaphoneError::NoWorkers);
        }
        Ok(RoutingTable { owners: (0..bins.count()).map(|bin| workers[bin % workers.len()]).collect() })
    }

    /// A table with the given owner of each bin.
    ///
    /// # Errors
    ///
    /// [`MegaphoneError::BinCount`] when the number of owners is not a valid bin count.
    pub fn from_owners(owners: Vec<usize>) -> Result<Self, MegaphoneError> {
        Bins::new(owners.len())?;
        Ok(RoutingTable { owners })
    }

    /// The number of bins.
    pub fn bins(&self) -> Bins {
        Bins::new(self.owners.len()).expect("a table has a valid bin count")
    }

    /// The owner of `bin`.
    #[inline]
    pub fn owner(&self, bin: usize) -> usize {
        self.owners[bin]
    }

    /// Makes `worker` the owner of `bin` (which exists).
    pub(crate) fn set(&mut self, bin: usize, worker: usize) {
        self.owners[bin] = worker;
    }

    /// The owner of every bin, by bin.
    pub fn owners(&self) -> &[usize] {
        &self.owners
    }

    /// How many bins each of `peers` workers owns (workers beyond `peers` are not counted).
    pub fn loads(&self, peers: usize) -> Vec<usize> {
        let mut loads = vec![0; peers];
        for &owner in &self.owners {
            if let Some(load) = loads.get_mut(owner) {
                *load += 1;
            }
        }
        loads
    }

    /// Applies `command` (checked against the bin count; workers are not checked here).
    ///
    /// # Errors
    ///
    /// [`MegaphoneError::NoSuchBin`] for a bin the table does not have.
    pub fn apply(&mut self, command: &Command) -> Result<(), MegaphoneError> {
        let Command::Move { bin, worker } = *command;
        self.bins().check(bin)?;
        self.owners[bin] = worker;
        Ok(())
    }

    /// Applies every command of `commands`, in order.
    ///
    /// # Errors
    ///
    /// As [`RoutingTable::apply`]; the commands before the failing one stay applied.
    pub fn apply_all<'a>(
        &mut self,
        commands: impl IntoIterator<Item = &'a Command>,
    ) -> Result<(), MegaphoneError> {
        commands.into_iter().try_for_each(|command| self.apply(command))
    }
}

/// Checks the commands of one time: sorts them, drops duplicates, and rejects a bin moved to
/// two workers, a bin that does not exist or a worker beyond `peers`.
///
/// # Errors
///
/// [`MegaphoneError::ConflictingMoves`], [`MegaphoneError::NoSuchBin`] or
/// [`MegaphoneError::NoSuchWorker`].
pub fn normalize(
    time: u64,
    commands: &mut Vec<Command>,
    bins: Bins,
    peers: usize,
) -> Result<(), MegaphoneError> {
    commands.sort_unstable();
    commands.dedup();
    for pair in commands.windows(2) {
        let (Command::Move { bin: a, worker: x }, Command::Move { bin: b, worker: y }) = (pair[0], pair[1]);
        if a == b {
            return Err(MegaphoneError::ConflictingMoves { time, bin: a, workers: (x, y) });
        }
    }
    for &Command::Move { bin, worker } in commands.iter() {
        bins.check(bin)?;
        if worker >= peers {
            return Err(MegaphoneError::NoSuchWorker { worker, peers });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::bins::Bins;
    use crate::error::MegaphoneError;
    use crate::table::{normalize, Command, RoutingTable};

    fn mv(bin: usize, worker: usize) -> Command {
        Command::Move { bin, worker }
    }

    #[test]
    fn commands_of_one_time_are_a_set() {
        let bins = Bins::new(8).unwrap();
        let mut commands = vec![mv(3, 1), mv(1, 0), mv(3, 1)];
        normalize(7, &mut commands, bins, 2).unwrap();
        assert_eq!(commands, vec![mv(1, 0), mv(3, 1)]);
        let mut conflicting = vec![mv(3, 1), mv(3, 0)];
        assert_eq!(
            normalize(7, &mut conflicting, bins, 2),
            Err(MegaphoneError::ConflictingMoves { time: 7, bin: 3, workers: (0, 1) })
        );
        assert_eq!(
            normalize(0, &mut vec![mv(8, 0)], bins, 2),
            Err(MegaphoneError::NoSuchBin { bin: 8, bins: 8 })
        );
        assert_eq!(
            normalize(0, &mut vec![mv(0, 2)], bins, 2),
            Err(MegaphoneError::NoSuchWorker { worker: 2, peers: 2 })
        );
    }

    #[test]
    fn tables_report_loads_and_reject_bad_sizes() {
        let table = RoutingTable::from_owners(vec![0, 0, 2, 0]).unwrap();
        assert_eq!(table.loads(3), vec![3, 0, 1]);
        assert_eq!(
            RoutingTable::from_owners(vec![0, 0, 0]),
            Err(MegaphoneError::BinCount { count: 3, max: crate::bins::MAX_BINS })
        );
        assert_eq!(RoutingTable::round_robin(table.bins(), 0), Err(MegaphoneError::NoWorkers));
        let mut table = table;
        assert_eq!(table.apply(&mv(4, 0)), Err(MegaphoneError::NoSuchBin { bin: 4, bins: 4 }));
    }
}
