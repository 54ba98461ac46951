//! Building operators with any number of inputs and outputs.
//!
//! `OperatorBuilder` adds input ports (connected to streams through a `Pact`) and output
//! ports (each yielding a new stream), then `build` installs the operator with its logic.
//! The logic runs each time the operator is scheduled and sees the input frontiers. Ports
//! do the progress accounting: `InputPort` counts consumed records, `OutputPort` counts
//! produced ones, capabilities count themselves; the operator hands all of it to its scope
//! after each run. Every other operator in this crate is built with this builder.

use super::capability::{Capability, CapabilityChanges, CapabilityError, CapabilityRef, InputCapability};
use crate::dataflow::channels::{Data, Message, MessagePuller, Pact, Tee};
use crate::dataflow::{Scope, Stream};
use crate::progress::reachability::Summary;
use crate::progress::{
    Antichain, ChangeBatch, MutableAntichain, Operate, SharedProgress, Source, Target, Timestamp,
};
use crate::rescale::forward_inbox::RETIRED_SENDER;
use crate::rescale::{HeldTimes, Initial};
use crate::scheduling::Activator;
use std::cell::RefCell;
use std::rc::Rc;
use timely_communication::exchangeable::{bincode_decode, bincode_encode};
use timely_communication::Push;

/// Records per message before an output port sends what it buffered.
pub const BUFFER_SIZE: usize = 1024;

/// Facts about an operator under construction.
#[derive(Clone)]
pub struct OperatorInfo {
    /// Index of the operator in its scope.
    pub index: usize,
    /// Address: enclosing scopes' indices and its own.
    pub address: Vec<usize>,
    /// Activates the operator (schedules it at the next step).
    pub activator: Activator,
    /// This worker's index.
    pub worker: usize,
    /// The number of workers.
    pub peers: usize,
}

/// Describes an operator's ports, then installs it.
pub struct OperatorBuilder<T: Timestamp> {
    scope: Scope<T>,
    name: String,
    info: OperatorInfo,
    shared: Rc<RefCell<SharedProgress<T>>>,
    changes: CapabilityChanges<T>,
    summary: Summary<T>,
    outputs: usize,
    flushes: Vec<Box<dyn FnMut()>>,
    notify: bool,
    initial: InitialCapabilities<T>,
}

/// The initial capabilities of an operator: how many workers' the tracker counts, and the
/// time of this worker's own (`None`: it starts without one).
struct InitialCapabilities<T> {
    counted: i64,
    own: Option<T>,
}

impl<T: Timestamp> InitialCapabilities<T> {
    /// Asks the worker's rescaling state (which differs on a worker that joined).
    fn of(scope: &Scope<T>, address: &[usize]) -> Self {
        match scope.worker().rescaling().initial(address) {
            Initial::Ordinary => {
                let counted = scope.worker().rescaling().dataflow_workers(address[0]);
                InitialCapabilities { counted: counted as i64, own: Some(T::minimum()) }
            }
            Initial::Joining { counted, times } => {
                let own = times.map(|bytes| {
                    let times: Result<Vec<T>, _> = bincode_decode(&bytes);
                    match times.map(|times| times.into_iter().next()) {
                        Ok(Some(time)) => time,
                        Ok(None) => scope.worker().rescaling().server_violation(&format!(
                            "announced no capability time for operator {address:?}"
                        )),
                        Err(error) => scope.worker().rescaling().server_violation(&format!(
                            "sent capability times of operator {address:?} that do not decode: {error}"
                        )),
                    }
                });
                InitialCapabilities { counted: counted as i64, own }
            }
        }
    }
}

impl<T: Timestamp> OperatorBuilder<T> {
    /// Starts an operator named `name` in `scope`.
    pub fn new(name: &str, scope: &Scope<T>) -> Self {
        let index = scope.allocate_operator_index(name);
        let mut address = scope.address().to_vec();
        address.push(index);
        let info = OperatorInfo {
            index,
            address,
            activator: scope.activator_for(index),
            worker: scope.index(),
            peers: scope.peers(),
        };
        let initial = InitialCapabilities::of(scope, &info.address);
        OperatorBuilder {
            initial,
            scope: scope.clone(),
            name: name.to_owned(),
            info,
            shared: Rc::new(RefCell::new(SharedProgress::new(0, 0))),
            changes: Default::default(),
            summary: Vec::new(),
            outputs: 0,
            flushes: Vec::new(),
            notify: true,
        }
    }

    /// Facts about the operator (index, address, activator, worker, peers).
    pub fn info(&self) -> &OperatorInfo {
        &self.info
    }

    /// Whether frontier changes schedule the operator (default true).
    pub fn set_notify(&mut self, notify: bool) {
        self.notify = notify;
    }

