//! Rescaling: workers of processes that join a running cluster (`docs/rescaling.md`).
//!
//! This module owns a worker's part in joins: the registry of what a join must reach (every
//! scope's progress [`ScopeLedger`], every operator's held capabilities, the number of workers
//! each dataflow was built for), the bootstrap channel, and the dispatch of bootstrap messages
//! at the start of each step. The server side of the protocol is in [`server`], the joining
//! side in [`client`]; the messages in [`messages`].
//!
//! In steady state a step costs it a few loads: [`handle`] pulls the bootstrap channel only
//! after the worker reported an arrival on it ([`Rescaling::notice`]), or while this worker is
//! still bootstrapping, and runs the server side only while a join is pending or a welcome or
//! range request waits.
//!
//! Messages travel in an [`messages::Envelope`] naming the sending worker, which the cluster
//! allocator checks against the connection; [`handle_events`] hands each handler that sender,
//! and a message the protocol state does not allow ends the run naming the sender's process
//! (`stop_for_violation`), as an invalid progress batch does.
//!
//! It must not schedule operators or touch records: joined pushers of data channels are taken
//! by the channels themselves, and a joining worker's scopes hold their operators back until
//! their ledger is ready.

pub mod client;
pub mod leave;
pub mod messages;
pub mod server;
pub(crate) mod stranded;

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use crate::cluster_failure::{stop_for_configuration, stop_for_violation};
use crate::progress::ScopeLedger;
use crate::scheduling::Activator;
use crate::worker::WorkerState;
use messages::{BootstrapMessage, Envelope, BOOTSTRAP_CHANNEL};
use timely_communication::{Allocator, JoinedPushers, ProtocolViolations, Pull, Push};

/// The names of the trace activities (`docs/trace-format.md`) that mark each phase of a join
/// on the workers' timelines.
pub mod phases {
    /// A joining process connects to every process of the cluster (before its workers start).
    pub const CONNECT: &str = "rescale: connect";
    /// An existing worker back-fills its channels with endpoints to the joined workers.
    pub const BACKFILL: &str = "rescale: back-fill";
    /// The server snapshots and sends its progress state; the joiner waits for it.
    pub const STATE: &str = "rescale: state transfer";
    /// The server announces the capabilities it hands over to a joining worker.
    pub const HANDOVER: &str = "rescale: capability hand-over";
    /// The joiner requests and waits for missing progress batches; the server answers.
    pub const RANGES: &str = "rescale: range requests";
    /// A leaving worker, from the leave's notice until it is drained and drops its dataflows.
    pub const LEAVE: &str = "rescale: leave";
}

/// Runs `work` as the trace activity `phase` of the worker.
fn phase<R>(state: &WorkerState, phase: &str, work: impl FnOnce() -> R) -> R {
    let _activity = crate::worker::Activity::begin(state.logger(), phase);
    work()
}

/// The times at which an operator instance holds capabilities, encoded as `Vec<T>` (its
/// minimal times first).
pub trait HeldTimes {
    /// The encoded times, or `None` when it holds none.
    fn encoded(&self) -> Option<Vec<u8>>;
}

/// A registered scope. The registry shares the ledger with the scope's progcaster: when it
/// holds the only reference, the scope is gone.
#[derive(Clone)]
struct LiveScope {
    channel: usize,
    address: Vec<usize>,
    ledger: Rc<dyn ScopeLedger>,
    activator: Activator,
}

/// An operator's entry in the registry.
struct OperatorEntry {
    address: Vec<usize>,
    outputs: usize,
    held: Weak<dyn HeldTimes>,
}

/// The initial capabilities of an operator being built.
pub enum Initial {
    /// Every worker holds one at the minimal time (the ordinary case).
    Ordinary,
    /// On a joining worker, in a dataflow built before the join: `counted` workers hold the
    /// implicit initial capabilities, and this worker's instance starts with a capability at
    /// the first of `times` (encoded `Vec<T>`), or without one when `times` is `None`.
    Joining {
        /// The workers the dataflow was built for.
        counted: usize,
        /// The times announced for this operator.
        times: Option<Vec<u8>>,
    },
}

