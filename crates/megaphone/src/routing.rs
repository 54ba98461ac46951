//! The routing state of one keyed operator on one worker, and how a worker that joined the
//! cluster assembles it from what the others send.
//!
//! The routing state is F's [`Schedule`] (the table in force, commands not yet folded into
//! it) and, for handing it over, the commands this worker's command operator sent to the
//! workers it knew at the time (`commands`). A worker that joins a running cluster builds the
//! operators like every other worker but does not know the routing state: it waits until each
//! worker that was there before has sent its [`RoutingState`] (see `handover` for when and
//! why every one of them), then takes the most advanced base table and every command the
//! parts carry. Until then its F routes nothing and ships nothing.
//!
//! This module owns the data and the merge; the operators that read and write it are
//! `commands` (C), `handover` (K) and `router` (F).

use crate::bins::Bins;
use crate::departures::{Departed, Leave};
use crate::schedule::Schedule;
use crate::table::{normalize, Command, RoutingTable};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One existing worker's part of the routing state, sent to a worker that joined.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutingState {
    /// The worker that receives it.
    pub target: usize,
    /// The worker that sent it.
    pub from: usize,
    /// The sender's base table (owners by bin), the last time folded into it and the workers
    /// departed by then; `None` when the sender joined itself and has not assembled its own
    /// routing state yet.
    pub base: Option<(Vec<usize>, Option<u64>, Departed)>,
    /// Commands the base does not include: the sender's pending ones and those it sent.
    pub commands: Vec<(u64, Command)>,
    /// Leaves the base does not include.
    pub leaves: Vec<(u64, Leave)>,
}

/// The routing state shared by F, C and K on one worker.
pub struct Routing {
    schedule: Schedule,
    /// Commands this worker's C sent, by time, after the base's last folded time.
    sent: BTreeMap<u64, Vec<Command>>,
    /// On a worker that joined, until every existing worker's part is in.
    waiting: Option<Waiting>,
    /// Set once neither records nor commands can reach F any more.
    finished: bool,
}

/// The parts of the routing state a joined worker has received, and whose it expects.
struct Waiting {
    existing: BTreeSet<usize>,
    parts: Vec<RoutingState>,
}

impl Routing {
    /// The routing state of an operator built with `table` after the workers of `departed`
    /// left; `joined` names the workers there before the join (and not gone) when this worker
    /// joined a cluster that runs the operator already.
    pub fn new(table: RoutingTable, departed: Departed, joined: Option<Vec<usize>>) -> Self {
        let waiting =
            joined.map(|existing| Waiting { existing: existing.into_iter().collect(), parts: Vec::new() });
        let schedule = Schedule::new(table, departed);
        Routing { schedule, sent: BTreeMap::new(), waiting, finished: false }
    }

    /// True once the routing state is complete: always, except on a joined worker until
    /// every existing worker's part is in.
    pub fn is_known(&self) -> bool {
        self.waiting.is_none()
    }

    /// F's schedule.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// F's schedule, to change.
    pub fn schedule_mut(&mut self) -> &mut Schedule {
        &mut self.schedule
    }

    /// Records that C sent `commands` at `time` to the workers it knew.
    pub fn record_sent(&mut self, time: u64, commands: impl IntoIterator<Item = Command>) {
        self.sent.entry(time).or_default().extend(commands);
    }

    /// Forgets the sent commands the base table includes.
    pub fn forget_folded(&mut self) {
        if let (_, Some(folded)) = self.schedule.base() {
            self.sent = self.sent.split_off(&(folded + 1));
        }
    }

    /// Records that no record or command can reach F any more.
    pub fn finish(&mut self) {
        self.finished = true;
    }

