//! Operator F: routes records by the routing table in force at their time, and ships the
//! state of bins that move away from this worker.
//!
//! F reads the data stream (from this worker), the commands (C hands every command to every
//! worker's F) and, on a worker that joined, parts of the routing state (from K, see
//! `handover`). A record at time `t` is routed once the control frontier has passed `t` (every
//! command that can change the table at `t` is known) and the routing state is known; until
//! then it waits in F's stash with its capability. Commands at time `c` are checked once the
//! control frontier passes `c`; F keeps a capability at `c` until it has shipped the bins that
//! leave this worker at `c`, which it does once S reports (`Shared::done_before`) that every
//! record and notification before `c` is processed. Commands fold into the base table once no
//! record before their time can reach F and every worker has shipped their bins.
//!
//! This module owns F's bookkeeping (stash, capabilities of unshipped moves); the schedule is
//! the routing state's (`routing`), the bin state `state`'s, and running the user's logic
//! `stateful`'s.

use crate::bins::Bins;
use crate::codec::{BinState, Routed};
use crate::commands::Update;
use crate::departures::Leave;
use crate::leaving::{Leaving, Redirect};
use crate::routing::{Routing, RoutingState};
use crate::state::Shared;
use crate::table::{normalize, Command, RoutingTable};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::Hash;
use std::rc::Rc;
use timely_engine::dataflow::operators::{Capability, InputPort, OperatorBuilder, OutputPort};
use timely_engine::dataflow::{
    copies_to_worker, to_worker, ByHash, Data, ExchangeData, ExchangeWith, Pipeline, Stream,
};
use timely_engine::progress::{Antichain, MutableAntichain};
use timely_engine::scheduling::Activator;
use timely_engine::worker::WorkerState;

/// What F produces: routed records, bins on their way to new owners, and F's activator.
pub type RouterOutputs<D, K, S> = (Stream<u64, Routed<D>>, Stream<u64, BinState<K, S>>, Activator);

/// F's inputs besides the data: commands from every worker's C, parts of the routing state
/// from K (on a worker that joined), K's and C's activators, and what C, F and the data edge
/// share about leaves.
pub struct RouterInputs {
    /// Commands and leaves, each sent to this worker by the C of the worker where it entered.
    pub commands: Stream<u64, Routed<Update>>,
    /// Parts of the routing state, sent by K.
    pub parts: Stream<u64, RoutingState>,
    /// Wakes K (once the routing state is no longer needed).
    pub handover: Activator,
    /// Wakes C (F's data frontier moved: C follows it once the commands ended).
    pub commands_operator: Rc<Activator>,
    /// Shared with C and the data edge.
    pub leaving: Rc<Leaving>,
}

/// Builds F for `data`.
pub fn router<D, K, S>(
    name: &str,
    data: &Stream<u64, D>,
    inputs: RouterInputs,
    key: Rc<dyn Fn(&D) -> K>,
    shared: Rc<RefCell<Shared<K, S>>>,
    routing: Rc<RefCell<Routing>>,
) -> RouterOutputs<D, K, S>
where
    D: ExchangeData,
    K: ExchangeData + Hash + Eq,
    S: ExchangeData + Default,
{
    let mut builder = OperatorBuilder::new(&format!("{name}.F"), data.scope());
    // Where processes may leave, a leaver's records at its cutoff or later go to a worker that
    // stays (`leaving`); otherwise records stay on their worker.
    let mut data_in = if data.scope().worker().allocator().can_rescale() {
        let redirect = ExchangeWith::new(Redirect::new(inputs.leaving.clone()), ByHash(|_: &D| 0));
        builder.new_input(data, redirect)
    } else {
        builder.new_input(data, Pipeline)
    };
    // Commands are copies, one per worker: what a leaver that never built the operator
    // received of them is retired by a worker that stays (`timely_engine::dataflow::forwarded`).
    let mut control_in =
        builder.new_input(&inputs.commands, copies_to_worker(|routed: &Routed<Update>| routed.target));
    let mut parts_in = builder.new_input(&inputs.parts, to_worker(|part: &RoutingState| part.target));
    // Parts of the routing state reach no output: they carry no records and no capability.
    let connection = || vec![Antichain::from_elem(0), Antichain::from_elem(0), Antichain::new()];
    let (mut routed_out, routed) = builder.new_output_connection(connection());
    let (mut states_out, states) = builder.new_output_connection(connection());
    let activator = builder.info().activator.clone();
    let worker_state = data.scope().worker().clone();
    let dataflow = data.scope().address()[0];
    let bins = shared.borrow().bins();
    let mut router = Router {
        name: name.to_owned(),
        worker: builder.info().worker,
        bins,
        routing,
        handover: inputs.handover,
        commands_operator: inputs.commands_operator,
        leaving: inputs.leaving,
        data_frontier: Some(0),
        unchecked: BTreeSet::new(),
        unshipped: BTreeMap::new(),
        stash: BTreeMap::new(),
        key,
        shared,
    };
    builder.build_logic(move |frontiers| {
        let (data_frontier, control_frontier) = (&frontiers[0], &frontiers[1]);
        let peers = worker_state.peers();
        router.forget_unbuilt(&worker_state, dataflow);
        router.receive_parts(&mut parts_in, peers);
        router.read_commands(&mut control_in, control_frontier, peers);
        router.route_input(&mut data_in, control_frontier, &mut routed_out);
        if router.routing.borrow().is_known() {
            router.route_stash(control_frontier, &mut routed_out);
            router.ship(control_frontier, &mut states_out);
            router.fold(data_frontier);
        }
        router.finish_when_idle(data_frontier, control_frontier);
        router.report(data_frontier, control_frontier);
        false
    });
    (routed, states, activator)
}

