//! `Rescaling`: the rescaling state a worker holds (in its `WorkerState`).
//!
//! This module owns the registry of what a join must reach (every scope's progress
//! [`ScopeLedger`], every operator's held capabilities, the number of workers each dataflow
//! was built for), the bootstrap channel, and the state of each side of the protocols: the
//! server's ([`ServerState`]), the joiner's ([`Joiner`]) and the leaves ([`Leaves`]). The
//! protocols themselves (`client`, `bootstrap`, `server`, `leave`, `stranded`, dispatched by
//! `dispatch`) work on this state through the worker's state; this module knows nothing of
//! them, nor of the worker.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use super::client_state::Joiner;
use super::leave_state::Leaves;
use super::messages::{BootstrapMessage, Envelope, BOOTSTRAP_CHANNEL};
use super::operators::{HeldTimes, Initial};
use super::server_state::ServerState;
use crate::cluster_failure::stop_for_violation;
use crate::progress::ScopeLedger;
use crate::scheduling::Activator;
use timely_communication::{Allocator, JoinedPushers, ProtocolViolations, Pull, Push};

/// A registered scope. The registry shares the ledger with the scope's progcaster: when it
/// holds the only reference, the scope is gone.
#[derive(Clone)]
pub(super) struct LiveScope {
    pub(super) channel: usize,
    pub(super) address: Vec<usize>,
    pub(super) ledger: Rc<dyn ScopeLedger>,
    pub(super) activator: Activator,
}

/// An operator's entry in the registry.
pub(super) struct OperatorEntry {
    pub(super) address: Vec<usize>,
    pub(super) outputs: usize,
    pub(super) held: Weak<dyn HeldTimes>,
}

/// The fewest registered scopes at which `register_scope` sweeps out finished ones.
const SWEEP_AT_LEAST: usize = 64;

/// A worker's rescaling state; lives in the worker's shared state.
pub struct Rescaling {
    /// This worker's index: the sender named on the envelope of every message it sends.
    pub(super) index: usize,
    pub(super) pushers: RefCell<Vec<Box<dyn Push<Envelope>>>>,
    pub(super) joined: JoinedPushers<Envelope>,
    pub(super) puller: RefCell<Box<dyn Pull<Envelope>>>,
    /// Where messages that break the bootstrap or leave protocol are reported.
    pub(super) violations: ProtocolViolations,
    pub(super) scopes: RefCell<Vec<LiveScope>>,
    /// `register_scope` moves finished scopes out of `scopes` once it holds this many (twice
    /// what the last sweep left): a sweep per scope built would cost time quadratic in the
    /// number of dataflows. (Everything that reads `scopes` sweeps first.)
    pub(super) sweep_at: Cell<usize>,
    /// Per scope completed and dropped here: its progress channel and the sequence number
    /// after its last batch (what a joiner expects from this worker for it: nothing more).
    pub(super) finished_scopes: RefCell<Vec<(usize, u64)>>,
    /// Scopes completed and dropped here whose ledgers still record: a joiner welcomed while
    /// they ran may still request their ranges.
    pub(super) retired: RefCell<Vec<LiveScope>>,
    pub(super) operators: RefCell<Vec<OperatorEntry>>,
    /// Per dataflow index: the number of workers it was built for.
    pub(super) dataflow_peers: RefCell<Vec<usize>>,
    pub(super) server: RefCell<ServerState>,
    pub(super) client: RefCell<Option<Joiner>>,
    /// Set when a message arrived on the bootstrap channel since `dispatch::handle` last pulled it.
    pub(super) arrived: Cell<bool>,
    /// True on a joining worker until its bootstrap is complete: it pulls the bootstrap
    /// channel at every `dispatch::handle` (it waits for its welcome before its worker steps).
    pub(super) bootstrapping: Cell<bool>,
    /// Operators to wake when workers join, while they live ([`Rescaling::wake_on_join`]).
    pub(super) join_watchers: RefCell<Vec<Weak<Activator>>>,
    /// Processes leaving and gone.
    pub(super) leaves: Leaves,
    /// On a leaver: the operators holding its leave up (`held_report`).
    pub(super) held_report: RefCell<super::operators::HeldReport>,
}

impl Rescaling {
    /// Allocates the bootstrap channel.
    pub(crate) fn new(allocator: &mut Allocator) -> Self {
        let ((pushers, puller), joined) = allocator.allocate_joinable::<Envelope>(BOOTSTRAP_CHANNEL);
        let client = allocator.join_server().map(Joiner::new);
        let bootstrapping = Cell::new(client.is_some());
        Rescaling {
            index: allocator.index(),
            pushers: RefCell::new(pushers),
            joined,
            puller: RefCell::new(puller),
            violations: allocator.violations(),
            scopes: RefCell::default(),
            sweep_at: Cell::new(SWEEP_AT_LEAST),
            finished_scopes: RefCell::default(),
            retired: RefCell::default(),
            operators: RefCell::default(),
            dataflow_peers: RefCell::default(),
            server: RefCell::default(),
            client: RefCell::new(client),
            arrived: Cell::new(false),
            bootstrapping,
            join_watchers: RefCell::default(),
            leaves: Leaves::default(),
            held_report: Default::default(),
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

    /// True when `dispatch::handle` has nothing to do but look for joins: no bootstrap message
    /// arrived, this worker is not bootstrapping, and no welcome or range request waits.
    /// Forgets the arrival it reports.
    #[inline]
    pub(super) fn is_quiet(&self) -> bool {
        if self.arrived.replace(false) || self.bootstrapping.get() {
            return false;
        }
        let server = self.server.borrow();
        server.hellos.is_empty() && server.ranges.is_empty() && !self.leaves.seals_pending()
    }

    /// Processes leaving and gone, and the workers present.
    pub fn leaves(&self) -> &Leaves {
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
    pub(super) fn live_scopes(&self) -> Vec<LiveScope> {
        self.forget_finished_scopes();
        self.scopes.borrow().clone()
    }

    /// Moves scopes that completed and were dropped out of the registry, keeping only where
    /// their progress channel ended.
    pub(super) fn forget_finished_scopes(&self) {
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
    pub(super) fn recording_scopes(&self) -> Vec<LiveScope> {
        let mut scopes = self.live_scopes();
        scopes.extend(self.retired.borrow().iter().cloned());
        scopes
    }

    /// Per scope, live or finished: its progress channel and the sequence number of the next
    /// batch this worker sends on it (the `Next` message to a joined worker).
    pub(super) fn next_sends(&self) -> Vec<(usize, u64)> {
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
        if self.scopes.borrow().len() >= self.sweep_at.get() {
            self.forget_finished_scopes();
            self.sweep_at.set(SWEEP_AT_LEAST.max(2 * self.scopes.borrow().len()));
        }
        self.scopes.borrow_mut().push(LiveScope { channel, address: address.to_vec(), ledger, activator });
    }

    /// On a joining worker: ends the run for what its server sent, which breaks the protocol.
    pub(crate) fn server_violation(&self, reason: &str) -> ! {
        let server = self.client.borrow().as_ref().map_or(self.index, Joiner::server);
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
        self.server.borrow().is_busy()
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
    pub(super) fn wake_join_watchers(&self) {
        self.join_watchers.borrow_mut().retain(|watcher| match watcher.upgrade() {
            Some(activator) => {
                activator.activate();
                true
            }
            None => false,
        });
    }
}
