//! What a cluster worker received from other processes, per channel, until the channel's
//! puller takes it.
//!
//! This module owns [`Inboxes`]: a queue per allocated channel ([`Inbox`], shared with the
//! channel's puller); the messages for channels this worker has not allocated yet, kept for
//! them (a slower worker allocates a channel after a faster one has sent on it) up to a limit
//! of bytes in all ([`crate::networking::ReceiveBudget::early_bytes`], `TIMELY_EARLY_BYTES`);
//! and the channels whose puller is gone (its dataflow
//! completed on this worker), whose later messages are dropped on arrival. It must not decode
//! messages nor decide what a failure means for the computation.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;

use crate::networking::{Payload, HEADER_BYTES};

/// A received message: the global index of the worker that sent it, and its payload.
pub(crate) type Message = (usize, Payload);

/// The messages of one allocated channel, shared by the allocator and the channel's puller.
pub(crate) type Inbox = Rc<RefCell<InboxQueue>>;

/// The queue of an [`Inbox`], and whether its puller is gone.
#[derive(Default)]
pub(crate) struct InboxQueue {
    messages: VecDeque<Message>,
    closed: bool,
}

impl InboxQueue {
    /// The oldest message not yet taken.
    pub(crate) fn pop(&mut self) -> Option<Message> {
        self.messages.pop_front()
    }

    /// Whether no message waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Called when the channel's puller is dropped: what waits is dropped, and so is what
    /// arrives later.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        self.messages = VecDeque::new();
    }
}

/// What [`Inboxes`] holds and has dropped, from [`crate::allocator::cluster::ClusterAllocator::inbox_stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InboxStats {
    /// Messages waiting for channels this worker has not allocated.
    pub early_messages: usize,
    /// Their bytes (payloads plus a header's size per message), at most the limit
    /// ([`crate::networking::ReceiveBudget::early_bytes`]).
    pub early_bytes: usize,
    /// Messages dropped on arrival because their channel's puller was gone.
    pub dropped_after_close: u64,
    /// The most bytes early messages may take up (`TIMELY_EARLY_BYTES`).
    pub early_limit: usize,
}

/// What became of a message given to [`Inboxes::deliver`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Delivered {
    /// It waits in its channel's queue (allocated or not): the channel has an event.
    Queued,
    /// Its channel's puller is gone; the message was dropped.
    Dropped,
    /// Keeping it would exceed the limit on early bytes; it was dropped. `process` holds the most
    /// early bytes (`bytes` of them).
    OverLimit {
        /// The process whose messages take up most of the early bytes.
        process: usize,
        /// How many early bytes its messages take up.
        bytes: usize,
    },
}

/// The inboxes of one worker (see the module docs).
pub(crate) struct Inboxes {
    /// The most early bytes kept.
    early_limit: usize,
    /// Per allocated channel, its queue.
    allocated: HashMap<usize, Inbox>,
    /// Per channel not allocated yet, what arrived for it, oldest first.
    early: HashMap<usize, VecDeque<Message>>,
    /// Per sending process, the bytes of its early messages.
    early_by_process: Vec<usize>,
    /// Channels whose puller is gone.
    closed: HashSet<usize>,
    stats: InboxStats,
}

/// What a message counts against the limit on early bytes.
fn cost(payload: &Payload) -> usize {
    payload.len().saturating_add(HEADER_BYTES)
}

impl Inboxes {
    /// Inboxes that keep at most `early_limit` bytes for channels not allocated yet.
    pub(crate) fn new(early_limit: usize) -> Inboxes {
        Inboxes {
            early_limit,
            allocated: HashMap::new(),
            early: HashMap::new(),
            early_by_process: Vec::new(),
            closed: HashSet::new(),
            stats: InboxStats::default(),
        }
    }

    /// The most bytes kept for channels not allocated yet.
    pub(crate) fn early_limit(&self) -> usize {
        self.early_limit
    }

    /// The inbox of channel `channel`, which this worker allocates now, holding what arrived
    /// for it before.
    pub(crate) fn allocate(&mut self, channel: usize, threads: usize) -> Inbox {
        let mut queue = InboxQueue::default();
        if let Some(messages) = self.early.remove(&channel) {
            for (source, payload) in &messages {
                let bytes = cost(payload);
                self.early_by_process[source / threads] -= bytes;
                self.stats.early_bytes -= bytes;
            }
            self.stats.early_messages -= messages.len();
            queue.messages = messages;
        }
        let inbox = Rc::new(RefCell::new(queue));
        self.allocated.insert(channel, Rc::clone(&inbox));
        inbox
    }

    /// Takes in a message of worker `source` (of process `source / threads`) for `channel`.
    pub(crate) fn deliver(
        &mut self,
        channel: usize,
        source: usize,
        threads: usize,
        payload: Payload,
    ) -> Delivered {
        if let Some(inbox) = self.allocated.get(&channel) {
            let mut queue = inbox.borrow_mut();
            if !queue.closed {
                queue.messages.push_back((source, payload));
                return Delivered::Queued;
            }
            drop(queue);
            self.allocated.remove(&channel);
            self.closed.insert(channel);
        }
        if self.closed.contains(&channel) {
            self.stats.dropped_after_close += 1;
            return Delivered::Dropped;
        }
        let bytes = cost(&payload);
        let process = source / threads;
        if self.early_by_process.len() <= process {
            self.early_by_process.resize(process + 1, 0);
        }
        if self.stats.early_bytes.saturating_add(bytes) > self.early_limit {
            let (process, bytes) = (self.early_by_process.iter().copied().enumerate())
                .max_by_key(|&(process, bytes)| (bytes, usize::MAX - process))
                .filter(|&(_, bytes)| bytes > 0)
                .unwrap_or((process, bytes));
            return Delivered::OverLimit { process, bytes };
        }
        self.early_by_process[process] += bytes;
        self.stats.early_bytes += bytes;
        self.stats.early_messages += 1;
        self.early.entry(channel).or_default().push_back((source, payload));
        Delivered::Queued
    }

