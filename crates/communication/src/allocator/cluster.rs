//! The allocator of a worker in a cluster of processes.
//!
//! This module owns [`ClusterAllocator`] and its [`ClusterBuilder`]: the worker's channels
//! to workers of its own process go through the process allocator ([`super::process`]), and
//! its channels to workers of other processes through the transport
//! ([`crate::networking::transport`]): a pusher encodes each element straight into the
//! buffer of the connection to the destination's process, with a header naming the channel,
//! the sender and the receiving workers; the receive thread hands this worker the payload, a
//! slice of its receive buffer; the channel's puller decodes it.
//!
//! What arrives for a channel waits in its inbox ([`super::inboxes`]: bounded before the
//! channel is allocated, dropped after its puller is gone). A message that does not decode, or
//! whose element names another sender than the worker that sent it, is a protocol violation of
//! the sending process ([`ProtocolViolations`]): it is dropped, and once any failure is
//! recorded no remote message is handed out any more, so the worker stops at its next step
//! with an error naming that process.
//!
//! Broadcasts ([`ClusterAllocator::broadcast`]) encode an element once per remote process,
//! addressed to all of that process's workers, rather than once per remote worker.
//!
//! Workers are numbered globally: worker `i` of process `p` is `p * threads + i`. This module
//! must not open connections or spawn threads ([`crate::initialize`](mod@crate::initialize) does), nor interpret
//! what travels.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::queue::ThreadQueue;

use super::inboxes::{Delivered, Inbox, InboxStats, Inboxes};
use super::joined::{Backfills, JoinedPushers};
use super::process::{ProcessAllocator, ProcessBuilder};
use super::{ChannelEndpoints, ChannelRecord, Events, FanOut};
use crate::networking::{
    BudgetStats, Delivery, JoinedProcess, MessageHeader, NetworkHealth, ProcessSender, Transport,
    WorkerEndpoints,
};
use crate::{Exchangeable, ProtocolViolations, Pull, Push};

/// How long a finishing process waits for the others' goodbyes, so that it never closes a
/// connection with data of theirs still unread (which could cut off what it sent last).
const GOODBYE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a process whose run failed waits for its abort frames to go out before it closes
/// its connections.
const ABORT_WAIT: Duration = Duration::from_millis(500);

/// The network threads of this process, shared by its workers' allocators.
///
/// When the last allocator is dropped, the connections close: in order (a goodbye to every
/// process, then waiting for theirs) if every worker finished its run, abruptly otherwise, so
/// that the other processes learn at once that this one is gone and stop too.
#[derive(Clone)]
pub(crate) struct Network {
    shared: Arc<NetworkShared>,
}

struct NetworkShared {
    transport: Mutex<Option<Transport>>,
    health: NetworkHealth,
    failed: AtomicBool,
}

impl Network {
    pub(crate) fn new(transport: Transport) -> Self {
        let health = transport.health();
        let shared =
            NetworkShared { transport: Mutex::new(Some(transport)), health, failed: AtomicBool::new(false) };
        Network { shared: Arc::new(shared) }
    }

    fn health(&self) -> &NetworkHealth {
        &self.shared.health
    }

    /// What received messages hold against the receive budget, and what spilled (`None`
    /// once the connections are closing).
    fn budget_stats(&self) -> Option<BudgetStats> {
        let transport = self.shared.transport.lock().unwrap_or_else(PoisonError::into_inner);
        transport.as_ref().map(Transport::budget_stats)
    }

    /// Records that a worker of this process did not finish its run.
    fn fail(&self) {
        self.shared.failed.store(true, Ordering::SeqCst);
    }
}

impl Drop for NetworkShared {
    fn drop(&mut self) {
        let transport = self.transport.get_mut().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(transport) = transport {
            if self.failed.load(Ordering::SeqCst) {
                transport.abort(ABORT_WAIT);
            } else {
                // Failures at this point concern processes that this one no longer needs.
                let _ = transport.shutdown(GOODBYE_TIMEOUT);
            }
        }
    }
}

/// Builds the [`ClusterAllocator`] of one worker thread; `Send`, so it can move to that thread.
pub struct ClusterBuilder {
    local: ProcessBuilder,
    endpoints: WorkerEndpoints,
    network: Network,
    processes: usize,
    threads: usize,
    join: Option<usize>,
    connection: Option<(i64, i64)>,
    early_bytes: usize,
}