/// A worker's rescaling state; lives in the worker's shared state.
pub struct Rescaling {
    /// This worker's index: the sender named on the envelope of every message it sends.
    index: usize,
    pushers: RefCell<Vec<Box<dyn Push<Envelope>>>>,
    joined: JoinedPushers<Envelope>,
    puller: RefCell<Box<dyn Pull<Envelope>>>,
    /// Where messages that break the bootstrap or leave protocol are reported.
    violations: ProtocolViolations,
    scopes: RefCell<Vec<LiveScope>>,
    /// Per scope completed and dropped here: its progress channel and the sequence number
    /// after its last batch (what a joiner expects from this worker for it: nothing more).
    finished_scopes: RefCell<Vec<(usize, u64)>>,
    /// Scopes completed and dropped here whose ledgers still record: a joiner welcomed while
    /// they ran may still request their ranges.
    retired: RefCell<Vec<LiveScope>>,
    operators: RefCell<Vec<OperatorEntry>>,
    /// Per dataflow index: the number of workers it was built for.
    dataflow_peers: RefCell<Vec<usize>>,
    server: RefCell<server::ServerState>,
    client: RefCell<Option<client::Joiner>>,
    /// Set when a message arrived on the bootstrap channel since [`handle`] last pulled it.
    arrived: Cell<bool>,
    /// True on a joining worker until its bootstrap is complete: it pulls the bootstrap
    /// channel at every [`handle`] (it waits for its welcome before its worker steps).
    bootstrapping: Cell<bool>,
    /// Operators to wake when workers join, while they live ([`Rescaling::wake_on_join`]).
    join_watchers: RefCell<Vec<Weak<Activator>>>,
    /// Processes leaving and gone.
    leaves: leave::Leaves,
}

impl Rescaling {
    /// Allocates the bootstrap channel.
    pub(crate) fn new(allocator: &mut Allocator) -> Self {
        let ((pushers, puller), joined) = allocator.allocate_joinable::<Envelope>(BOOTSTRAP_CHANNEL);
        let client = allocator.join_server().map(client::Joiner::new);
        let bootstrapping = Cell::new(client.is_some());
        Rescaling {
            index: allocator.index(),
            pushers: RefCell::new(pushers),
            joined,
            puller: RefCell::new(puller),
            violations: allocator.violations(),
            scopes: RefCell::default(),
            finished_scopes: RefCell::default(),
            retired: RefCell::default(),
            operators: RefCell::default(),
            dataflow_peers: RefCell::default(),
            server: RefCell::default(),
            client: RefCell::new(client),
            arrived: Cell::new(false),
            bootstrapping,
            join_watchers: RefCell::default(),
            leaves: leave::Leaves::default(),
        }
    }

    /// Takes note that channel `channel` received data; the worker calls this for every
    /// channel without an activator. True for the bootstrap channel, which is this module's.
    #[inline]
    pub(crate) fn notice(&self, channel: usize) -> bool {
        let bootstrap = channel == BOOTSTRAP_CHANNEL;
        if bootstrap {
            self.arrived.set(true);
        }
        bootstrap
    }

    /// Records that this joining worker's bootstrap is complete: from now on the bootstrap
    /// channel is pulled only when a message arrived on it.
    pub(crate) fn bootstrapped(&self) {
        self.bootstrapping.set(false);
    }

    /// True when [`handle`] has nothing to do but look for joins: no bootstrap message
    /// arrived, this worker is not bootstrapping, and no welcome or range request waits.
    /// Forgets the arrival it reports.
    #[inline]
    fn is_quiet(&self) -> bool {
        if self.arrived.replace(false) || self.bootstrapping.get() {
            return false;
        }
        let server = self.server.borrow();
        server.hellos.is_empty() && server.ranges.is_empty() && !self.leaves.seals_pending()
    }

    /// Processes leaving and gone, and the workers present.
    pub fn leaves(&self) -> &leave::Leaves {
        &self.leaves
    }

    /// True while an operator instance of this worker holds a capability.
    pub(crate) fn holds_capabilities(&self) -> bool {
        self.operators
            .borrow()
            .iter()
            .any(|entry| entry.held.upgrade().is_some_and(|held| held.encoded().is_some()))
    }

    /// Sends `message` to worker `target` (flushed when the worker releases its allocator).
    pub(crate) fn send(&self, target: usize, message: BootstrapMessage) {
        let mut pushers = self.pushers.borrow_mut();
        if let Some(joined) = self.joined.take() {
            pushers.extend(joined.into_iter().map(|(_, pusher)| pusher));
        }
        match pushers.get_mut(target) {
            Some(pusher) => {
                pusher.send(Envelope { from: self.index, message });
                pusher.done();
            }
            None => panic!(
                "bootstrap: no connection to worker {target} (the cluster has {} workers)",
                pushers.len()
            ),
        }
    }

    /// The scopes that still exist.
    fn live_scopes(&self) -> Vec<LiveScope> {
        self.forget_finished_scopes();
        self.scopes.borrow().clone()
    }

    /// Moves scopes that completed and were dropped out of the registry, keeping only where
    /// their progress channel ended.
    fn forget_finished_scopes(&self) {
        let mut finished = self.finished_scopes.borrow_mut();
        let mut retired = self.retired.borrow_mut();
        self.scopes.borrow_mut().retain(|scope| {
            let alive = Rc::strong_count(&scope.ledger) > 1;
            if !alive {
                finished.push((scope.channel, scope.ledger.next_send()));
                if scope.ledger.is_recording() {
                    retired.push(scope.clone());
                }
            }
            alive
        });
    }

