//! Allocators: per-worker factories of channel endpoints.
//!
//! This module owns the [`Allocator`] a worker uses to create channels, the [`AllocatorBuilder`]
//! that is moved to a worker thread to make it, the per-worker list of channel events, and the
//! record of allocations ([`ChannelRecord`]). Each variant lives in its own submodule:
//! [`thread`] for a single worker, [`process`] for several worker threads of one process,
//! [`cluster`] for the workers of several processes.
//!
//! It must not spawn threads (that is [`mod@crate::initialize`]'s job) nor interpret what travels on
//! a channel.

mod channels;
pub mod cluster;
pub mod inboxes;
pub mod joined;
pub mod process;
pub mod thread;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use crate::{Exchangeable, ProtocolViolations, Pull};
pub(crate) use channels::{Allocations, Events};
pub use channels::{ChannelEndpoints, ChannelRecord, FanOut};
use cluster::{ClusterAllocator, ClusterBuilder};
use joined::JoinedPushers;
use process::{ProcessAllocator, ProcessBuilder};
use thread::{ThreadAllocator, ThreadBuilder};

/// How long a worker with nothing to do checks for a push from another worker before it
/// parks its thread ([`Allocator::await_events`]).
const SPIN_BEFORE_PARK: Duration = Duration::from_micros(20);

/// Everything needed to build an [`Allocator`] on a worker thread; it is `Send`, the allocator is not.
pub enum AllocatorBuilder {
    /// Builds the allocator of a single worker.
    Thread(ThreadBuilder),
    /// Builds the allocator of one of several worker threads in this process.
    Process(ProcessBuilder),
    /// Builds the allocator of a worker in a cluster of processes.
    Cluster(ClusterBuilder),
}

impl AllocatorBuilder {
    /// Builds the allocator; call this on the worker thread that will use it.
    pub fn build(self) -> Allocator {
        match self {
            AllocatorBuilder::Thread(builder) => Allocator::Thread(builder.build()),
            AllocatorBuilder::Process(builder) => Allocator::Process(builder.build()),
            AllocatorBuilder::Cluster(builder) => Allocator::Cluster(builder.build()),
        }
    }

    /// The global index of the worker this builder is for.
    pub(crate) fn index(&self) -> usize {
        match self {
            AllocatorBuilder::Thread(_) => 0,
            AllocatorBuilder::Process(builder) => builder.index(),
            AllocatorBuilder::Cluster(builder) => builder.index(),
        }
    }
}

/// Creates channel endpoints for one worker and tells it which channels received data.
///
/// An allocator lives on its worker's thread and is not `Send`.
// One allocator per worker thread: the size of the cluster variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Allocator {
    /// The only worker.
    Thread(ThreadAllocator),
    /// One of several worker threads in this process.
    Process(ProcessAllocator),
    /// A worker in a cluster of processes.
    Cluster(ClusterAllocator),
}

impl Allocator {
    /// This worker's global index.
    pub fn index(&self) -> usize {
        match self {
            Allocator::Thread(_) => 0,
            Allocator::Process(allocator) => allocator.index(),
            Allocator::Cluster(allocator) => allocator.index(),
        }
    }

    /// The number of workers now. It may grow when workers join, so read it when needed.
    pub fn peers(&self) -> usize {
        match self {
            Allocator::Thread(_) => 1,
            Allocator::Process(allocator) => allocator.peers(),
            Allocator::Cluster(allocator) => allocator.peers(),
        }
    }

    /// True when the set of workers can change while this worker runs: only a cluster of
    /// processes admits processes that join.
    pub fn can_rescale(&self) -> bool {
        matches!(self, Allocator::Cluster(_))
    }

    /// Allocates channel `identifier` (the same id on every worker, dataflows are built in the same order).
    ///
    /// Returns one pusher per worker (index `i` sends to worker `i`) and this worker's puller.
    /// Elements pushed by worker `a` to worker `b` arrive at `b` in FIFO order per sender.
    /// Workers that join later are not reached; see [`Allocator::allocate_joinable`].
    ///
    /// # Panics
    ///
    /// If another worker allocated `identifier` with a different element type, or this worker
    /// allocated it before.
    pub fn allocate<T: Exchangeable>(&mut self, identifier: usize) -> ChannelEndpoints<T> {
        self.allocate_joinable(identifier).0
    }