impl ClusterBuilder {
    /// The builder of a worker in a cluster of `processes` processes with `threads` workers
    /// each, whose network endpoints are `endpoints`; `join` is the bootstrap server's worker
    /// when this process joins a running cluster; the worker keeps at most `early_bytes` for
    /// channels it has not allocated yet.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        local: ProcessBuilder,
        endpoints: WorkerEndpoints,
        network: Network,
        processes: usize,
        threads: usize,
        join: Option<usize>,
        connection: (i64, i64),
        early_bytes: usize,
    ) -> Self {
        let connection = Some(connection);
        ClusterBuilder { local, endpoints, network, processes, threads, join, connection, early_bytes }
    }

    /// The global index of the worker this builder is for.
    pub fn index(&self) -> usize {
        self.endpoints.index
    }

    /// Builds the allocator and registers the current thread as the one to wake.
    pub fn build(self) -> ClusterAllocator {
        // Processes that left before this one joined are reported as departures at once.
        let gone = (self.endpoints.senders.iter().enumerate())
            .filter(|(_, sender)| sender.as_ref().is_some_and(ProcessSender::departed))
            .map(|(process, _)| process)
            .collect();
        let senders = self
            .endpoints
            .senders
            .into_iter()
            .map(|sender| sender.map(|sender| Rc::new(RefCell::new(sender))))
            .collect();
        ClusterAllocator {
            local: self.local.build(),
            index: self.endpoints.index,
            processes: self.processes,
            threads: self.threads,
            senders,
            receiver: self.endpoints.receiver,
            joins: self.endpoints.joins,
            gate: self.endpoints.gate,
            join_server: self.join,
            connection: self.connection,
            inboxes: Inboxes::new(self.early_bytes),
            backfills: Backfills::default(),
            joined: Vec::new(),
            departed: gone,
            violations: ProtocolViolations::new(self.network.health().clone(), self.threads),
            network: self.network,
        }
    }
}

/// The allocator of one worker of a cluster.
pub struct ClusterAllocator {
    pub(super) local: ProcessAllocator,
    index: usize,
    processes: usize,
    pub(super) threads: usize,
    /// The connection buffer to each process, shared by all channels (`None` for this process).
    senders: Vec<Option<Rc<RefCell<ProcessSender>>>>,
    receiver: ThreadQueue<Delivery>,
    /// Processes that joined, one message each, in join order.
    joins: crossbeam_channel::Receiver<JoinedProcess>,
    /// Joins and leaves of this process one at a time (shared with its join acceptor).
    pub(crate) gate: std::sync::Arc<crate::networking::MembershipGate>,
    /// The bootstrap server's worker, when this process joined a running cluster.
    join_server: Option<usize>,
    /// When this process started and finished connecting to the others.
    connection: Option<(i64, i64)>,
    /// Per channel, what arrived from other processes (see [`super::inboxes`]).
    pub(super) inboxes: Inboxes,
    /// How to give every channel allocated so far pushers to the workers of a joined process.
    backfills: Backfills<Rc<RefCell<ProcessSender>>>,
    /// The workers of processes that joined, not yet taken by [`ClusterAllocator::take_joins`].
    joined: Vec<std::ops::Range<usize>>,
    /// Processes that left (said goodbye while this process runs), not yet taken by
    /// [`ClusterAllocator::take_departures`]; everything they sent has been received.
    departed: Vec<usize>,
    /// Where messages of other processes that break the protocol are reported.
    violations: ProtocolViolations,
    /// Declared last: dropped after `senders`, which flush when dropped.
    network: Network,
}

impl ClusterAllocator {
    /// This worker's global index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The worker that serves this process's bootstrap, when it joined a running cluster
    /// (`--join W`); `None` for an initial process.
    pub fn join_server(&self) -> Option<usize> {
        self.join_server
    }

    /// The processes that joined since the last call, in join order, each with this worker's
    /// sender to it (never blocks).
    fn take_joined(&mut self) -> Vec<JoinedProcess> {
        self.joins.try_iter().collect()
    }

    /// The number of worker threads of each process.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The number of workers in the cluster.
    pub fn peers(&self) -> usize {
        self.processes * self.threads
    }