    /// Takes out what waits for channel `channel`, not allocated (on a leaving worker, a
    /// channel of a dataflow it never builds): each sender and the message's bytes, oldest
    /// first; nothing if it is allocated.
    ///
    /// # Errors
    ///
    /// A message that spilled to disk cannot be read back (what remains is dropped).
    pub(crate) fn take_early(
        &mut self,
        channel: usize,
        threads: usize,
    ) -> std::io::Result<Vec<(usize, Vec<u8>)>> {
        let messages = self.early.remove(&channel).unwrap_or_default();
        for (source, payload) in &messages {
            let bytes = cost(payload);
            self.early_by_process[source / threads] -= bytes;
            self.stats.early_bytes -= bytes;
        }
        self.stats.early_messages -= messages.len();
        let mut scratch = Vec::new();
        let mut taken = Vec::with_capacity(messages.len());
        for (source, payload) in messages {
            taken.push((source, payload.read(&mut scratch)?.to_vec()));
        }
        Ok(taken)
    }

    /// What is held and what was dropped so far.
    pub(crate) fn stats(&self) -> InboxStats {
        InboxStats { early_limit: self.early_limit, ..self.stats }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::networking::DEFAULT_EARLY_BYTES;
    use timely_bytes::Bytes;

    const LIMIT: usize = DEFAULT_EARLY_BYTES;

    fn payload(bytes: usize) -> Payload {
        Payload::from(Bytes::from(vec![0u8; bytes]))
    }

    #[test]
    fn early_messages_wait_for_their_channel_and_count_against_the_limit() {
        let mut inboxes = Inboxes::new(LIMIT);
        assert_eq!(inboxes.deliver(7, 3, 2, payload(100)), Delivered::Queued);
        assert_eq!(inboxes.deliver(7, 2, 2, payload(20)), Delivered::Queued);
        let held = inboxes.stats();
        assert_eq!((held.early_messages, held.early_bytes), (2, 120 + 2 * HEADER_BYTES));
        let inbox = inboxes.allocate(7, 2);
        assert_eq!(inboxes.stats(), InboxStats { early_limit: LIMIT, ..InboxStats::default() });
        let sources: Vec<usize> = std::iter::from_fn(|| inbox.borrow_mut().pop()).map(|(s, _)| s).collect();
        assert_eq!(sources, vec![3, 2], "in arrival order, with their senders");
        // Process 2 fills the allowance; the next message over it names process 2 even when
        // it comes from process 1.
        assert_eq!(inboxes.deliver(9, 4, 2, payload(LIMIT - HEADER_BYTES)), Delivered::Queued);
        let over = inboxes.deliver(10, 2, 2, payload(1));
        assert_eq!(over, Delivered::OverLimit { process: 2, bytes: LIMIT });
        assert_eq!(inboxes.stats().early_messages, 1, "the message over the limit is not kept");
    }

    #[test]
    fn early_messages_taken_out_leave_nothing_held() {
        let mut inboxes = Inboxes::new(LIMIT);
        assert_eq!(inboxes.deliver(7, 3, 2, payload(100)), Delivered::Queued);
        assert_eq!(inboxes.deliver(7, 2, 2, payload(20)), Delivered::Queued);
        assert_eq!(inboxes.deliver(8, 2, 2, payload(5)), Delivered::Queued);
        let taken: Vec<(usize, usize)> =
            inboxes.take_early(7, 2).unwrap().into_iter().map(|(s, bytes)| (s, bytes.len())).collect();
        assert_eq!(taken, vec![(3, 100), (2, 20)], "in arrival order, with their senders");
        let held = inboxes.stats();
        assert_eq!((held.early_messages, held.early_bytes), (1, 5 + HEADER_BYTES), "channel 8 still waits");
        assert!(inboxes.take_early(7, 2).unwrap().is_empty(), "taken once");
        assert!(inboxes.allocate(7, 2).borrow().is_empty(), "nothing left for the channel");
    }

    #[test]
    fn the_early_limit_is_the_one_given() {
        assert_eq!(Inboxes::new(1000).stats().early_limit, 1000, "the stats report the limit");
        let mut inboxes = Inboxes::new(1000);
        assert_eq!(inboxes.early_limit(), 1000);
        assert_eq!(inboxes.deliver(3, 1, 1, payload(1000 - HEADER_BYTES)), Delivered::Queued);
        assert_eq!(inboxes.deliver(4, 1, 1, payload(0)), Delivered::OverLimit { process: 1, bytes: 1000 });
        let mut none = Inboxes::new(0);
        assert_eq!(
            none.deliver(3, 1, 1, payload(0)),
            Delivered::OverLimit { process: 1, bytes: HEADER_BYTES }
        );
    }

    #[test]
    fn messages_for_a_closed_channel_are_dropped() {
        let mut inboxes = Inboxes::new(LIMIT);
        let inbox = inboxes.allocate(5, 1);
        assert_eq!(inboxes.deliver(5, 0, 1, payload(8)), Delivered::Queued);
        inbox.borrow_mut().close();
        assert!(inbox.borrow_mut().pop().is_none(), "closing drops what waits");
        for _ in 0..3 {
            assert_eq!(inboxes.deliver(5, 0, 1, payload(1 << 10)), Delivered::Dropped);
        }
        assert_eq!(
            inboxes.stats(),
            InboxStats { dropped_after_close: 3, early_limit: LIMIT, ..InboxStats::default() }
        );
    }
}