    /// Like [`Allocator::allocate`], with the pushers to workers that join later: after a
    /// join, the returned [`JoinedPushers`] yield one pusher per new worker, in index order.
    pub fn allocate_joinable<T: Exchangeable>(
        &mut self,
        identifier: usize,
    ) -> (ChannelEndpoints<T>, JoinedPushers<T>) {
        match self {
            Allocator::Thread(allocator) => (allocator.allocate(identifier), JoinedPushers::default()),
            Allocator::Process(allocator) => (allocator.allocate(identifier), JoinedPushers::default()),
            Allocator::Cluster(allocator) => allocator.allocate(identifier),
        }
    }

    /// Allocates channel `identifier` for broadcasts: one pusher that gives every worker
    /// (this one included) each element, and this worker's puller.
    ///
    /// In a cluster an element is encoded and sent once per remote process, not once per
    /// remote worker. After a join, the returned [`JoinedPushers`] yield one pusher per joined
    /// process (reaching all its workers), to add to the [`FanOut`].
    pub fn broadcast<T: Exchangeable + Clone>(
        &mut self,
        identifier: usize,
    ) -> (FanOut<T>, Box<dyn Pull<T>>, JoinedPushers<T>) {
        match self {
            Allocator::Cluster(allocator) => allocator.broadcast(identifier),
            _ => {
                let ((pushers, puller), joined) = self.allocate_joinable(identifier);
                (FanOut::new(pushers), puller, joined)
            }
        }
    }

    /// The workers that joined since the last call, one range of global indices per joined
    /// process, in join order. Every channel allocated before is back-filled in this call, and
    /// from then on [`Allocator::peers`] counts the new workers.
    pub fn take_joins(&mut self) -> Vec<std::ops::Range<usize>> {
        match self {
            Allocator::Cluster(allocator) => allocator.take_joins(),
            _ => Vec::new(),
        }
    }

    /// The processes that left the cluster since the last call (each said goodbye after
    /// everything it sent, which has arrived); only a cluster has any.
    pub fn take_departures(&mut self) -> Vec<usize> {
        match self {
            Allocator::Cluster(allocator) => allocator.take_departures(),
            _ => Vec::new(),
        }
    }

    /// True when processes left that [`Allocator::take_departures`] has not reported yet.
    pub fn has_departures(&self) -> bool {
        match self {
            Allocator::Cluster(allocator) => allocator.has_departures(),
            _ => false,
        }
    }

    /// The number of worker threads of each process.
    pub fn threads(&self) -> usize {
        match self {
            Allocator::Thread(_) => 1,
            Allocator::Process(allocator) => allocator.peers(),
            Allocator::Cluster(allocator) => allocator.threads(),
        }
    }

    /// True when processes joined that [`Allocator::take_joins`] has not admitted yet (one
    /// atomic load: cheap enough for every step).
    #[inline]
    pub fn has_joins(&self) -> bool {
        match self {
            Allocator::Cluster(allocator) => allocator.has_joins(),
            _ => false,
        }
    }

    /// The process's membership gate (joins and leaves one at a time, `docs/rescaling.md`), in
    /// a cluster; `None` elsewhere.
    pub fn membership_gate(&self) -> Option<std::sync::Arc<crate::networking::MembershipGate>> {
        match self {
            Allocator::Cluster(allocator) => Some(std::sync::Arc::clone(&allocator.gate)),
            _ => None,
        }
    }

    /// On a worker of a process that joined a running cluster: when the process started and
    /// finished connecting to the others (stamps, [`crate::clock::stamp`]).
    pub fn join_connection(&self) -> Option<(i64, i64)> {
        match self {
            Allocator::Cluster(allocator) => allocator.join_connection(),
            _ => None,
        }
    }

    /// On a worker of a process that joined a running cluster, the worker serving as its
    /// bootstrap server (`--join W`); `None` on every other worker.
    pub fn join_server(&self) -> Option<usize> {
        match self {
            Allocator::Cluster(allocator) => allocator.join_server(),
            _ => None,
        }
    }

    /// Records that this worker's run failed (an error, not a finished computation). In a
    /// cluster, the process's connections then close without goodbye when its workers end,
    /// so that the other processes stop instead of waiting for it.
    pub fn fail(&self) {
        if let Allocator::Cluster(allocator) = self {
            allocator.fail();
        }
    }

    /// Why this worker cannot go on: a lost process of the cluster, say. `None` while healthy.
    pub fn failure(&self) -> Option<String> {
        match self {
            Allocator::Cluster(allocator) => allocator.failure(),
            _ => None,
        }
    }

    /// Where this worker reports messages of other processes that break the protocol (a
    /// worker without other processes has nowhere to: its reports only make a message).
    pub fn violations(&self) -> ProtocolViolations {
        match self {
            Allocator::Cluster(allocator) => allocator.violations(),
            _ => ProtocolViolations::default(),
        }
    }

