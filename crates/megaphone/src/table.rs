//! Routing tables and the commands that change them over time.
//!
//! A [`RoutingTable`] says which worker owns each bin. A [`Command`] on the control stream
//! at time `c` changes the table from `c` on; the table in force at time `t` is the initial
//! one after every command with time `<= t` (commands at one time form a set: moving one bin
//! to two workers at one time is an error). [`Schedule`] keeps a base table plus the commands
//! not yet folded into it and answers "which table is in force at `t`".
//!
//! This module owns these data structures and their rules only; when commands arrive and
//! when they may be folded into the base is the router's business (`router`).

use crate::bins::Bins;
use crate::error::MegaphoneError;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::btree_map::Range;
use std::collections::BTreeMap;

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

/// A base table (the table after every command up to a time, the last folded) plus the
/// commands at later times not yet folded into it.
#[derive(Clone, Debug)]
pub struct Schedule {
    base: RoutingTable,
    folded: Option<u64>,
    pending: BTreeMap<u64, Vec<Command>>,
}

impl Schedule {
    /// The schedule whose table is `base` at every time until commands arrive.
    pub fn new(base: RoutingTable) -> Self {
        Schedule { base, folded: None, pending: BTreeMap::new() }
    }

    /// The base table and the last time folded into it.
    pub fn base(&self) -> (&RoutingTable, Option<u64>) {
        (&self.base, self.folded)
    }

    /// Replaces the base by `base`, the table after every command up to `folded`.
    pub fn rebase(&mut self, base: RoutingTable, folded: Option<u64>) {
        self.base = base;
        self.folded = folded;
    }

    /// Every pending command with its time, in time order.
    pub fn pending(&self) -> impl Iterator<Item = (u64, &Command)> + '_ {
        self.pending.iter().flat_map(|(&time, commands)| commands.iter().map(move |command| (time, command)))
    }

    /// Adds commands at `time` (checked with [`normalize`] by the caller when complete).
    pub fn add(&mut self, time: u64, commands: impl IntoIterator<Item = Command>) {
        self.pending.entry(time).or_default().extend(commands);
    }

    /// The commands at `time`, for checking them once they are complete.
    pub fn commands_mut(&mut self, time: u64) -> Option<&mut Vec<Command>> {
        self.pending.get_mut(&time)
    }

    /// The commands at `time`.
    pub fn commands(&self, time: u64) -> &[Command] {
        self.pending.get(&time).map_or(&[], Vec::as_slice)
    }

    /// The times of the commands not yet folded into the base table, in order.
    pub fn pending_times(&self) -> impl Iterator<Item = u64> + '_ {
        self.pending.keys().copied()
    }

    /// The table in force at `time`: the base after every pending command with time `<= time`.
    pub fn table_at(&self, time: u64) -> Cow<'_, RoutingTable> {
        self.table_through(self.pending.range(..=time))
    }

    fn table_through<'a>(&'a self, mut commands: Range<'a, u64, Vec<Command>>) -> Cow<'a, RoutingTable> {
        match commands.next() {
            None => Cow::Borrowed(&self.base),
            Some((_, first)) => {
                let mut table = self.base.clone();
                for command in first.iter().chain(commands.flat_map(|(_, c)| c.iter())) {
                    table.apply(command).expect("pending commands were checked");
                }
                Cow::Owned(table)
            }
        }
    }

    /// Folds the earliest pending commands into the base table if their time is `time`.
    pub fn fold(&mut self, time: u64) {
        if let Some(entry) = self.pending.first_entry().filter(|e| *e.key() == time) {
            let commands = entry.remove();
            self.base.apply_all(&commands).expect("pending commands were checked");
            self.folded = Some(time);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::bins::Bins;
    use crate::error::MegaphoneError;
    use crate::table::{normalize, Command, RoutingTable, Schedule};

    fn mv(bin: usize, worker: usize) -> Command {
        Command::Move { bin, worker }
    }

    #[test]
    fn the_table_at_a_time_follows_every_command_up_to_it() {
        let bins = Bins::new(4).unwrap();
        let mut schedule = Schedule::new(RoutingTable::round_robin(bins, 2).unwrap());
        schedule.add(5, [mv(0, 1)]);
        schedule.add(3, [mv(1, 0), mv(2, 1)]);
        assert_eq!(schedule.table_at(2).owners(), &[0, 1, 0, 1]);
        assert_eq!(schedule.table_at(3).owners(), &[0, 0, 1, 1]);
        assert_eq!(schedule.table_at(4).owners(), &[0, 0, 1, 1]);
        assert_eq!(schedule.base().1, None);
        assert_eq!(schedule.table_at(5).owners(), &[1, 0, 1, 1]);
        assert_eq!(schedule.table_at(u64::MAX).owners(), &[1, 0, 1, 1]);
        // Folding the earliest time keeps every answer from then on.
        schedule.fold(5);
        assert_eq!(schedule.pending_times().collect::<Vec<_>>(), vec![3, 5], "only the earliest folds");
        schedule.fold(3);
        assert_eq!(schedule.base().1, Some(3));
        assert_eq!(schedule.table_at(3).owners(), &[0, 0, 1, 1]);
        assert_eq!(schedule.table_at(5).owners(), &[1, 0, 1, 1]);
        schedule.fold(5);
        assert!(schedule.pending_times().next().is_none());
        assert_eq!(schedule.table_at(0).owners(), &[1, 0, 1, 1]);
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