    /// Adds an input connected to `stream` through `pact`; records reach every output
    /// with their time unchanged.
    pub fn new_input<D: Data, P: Pact<T, D>>(&mut self, stream: &Stream<T, D>, pact: P) -> InputPort<T, D> {
        let connection = vec![Antichain::from_elem(Default::default()); self.outputs];
        self.new_input_connection(stream, pact, connection)
    }

    /// Adds an input whose records reach output `j` with summary `connection[j]` (an empty
    /// antichain: not at all).
    pub fn new_input_connection<D: Data, P: Pact<T, D>>(
        &mut self,
        stream: &Stream<T, D>,
        pact: P,
        connection: Vec<Antichain<T::Summary>>,
    ) -> InputPort<T, D> {
        assert_eq!(connection.len(), self.outputs, "operator {}: one summary per output", self.name);
        let port = self.summary.len();
        self.summary.push(connection);
        {
            let mut shared = self.shared.borrow_mut();
            shared.frontiers.push(Default::default());
            shared.consumeds.push(Default::default());
        }
        if stream.scope().address() != self.scope.address() {
            panic!(
                "operator {}: its input stream lives in scope {:?}, not in the operator's scope {:?} (use enter/leave to cross scopes)",
                self.name,
                stream.scope().address(),
                self.scope.address()
            );
        }
        let target = Target::new(self.info.index, port);
        let puller = stream.connect_to(target, pact, self.info.activator.clone());
        InputPort { puller, shared: self.shared.clone(), port, changes: self.changes.clone(), current: None }
    }

    /// Adds an output; every input reaches it with time unchanged.
    pub fn new_output<D: Data>(&mut self) -> (OutputPort<T, D>, Stream<T, D>) {
        let connection = vec![Antichain::from_elem(Default::default()); self.summary.len()];
        self.new_output_connection(connection)
    }

    /// Adds an output that input `i` reaches with summary `connection[i]`.
    pub fn new_output_connection<D: Data>(
        &mut self,
        connection: Vec<Antichain<T::Summary>>,
    ) -> (OutputPort<T, D>, Stream<T, D>) {
        assert_eq!(connection.len(), self.summary.len(), "operator {}: one summary per input", self.name);
        let port = self.outputs;
        self.outputs += 1;
        for (row, summary) in self.summary.iter_mut().zip(connection) {
            row.push(summary);
        }
        {
            let mut shared = self.shared.borrow_mut();
            shared.internals.push(Default::default());
            shared.produceds.push(Default::default());
        }
        let tee = Tee::default();
        let stream = Stream::new(Source::new(self.info.index, port), self.scope.clone(), tee.clone());
        let buffer = Rc::new(RefCell::new(OutputBuffer {
            time: None,
            data: Vec::new(),
            tee,
            shared: self.shared.clone(),
            port,
            worker: self.info.worker,
        }));
        let flushed = buffer.clone();
        self.flushes.push(Box::new(move || flushed.borrow_mut().cease()));
        (OutputPort { buffer, changes: self.changes.clone() }, stream)
    }

    /// Installs the operator. `constructor` receives the initial capability (at the
    /// minimum time, for every output) and returns the logic, which runs at each
    /// scheduling with the input frontiers and returns true while it has work not visible
    /// as capabilities.
    pub fn build<B, L>(self, constructor: B)
    where
        B: FnOnce(Capability<T>) -> L,
        L: FnMut(&[MutableAntichain<T>]) -> bool + 'static,
    {
        let capability = match &self.initial.own {
            Some(time) => Capability::counted(time.clone(), self.changes.clone()),
            None => Capability::detached(T::minimum()),
        };
        let logic = constructor(capability);
        self.install(logic);
    }

    /// Installs the operator with logic that does not need the initial capability (it is
    /// released before the first run).
    pub fn build_logic<L>(self, logic: L)
    where
        L: FnMut(&[MutableAntichain<T>]) -> bool + 'static,
    {
        if let Some(time) = &self.initial.own {
            self.changes.borrow_mut().update(time.clone(), -1);
        }
        self.install(logic);
    }

    fn install<L>(self, logic: L)
    where
        L: FnMut(&[MutableAntichain<T>]) -> bool + 'static,
    {
        {
            // Initial capabilities, one per worker, at every output.
            let mut shared = self.shared.borrow_mut();
            for internal in shared.internals.iter_mut() {
                internal.update(T::minimum(), self.initial.counted);
            }
        }
        let held = Rc::new(HeldCapabilities(RefCell::new(ChangeBatch::new())));
        if let Some(time) = &self.initial.own {
            held.0.borrow_mut().update(time.clone(), 1);
        }
        let rescaling = self.scope.worker().rescaling();
        rescaling.register_operator(&self.info.address, self.outputs, held.clone());
        let inputs = self.summary.len();
        let operator = GenericOperator {
            name: self.name,
            inputs,
            outputs: self.outputs,
            summary: Some(self.summary),
            shared: self.shared,
            changes: self.changes,
            frontiers: (0..inputs).map(|_| MutableAntichain::new()).collect(),
            logic,
            flushes: self.flushes,
            notify: self.notify,
            held,
        };
        self.scope.add_operator(self.info.index, Box::new(operator));
    }
}

