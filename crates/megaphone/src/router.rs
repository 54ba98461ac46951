//! Operator F: routes records by the routing table in force at their time, and ships the
//! state of bins that move away from this worker.
//!
//! F reads the data stream (from this worker) and the control stream (every command reaches
//! every worker's F). A record at time `t` is routed once the control frontier has passed
//! `t` (every command that can change the table at `t` is known); until then it waits in
//! F's stash with its capability. Commands at time `c` are checked once the control frontier
//! passes `c`; F keeps a capability at `c` until it has shipped the bins that leave this
//! worker at `c`, which it does once S reports (`Shared::done_before`) that every record and
//! notification before `c` is processed. Commands fold into the base table once no record
//! before their time can reach F.
//!
//! This module owns F's bookkeeping (schedule, stash, capabilities of unshipped moves); the
//! bin state itself belongs to `state`, and running the user's logic to `stateful`.

use crate::bins::Bins;
use crate::codec::{BinState, Routed};
use crate::state::Shared;
use crate::table::{normalize, Command, RoutingTable, Schedule};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::Hash;
use std::rc::Rc;
use timely_engine::dataflow::operators::{Capability, InputPort, OperatorBuilder, OutputPort};
use timely_engine::dataflow::{Data, ExchangeData, Pipeline, Stream};
use timely_engine::progress::MutableAntichain;
use timely_engine::scheduling::Activator;

/// What F produces: routed records, bins on their way to new owners, and F's activator.
pub type RouterOutputs<D, K, S> = (Stream<u64, Routed<D>>, Stream<u64, BinState<K, S>>, Activator);

/// Builds F for `data`, reading `commands` (already broadcast to every worker).
pub fn router<D, K, S>(
    name: &str,
    data: &Stream<u64, D>,
    commands: &Stream<u64, Command>,
    key: Rc<dyn Fn(&D) -> K>,
    shared: Rc<RefCell<Shared<K, S>>>,
    table: RoutingTable,
) -> RouterOutputs<D, K, S>
where
    D: ExchangeData,
    K: ExchangeData + Hash + Eq,
    S: ExchangeData + Default,
{
    let mut builder = OperatorBuilder::new(&format!("{name}.F"), data.scope());
    let mut data_in = builder.new_input(data, Pipeline);
    let mut control_in = builder.new_input(commands, Pipeline);
    let (mut routed_out, routed) = builder.new_output();
    let (mut states_out, states) = builder.new_output();
    let activator = builder.info().activator.clone();
    let worker_state = data.scope().worker().clone();
    let mut router = Router {
        name: name.to_owned(),
        worker: builder.info().worker,
        bins: table.bins(),
        schedule: Schedule::new(table),
        unchecked: BTreeSet::new(),
        unshipped: BTreeMap::new(),
        stash: BTreeMap::new(),
        key,
        shared,
    };
    builder.build_logic(move |frontiers| {
        let (data_frontier, control_frontier) = (&frontiers[0], &frontiers[1]);
        router.read_commands(&mut control_in, control_frontier, worker_state.peers());
        router.route_input(&mut data_in, control_frontier, &mut routed_out);
        router.route_stash(control_frontier, &mut routed_out);
        router.ship(control_frontier, &mut states_out);
        router.fold(data_frontier);
        false
    });
    (routed, states, activator)
}

/// F's state on one worker.
struct Router<D, K, S> {
    name: String,
    worker: usize,
    bins: Bins,
    schedule: Schedule,
    /// Times of commands not yet checked (the control frontier has not passed them).
    unchecked: BTreeSet<u64>,
    /// A capability for each time whose moves are not shipped yet.
    unshipped: BTreeMap<u64, Capability<u64>>,
    /// Records at times the control frontier has not passed, with their capability.
    stash: BTreeMap<u64, (Capability<u64>, Vec<D>)>,
    key: Rc<dyn Fn(&D) -> K>,
    shared: Rc<RefCell<Shared<K, S>>>,
}

impl<D: Data, K: ExchangeData + Hash + Eq, S: ExchangeData + Default> Router<D, K, S> {
    /// Takes in new commands and checks those whose time the control frontier has passed.
    fn read_commands(
        &mut self,
        input: &mut InputPort<u64, Command>,
        frontier: &MutableAntichain<u64>,
        peers: usize,
    ) {
        input.for_each(|capability, commands| {
            let time = *capability.time();
            self.unshipped.entry(time).or_insert_with(|| capability.retain());
            self.unchecked.insert(time);
            self.schedule.add(time, commands.drain(..));
        });
        while let Some(&time) = self.unchecked.first().filter(|time| !frontier.less_equal(time)) {
            self.unchecked.remove(&time);
            let commands = self.schedule.commands_mut(time).expect("commands at an unchecked time");
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
            if control.less_equal(&time) {
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
        let table = self.schedule.table_at(*capability.time());
        let mut session = output.session(capability);
        for record in records.drain(..) {
            let target = table.owner(self.bins.of(&(self.key)(&record)));
            session.give(Routed { target, record });
        }
    }

    /// Ships, in time order, the bins that leave this worker at times whose commands are
    /// complete and before which S has processed everything.
    fn ship(&mut self, control: &MutableAntichain<u64>, output: &mut OutputPort<u64, BinState<K, S>>) {
        while let Some((&time, _)) = self.unshipped.first_key_value() {
            if control.less_equal(&time) || !self.shared.borrow().done_before(time) {
                break;
            }
            let capability = self.unshipped.remove(&time).expect("first entry");
            let before = self.schedule.table_before(time);
            let leaving: Vec<(usize, usize)> = self
                .schedule
                .commands(time)
                .iter()
                .map(|&Command::Move { bin, worker }| (bin, worker))
                .filter(|&(bin, worker)| before.owner(bin) == self.worker && worker != self.worker)
                .collect();
            let mut shared = self.shared.borrow_mut();
            let mut session = output.session(&capability);
            for (bin, target) in leaving {
                session.give(shared.extract(bin, target));
            }
        }
    }

    /// Folds into the base table the shipped commands before which no record can reach F.
    fn fold(&mut self, data: &MutableAntichain<u64>) {
        loop {
            let Some(time) = self.schedule.pending_times().next() else { break };
            let waiting = self.stash.first_key_value().is_some_and(|(&stashed, _)| stashed < time);
            if self.unshipped.contains_key(&time) || data.less_than(&time) || waiting {
                break;
            }
            self.schedule.fold(time);
        }
    }
}