/// F's state on one worker.
struct Router<D, K, S> {
    name: String,
    worker: usize,
    bins: Bins,
    routing: Rc<RefCell<Routing>>,
    handover: Activator,
    commands_operator: Rc<Activator>,
    leaving: Rc<Leaving>,
    /// The data frontier as of the last run.
    data_frontier: Option<u64>,
    /// Times of commands not yet checked (the control frontier has not passed them).
    unchecked: BTreeSet<u64>,
    /// A capability for each time whose moves are not shipped yet.
    unshipped: BTreeMap<u64, Capability<u64>>,
    /// Records at times the control frontier has not passed (or, on a worker that joined,
    /// before the routing state is known), with their capability.
    stash: BTreeMap<u64, (Capability<u64>, Vec<D>)>,
    key: Rc<dyn Fn(&D) -> K>,
    shared: Rc<RefCell<Shared<K, S>>>,
}

impl<D: Data, K: ExchangeData + Hash + Eq, S: ExchangeData + Default> Router<D, K, S> {
    /// Takes in parts of the routing state (only a worker that joined receives them).
    fn receive_parts(&mut self, input: &mut InputPort<u64, RoutingState>, peers: usize) {
        let mut routing = self.routing.borrow_mut();
        input.for_each(|_capability, parts| {
            for part in parts.drain(..) {
                routing.receive(part, self.bins, peers);
            }
        });
    }

    /// Drops, as absent, every worker this one counted in that left without ever building the
    /// operator's dataflow (`dataflow`): this worker built it before it saw the leave, and the
    /// leaver's program returned without building it. Nothing was routed yet: the leaver's
    /// initial capability of C, which this worker counted until the leaver's `Left` retired
    /// it, held the operator's first time. Commands this worker's C sent the leaver before
    /// then are never taken; the engine stops the run for them (`docs/megaphone.md`).
    fn forget_unbuilt(&mut self, worker: &WorkerState, dataflow: usize) {
        let leaves = worker.rescaling().leaves();
        let unbuilt = leaves.left_without_building(dataflow);
        let Some(&gone) = unbuilt.iter().find(|&&gone| self.leaving.takes_part(gone)) else { return };
        let threads = worker.allocator().threads();
        let first = gone / threads * threads;
        let leave = Leave { worker: gone, first, count: threads, peers: worker.peers(), absent: true };
        let mut routing = self.routing.borrow_mut();
        forget_absent(&mut routing, &self.shared, &self.leaving, &leave, self.bins, self.worker);
        drop(routing);
        // (A second leaver of another process, if any, at the next call.)
        self.forget_unbuilt(worker, dataflow);
    }

