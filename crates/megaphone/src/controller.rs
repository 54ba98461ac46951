//! A controller: the routing table a program has planned, and the moves it has yet to send.
//!
//! A program that reconfigures a keyed operator keeps the table that will be in force once
//! everything it sent applies, plans each reconfiguration from it (after the previous one's
//! last move, so that two plans never move one bin at one time), and sends each move at its
//! time on the control stream. [`Controller`] does that bookkeeping; the program still owns
//! the control input and decides when to reconfigure (for instance when `worker.peers()`
//! grew after a join). This module must not send anything itself.

use crate::departures::Departed;
use crate::error::MegaphoneError;
use crate::strategy::{plan, rebalance, Strategy};
use crate::table::{Command, RoutingTable};
use std::collections::{BTreeSet, VecDeque};

/// The table a program has planned and its moves not sent yet.
#[derive(Clone, Debug)]
pub struct Controller {
    table: RoutingTable,
    queue: VecDeque<(u64, Command)>,
}

impl Controller {
    /// A controller of an operator whose table is `table` (for an operator just built,
    /// `RoutingTable::round_robin(bins, peers)`).
    pub fn new(table: RoutingTable) -> Self {
        Controller { table, queue: VecDeque::new() }
    }

    /// The table in force once every planned move applies.
    pub fn table(&self) -> &RoutingTable {
        &self.table
    }