    /// Allocates channel `identifier`: one pusher per worker of the cluster and this worker's
    /// puller, and the pushers to workers that join later.
    pub fn allocate<T: Exchangeable>(
        &mut self,
        identifier: usize,
    ) -> (ChannelEndpoints<T>, JoinedPushers<T>) {
        let (local_pushers, local_puller) = self.local.allocate::<T>(identifier);
        let mut local_pushers = local_pushers.into_iter();
        let index = self.index;
        let pushers = (0..self.peers())
            .map(|target| match self.remote_sender(target / self.threads) {
                None => local_pushers.next().expect("a pusher per local worker"),
                Some(sender) => Box::new(NetworkPusher::new(sender, identifier, index, target..target + 1)),
            })
            .collect();
        let joined = JoinedPushers::default();
        self.backfills.register(&joined, true, move |sender, targets| {
            Box::new(NetworkPusher::<T>::new(Rc::clone(sender), identifier, index, targets))
        });
        ((pushers, self.puller(identifier, local_puller)), joined)
    }

    /// Allocates channel `identifier` for broadcasts: the pusher gives every worker of the
    /// cluster each element, encoding it once per remote process; processes that join later
    /// get a pusher each through the returned [`JoinedPushers`].
    pub fn broadcast<T: Exchangeable + Clone>(
        &mut self,
        identifier: usize,
    ) -> (FanOut<T>, Box<dyn Pull<T>>, JoinedPushers<T>) {
        let (local_pushers, local_puller) = self.local.allocate::<T>(identifier);
        let mut pushers = local_pushers;
        let index = self.index;
        for process in 0..self.processes {
            if let Some(sender) = self.remote_sender(process) {
                let workers = process * self.threads..(process + 1) * self.threads;
                pushers.push(Box::new(NetworkPusher::new(sender, identifier, index, workers)));
            }
        }
        let joined = JoinedPushers::default();
        self.backfills.register(&joined, false, move |sender, workers| {
            Box::new(NetworkPusher::<T>::new(Rc::clone(sender), identifier, index, workers))
        });
        (FanOut::new(pushers), self.puller(identifier, local_puller), joined)
    }

    /// Admits process `process`, reached through `sender`: every channel allocated so far is
    /// back-filled with pushers to its workers, and `peers` counts them.
    ///
    /// # Panics
    ///
    /// If `process` is not the next process index: processes join one at a time, in order.
    fn admit(&mut self, process: usize, sender: ProcessSender) {
        assert_eq!(
            process, self.processes,
            "process {process} joined, but process {} was expected",
            self.processes
        );
        let sender = Rc::new(RefCell::new(sender));
        let workers = process * self.threads..(process + 1) * self.threads;
        self.backfills.run(&sender, workers.clone());
        self.senders.push(Some(sender));
        self.processes += 1;
        self.joined.push(workers);
    }

    /// Admits the processes that joined since the last call (back-filling every channel) and
    /// returns their workers, one range per process.
    pub fn take_joins(&mut self) -> Vec<std::ops::Range<usize>> {
        for joined in self.take_joined() {
            self.admit(joined.process, joined.sender);
        }
        std::mem::take(&mut self.joined)
    }

