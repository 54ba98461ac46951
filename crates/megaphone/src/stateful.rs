//! Operator S: runs the user's logic against per-key state in bins, with per-key
//! notifications.
//!
//! S receives routed records and migrating bins, both through exchanges by target worker.
//! A bin that arrives is installed at once. Records wait in S's stash until their time `t`
//! is complete (both input frontiers have passed it); complete times are processed in time
//! order, each time's records first and then its notifications, so the logic sees every
//! key's records in time order, as a sequential run would. When `t` is complete, every bin
//! moving to this worker at a time `<= t` has been installed (F holds a capability at a
//! move's time until it ships the bin), and no bin leaving this worker at a time `<= t` has
//! been extracted yet (F extracts only after S reports it has processed everything before
//! that time, see `Shared::done_before`). After each run S publishes how far it has got.
//!
//! This module owns S's stash and the order of work within a run; the state is `state`'s.

use crate::bins::Hashed;
use crate::codec::{BinState, Routed};
use crate::context::Context;
use crate::state::Shared;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::hash::Hash;
use std::rc::Rc;
use timely_engine::dataflow::operators::{Capability, InputPort, OperatorBuilder, OutputPort};
use timely_engine::dataflow::{to_worker, Data, ExchangeData, Stream};
use timely_engine::scheduling::Activator;

/// The user's logic for a record: key, record, the key's state, the context.
pub type RecordLogic<D, K, S, O> = Box<dyn FnMut(&K, D, &mut S, &mut Context<O>)>;
/// The user's logic for a notification: key, the key's state, the context.
pub type NotifyLogic<K, S, O> = Box<dyn FnMut(&K, &mut S, &mut Context<O>)>;

/// The user's logic of one keyed operator.
pub struct Logic<D, K, S, O> {
    /// Extracts a record's key.
    pub key: Rc<dyn Fn(&D) -> K>,
    /// Runs for every record.
    pub on_record: RecordLogic<D, K, S, O>,
    /// Runs for every notification.
    pub on_notify: NotifyLogic<K, S, O>,
}

/// Builds S over F's outputs; returns its output and its activator.
pub fn stateful<D, K, S, O>(
    name: &str,
    routed: &Stream<u64, Routed<D>>,
    states: &Stream<u64, BinState<K, S>>,
    shared: Rc<RefCell<Shared<K, S>>>,
    logic: Logic<D, K, S, O>,
) -> (Stream<u64, O>, Activator)
where
    D: ExchangeData,
    K: ExchangeData + Hash + Eq,
    S: ExchangeData + Default,
    O: Data,
{
    let mut builder = OperatorBuilder::new(&format!("{name}.S"), routed.scope());
    let mut routed_in = builder.new_input(routed, to_worker(|r: &Routed<D>| r.target));
    let mut states_in = builder.new_input(states, to_worker(|b: &BinState<K, S>| b.target));
    let (mut output, stream) = builder.new_output();
    let activator = builder.info().activator.clone();
    let mut runner =
        Runner { shared, logic, stash: BTreeMap::new(), outputs: Vec::new(), requests: Vec::new() };
    builder.build_logic(move |frontiers| {
        runner.install(&mut states_in);
        runner.read(&mut routed_in);
        // Times before both frontiers are complete: no record and no bin can still arrive.
        let complete = [frontiers[0].frontier().first(), frontiers[1].frontier().first()];
        let complete = complete.into_iter().flatten().min().copied();
        runner.work(complete, &mut output);
        runner.shared.borrow_mut().set_done(complete);
        false
    });
    (stream, activator)
}

/// S's state on one worker.
struct Runner<D, K, S, O> {
    shared: Rc<RefCell<Shared<K, S>>>,
    logic: Logic<D, K, S, O>,
    /// Records at times that are not complete yet, with their capability.
    stash: BTreeMap<u64, (Capability<u64>, Vec<D>)>,
    /// Outputs of the logic, sent after each batch.
    outputs: Vec<O>,
    /// Notification times the logic asked for, for the current key.
    requests: Vec<u64>,
}

impl<D: Data, K: ExchangeData + Hash + Eq, S: ExchangeData + Default, O: Data> Runner<D, K, S, O> {
    /// Installs the bins that arrived.
    fn install(&mut self, input: &mut InputPort<u64, BinState<K, S>>) {
        let mut shared = self.shared.borrow_mut();
        input.for_each(|capability, bins| {
            for bin in bins.drain(..) {
                shared.install(bin, |time| capability.delayed(&time));
            }
        });
    }

    /// Stashes the records that arrived, by time.
    fn read(&mut self, input: &mut InputPort<u64, Routed<D>>) {
        while let Some((capability, records)) = input.next() {
            let time = *capability.time();
            let stashed = self.stash.entry(time).or_insert_with(|| (capability.retain(), Vec::new()));
            stashed.1.extend(records.drain(..).map(|routed| routed.record));
        }
    }

    /// Processes every complete time (before `complete`; `None`: every time) in time order:
    /// first its records, then its notifications.
    fn work(&mut self, complete: Option<u64>, output: &mut OutputPort<u64, O>) {
        loop {
            let next_due = self.shared.borrow().next_due();
            let next = [self.stash.keys().next().copied(), next_due].into_iter().flatten().min();
            match next {
                Some(time) if complete.is_none_or(|complete| time < complete) => {
                    if let Some((capability, records)) = self.stash.remove(&time) {
                        self.apply(&capability, records.into_iter(), output);
                    }
                    self.notify(time, output);
                }
                _ => return,
            }
        }
    }

    /// Runs the record logic for `records` at `capability`'s time.
    fn apply(
        &mut self,
        capability: &Capability<u64>,
        records: impl Iterator<Item = D>,
        output: &mut OutputPort<u64, O>,
    ) {
        let time = *capability.time();
        let mut shared = self.shared.borrow_mut();
        let bins = shared.bins();
        for record in records {
            let key = Hashed::new((self.logic.key)(&record));
            let bin = bins.of_hashed(&key);
            let mut context = Context::new(time, time, &mut self.outputs, &mut self.requests);
            (self.logic.on_record)(key.key(), record, shared.state(bin, &key), &mut context);
            finish_key(&mut shared, context.discarded(), bin, key, &mut self.requests, capability);
        }
        output.session(capability).give_vec(&mut self.outputs);
    }

    /// Delivers the notifications at `time` (which must be complete).
    fn notify(&mut self, time: u64, output: &mut OutputPort<u64, O>) {
        let mut shared = self.shared.borrow_mut();
        let Some((capability, bins)) = shared.take_due(time) else { return };
        for (bin, keys) in bins {
            for key in keys {
                let mut context =
                    Context::new(time, time.saturating_add(1), &mut self.outputs, &mut self.requests);
                (self.logic.on_notify)(key.key(), shared.state(bin, &key), &mut context);
                finish_key(&mut shared, context.discarded(), bin, key, &mut self.requests, &capability);
            }
        }
        output.session(&capability).give_vec(&mut self.outputs);
    }
}

/// Applies what the logic asked for `key`: discarding its state, notifications.
fn finish_key<K: Hash + Eq + Clone, S: Default>(
    shared: &mut Shared<K, S>,
    discard: bool,
    bin: usize,
    key: Hashed<K>,
    requests: &mut Vec<u64>,
    capability: &Capability<u64>,
) {
    if discard {
        shared.discard(bin, &key);
    }
    for time in requests.drain(..) {
        shared.request(bin, time, key.clone(), |time| capability.delayed(&time));
    }
}
