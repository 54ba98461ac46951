//! When each table is in force: a base table plus the changes (commands and leaves) at later
//! times not yet folded into it.
//!
//! [`Schedule`] answers "which table is in force at `t`": the base after every change with
//! time `<= t`, the program's moves of a time before its leaves (`departures`). This module
//! owns that data structure; when changes arrive and when they may be folded into the base is
//! the router's business (`router`).

use crate::departures::{Departed, Leave};
use crate::table::{Command, RoutingTable};
use std::borrow::Cow;
use std::collections::btree_map::Range;
use std::collections::BTreeMap;

/// What changes the table at one time: the program's moves (a set, once checked) and the
/// leaves of processes, applied after the moves.
#[derive(Clone, Debug, Default)]
struct Changes {
    moves: Vec<Command>,
    leaves: Vec<Leave>,
}

impl Changes {
    /// Applies the moves, then the leaves: bins of departed workers (those moved to one now
    /// included) go to workers that stay.
    fn apply(&self, table: &mut RoutingTable, departed: &mut Departed) {
        table.apply_all(&self.moves).expect("pending commands were checked");
        self.leaves.iter().for_each(|leave| departed.add(leave));
        if !self.leaves.is_empty() {
            departed.evacuate_all(table);
        } else if !departed.is_empty() {
            departed.evacuate(table, self.moves.iter().map(|&Command::Move { bin, .. }| bin));
        }
    }
}

/// A base table (the table after every command up to a time, the last folded) plus the
/// commands at later times not yet folded into it.
#[derive(Clone, Debug)]
pub struct Schedule {
    base: RoutingTable,
    /// The workers departed as of the base.
    departed: Departed,
    folded: Option<u64>,
    pending: BTreeMap<u64, Changes>,
}

impl Schedule {
    /// The schedule whose table is `base` at every time until commands arrive, for an
    /// operator built after the workers of `departed` left.
    pub fn new(base: RoutingTable, departed: Departed) -> Self {
        Schedule { base, departed, folded: None, pending: BTreeMap::new() }
    }

    /// The base table and the last time folded into it.
    pub fn base(&self) -> (&RoutingTable, Option<u64>) {
        (&self.base, self.folded)
    }

    /// The workers departed as of the base table.
    pub fn departed(&self) -> &Departed {
        &self.departed
    }

    /// Replaces the base by `base`, the table after every command up to `folded`, with the
    /// workers departed by then.
    pub fn rebase(&mut self, base: RoutingTable, departed: Departed, folded: Option<u64>) {
        self.base = base;
        self.departed = departed;
        self.folded = folded;
    }

    /// Every pending command with its time, in time order.
    pub fn pending(&self) -> impl Iterator<Item = (u64, &Command)> + '_ {
        self.pending
            .iter()
            .flat_map(|(&time, changes)| changes.moves.iter().map(move |command| (time, command)))
    }

    /// Every pending leave with its time, in time order.
    pub fn pending_leaves(&self) -> impl Iterator<Item = (u64, &Leave)> + '_ {
        self.pending.iter().flat_map(|(&time, changes)| changes.leaves.iter().map(move |leave| (time, leave)))
    }

    /// Adds commands at `time` (checked with [`normalize`] by the caller when complete).
    pub fn add(&mut self, time: u64, commands: impl IntoIterator<Item = Command>) {
        self.pending.entry(time).or_default().moves.extend(commands);
    }

    /// Adds a leave at `time` (once per leave).
    pub fn add_leave(&mut self, time: u64, leave: Leave) {
        let leaves = &mut self.pending.entry(time).or_default().leaves;
        if !leaves.contains(&leave) {
            leaves.push(leave);
            leaves.sort_unstable();
        }
    }

    /// The commands at `time`, for checking them once they are complete.
    pub fn commands_mut(&mut self, time: u64) -> Option<&mut Vec<Command>> {
        self.pending.get_mut(&time).map(|changes| &mut changes.moves)
    }

    /// The commands at `time`.
    pub fn commands(&self, time: u64) -> &[Command] {
        self.pending.get(&time).map_or(&[], |changes| changes.moves.as_slice())
    }

    /// The leaves at `time`.
    pub fn leaves(&self, time: u64) -> &[Leave] {
        self.pending.get(&time).map_or(&[], |changes| changes.leaves.as_slice())
    }

    /// The times of the commands not yet folded into the base table, in order.
    pub fn pending_times(&self) -> impl Iterator<Item = u64> + '_ {
        self.pending.keys().copied()
    }

    /// The table in force at `time`: the base after every pending command with time `<= time`.
    pub fn table_at(&self, time: u64) -> Cow<'_, RoutingTable> {
        self.table_through(self.pending.range(..=time))
    }

    fn table_through<'a>(&'a self, mut changes: Range<'a, u64, Changes>) -> Cow<'a, RoutingTable> {
        match changes.next() {
            None => Cow::Borrowed(&self.base),
            Some((_, first)) => {
                let mut table = self.base.clone();
                let mut departed = self.departed.clone();
                for changes in std::iter::once(first).chain(changes.map(|(_, c)| c)) {
                    changes.apply(&mut table, &mut departed);
                }
                Cow::Owned(table)
            }
        }
    }

    /// Folds the earliest pending commands into the base table if their time is `time`.
    pub fn fold(&mut self, time: u64) {
        if let Some(entry) = self.pending.first_entry().filter(|e| *e.key() == time) {
            entry.remove().apply(&mut self.base, &mut self.departed);
            self.folded = Some(time);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::bins::Bins;
    use crate::departures::Departed;
    use crate::schedule::Schedule;
    use crate::table::{Command, RoutingTable};

    fn mv(bin: usize, worker: usize) -> Command {
        Command::Move { bin, worker }
    }

    #[test]
    fn the_table_at_a_time_follows_every_command_up_to_it() {
        let bins = Bins::new(4).unwrap();
        let mut schedule = Schedule::new(RoutingTable::round_robin(bins, 2).unwrap(), Departed::default());
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
}