    /// The processes that left the cluster since the last call: each said goodbye while this
    /// process runs, after everything it sent, which has been received (sends to it are
    /// dropped from then on).
    pub fn take_departures(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.departed)
    }

    /// True when processes left that [`ClusterAllocator::take_departures`] has not reported.
    pub fn has_departures(&self) -> bool {
        !self.departed.is_empty()
    }

    /// True when processes joined that [`ClusterAllocator::take_joins`] has not admitted yet.
    #[inline]
    pub fn has_joins(&self) -> bool {
        !self.joins.is_empty()
    }

    /// On a worker of a joining process: when its process started and finished connecting to
    /// the cluster (stamps, [`crate::clock::stamp`]).
    pub fn join_connection(&self) -> Option<(i64, i64)> {
        self.join_server.and(self.connection)
    }

    fn remote_sender(&self, process: usize) -> Option<Rc<RefCell<ProcessSender>>> {
        self.senders[process].clone()
    }

    fn puller<T: Exchangeable>(&mut self, identifier: usize, local: Box<dyn Pull<T>>) -> Box<dyn Pull<T>> {
        let remote = self.inboxes.allocate(identifier, self.threads);
        let violations = self.violations();
        Box::new(ClusterPuller {
            local,
            remote,
            identifier,
            current: None,
            spares: Vec::new(),
            violations,
            scratch: Vec::new(),
            pulled_bytes: 0,
            events: Rc::clone(self.local.events()),
        })
    }

    /// Where this worker reports messages of other processes that break the protocol.
    pub fn violations(&self) -> ProtocolViolations {
        self.violations.clone()
    }

    /// What this worker's inboxes hold for channels it has not allocated, and what they
    /// dropped for channels whose puller is gone.
    pub fn inbox_stats(&self) -> InboxStats {
        self.inboxes.stats()
    }

    /// What this process's received messages hold against its receive budget, and what
    /// spilled ([`crate::networking::receive_budget`]).
    pub fn budget_stats(&self) -> Option<BudgetStats> {
        self.network.budget_stats()
    }

    /// Moves notices of arrived data, from this process and from others, into the events.
    pub fn receive(&mut self) {
        self.local.receive();
        let mut events = self.local.events().borrow_mut();
        for (header, payload) in self.receiver.try_iter() {
            if header.is_goodbye() {
                // The transport's notice that the process left, after its last message.
                self.departed.push(header.source as usize / self.threads);
                continue;
            }
            let channel = header.channel as usize;
            match self.inboxes.deliver(channel, header.source as usize, self.threads, payload) {
                Delivered::Queued => events.push(channel),
                Delivered::Dropped => {}
                Delivered::OverLimit { process, bytes } => {
                    let reason = format!(
                        "its messages for channels this worker has not allocated take up {bytes} bytes, and \
                         all such messages may take up at most {} (--early-bytes or TIMELY_EARLY_BYTES; channel \
                         {channel} would exceed it)",
                        self.inboxes.early_limit()
                    );
                    self.violations.report(process, &reason);
                }
            }
        }
    }

    /// Flushes what this worker buffered for other processes.
    pub fn release(&mut self) {
        for sender in self.senders.iter().flatten() {
            // A failed connection is recorded in the network's health, which the worker checks.
            let _ = sender.borrow_mut().flush();
        }
    }

    /// Channel identifiers that received data since the list was last drained.
    pub fn events(&self) -> &Events {
        self.local.events()
    }

    /// Whether events are pending, the network delivered something, a process joined, or the
    /// network failed.
    pub fn has_pending(&self) -> bool {
        self.local.has_pending()
            || !self.receiver.is_empty()
            || !self.joins.is_empty()
            || !self.network.health().is_healthy()
    }

    /// Why the cluster cannot go on: the first network failure, if any.
    pub fn failure(&self) -> Option<String> {
        self.network.health().failure().map(|error| error.to_string())
    }

    /// Records that this worker's run failed: the connections will close without goodbye,
    /// which the other processes see as this process being lost.
    pub fn fail(&self) {
        self.network.fail();
    }

    /// Every allocation made so far, in order.
    pub fn allocations(&self) -> &[ChannelRecord] {
        self.local.allocations()
    }
}

/// Sends elements of one channel to workers of another process.
struct NetworkPusher<T> {
    sender: Rc<RefCell<ProcessSender>>,
    header: MessageHeader,
    marker: std::marker::PhantomData<T>,
}

impl<T> NetworkPusher<T> {
    fn new(
        sender: Rc<RefCell<ProcessSender>>,
        channel: usize,
        source: usize,
        targets: std::ops::Range<usize>,
    ) -> Self {
        let header = MessageHeader {
            channel: channel as u64,
            source: source as u64,
            target_lower: targets.start as u64,
            target_upper: targets.end as u64,
            length: 0,
            seqno: 0,
        };
        NetworkPusher { sender, header, marker: std::marker::PhantomData }
    }
}

impl<T: Exchangeable> Push<T> for NetworkPusher<T> {
    /// Encodes the element into the connection's buffer and leaves it, encoded, for the
    /// caller to reuse.
    fn push(&mut self, element: &mut Option<T>) {
        if let Some(item) = element.as_ref() {
            // A failed connection is already the network's failure, and a message that cannot
            // be sent (too large) becomes it: either way the worker stops at its next step
            // with the reason, so the element can be dropped here without losing it silently.
            let mut sender = self.sender.borrow_mut();
            if let Err(error) = sender.send_with(self.header, |out| item.encode(out)) {
                sender.fail_with(error);
            }
            self.header.seqno += 1;
        }
    }
}