    /// In a cluster, what this worker keeps for channels it has not allocated and what it
    /// dropped for channels whose puller is gone ([`inboxes`]).
    pub fn inbox_stats(&self) -> Option<inboxes::InboxStats> {
        match self {
            Allocator::Cluster(allocator) => Some(allocator.inbox_stats()),
            _ => None,
        }
    }

    /// In a cluster, takes out the messages of other processes that wait for channel
    /// `channel`, which this worker has not allocated: each sender and the message's bytes,
    /// oldest first; nothing elsewhere (workers of one
    /// process hand each other typed messages, which only the channel's allocation takes).
    ///
    /// # Errors
    ///
    /// A message that spilled to disk cannot be read back.
    pub fn take_early(&mut self, channel: usize) -> std::io::Result<Vec<(usize, Vec<u8>)>> {
        match self {
            Allocator::Cluster(allocator) => allocator.inboxes.take_early(channel, allocator.threads),
            _ => Ok(Vec::new()),
        }
    }

    /// True when another worker of this process allocated channel `identifier` and this one
    /// has not: messages it sent this one there wait as elements, which only an allocation of
    /// the channel takes (a single worker has no other).
    pub fn allocated_locally_by_another(&self, identifier: usize) -> bool {
        match self {
            Allocator::Thread(_) => false,
            Allocator::Process(allocator) => allocator.allocated_by_another(identifier),
            Allocator::Cluster(allocator) => allocator.local.allocated_by_another(identifier),
        }
    }

    /// In a cluster, what this process's received messages hold against its receive budget
    /// and what spilled to disk ([`crate::networking::receive_budget`]).
    pub fn budget_stats(&self) -> Option<crate::networking::BudgetStats> {
        match self {
            Allocator::Cluster(allocator) => allocator.budget_stats(),
            _ => None,
        }
    }

    /// Moves notices of arrived data into [`Allocator::events`]; called at the start of each worker step.
    pub fn receive(&mut self) {
        match self {
            Allocator::Thread(_) => {}
            Allocator::Process(allocator) => allocator.receive(),
            Allocator::Cluster(allocator) => allocator.receive(),
        }
    }

    /// Flushes anything buffered; called at the end of each worker step.
    ///
    /// The thread and process allocators hand every element over as it is pushed; the cluster
    /// allocator writes what it buffered for other processes to their connections.
    pub fn release(&mut self) {
        if let Allocator::Cluster(allocator) = self {
            allocator.release();
        }
    }

    /// Channel identifiers that received data since the engine last drained this list (duplicates allowed).
    ///
    /// Includes pushes from this worker to itself and, after [`Allocator::receive`], pushes from
    /// other workers.
    pub fn events(&self) -> &Rc<RefCell<Vec<usize>>> {
        match self {
            Allocator::Thread(allocator) => allocator.events(),
            Allocator::Process(allocator) => allocator.events(),
            Allocator::Cluster(allocator) => allocator.events(),
        }
    }

    /// Blocks the thread until an event arrives for this worker or `timeout` passes (`None` = indefinitely).
    ///
    /// Returns immediately if events are already pending; with other workers, checks for
    /// [`SPIN_BEFORE_PARK`] before it parks. Any push from another worker to this
    /// worker wakes it. It may also return early, on a spurious wake-up or when something else
    /// unparks this thread, so callers re-check their state and call again.
    pub fn await_events(&self, timeout: Option<Duration>) {
        let pending = || match self {
            Allocator::Thread(allocator) => allocator.has_pending(),
            Allocator::Process(allocator) => allocator.has_pending(),
            Allocator::Cluster(allocator) => allocator.has_pending(),
        };
        if pending() {
            return;
        }
        // Another worker may push within microseconds (a progress round trip): checking for
        // a moment before parking spares a park and an unpark, whose wake-up costs more. A
        // single worker has no one to wait for.
        let spin = SPIN_BEFORE_PARK.min(timeout.unwrap_or(Duration::MAX));
        if !matches!(self, Allocator::Thread(_)) && !spin.is_zero() {
            let start = std::time::Instant::now();
            while start.elapsed() < spin {
                for _ in 0..32 {
                    std::hint::spin_loop();
                }
                if pending() {
                    return;
                }
            }
        }
        match timeout {
            Some(timeout) => std::thread::park_timeout(timeout),
            None => std::thread::park(),
        }
    }

    /// Every allocation made so far, in order (for back-filling channels when workers join).
    pub fn allocations(&self) -> &[ChannelRecord] {
        match self {
            Allocator::Thread(allocator) => allocator.allocations(),
            Allocator::Process(allocator) => allocator.allocations(),
            Allocator::Cluster(allocator) => allocator.allocations(),
        }
    }
}
