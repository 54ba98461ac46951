//! The allocator of a single worker, and the local (same-thread) channel path.
//!
//! This module owns [`ThreadAllocator`] and the pusher/puller pair over a shared
//! `Rc<RefCell<VecDeque<T>>>` that every allocator uses when a worker sends to itself.
//! It must not use atomics or locks: nothing here crosses a thread.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use super::{Allocations, ChannelEndpoints, ChannelRecord, Events};
use crate::{Pull, Push};

/// A queue shared by a worker's pusher to itself and its puller.
pub(crate) type LocalQueue<T> = Rc<RefCell<VecDeque<T>>>;

/// Builds a [`ThreadAllocator`]; the only worker of a single-threaded computation.
#[derive(Debug, Default)]
pub struct ThreadBuilder;

impl ThreadBuilder {
    /// Builds the allocator on the current thread.
    pub fn build(self) -> ThreadAllocator {
        ThreadAllocator {
            events: Events::default(),
            allocations: Allocations::default(),
        }
    }
}

/// The allocator of the only worker: every channel is a local queue.
pub struct ThreadAllocator {
    events: Events,
    allocations: Allocations,
}

impl ThreadAllocator {
    /// Allocates channel `identifier`: one pusher (to this worker) and the puller, over one queue.
    pub fn allocate<T: 'static>(&mut self, identifier: usize) -> ChannelEndpoints<T> {
        self.allocations.record::<T>(identifier);
        let (pusher, queue) = LocalPusher::new(identifier, &self.events);
        (
            vec![Box::new(pusher)],
            Box::new(LocalPuller {
                queue,
                current: None,
            }),
        )
    }

    /// Channel identifiers that received data since the list was last drained.
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// Whether events are waiting to be drained.
    pub fn has_pending(&self) -> bool {
        !self.events.borrow().is_empty()
    }

    /// Every allocation made so far, in order.
    pub fn allocations(&self) -> &[ChannelRecord] {
        self.allocations.as_slice()
    }
}

/// Sends from a worker to itself: appends to a local queue and records an event.
pub(crate) struct LocalPusher<T> {
    identifier: usize,
    queue: LocalQueue<T>,
    events: Events,
}

impl<T> LocalPusher<T> {
    /// A pusher for channel `identifier` recording into `events`, and the queue it fills.
    pub(crate) fn new(identifier: usize, events: &Events) -> (Self, LocalQueue<T>) {
        let queue = LocalQueue::default();
        let pusher = LocalPusher {
            identifier,
            queue: Rc::clone(&queue),
            events: Rc::clone(events),
        };
        (pusher, queue)
    }
}

impl<T> Push<T> for LocalPusher<T> {
    fn push(&mut self, element: &mut Option<T>) {
        if let Some(element) = element.take() {
            self.queue.borrow_mut().push_back(element);
            let mut events = self.events.borrow_mut();
            // Consecutive duplicates carry no information; skipping them bounds the list's growth.
            if events.last() != Some(&self.identifier) {
                events.push(self.identifier);
            }
        }
    }
}

/// Receives what a worker sent to itself.
struct LocalPuller<T> {
    queue: LocalQueue<T>,
    current: Option<T>,
}

impl<T> Pull<T> for LocalPuller<T> {
    fn pull(&mut self) -> &mut Option<T> {
        self.current = self.queue.borrow_mut().pop_front();
        &mut self.current
    }
}
