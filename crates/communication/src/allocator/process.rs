//! The allocator of several worker threads in one process.
//!
//! This module owns [`ProcessAllocator`], its [`ProcessBuilder`], the registry through which
//! workers exchange the endpoints of each channel, and the per-worker mailbox that carries
//! notices of arrived data and wakes a parked worker.
//!
//! Cross-thread data moves through one [`crate::queue::ThreadQueue`] per channel id and destination;
//! a worker sending to itself uses the local queue of [`super::thread`]. This module must not
//! block a worker except in [`ProcessAllocator`]'s registry lookup (a short critical section).
//!
//! Wake-up protocol: a cross-thread push (1) enqueues the element, (2) posts the channel id to
//! the destination's mailbox, (3) unparks the destination's thread. A worker about to park checks
//! its mailbox first; an unpark that lands between the check and the park makes the park return
//! at once, so no wake-up is lost.

use std::any::{type_name, Any};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::Thread;

use crossbeam_channel::{Receiver, Sender, TrySendError};

use crate::queue::{thread_queue, QueueSender, ThreadQueue};

use super::thread::{LocalPusher, SharedQueue};
use super::{Allocations, ChannelEndpoints, ChannelRecord, Events};
use crate::{Pull, Push};

/// Builds the [`ProcessAllocator`] of one worker thread; `Send`, so it can move to that thread.
pub struct ProcessBuilder {
    index: usize,
    shared: Arc<Shared>,
    inbox: ThreadQueue<usize>,
}

impl ProcessBuilder {
    /// One builder per worker of a process with `peers` worker threads, in index order.
    pub fn new_vector(peers: usize) -> Vec<ProcessBuilder> {
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..peers).map(|_| thread_queue()).unzip();
        let shared = Arc::new(Shared {
            mailboxes: senders.into_iter().map(|inbox| Arc::new(Mailbox::new(inbox))).collect(),
            registry: Mutex::default(),
        });
        receivers
            .into_iter()
            .enumerate()
            .map(|(index, inbox)| ProcessBuilder { index, shared: Arc::clone(&shared), inbox })
            .collect()
    }

    /// The index of the worker this builder is for.
    pub fn index(&self) -> usize {
        self.index
    }

    /// A function that wakes worker `i` of this process, for threads that bring it data from
    /// outside the process (the cluster's receive threads).
    pub(crate) fn waker(&self) -> Arc<dyn Fn(usize) + Send + Sync> {
        let shared = Arc::clone(&self.shared);
        Arc::new(move |index| {
            if let Some(mailbox) = shared.mailboxes.get(index) {
                mailbox.wake();
            }
        })
    }

    /// Builds the allocator and registers the current thread as the one to wake for this worker.
    pub fn build(self) -> ProcessAllocator {
        self.shared.mailboxes[self.index].register(std::thread::current());
        ProcessAllocator {
            index: self.index,
            shared: self.shared,
            inbox: self.inbox,
            events: Events::default(),
            allocations: Allocations::default(),
        }
    }
}

/// The allocator of one worker thread among several in this process.
pub struct ProcessAllocator {
    index: usize,
    shared: Arc<Shared>,
    inbox: ThreadQueue<usize>,
    events: Events,
    allocations: Allocations,
}

impl ProcessAllocator {
    /// This worker's index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The number of worker threads.
    pub fn peers(&self) -> usize {
        self.shared.mailboxes.len()
    }

