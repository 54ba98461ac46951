//! The allocator of a single worker, and the local (same-thread) channel path.
//!
//! This module owns [`ThreadAllocator`], the same-thread queue [`LocalQueue`] (which also
//! keeps the elements its consumer gives back, for the sender to reuse), and the
//! pusher/puller pair over it that every allocator uses when a worker sends to itself.
//! It must not use atomics or locks: nothing here crosses a thread.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use super::{Allocations, ChannelEndpoints, ChannelRecord, Events};
use crate::{Pull, Push};

/// A same-thread queue from a pusher to a puller, with the emptied elements the puller gave
/// back ([`Pull::recycle`]), which the pusher hands to its sender after each push so that
/// buffers circulate instead of being allocated anew.
pub struct LocalQueue<T> {
    queue: VecDeque<T>,
    spare: Vec<T>,
}

/// A [`LocalQueue`] shared by its pusher and its puller.
pub type SharedQueue<T> = Rc<RefCell<LocalQueue<T>>>;

/// How many given-back elements a queue keeps; more would only hold memory.
const SPARE_ELEMENTS: usize = 4;

impl<T> Default for LocalQueue<T> {
    fn default() -> Self {
        LocalQueue { queue: VecDeque::new(), spare: Vec::new() }
    }
}

impl<T> LocalQueue<T> {
    /// Appends the element in `element`, leaving a given-back one there if there is one.
    pub fn push(&mut self, element: &mut Option<T>) {
        if let Some(item) = element.take() {
            self.queue.push_back(item);
            *element = self.spare.pop();
        }
    }

    /// The oldest element, if any.
    pub fn pop(&mut self) -> Option<T> {
        self.queue.pop_front()
    }

    /// Keeps `element` for reuse by the pusher (a few at most).
    pub fn recycle(&mut self, element: T) {
        if self.spare.len() < SPARE_ELEMENTS {
            self.spare.push(element);
        }
    }
}

/// Builds a [`ThreadAllocator`]; the only worker of a single-threaded computation.
#[derive(Debug, Default)]
pub struct ThreadBuilder;

impl ThreadBuilder {
    /// Builds the allocator on the current thread.
    pub fn build(self) -> ThreadAllocator {
        ThreadAllocator { events: Events::default(), allocations: Allocations::default() }
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
        (vec![Box::new(pusher)], Box::new(LocalPuller { queue, current: None }))
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
    queue: SharedQueue<T>,
    events: Events,
}

impl<T> LocalPusher<T> {
    /// A pusher for channel `identifier` recording into `events`, and the queue it fills.
    pub(crate) fn new(identifier: usize, events: &Events) -> (Self, SharedQueue<T>) {
        let queue = SharedQueue::default();
        let pusher = LocalPusher { identifier, queue: Rc::clone(&queue), events: Rc::clone(events) };
        (pusher, queue)
    }
}

impl<T> Push<T> for LocalPusher<T> {
    fn push(&mut self, element: &mut Option<T>) {
        if element.is_some() {
            self.queue.borrow_mut().push(element);
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
    queue: SharedQueue<T>,
    current: Option<T>,
}

impl<T> Pull<T> for LocalPuller<T> {
    fn pull(&mut self) -> &mut Option<T> {
        self.current = self.queue.borrow_mut().pop();
        &mut self.current
    }

    #[inline]
    fn recv(&mut self) -> Option<T> {
        self.queue.borrow_mut().pop()
    }

    fn recycle(&mut self, element: T) {
        self.queue.borrow_mut().recycle(element);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_given_back_return_to_the_sender_on_its_next_push() {
        let mut queue = LocalQueue::default();
        let mut slot = Some(Vec::with_capacity(64));
        queue.push(&mut slot);
        assert!(slot.is_none(), "nothing was given back yet");
        let mut used: Vec<u8> = queue.pop().expect("pushed");
        used.clear();
        queue.recycle(used);
        let mut slot = Some(vec![1u8]);
        queue.push(&mut slot);
        assert_eq!(slot.map(|spare| spare.capacity()), Some(64), "the buffer came back");
        assert_eq!(queue.pop(), Some(vec![1]));
    }

    #[test]
    fn a_queue_keeps_a_few_spare_elements_at_most() {
        let mut queue: LocalQueue<Vec<u8>> = LocalQueue::default();
        (0..10).for_each(|_| queue.recycle(Vec::new()));
        let mut returned = 0;
        for _ in 0..10 {
            let mut slot = Some(Vec::new());
            queue.push(&mut slot);
            returned += usize::from(slot.is_some());
        }
        assert_eq!(returned, SPARE_ELEMENTS);
    }
}