    /// True once no record or command can reach F any more (no worker needs this state).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// This worker's part of the routing state, for `target`, which joined.
    pub fn part_for(&self, from: usize, target: usize) -> RoutingState {
        let (table, folded) = self.schedule.base();
        let departed = self.schedule.departed().clone();
        let base = self.is_known().then(|| (table.owners().to_vec(), folded, departed));
        let after = |&(time, _): &(u64, &Command)| folded.is_none_or(|folded| time > folded);
        let sent = self.sent.iter().flat_map(|(&time, commands)| commands.iter().map(move |c| (time, c)));
        let commands = self.schedule.pending().chain(sent).filter(after).map(|(t, c)| (t, *c)).collect();
        let leaves = self.schedule.pending_leaves().map(|(time, leave)| (time, *leave)).collect();
        RoutingState { target, from, base, commands, leaves }
    }

    /// Takes in a part of the routing state; once every existing worker's part is in, builds
    /// the routing state from them and returns true.
    ///
    /// # Panics
    ///
    /// On a part that no worker should have sent (this worker is not joining, the sender is
    /// not an existing worker or sent twice, the table does not fit `bins` and `peers`) or on
    /// commands that fail [`normalize`]: the routing state would be wrong.
    pub fn receive(&mut self, part: RoutingState, bins: Bins, peers: usize) -> bool {
        let waiting = self.waiting.as_mut().unwrap_or_else(|| {
            panic!("worker {} sent a routing state to worker {}, which has one", part.from, part.target)
        });
        let duplicate = waiting.parts.iter().any(|other| other.from == part.from);
        assert!(
            waiting.existing.contains(&part.from) && !duplicate,
            "unexpected routing state from worker {} (expected one from each of workers {:?})",
            part.from,
            waiting.existing
        );
        if let Some((owners, _, _)) = &part.base {
            let valid = owners.len() == bins.count() && owners.iter().all(|&owner| owner < peers);
            assert!(valid, "routing state from worker {}: a table that does not fit", part.from);
        }
        waiting.parts.push(part);
        if waiting.parts.len() < waiting.existing.len() {
            return false;
        }
        let parts = self.waiting.take().expect("waiting").parts;
        self.assemble(parts, bins, peers);
        true
    }

