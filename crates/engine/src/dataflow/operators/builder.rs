//! Building operators with any number of inputs and outputs.
//!
//! `OperatorBuilder` adds input ports (connected to streams through a `Pact`) and output
//! ports (each yielding a new stream), then `build` installs the operator with its logic.
//! The logic runs each time the operator is scheduled and sees the input frontiers. Ports
//! do the progress accounting: `InputPort` counts consumed records, `OutputPort` counts
//! produced ones, capabilities count themselves; the operator hands all of it to its scope
//! after each run. Every other operator in this crate is built with this builder.
//!
//! An operator built with [`OperatorBuilder::release_on_leave`] (every `source`) lets go of
//! its capabilities when its worker leaves the cluster: the leave marks its
//! [`CapabilityLedger`] released, its next report retires what it held, and its output
//! ports refuse records from then on (`docs/rescaling.md`, "A leaver's sources").

use super::capability::{Capability, CapabilityChanges, CapabilityLedger, InputCapability};
use super::output::{OutputBuffer, OutputPort};
use crate::dataflow::channels::{Data, Message, MessagePuller, Pact, Tee};
use crate::dataflow::{Scope, Stream};
use crate::progress::reachability::Summary;
use crate::progress::{
    Antichain, ChangeBatch, MutableAntichain, Operate, SharedProgress, Source, Target, Timestamp,
};
use crate::rescale::forward_inbox::RETIRED_SENDER;
use crate::rescale::leave::ReleaseOnLeave;
use crate::rescale::{HeldTimes, Initial};
use crate::scheduling::Activator;
use std::cell::RefCell;
use std::rc::Rc;
use timely_communication::exchangeable::{bincode_decode, bincode_encode};

pub use super::output::BUFFER_SIZE;

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
    release_on_leave: bool,
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
            release_on_leave: false,
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

    /// Releases the operator's capabilities when its worker starts leaving the cluster, as
    /// the worker's input handles are released (`docs/rescaling.md`, "A leaver's sources").
    /// Every `source` is built so: nothing but its own logic would ever finish it, and one
    /// that emits every epoch forever would keep its process from leaving. Only an operator
    /// without inputs can be released (`build` panics otherwise): one with inputs may hold
    /// capabilities for output it owes for records it received, up to the moment nothing
    /// more reaches the leaver, and releasing them would lose that output.
    ///
    /// From the release on (at the start of the step that handles the leave, or in
    /// `Worker::leave`), the operator is scheduled once more, its logic's last run, and:
    /// - every record it gave before is sent and delivered, exactly once;
    /// - every capability it holds, or makes or changes afterwards, counts nothing:
    ///   [`Capability::is_released`] is true, and cloning, delaying, downgrading and dropping
    ///   it are harmless;
    /// - its output ports refuse records: [`OutputPort::try_session`] returns
    ///   [`CapabilityError::Released`](super::capability::CapabilityError::Released), and a session from [`OutputPort::session`] drops
    ///   what it is given (neither sent nor counted), so that a logic that never looks still
    ///   cannot corrupt progress or panic its worker.
    ///
    /// The returned [`LeaveRelease`] tells whether the release happened.
    pub fn release_on_leave(&mut self) -> LeaveRelease<T> {
        self.release_on_leave = true;
        LeaveRelease(self.changes.clone())
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
            refusing: false,
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
            self.changes.update(time.clone(), -1);
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
        let held = Rc::new(HeldCapabilities(RefCell::new(ChangeBatch::new()), self.name.clone()));
        if let Some(time) = &self.initial.own {
            held.0.borrow_mut().update(time.clone(), 1);
        }
        let rescaling = self.scope.worker().rescaling();
        rescaling.register_operator(&self.info.address, self.outputs, held.clone());
        assert!(
            !self.release_on_leave || self.summary.is_empty(),
            "operator {}: only an operator without inputs can be released when its worker leaves",
            self.name
        );
        let leave = self.release_on_leave.then(|| {
            let leave: Rc<dyn ReleaseOnLeave> = Rc::new(ReleaseOperator {
                ledger: self.changes.clone(),
                activator: self.info.activator.clone(),
            });
            rescaling.leaves().release_on_leave(Rc::downgrade(&leave));
            leave
        });
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
            _leave: leave,
            retired: false,
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
    /// Its registration with the worker's leave, if it is released then (kept alive here).
    _leave: Option<Rc<dyn ReleaseOnLeave>>,
    /// True once the worker's leave released its capabilities and it reported their end:
    /// capability changes count nothing from then on.
    retired: bool,
}

/// Whether the worker's leave released an operator built with
/// [`OperatorBuilder::release_on_leave`].
#[derive(Clone)]
pub struct LeaveRelease<T: Timestamp>(CapabilityChanges<T>);

impl<T: Timestamp> LeaveRelease<T> {
    /// True once the operator's worker started leaving and released its capabilities.
    pub fn is_released(&self) -> bool {
        self.0.is_released()
    }
}

/// An operator's part in its worker's leave: marks its capabilities released and schedules
/// it, so that its next report retires them.
struct ReleaseOperator<T: Timestamp> {
    ledger: Rc<CapabilityLedger<T>>,
    activator: Activator,
}

impl<T: Timestamp> ReleaseOnLeave for ReleaseOperator<T> {
    fn release(&self) {
        self.ledger.release();
        self.activator.activate();
    }
}

/// The capabilities one operator instance holds: its own initial one plus its changes; and
/// the operator's name.
struct HeldCapabilities<T: Timestamp>(RefCell<ChangeBatch<T>>, String);

impl<T: Timestamp> HeldTimes for HeldCapabilities<T> {
    fn holding(&self) -> Option<String> {
        let mut held = self.0.borrow_mut();
        let times: Vec<&T> = held.iter().filter(|(_, count)| *count > 0).map(|(time, _)| time).collect();
        (!times.is_empty()).then(|| format!("'{}' at times {:?}", self.1, times))
    }

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
    /// Hands the capability changes of this run to every output. Once the worker's leave
    /// released the operator, the first report also retires everything it holds, and later
    /// changes count nothing.
    fn report_capabilities(&mut self) {
        let mut changes = self.changes.changes();
        let released = self.changes.is_released();
        if changes.is_empty() && !released {
            return;
        }
        if self.retired {
            changes.clear();
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
        if released {
            // Reported with what it gave in this run: records sent at a time are counted in
            // the same batch as the end of the capability that let them be sent.
            for (time, count) in held.drain() {
                for internal in shared.internals.iter_mut() {
                    internal.update(time.clone(), -count);
                }
            }
            self.retired = true;
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
        if self.retired {
            // A source its worker's leave released, whose logic ran after the release: it is
            // not called again (what it could give would be refused).
            self.changes.changes().clear();
            return false;
        }
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