    /// Takes in new commands and leaves, and checks the commands whose time the control
    /// frontier has passed.
    fn read_commands(
        &mut self,
        input: &mut InputPort<u64, Routed<Update>>,
        frontier: &MutableAntichain<u64>,
        peers: usize,
    ) {
        let mut routing = self.routing.borrow_mut();
        input.for_each(|capability, commands| {
            let time = *capability.time();
            self.unshipped.entry(time).or_insert_with(|| capability.retain());
            self.unchecked.insert(time);
            for routed in commands.drain(..) {
                match routed.record {
                    Update::Command(command) => routing.schedule_mut().add(time, [command]),
                    Update::Leave(leave) if !self.leaving.takes_part(leave.worker) => {
                        // This worker built the operator without the leaver. Fine if the leaver
                        // took no part either; if it did (it built it before its leave, this
                        // worker during it), the tables differ: the run stops instead of giving
                        // wrong results.
                        assert!(
                            leave.absent,
                            "megaphone operator {}: worker {} built it before its leave and worker {} during the leave; \
                             build keyed operators before a leave or after its notice on every worker (docs/rescaling.md)",
                            self.name,
                            leave.worker,
                            self.worker
                        );
                    }
                    Update::Leave(leave) if leave.absent => {
                        forget_absent(&mut routing, &self.shared, &self.leaving, &leave, self.bins, self.worker);
                    }
                    Update::Leave(leave) => {
                        self.leaving.record(time, &leave);
                        routing.schedule_mut().add_leave(time, leave);
                    }
                }
            }
        });
        while let Some(&time) = self.unchecked.first().filter(|time| !frontier.less_equal(time)) {
            self.unchecked.remove(&time);
            // (Nothing to check at a time that brought only the leave of an absent worker.)
            let Some(commands) = routing.schedule_mut().commands_mut(time) else { continue };
            if let Err(error) = normalize(time, commands, self.bins, peers) {
                panic!("megaphone operator {}: {error}", self.name);
            }
        }
    }

    /// Routes the records whose time the control frontier has passed; stashes the others.
    fn route_input(
        &mut self,
        input: &mut InputPort<u64, D>,
        control: &MutableAntichain<u64>,
        output: &mut OutputPort<u64, Routed<D>>,
    ) {
        while let Some((capability, records)) = input.next() {
            let time = *capability.time();
            if control.less_equal(&time) || !self.routing.borrow().is_known() {
                let stashed = self.stash.entry(time).or_insert_with(|| (capability.retain(), Vec::new()));
                stashed.1.append(records);
            } else {
                self.send(&capability.retain(), records, output);
            }
        }
    }

    /// Routes the stashed records whose time the control frontier has now passed.
    fn route_stash(&mut self, control: &MutableAntichain<u64>, output: &mut OutputPort<u64, Routed<D>>) {
        while let Some(entry) = self.stash.first_entry().filter(|entry| !control.less_equal(entry.key())) {
            let (capability, mut records) = entry.remove();
            self.send(&capability, &mut records, output);
        }
    }

    /// Sends `records` at `capability`'s time, each to the owner of its key's bin then.
    fn send(
        &self,
        capability: &Capability<u64>,
        records: &mut Vec<D>,
        output: &mut OutputPort<u64, Routed<D>>,
    ) {
        let routing = self.routing.borrow();
        let table = routing.schedule().table_at(*capability.time());
        let mut session = output.session(capability);
        for record in records.drain(..) {
            let target = table.owner(self.bins.of(&(self.key)(&record)));
            session.give(Routed { target, record });
        }
    }