    /// Builds the routing state from every existing worker's part: the most advanced base
    /// table, and every command after it.
    fn assemble(&mut self, parts: Vec<RoutingState>, bins: Bins, peers: usize) {
        let (owners, folded, departed) = parts
            .iter()
            .filter_map(|part| part.base.clone())
            .max_by_key(|(_, folded, _)| *folded)
            .expect("a worker that was there from the start knows the routing state");
        let table = RoutingTable::from_owners(owners).expect("checked on receipt");
        self.schedule.rebase(table, departed, folded);
        // A time is folded only once every worker has shipped its bins (see `router`), and
        // this worker takes bins only at later times: commands up to the base are of no use.
        let mut touched = BTreeSet::new();
        for part in parts {
            for (time, command) in part.commands {
                if folded.is_none_or(|folded| time > folded) {
                    self.schedule.add(time, [command]);
                    touched.insert(time);
                }
            }
            for (time, leave) in part.leaves {
                if folded.is_none_or(|folded| time > folded) {
                    self.schedule.add_leave(time, leave);
                }
            }
        }
        for time in touched {
            let commands = self.schedule.commands_mut(time).expect("just added");
            if let Err(error) = normalize(time, commands, bins, peers) {
                panic!("routing state received by a joined worker: {error}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::bins::Bins;
    use crate::departures::Departed;
    use crate::routing::{Routing, RoutingState};
    use crate::table::{Command, RoutingTable};

    fn mv(bin: usize, worker: usize) -> Command {
        Command::Move { bin, worker }
    }

    /// An existing worker's routing state: bins round robin over 2 workers, a move at 3
    /// folded, a pending move at 7, and a move it sent at 9 that its F has not read yet.
    fn existing() -> Routing {
        let mut routing = Routing::new(
            RoutingTable::round_robin(Bins::new(4).unwrap(), 2).unwrap(),
            Departed::default(),
            None,
        );
        routing.schedule_mut().add(3, [mv(0, 1)]);
        routing.schedule_mut().add(7, [mv(1, 0)]);
        routing.record_sent(3, [mv(0, 1)]);
        routing.record_sent(9, [mv(2, 1)]);
        routing.schedule_mut().fold(3);
        routing.forget_folded();
        routing
    }

    #[test]
    fn a_part_carries_the_base_pending_and_sent_commands_after_it() {
        let part = existing().part_for(1, 2);
        assert_eq!(part.base, Some((vec![1, 1, 0, 1], Some(3), Departed::default())));
        assert_eq!(part.commands, vec![(7, mv(1, 0)), (9, mv(2, 1))]);
        assert_eq!((part.from, part.target), (1, 2));
    }

    #[test]
    fn a_joined_worker_assembles_the_most_advanced_base_and_every_later_command() {
        let bins = Bins::new(4).unwrap();
        let mut joined = Routing::new(
            RoutingTable::round_robin(bins, 4).unwrap(),
            Departed::default(),
            Some(vec![0, 1, 2]),
        );
        assert!(!joined.is_known());
        // Worker 0 has folded nothing; worker 1 is ahead. A part may repeat commands.
        let behind = RoutingState {
            target: 3,
            from: 0,
            base: Some((vec![0, 1, 0, 1], None, Departed::default())),
            commands: vec![(3, mv(0, 1)), (7, mv(1, 0)), (7, mv(1, 0))],
            leaves: Vec::new(),
        };
        // Worker 2 joined earlier and has no table yet, but sent a command of its own.
        let unknown = RoutingState {
            target: 3,
            from: 2,
            base: None,
            commands: vec![(11, mv(3, 2))],
            leaves: Vec::new(),
        };
        assert!(!joined.receive(behind, bins, 4));
        assert!(!joined.receive(unknown, bins, 4));
        assert!(joined.receive(existing().part_for(1, 3), bins, 4));
        assert!(joined.is_known());
        let schedule = joined.schedule();
        assert_eq!(schedule.base(), (&RoutingTable::from_owners(vec![1, 1, 0, 1]).unwrap(), Some(3)));
        let pending: Vec<(u64, Command)> =
            schedule.pending().map(|(time, command)| (time, *command)).collect();
        assert_eq!(pending, vec![(7, mv(1, 0)), (9, mv(2, 1)), (11, mv(3, 2))]);
        assert_eq!(schedule.table_at(9).owners(), &[1, 0, 1, 1]);
        assert_eq!(schedule.table_at(11).owners(), &[1, 0, 1, 2]);
    }

    #[test]
    #[should_panic(expected = "unexpected routing state from worker 0")]
    fn a_second_part_from_one_worker_is_refused() {
        let bins = Bins::new(4).unwrap();
        let mut joined =
            Routing::new(RoutingTable::round_robin(bins, 3).unwrap(), Departed::default(), Some(vec![0, 1]));
        let part = RoutingState { target: 2, from: 0, base: None, commands: Vec::new(), leaves: Vec::new() };
        joined.receive(part.clone(), bins, 3);
        joined.receive(part, bins, 3);
    }

    #[test]
    #[should_panic(expected = "a table that does not fit")]
    fn a_table_naming_unknown_workers_is_refused() {
        let bins = Bins::new(4).unwrap();
        let mut joined =
            Routing::new(RoutingTable::round_robin(bins, 3).unwrap(), Departed::default(), Some(vec![0]));
        let base = Some((vec![0, 5, 0, 1], None, Departed::default()));
        let part = RoutingState { target: 2, from: 0, base, commands: Vec::new(), leaves: Vec::new() };
        joined.receive(part, bins, 3);
    }

    #[test]
    #[should_panic(expected = "which has one")]
    fn a_worker_that_knows_its_routing_state_refuses_parts() {
        let bins = Bins::new(4).unwrap();
        let part = RoutingState { target: 1, from: 0, base: None, commands: Vec::new(), leaves: Vec::new() };
        existing().receive(part, bins, 2);
    }
}