    /// The scopes whose ledgers may be recording: live ones and retired ones.
    fn recording_scopes(&self) -> Vec<LiveScope> {
        let mut scopes = self.live_scopes();
        scopes.extend(self.retired.borrow().iter().cloned());
        scopes
    }

    /// Per scope, live or finished: its progress channel and the sequence number of the next
    /// batch this worker sends on it (the `Next` message to a joined worker).
    fn next_sends(&self) -> Vec<(usize, u64)> {
        let live = self.live_scopes();
        let live = live.iter().map(|scope| (scope.channel, scope.ledger.next_send()));
        live.chain(self.finished_scopes.borrow().iter().copied()).collect()
    }

    /// Records a scope's ledger; on a joining worker, a scope of a dataflow built before the
    /// join starts its bootstrap.
    pub(crate) fn register_scope(
        &self,
        channel: usize,
        address: &[usize],
        ledger: Rc<dyn ScopeLedger>,
        activator: Activator,
    ) {
        if let Some(joiner) = self.client.borrow_mut().as_mut() {
            if let Err(reason) = joiner.scope_built(channel, address, &ledger) {
                let server = joiner.server();
                stop_for_violation(&self.violations, server, &format!("worker {server} {reason}"));
            }
        }
        self.forget_finished_scopes();
        self.scopes.borrow_mut().push(LiveScope { channel, address: address.to_vec(), ledger, activator });
    }

    /// On a joining worker: ends the run for what its server sent, which breaks the protocol.
    pub(crate) fn server_violation(&self, reason: &str) -> ! {
        let server = self.client.borrow().as_ref().map_or(self.index, client::Joiner::server);
        stop_for_violation(&self.violations, server, &format!("worker {server} {reason}"))
    }

    /// Records the capabilities an operator instance holds.
    pub(crate) fn register_operator(&self, address: &[usize], outputs: usize, held: Rc<dyn HeldTimes>) {
        let entry = OperatorEntry { address: address.to_vec(), outputs, held: Rc::downgrade(&held) };
        self.operators.borrow_mut().push(entry);
    }

    /// Records that dataflow `index` is being built on `peers` workers (those that have not
    /// left); returns the number of workers its implicit initial capabilities count (on a
    /// joining worker, those of the server for a dataflow it built before the join).
    pub(crate) fn dataflow_started(&self, index: usize, peers: usize) -> usize {
        let counted =
            self.client.borrow().as_ref().and_then(|joiner| joiner.dataflow_peers(index)).unwrap_or(peers);
        let mut all = self.dataflow_peers.borrow_mut();
        all.resize(index + 1, 0);
        all[index] = counted;
        counted
    }

    /// Retires one worker's implicit initial capabilities in every live dataflow from index
    /// `first` on (a worker that left having built only the dataflows before, and was counted
    /// in these: they were built before its `Left` arrived).
    pub(crate) fn retire_initial(&self, first: usize, slots: &[bool]) {
        let mut peers = self.dataflow_peers.borrow_mut();
        let counted: Vec<usize> = (first..peers.len()).filter(|&d| slots.get(d) == Some(&true)).collect();
        if counted.is_empty() {
            return;
        }
        for &dataflow in &counted {
            peers[dataflow] = peers[dataflow].saturating_sub(1);
        }
        drop(peers);
        let operators = self.operators.borrow();
        for scope in self.live_scopes().iter().filter(|scope| counted.contains(&scope.address[0])) {
            let depth = scope.address.len();
            let in_scope: Vec<(usize, usize)> = operators
                .iter()
                .filter(|entry| entry.held.strong_count() > 0)
                .filter(|entry| {
                    entry.address.len() == depth + 1 && entry.address[..depth] == scope.address[..]
                })
                .map(|entry| (entry.address[depth], entry.outputs))
                .collect();
            scope.ledger.retire_initial(&in_scope, 1);
            scope.activator.activate();
        }
    }

    /// The number of workers whose initial capabilities the operators of dataflow `index`
    /// count (recorded by [`Rescaling::dataflow_started`]: the workers that had not left).
    pub(crate) fn dataflow_workers(&self, index: usize) -> usize {
        self.dataflow_peers.borrow()[index]
    }

    /// The initial capabilities of the operator at `address`.
    pub fn initial(&self, address: &[usize]) -> Initial {
        match self.client.borrow().as_ref() {
            Some(joiner) => joiner.initial(address),
            None => Initial::Ordinary,
        }
    }

    /// True while a joined worker this worker admitted has not finished its bootstrap (this
    /// worker must not end its run before: the joined worker may need it).
    pub fn is_busy(&self) -> bool {
        server::is_busy(self)
    }