    /// True when every planned move has been handed out by [`Controller::due`].
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty()
    }

    /// Plans moves to `target` with `strategy`, from `earliest` on or right after the last
    /// planned move, whichever is later; returns how many bins move.
    ///
    /// # Errors
    ///
    /// As [`plan`] (a target of another size, empty batches).
    pub fn move_to(
        &mut self,
        target: RoutingTable,
        strategy: Strategy,
        earliest: u64,
    ) -> Result<usize, MegaphoneError> {
        let start = self.queue.back().map_or(earliest, |&(time, _)| earliest.max(time + 1));
        let moves = plan(&self.table, &target, strategy, start)?;
        let count = moves.len();
        self.queue.extend(moves);
        self.table = target;
        Ok(count)
    }

    /// Plans moves that spread the bins evenly over `workers` (see [`rebalance`]: `0..peers`,
    /// or the workers present once some have left), as [`Controller::move_to`] does; returns
    /// how many bins move.
    ///
    /// # Errors
    ///
    /// [`MegaphoneError::NoWorkers`] for no `workers`, or as [`plan`].
    pub fn rebalance(
        &mut self,
        workers: impl IntoIterator<Item = usize>,
        strategy: Strategy,
        earliest: u64,
    ) -> Result<usize, MegaphoneError> {
        let target = rebalance(&self.table, workers)?;
        self.move_to(target, strategy, earliest)
    }

    /// Plans moves that take every bin off `leaving` (the workers of a process about to
    /// leave) onto the other `members`, each to the one with the fewest bins (the rule a
    /// leave applies at once, [`Departed::evacuate`]), as [`Controller::move_to`] does;
    /// returns how many bins move. Bins of workers that are not members move too (the
    /// table catches up with a leave the controller did not plan); the others stay. A program that sends
    /// these moves, paced by its probe, before it makes the process leave spreads the
    /// migration over several steps; the leave itself then moves no state.
    ///
    /// # Errors
    ///
    /// [`MegaphoneError::NoWorkers`] when no member stays, or as [`plan`].
    pub fn evacuate(
        &mut self,
        leaving: impl IntoIterator<Item = usize>,
        members: impl IntoIterator<Item = usize>,
        strategy: Strategy,
        earliest: u64,
    ) -> Result<usize, MegaphoneError> {
        let leaving: BTreeSet<usize> = leaving.into_iter().collect();
        let staying: BTreeSet<usize> = members.into_iter().filter(|w| !leaving.contains(w)).collect();
        let Some(&last) = staying.last() else { return Err(MegaphoneError::NoWorkers) };
        let width = self.table.owners().iter().chain(leaving.iter()).fold(last + 1, |w, &o| w.max(o + 1));
        let mut target = self.table.clone();
        Departed::new((0..width).filter(|w| !staying.contains(w)), width).evacuate_all(&mut target);
        self.move_to(target, strategy, earliest)
    }

    /// Hands out the planned moves whose time is `time` or earlier, to send now, at `time`.
    /// A move whose planned time has passed (the control input moved on by more than one)
    /// goes at `time` with the others: the moves of one plan are of distinct bins, and later
    /// plans start after earlier ones, so moves sent together never conflict.
    pub fn due(&mut self, time: u64) -> Vec<Command> {
        let count = self.queue.iter().take_while(|&&(at, _)| at <= time).count();
        self.queue.drain(..count).map(|(_, command)| command).collect()
    }

    /// Hands out the earliest planned step (the moves planned for one time), to send now,
    /// whatever time it was planned for. A program that asks for the next step only once the
    /// previous one is complete (its output probe has passed the time it sent it at) paces a
    /// migration by its progress: the batches of `Strategy::Batched` then never queue behind
    /// each other, which sending them at their planned, consecutive times does not ensure.
    /// Use either this or [`Controller::due`] for one controller.
    pub fn next_step(&mut self) -> Vec<Command> {
        let Some(&(first, _)) = self.queue.front() else { return Vec::new() };
        let count = self.queue.iter().take_while(|&&(at, _)| at == first).count();
        self.queue.drain(..count).map(|(_, command)| command).collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::bins::Bins;
    use crate::controller::Controller;
    use crate::strategy::Strategy;
    use crate::table::RoutingTable;

    #[test]
    fn plans_follow_each_other_and_moves_come_out_in_time_order() {
        let bins = Bins::new(8).unwrap();
        let mut controller = Controller::new(RoutingTable::round_robin(bins, 2).unwrap());
        assert_eq!(controller.rebalance(0..4, Strategy::Fluid, 10).unwrap(), 4);
        // A second plan starts after the first one's last move (at 13), not at 11.
        let gathered = RoutingTable::from_owners(vec![0; 8]).unwrap();
        assert_eq!(controller.move_to(gathered.clone(), Strategy::AllAtOnce, 11).unwrap(), 6);
        assert_eq!(controller.table(), &gathered);
        let mut sent = Vec::new();
        for (time, expected) in [(9, 0), (10, 1), (12, 2), (13, 1), (14, 6)] {
            let due = controller.due(time);
            assert_eq!(due.len(), expected, "at {time} (a passed time goes with the current one)");
            sent.extend(due);
        }
        assert!(controller.is_idle());
        let mut replayed = RoutingTable::round_robin(bins, 2).unwrap();
        replayed.apply_all(&sent).unwrap();
        assert_eq!(replayed, gathered);
    }

    #[test]
    fn next_step_hands_out_one_planned_time_at_a_time() {
        let bins = Bins::new(16).unwrap();
        let mut controller = Controller::new(RoutingTable::round_robin(bins, 2).unwrap());
        assert!(controller.next_step().is_empty());
        // 8 bins move from 2 workers to 2 new ones, at most 2 per worker and step: 2 steps.
        assert_eq!(controller.rebalance(0..4, Strategy::Batched { per_worker: 2 }, 100).unwrap(), 8);
        let steps: Vec<usize> = std::iter::from_fn(|| Some(controller.next_step()).filter(|s| !s.is_empty()))
            .map(|step| step.len())
            .collect();
        assert_eq!(steps, vec![4, 4]);
        assert!(controller.is_idle());
    }

    #[test]
    fn evacuate_moves_only_the_leavers_bins_to_the_least_loaded_members() {
        // Worker 1 left earlier (its index stays unused); process {2, 3} is about to leave.
        let table = RoutingTable::from_owners(vec![0, 0, 0, 2, 2, 3, 4, 3]).unwrap();
        let mut controller = Controller::new(table);
        let moved =
            controller.evacuate([2, 3], [0, 2, 3, 4], Strategy::Batched { per_worker: 1 }, 5).unwrap();
        assert_eq!(moved, 4);
        assert_eq!(controller.table().owners(), &[0, 0, 0, 4, 4, 0, 4, 4]);
        // A batch sends and receives at most one bin per worker: worker 4 receives three.
        let steps: Vec<usize> = std::iter::from_fn(|| Some(controller.next_step()).filter(|s| !s.is_empty()))
            .map(|step| step.len())
            .collect();
        assert_eq!(steps, vec![2, 1, 1]);
        assert_eq!(
            Controller::new(RoutingTable::from_owners(vec![0, 1]).unwrap()).evacuate(
                [0, 1],
                [0, 1],
                Strategy::Fluid,
                0
            ),
            Err(crate::error::MegaphoneError::NoWorkers)
        );
    }
}