    /// Ships, in time order, the bins that leave this worker at times whose commands are
    /// complete and before which S has processed everything.
    ///
    /// The bins this worker holds then are exactly those it owns just before the time: every
    /// bin moving here earlier has arrived (its time is complete here), every bin leaving
    /// earlier has been shipped, and none moving here at a later time can have been shipped
    /// yet (this worker's capability holds the bin frontier back).
    fn ship(&mut self, control: &MutableAntichain<u64>, output: &mut OutputPort<u64, BinState<K, S>>) {
        while let Some((&time, _)) = self.unshipped.first_key_value() {
            if control.less_equal(&time) || !self.shared.borrow().done_before(time) {
                break;
            }
            let capability = self.unshipped.remove(&time).expect("first entry");
            let routing = self.routing.borrow();
            let mut shared = self.shared.borrow_mut();
            // The bins moved at `time`, or every bin when a leave may evict this worker then;
            // the table in force says where each goes (a leave overrides moves to leavers).
            let schedule = routing.schedule();
            let table = schedule.table_at(time);
            let moved = schedule.commands(time).iter().map(|&Command::Move { bin, .. }| bin);
            let candidates: Vec<usize> = if schedule.leaves(time).is_empty() {
                moved.collect()
            } else {
                (0..self.bins.count()).collect()
            };
            let leaving: Vec<(usize, usize)> = candidates
                .into_iter()
                .filter(|&bin| shared.owns(bin) && table.owner(bin) != self.worker)
                .map(|bin| (bin, table.owner(bin)))
                .collect();
            let mut session = output.session(&capability);
            for (bin, target) in leaving {
                session.give(shared.extract(bin, target));
            }
            // A worker that joined learns some commands from the routing state, without a
            // capability: it takes one for each later time from this one.
            for later in routing.schedule().pending_times().filter(|&later| later > time) {
                self.unshipped.entry(later).or_insert_with(|| capability.delayed(&later));
            }
        }
    }

    /// Folds into the base table the commands whose bins every worker has shipped (S has
    /// processed the time: its bin frontier has passed it) and before which no record can
    /// reach F. A worker that joins then takes bins only at later times, so it needs no
    /// command the base includes.
    fn fold(&mut self, data: &MutableAntichain<u64>) {
        let mut routing = self.routing.borrow_mut();
        loop {
            let Some(time) = routing.schedule().pending_times().next() else { break };
            let waiting = self.stash.first_key_value().is_some_and(|(&stashed, _)| stashed < time);
            let shipped = self.shared.borrow().done_before(time.saturating_add(1));
            if self.unshipped.contains_key(&time) || data.less_than(&time) || waiting || !shipped {
                break;
            }
            routing.schedule_mut().fold(time);
        }
        routing.forget_folded();
    }

    /// Tells C and the engine (through `leaving`) from which times on F may still route a
    /// record or ship a bin, and wakes C when the data frontier moved.
    fn report(&mut self, data: &MutableAntichain<u64>, control: &MutableAntichain<u64>) {
        let data_from = data.frontier().first().copied();
        let stashed = self.stash.first_key_value().map(|(&time, _)| time);
        let unshipped = self.unshipped.first_key_value().map(|(&time, _)| time);
        let control_from = control.frontier().first().copied();
        let known = self.routing.borrow().is_known();
        let route_from = data_from.into_iter().chain(stashed).min();
        let ship_from = control_from.into_iter().chain(unshipped).min();
        self.leaving.set_router(route_from, ship_from, data_from, known);
        if self.data_frontier != data_from {
            self.data_frontier = data_from;
            self.commands_operator.activate();
        }
    }

    /// Once neither records nor commands can reach F, tells K that no worker that joins
    /// will need the routing state.
    fn finish_when_idle(&mut self, data: &MutableAntichain<u64>, control: &MutableAntichain<u64>) {
        let idle = data.frontier().is_empty() && control.frontier().is_empty();
        if idle && !self.routing.borrow().is_finished() {
            self.routing.borrow_mut().finish();
            self.handover.activate();
        }
    }
}

/// This worker built the operator before it saw a leave whose process built it during the
/// leave and took no part: it drops that process as if it had never been there, with the table
/// the workers that built the operator after the notice started from. Nothing was routed yet:
/// the absent worker's C held the operator's first time until it sent its `Leave` at it.
fn forget_absent<K: Hash + Eq + Clone, S: Default>(
    routing: &mut Routing,
    shared: &RefCell<Shared<K, S>>,
    leaving: &Leaving,
    leave: &Leave,
    bins: Bins,
    worker: usize,
) {
    let mut departed = routing.schedule().departed().clone();
    for gone in leave.workers() {
        departed.add(&Leave { worker: gone, ..*leave });
    }
    let table = RoutingTable::round_robin_over(bins, &departed.present()).expect("a leave leaves a worker");
    let owned = table.owners().iter().map(|&owner| owner == worker).collect();
    assert!(routing.schedule().base().1.is_none(), "megaphone: an absent worker announced after a fold");
    routing.schedule_mut().rebase(table, departed, None);
    shared.borrow_mut().reset_owned(owned);
    leaving.exclude(leave.workers());
}