    /// Per scope whose dataflow still exists: its address and the number of distinct
    /// pointstamps in its progress state (what a joining worker would be sent).
    pub fn progress_state_sizes(&self) -> Vec<(Vec<usize>, usize)> {
        self.live_scopes().into_iter().map(|scope| (scope.address, scope.ledger.state_len())).collect()
    }

    /// True on a worker of a process that joined a running cluster.
    pub fn is_joining(&self) -> bool {
        self.client.borrow().is_some()
    }

    /// On a worker of a process that joined a running cluster, for dataflow `dataflow` when
    /// the cluster built it before the join and it still runs there: the number of workers the
    /// cluster had before the process joined. `None` otherwise (the dataflow starts fresh).
    /// Operators with state of their own learn from it that they must be handed that state.
    pub fn joined_running(&self, dataflow: usize) -> Option<usize> {
        let client = self.client.borrow();
        let joiner = client.as_ref()?;
        joiner.dataflow_peers(dataflow).and(joiner.existing())
    }

    /// Wakes `activator`'s operator each time this worker admits joining workers (when
    /// `peers` grows), for as long as the `Rc` lives: an operator that owes new workers
    /// something learns of them at once, even if nothing else would schedule it.
    pub fn wake_on_join(&self, activator: &Rc<Activator>) {
        self.join_watchers.borrow_mut().push(Rc::downgrade(activator));
    }

    /// Wakes the operators registered with [`Rescaling::wake_on_join`] and forgets dropped ones.
    fn wake_join_watchers(&self) {
        self.join_watchers.borrow_mut().retain(|watcher| match watcher.upgrade() {
            Some(activator) => {
                activator.activate();
                true
            }
            None => false,
        });
    }
}

/// True when [`handle`] has something to take in: a message on the bootstrap channel, a join
/// or a departure (a parked worker would not wake for what already arrived).
#[inline]
pub(crate) fn has_arrivals(state: &WorkerState) -> bool {
    if state.rescaling().arrived.get() {
        return true;
    }
    let allocator = state.allocator();
    allocator.has_joins() || allocator.has_departures()
}

/// Handles joins and bootstrap messages; called at the start of every step. Inlined: in
/// steady state it only finds that there is nothing to do.
#[inline]
pub(crate) fn handle(state: &WorkerState) {
    let (has_joins, has_departures) = {
        let allocator = state.allocator();
        (allocator.has_joins(), allocator.has_departures())
    };
    if has_joins || has_departures || !state.rescaling().is_quiet() {
        handle_events(state, has_joins);
    }
}

/// Admits joins (`has_joins`), takes in bootstrap messages and serves joining workers.
#[inline(never)]
pub(crate) fn handle_events(state: &WorkerState, has_joins: bool) {
    let rescaling = state.rescaling();
    if has_joins {
        phase(state, phases::BACKFILL, || {
            let joins = state.allocator().take_joins();
            joins.into_iter().for_each(|workers| server::admit(state, workers));
        });
        rescaling.wake_join_watchers();
        rescaling.leaves.changed();
    }
    // A departure arrives after everything its process sent, its `Left` included: both are
    // taken in by this call, before any dataflow is built again.
    let departed = state.allocator().take_departures();
    if !departed.is_empty() {
        leave::departed(state, departed);
    }
    loop {
        let envelope = rescaling.puller.borrow_mut().recv();
        let Some(Envelope { from, message }) = envelope else { break };
        // The allocator checked, for a message of another process, that `from` is a worker of
        // the process at the other end of the connection, and that the message names no
        // other sender: every check below can blame `from`'s process.
        let checked = match message {
            BootstrapMessage::Hello { .. } => server::hello(state, from),
            BootstrapMessage::Range { channel, sender, start, end, .. } => {
                server::range(state, from, channel, sender, start, end)
            }
            BootstrapMessage::Done { .. } => server::done(state, from),
            BootstrapMessage::Serving { joiner, .. } => server::serving(state, from, joiner),
            BootstrapMessage::Leaving { .. } => leave::notice_from(state, from),
            BootstrapMessage::Sealed { .. } => leave::sealed(rescaling, from),
            BootstrapMessage::Left { dataflows, .. } => leave::left(state, from, dataflows),
            BootstrapMessage::Stranded { channels, .. } => stranded::received(state, from, &channels),
            other => match client::receive(state, from, other) {
                Err(client::ClientError::Departed(mismatch)) => stop_for_configuration(&mismatch),
                Err(client::ClientError::Protocol(reason)) => Err(reason),
                Ok(()) => Ok(()),
            },
        };
        if let Err(reason) = checked {
            stop_for_violation(&rescaling.violations, from, &format!("worker {from} {reason}"));
        }
    }
    server::serve(state);
    if rescaling.leaves.seals_pending() {
        leave::seal(state);
    }
}