/// Receives on one channel: first from this process, then what other processes sent.
struct ClusterPuller<T> {
    local: Box<dyn Pull<T>>,
    remote: Inbox,
    identifier: usize,
    current: Option<T>,
    /// Elements given back, which messages from other processes are decoded into.
    spares: Vec<T>,
    /// Where undecodable messages and false senders are reported.
    violations: ProtocolViolations,
    /// What spilled messages are read back into.
    scratch: Vec<u8>,
    /// Payload bytes handed out since the operator last found the channel empty.
    pulled_bytes: usize,
    /// Where the channel is marked as having data, to schedule its operator again.
    events: Events,
}

/// The most payload bytes from other processes a puller hands out in one activation of its
/// operator (4 MiB); the operator is scheduled again for the rest. Operators drain their
/// inputs, so without this an operator behind a slow one would move a whole backlog, spilled or
/// not, into memory in one step.
pub const PULL_BYTES_PER_ACTIVATION: usize = 4 << 20;

/// A puller keeps the buffer it read a spilled message into unless it grew beyond this.
const MAX_KEPT_SCRATCH_BYTES: usize = 4 << 20;

/// How many given-back elements a cluster puller keeps to decode into.
const SPARE_ELEMENTS: usize = 4;

impl<T: Exchangeable> Pull<T> for ClusterPuller<T> {
    fn pull(&mut self) -> &mut Option<T> {
        if let Some(element) = self.local.recv() {
            self.current = Some(element);
            return &mut self.current;
        }
        if self.pulled_bytes >= PULL_BYTES_PER_ACTIVATION {
            // Enough for one activation: what else waits stays in the inbox (or its spill
            // file), and the channel's event schedules its operator again.
            self.pulled_bytes = 0;
            if !self.remote.borrow().is_empty() {
                self.events.borrow_mut().push(self.identifier);
            }
            self.current = None;
            return &mut self.current;
        }
        // After a failure the worker stops at its next step: nothing more from the network
        // is handed out, so that nothing is computed from a stream missing a dropped message.
        let message = match self.violations.is_healthy() {
            true => self.remote.borrow_mut().pop(),
            false => None,
        };
        let Some((source, payload)) = message else {
            self.pulled_bytes = 0;
            self.current = None;
            return &mut self.current;
        };
        self.pulled_bytes += payload.len();
        let mut scratch = std::mem::take(&mut self.scratch);
        let bytes = payload.read(&mut scratch).unwrap_or_else(|error| {
            // This process's own disk failed, not the sender: the worker fails, naming it.
            panic!("cannot read a received message back from its spill file: {error}")
        });
        self.current = self.decode(source, bytes);
        if scratch.capacity() <= MAX_KEPT_SCRATCH_BYTES {
            self.scratch = scratch;
        }
        &mut self.current
    }

    /// Keeps a few elements to decode remote messages into; gives the rest to this process.
    fn recycle(&mut self, element: T) {
        if self.spares.len() < SPARE_ELEMENTS {
            self.spares.push(element);
        } else {
            self.local.recycle(element);
        }
    }
}

impl<T: Exchangeable> ClusterPuller<T> {
    /// The element of `payload`, a message of worker `source`; `None` after reporting a
    /// message that does not decode, or whose element names another sender, as a protocol
    /// violation of `source`'s process.
    fn decode(&mut self, source: usize, payload: &[u8]) -> Option<T> {
        let decoded = match self.spares.pop() {
            Some(mut spare) => T::decode_into(payload, &mut spare).map(|()| spare),
            None => T::decode(payload),
        };
        let checked = decoded.and_then(|element| element.check_sender(source).map(|()| element));
        match checked {
            Ok(element) => Some(element),
            Err(error) => {
                let reason = format!(
                    "worker {source} sent an invalid message on channel {}: {error}",
                    self.identifier
                );
                self.violations.report(self.violations.process_of(source), &reason);
                None
            }
        }
    }
}

impl<T> Drop for ClusterPuller<T> {
    /// Messages that wait or arrive later for this channel are dropped: its dataflow is done.
    fn drop(&mut self) {
        self.remote.borrow_mut().close();
    }
}

impl Drop for ClusterAllocator {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.fail();
        }
    }
}