struct GenericOperator<T: Timestamp, L> {
    name: String,
    inputs: usize,
    outputs: usize,
    summary: Option<Summary<T>>,
    shared: Rc<RefCell<SharedProgress<T>>>,
    changes: CapabilityChanges<T>,
    frontiers: Vec<MutableAntichain<T>>,
    logic: L,
    flushes: Vec<Box<dyn FnMut()>>,
    notify: bool,
    /// The capabilities this instance holds (for handing capabilities to joining workers).
    held: Rc<HeldCapabilities<T>>,
}

/// The capabilities one operator instance holds: its own initial one plus its changes.
struct HeldCapabilities<T: Timestamp>(RefCell<ChangeBatch<T>>);

impl<T: Timestamp> HeldTimes for HeldCapabilities<T> {
    fn encoded(&self) -> Option<Vec<u8>> {
        let mut held = self.0.borrow_mut();
        let times =
            Antichain::from_iter(held.iter().filter(|(_, count)| *count > 0).map(|(time, _)| time.clone()));
        if times.is_empty() {
            return None;
        }
        let mut out = Vec::new();
        bincode_encode(times.elements(), &mut out);
        Some(out)
    }
}

impl<T: Timestamp, L: FnMut(&[MutableAntichain<T>]) -> bool> GenericOperator<T, L> {
    /// Hands the capability changes of this run to every output.
    fn report_capabilities(&mut self) {
        let mut changes = self.changes.borrow_mut();
        if changes.is_empty() {
            return;
        }
        let mut shared = self.shared.borrow_mut();
        let mut held = self.held.0.borrow_mut();
        for (time, delta) in changes.drain() {
            held.update(time.clone(), delta);
            for internal in shared.internals.iter_mut() {
                internal.update(time.clone(), delta);
            }
        }
    }
}

impl<T: Timestamp, L: FnMut(&[MutableAntichain<T>]) -> bool> Operate<T> for GenericOperator<T, L> {
    fn name(&self) -> &str {
        &self.name
    }

    fn inputs(&self) -> usize {
        self.inputs
    }

    fn outputs(&self) -> usize {
        self.outputs
    }

    fn notify_me(&self) -> bool {
        self.notify
    }

    fn initialize(&mut self) -> (Summary<T>, Rc<RefCell<SharedProgress<T>>>) {
        // Only the initial capabilities of all workers are reported here; changes made
        // while constructing (like dropping the initial capability) are this worker's own
        // and are reported, and broadcast, after the first run.
        (self.summary.take().expect("initialized once"), self.shared.clone())
    }

    fn schedule(&mut self) -> bool {
        {
            let mut shared = self.shared.borrow_mut();
            for (frontier, changes) in self.frontiers.iter_mut().zip(shared.frontiers.iter_mut()) {
                if !changes.is_empty() {
                    frontier.update_iter(changes.drain()).for_each(drop);
                }
            }
        }
        let incomplete = (self.logic)(&self.frontiers);
        for flush in self.flushes.iter_mut() {
            flush();
        }
        self.report_capabilities();
        incomplete
    }
}

/// The receiving end of an operator input.
pub struct InputPort<T: Timestamp, D> {
    puller: MessagePuller<T, D>,
    shared: Rc<RefCell<SharedProgress<T>>>,
    port: usize,
    changes: CapabilityChanges<T>,
    current: Option<Message<T, D>>,
}

impl<T: Timestamp, D: Data> InputPort<T, D> {
    /// The next batch of received records with a capability for their time.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<(InputCapability<T>, &mut Vec<D>)> {
        if let Some(mut used) = self.current.take() {
            // The operator is done with the previous batch: its buffer goes back for reuse
            // (unless it has none: the operator kept the records and left an empty vector).
            if used.data.capacity() > 0 {
                used.data.clear();
                self.puller.recycle(used);
            }
        }
        let mut message = self.puller.recv()?;
        self.shared.borrow_mut().consumeds[self.port].update(message.time.clone(), message.data.len() as i64);
        while message.from == RETIRED_SENDER {
            // A copy a leaver received in a dataflow it never built: counted, not delivered.
            message = self.puller.recv()?;
            self.shared.borrow_mut().consumeds[self.port]
                .update(message.time.clone(), message.data.len() as i64);
        }
        let message = self.current.insert(message);
        Some((InputCapability::new(message.time.clone(), self.changes.clone()), &mut message.data))
    }

    /// Applies `logic` to every received batch.
    pub fn for_each(&mut self, mut logic: impl FnMut(InputCapability<T>, &mut Vec<D>)) {
        while let Some((capability, data)) = self.next() {
            logic(capability, data);
        }
    }
}