    /// Allocates channel `identifier`: one pusher per worker and this worker's puller.
    ///
    /// # Panics
    ///
    /// If another worker allocated `identifier` with a different element type, or this worker
    /// allocated it before.
    pub fn allocate<T: Send + 'static>(&mut self, identifier: usize) -> ChannelEndpoints<T> {
        self.allocations.record::<T>(identifier);
        let Endpoints { senders, receiver, spares, give_back } =
            self.shared.take_endpoints::<T>(identifier, self.index);
        let (local_pusher, local) = LocalPusher::new(identifier, &self.events);
        let mut local_pusher = Some(local_pusher);
        let pushers = senders
            .into_iter()
            .zip(spares)
            .zip(&self.shared.mailboxes)
            .enumerate()
            .map(|(destination, ((sender, spares), mailbox))| -> Box<dyn Push<T>> {
                if destination == self.index {
                    Box::new(local_pusher.take().expect("one local destination"))
                } else {
                    Box::new(RemotePusher { identifier, sender, spares, mailbox: Arc::clone(mailbox) })
                }
            })
            .collect();
        (pushers, Box::new(ProcessPuller { local, remote: receiver, give_back, current: None }))
    }

    /// True when another worker of this process allocated channel `identifier` and this one
    /// has not: that worker may have sent this one messages there, which wait as elements
    /// (not bytes) until this worker allocates the channel.
    pub fn allocated_by_another(&self, identifier: usize) -> bool {
        self.shared.registry.lock().unwrap_or_else(PoisonError::into_inner).contains_key(&identifier)
    }

    /// Moves channel ids posted by other workers into [`ProcessAllocator::events`].
    pub fn receive(&mut self) {
        self.events.borrow_mut().extend(self.inbox.try_iter());
    }

    /// Channel identifiers that received data since the list was last drained.
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// Whether events are pending, either already in the list or still in the mailbox.
    pub fn has_pending(&self) -> bool {
        !self.events.borrow().is_empty() || !self.inbox.is_empty()
    }

    /// Every allocation made so far, in order.
    pub fn allocations(&self) -> &[ChannelRecord] {
        self.allocations.as_slice()
    }
}

/// State shared by all workers of the process.
struct Shared {
    /// One mailbox per worker, by index.
    mailboxes: Vec<Arc<Mailbox>>,
    /// Channels some but not all workers have allocated, by identifier.
    registry: Mutex<HashMap<usize, Entry>>,
}

impl Shared {
    /// Takes worker `index`'s endpoints of channel `identifier`, creating the channel if this is
    /// the first worker to allocate it: a sender to every worker, and its own receiver.
    fn take_endpoints<T: Send + 'static>(&self, identifier: usize, index: usize) -> Endpoints<T> {
        // No panic while the lock is held: other workers must still reach the registry.
        let taken = {
            let mut registry = self.registry.lock().unwrap_or_else(PoisonError::into_inner);
            let entry = registry.entry(identifier).or_insert_with(|| Entry::new::<T>(self.mailboxes.len()));
            let taken = entry.take::<T>(index);
            if entry.remaining == 0 {
                registry.remove(&identifier);
            }
            taken
        };
        taken.unwrap_or_else(|created_as| {
            panic!(
                "channel {identifier}: worker {index} allocated it with element type {}, \
                 but another worker allocated it with element type {created_as}",
                type_name::<T>()
            )
        })
    }
}

/// The endpoints of one channel not yet taken by every worker.
struct Entry {
    /// The element type the channel was created with.
    type_name: &'static str,
    /// How many workers have not taken their endpoints yet.
    remaining: usize,
    /// A `CrossThread<T>` for the element type named by `type_name`.
    endpoints: Box<dyn Any + Send>,
}

/// The cross-thread endpoints of one channel, per destination: a sender and a receiver of
/// elements, and a bounded channel of the emptied elements the destination gives back for its
/// senders to reuse.
struct CrossThread<T> {
    senders: Vec<QueueSender<T>>,
    receivers: Vec<Option<ThreadQueue<T>>>,
    spares: Vec<(Sender<T>, Receiver<T>)>,
}

/// One worker's endpoints of a channel.
struct Endpoints<T> {
    /// A sender to every worker.
    senders: Vec<QueueSender<T>>,
    /// What other workers send this one.
    receiver: ThreadQueue<T>,
    /// Per worker, the emptied elements it gave back.
    spares: Vec<Receiver<T>>,
    /// Where this worker gives back the emptied elements other workers sent it.
    give_back: Sender<T>,
}

/// How many given-back elements wait for reuse per destination; more would only hold memory.
const SPARES_PER_DESTINATION: usize = 4;

