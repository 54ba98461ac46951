//! One keyed operator on one worker while processes leave (`docs/megaphone.md`, "Leaves").
//!
//! A leaving worker `w` hands its part of the operator to the others in three steps:
//!
//! - its command operator (C) picks a *cutoff* time and sends a [`Leave`] at it to every
//!   router (F): from the cutoff on, `w` owns no bin (`departures`), and no command after it
//!   needs to reach `w`;
//! - from then on, the records `w`'s own upstream gives F at the cutoff or later go to a
//!   worker that stays ([`Redirect`], the edge into F), so `w`'s F only ever routes records
//!   before its cutoff, for which it has every command;
//! - every other worker stops sending to `w` once it cannot route a record or ship a bin to
//!   it any more and its C has no command left to send it ([`Leaving`] tells the engine,
//!   which then seals `w`).
//!
//! The cutoff is later than every time `w`'s F may still hold records at, and C holds a
//! capability at the commands' frontier until it sent its `Leave`, so no worker routes a time
//! at or after the cutoff before the `Leave` reached it.
//!
//! This module owns what C, F and the data edge share about leaves on one worker.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use timely_engine::dataflow::Members;
use timely_engine::rescale::leave::KeyedRoutes;
use timely_engine::worker::WorkerState;

pub use crate::departures::Leave;

/// What C, F and the data edge of one keyed operator share about leaves on one worker.
#[derive(Default)]
pub struct Leaving {
    /// Workers that take no part in the operator: those leaving or gone when this worker
    /// built it. They own no bin, and nothing is sent to them: a leaver may never build the
    /// operator (its program usually returns at the notice). A leaver that builds it routes
    /// none of its records itself (all go to a worker that stays).
    outside: RefCell<BTreeSet<usize>>,
    /// The cutoff of every worker whose `Leave` this worker's F has read (or C sent).
    cutoffs: RefCell<BTreeMap<usize, u64>>,
    /// This worker's cutoff, once its C sent its `Leave`.
    own_cutoff: Cell<Option<u64>>,
    /// The latest time of the records the data edge delivered to this worker's F.
    pushed: Cell<Option<u64>>,
    /// The earliest time at which C may still send a command (`None`: never).
    commands_from: Cell<Option<u64>>,
    /// The earliest time at which F may still route a record (`None`: never).
    route_from: Cell<Option<u64>>,
    /// The earliest time at which F may still ship a bin (`None`: never).
    ship_from: Cell<Option<u64>>,
    /// F's data frontier, which C follows once the commands ended.
    data_frontier: Cell<Option<u64>>,
    /// False on a joined worker until its routing state is assembled.
    known: Cell<bool>,
}

impl Leaving {
    /// The shared state, registered with the engine so that it asks before sealing a leaver;
    /// `outside`: the workers leaving or gone when this worker built the operator.
    pub fn new(worker: &WorkerState, known: bool, outside: impl IntoIterator<Item = usize>) -> Rc<Self> {
        let outside: BTreeSet<usize> = outside.into_iter().collect();
        // A worker that builds the operator during its own leave routes nothing from the start.
        let own_cutoff = Cell::new(outside.contains(&worker.index()).then_some(0));
        let outside = RefCell::new(outside);
        let leaving = Rc::new(Leaving { known: Cell::new(known), outside, own_cutoff, ..Leaving::default() });
        let routes: std::rc::Weak<dyn KeyedRoutes> = Rc::downgrade(&leaving) as _;
        worker.rescaling().leaves().register_routes(routes);
        leaving
    }

    /// Records `leave`, read at `time` (or sent, by this worker's C).
    pub fn record(&self, time: u64, leave: &Leave) {
        self.cutoffs.borrow_mut().insert(leave.worker, time);
    }

    /// True if a command or leave at `time` must reach `worker`: it takes part in the
    /// operator and routes records up to its cutoff only.
    pub fn sends_to(&self, worker: usize, time: u64) -> bool {
        self.takes_part(worker) && self.cutoffs.borrow().get(&worker).is_none_or(|&cutoff| time <= cutoff)
    }

    /// True if `worker` takes part in the operator (it was not leaving or gone when this
    /// worker built it, and did not announce that it built it during its own leave).
    pub fn takes_part(&self, worker: usize) -> bool {
        !self.outside.borrow().contains(&worker)
    }

    /// Records that `workers` take no part in the operator after all (their process built it
    /// during its leave).
    pub fn exclude(&self, workers: impl IntoIterator<Item = usize>) {
        self.outside.borrow_mut().extend(workers);
    }

    /// The cutoff for this worker's `Leave`, whose C holds a capability at `held`: after every
    /// record its F may hold.
    pub fn choose_cutoff(&self, held: u64) -> u64 {
        let cutoff = self.pushed.get().map_or(held, |pushed| held.max(pushed.saturating_add(1)));
        self.own_cutoff.set(Some(cutoff));
        cutoff
    }

    /// C's report: the earliest time at which it may still send.
    pub fn set_commands_from(&self, time: Option<u64>) {
        self.commands_from.set(time);
    }

    /// F's report: the earliest times at which it may still route a record and ship a bin,
    /// its data frontier, and whether its routing state is known.
    pub fn set_router(
        &self,
        route_from: Option<u64>,
        ship_from: Option<u64>,
        data: Option<u64>,
        known: bool,
    ) {
        self.route_from.set(route_from);
        self.ship_from.set(ship_from);
        self.data_frontier.set(data);
        self.known.set(known);
    }

    /// F's data frontier as of its last run.
    pub fn data_frontier(&self) -> Option<u64> {
        self.data_frontier.get()
    }
}

impl KeyedRoutes for Leaving {
    fn may_route_to(&self, worker: usize) -> bool {
        if !self.takes_part(worker) {
            return false;
        }
        // Before its cutoff is known, anything this worker may still send may go to `worker`.
        let cutoff = self.cutoffs.borrow().get(&worker).copied();
        let before = |time: Option<u64>| time.is_some_and(|time| cutoff.is_none_or(|cutoff| time < cutoff));
        let through = |time: Option<u64>| time.is_some_and(|time| cutoff.is_none_or(|cutoff| time <= cutoff));
        !self.known.get()
            || through(self.commands_from.get())
            || before(self.route_from.get())
            || before(self.ship_from.get())
    }
}

/// The edge into F: a worker's records stay on it, except on a leaving worker, whose records
/// at its cutoff or later go to a worker that stays.
pub struct Redirect {
    leaving: Rc<Leaving>,
    /// The members last set, and whether they are this worker alone.
    local: bool,
}

impl Redirect {
    /// The edge for the operator whose shared leave state is `leaving`.
    pub fn new(leaving: Rc<Leaving>) -> Self {
        Redirect { leaving, local: false }
    }
}

impl Members<u64> for Redirect {
    #[inline]
    fn update(&mut self, time: &u64, worker: &WorkerState, members: &mut Vec<usize>) {
        if self.leaving.own_cutoff.get().is_some_and(|cutoff| *time >= cutoff) {
            let stayer = *worker.members().first().expect("a leave leaves a worker in the cluster");
            members.clear();
            members.push(stayer);
            self.local = false;
            return;
        }
        let pushed = &self.leaving.pushed;
        if pushed.get().is_none_or(|latest| latest < *time) {
            pushed.set(Some(*time));
        }
        if !self.local {
            members.clear();
            members.push(worker.index());
            self.local = true;
        }
    }
}