struct OutputBuffer<T: Timestamp, D> {
    time: Option<T>,
    data: Vec<D>,
    tee: Tee<T, D>,
    shared: Rc<RefCell<SharedProgress<T>>>,
    port: usize,
    worker: usize,
}

impl<T: Timestamp, D: Data> OutputBuffer<T, D> {
    fn set_time(&mut self, time: &T) {
        if self.time.as_ref() != Some(time) {
            self.flush();
            self.time = Some(time.clone());
        }
    }

    fn flush(&mut self) {
        if !self.data.is_empty() {
            let time = self.time.clone().expect("buffered records have a time");
            let data = std::mem::take(&mut self.data);
            self.shared.borrow_mut().produceds[self.port].update(time.clone(), data.len() as i64);
            let mut slot = Some(Message::new(time, data, self.worker));
            self.tee.push(&mut slot);
            // A consumer may give an emptied buffer back; otherwise the next record allocates
            // one (`give`). Not allocating here matters when whole batches pass through
            // (`give_vec` swaps this buffer out): an eager allocation would be swapped into
            // the input, given back upstream, and mostly freed, once per batch and hop.
            self.data = match slot {
                Some(recycled) if recycled.data.capacity() > 0 => {
                    let mut data = recycled.data;
                    data.clear();
                    data
                }
                _ => Vec::new(),
            };
        }
    }

    #[inline]
    fn give(&mut self, datum: D) {
        if self.data.capacity() == 0 {
            self.data.reserve(BUFFER_SIZE);
        }
        self.data.push(datum);
        if self.data.len() >= BUFFER_SIZE {
            self.flush();
        }
    }

    fn give_vec(&mut self, data: &mut Vec<D>) {
        if self.data.is_empty() && data.len() >= BUFFER_SIZE / 4 {
            std::mem::swap(&mut self.data, data);
            self.flush();
        } else {
            for datum in data.drain(..) {
                self.give(datum);
            }
        }
    }

    /// Sends everything buffered and flushes the channels (end of an operator's run).
    fn cease(&mut self) {
        self.flush();
        self.tee.done();
    }
}

/// The sending end of an operator output.
pub struct OutputPort<T: Timestamp, D> {
    buffer: Rc<RefCell<OutputBuffer<T, D>>>,
    changes: CapabilityChanges<T>,
}

impl<T: Timestamp, D: Data> OutputPort<T, D> {
    /// A session for sending records at `capability`'s time (a `Capability`, or the
    /// `InputCapability` of records being processed). Panics if the capability belongs to
    /// another operator.
    pub fn session<'a, C: CapabilityRef<T>>(&'a mut self, capability: &C) -> Session<'a, T, D> {
        self.try_session(capability).unwrap_or_else(|e| panic!("{}", e))
    }

    /// Like `session`, but returns an error for a capability of another operator.
    pub fn try_session<'a, C: CapabilityRef<T>>(
        &'a mut self,
        capability: &C,
    ) -> Result<Session<'a, T, D>, CapabilityError> {
        if !capability.belongs_to(&self.changes) {
            return Err(CapabilityError::WrongOperator);
        }
        let mut buffer = self.buffer.borrow_mut();
        buffer.set_time(capability.time());
        Ok(Session { buffer })
    }

    /// Sends a whole batch at `capability`'s time.
    pub fn give_vec<C: CapabilityRef<T>>(&mut self, capability: &C, data: &mut Vec<D>) {
        self.session(capability).give_vec(data);
    }

    /// True when records given to this output wait in its buffer: the operator has not run
    /// (which sends them) since the first of them was given.
    pub(crate) fn has_buffered(&self) -> bool {
        !self.buffer.borrow().data.is_empty()
    }

    /// Sends what is buffered now rather than at the end of the operator's run.
    pub fn flush(&mut self) {
        self.buffer.borrow_mut().flush();
    }
}

/// Sends records at one time.
pub struct Session<'a, T: Timestamp, D: Data> {
    buffer: std::cell::RefMut<'a, OutputBuffer<T, D>>,
}

impl<T: Timestamp, D: Data> Session<'_, T, D> {
    /// Sends one record.
    #[inline]
    pub fn give(&mut self, datum: D) {
        self.buffer.give(datum);
    }

    /// Sends every record of `iter`.
    pub fn give_iterator<I: IntoIterator<Item = D>>(&mut self, iter: I) {
        for datum in iter {
            self.buffer.give(datum);
        }
    }

    /// Sends every record of `data`, leaving it empty (possibly swapping buffers).
    pub fn give_vec(&mut self, data: &mut Vec<D>) {
        self.buffer.give_vec(data);
    }
}