impl Entry {
    /// Creates the channel's endpoints for `peers` workers.
    fn new<T: Send + 'static>(peers: usize) -> Self {
        let (senders, receivers) = (0..peers)
            .map(|_| {
                let (sender, receiver) = thread_queue();
                (sender, Some(receiver))
            })
            .unzip();
        let spares = (0..peers).map(|_| crossbeam_channel::bounded(SPARES_PER_DESTINATION)).collect();
        Entry {
            type_name: type_name::<T>(),
            remaining: peers,
            endpoints: Box::new(CrossThread::<T> { senders, receivers, spares }),
        }
    }

    /// Takes worker `index`'s endpoints, or returns the channel's type name if it is not `T`.
    fn take<T: 'static>(&mut self, index: usize) -> Result<Endpoints<T>, &'static str> {
        let endpoints = self.endpoints.downcast_mut::<CrossThread<T>>().ok_or(self.type_name)?;
        let receiver = endpoints.receivers[index].take().expect("a worker takes its endpoints once");
        self.remaining -= 1;
        Ok(Endpoints {
            senders: endpoints.senders.clone(),
            receiver,
            spares: endpoints.spares.iter().map(|(_, spares)| spares.clone()).collect(),
            give_back: endpoints.spares[index].0.clone(),
        })
    }
}

/// Where other workers post notices of data for one worker, and how they wake it.
struct Mailbox {
    /// Channel ids that received data, drained by the owner in `receive`.
    inbox: QueueSender<usize>,
    /// The owner's thread, set when its allocator is built.
    thread: OnceLock<Thread>,
    /// Orders registration against senders that found no thread registered (see [`Mailbox::wake`]).
    registering: Mutex<()>,
}

impl Mailbox {
    fn new(inbox: QueueSender<usize>) -> Self {
        Mailbox { inbox, thread: OnceLock::new(), registering: Mutex::new(()) }
    }

    /// Records `thread` as the one to wake; called once, on the owner's thread.
    fn register(&self, thread: Thread) {
        let _guard = self.registering.lock().unwrap_or_else(PoisonError::into_inner);
        self.thread.set(thread).expect("a worker's allocator is built once");
    }

    /// Posts `identifier` to the owner and wakes it if it is parked.
    fn post(&self, identifier: usize) {
        // The receiver lives as long as the owner's allocator; once it is gone, nobody waits.
        let _ = self.inbox.send(identifier);
        self.wake();
    }

    fn wake(&self) {
        // Fast path once registered. Otherwise re-check under the lock: either registration
        // happened first (and we see the thread), or our post happened before registration and
        // the owner will find it in its mailbox before it ever parks.
        let thread = self.thread.get().or_else(|| {
            let _guard = self.registering.lock().unwrap_or_else(PoisonError::into_inner);
            self.thread.get()
        });
        if let Some(thread) = thread {
            thread.unpark();
        }
    }
}

/// Sends to another worker thread of this process.
struct RemotePusher<T> {
    identifier: usize,
    sender: QueueSender<T>,
    /// Emptied elements the destination gave back, handed to the sender for reuse.
    spares: Receiver<T>,
    mailbox: Arc<Mailbox>,
}

impl<T> Push<T> for RemotePusher<T> {
    fn push(&mut self, element: &mut Option<T>) {
        if let Some(item) = element.take() {
            // A destination that dropped its allocator has stopped; what it would receive is discarded.
            if self.sender.send(item).is_ok() {
                self.mailbox.post(self.identifier);
            }
            *element = self.spares.try_recv().ok();
        }
    }
}

/// Receives on one channel: first what this worker sent itself, then what other workers sent.
struct ProcessPuller<T> {
    local: SharedQueue<T>,
    remote: ThreadQueue<T>,
    give_back: Sender<T>,
    current: Option<T>,
}

impl<T> Pull<T> for ProcessPuller<T> {
    fn pull(&mut self) -> &mut Option<T> {
        self.current = self.local.borrow_mut().pop().or_else(|| self.remote.try_recv());
        &mut self.current
    }

    /// Gives emptied elements back to the other workers' pushers to this worker, which have
    /// no other source of them, and once they have enough, to this worker's own.
    fn recycle(&mut self, element: T) {
        if let Err(TrySendError::Full(element) | TrySendError::Disconnected(element)) =
            self.give_back.try_send(element)
        {
            self.local.borrow_mut().recycle(element);
        }
    }
}
