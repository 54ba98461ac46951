//! A queue from any number of threads to one receiving thread that allocates only to grow.
//!
//! This module owns [`ThreadQueue`]: elements pushed by senders wait in a `VecDeque` behind a
//! mutex; the receiver swaps the whole deque out under the lock (one lock per batch, not per
//! element) and pops from its private copy, and the two deques keep their capacity, so a
//! queue that has reached its working size allocates nothing more. (Crossbeam's unbounded
//! channels allocate a block per 31 elements.) It must not block: the lock is held for a push
//! or a swap only. Waking the receiver is the caller's business.
//!
//! A receiver polls its queues far more often than anything arrives (every step, every
//! input), so it looks at a count of what waits before it takes the lock: an empty queue costs
//! it a read, which leaves the cache line shared, instead of a locked write that takes the
//! line from the senders' cores.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

struct Shared<T> {
    pending: Mutex<VecDeque<T>>,
    /// `pending.len()`, written under the lock; read without it, to skip locking an empty queue.
    waiting: AtomicUsize,
    receiver_gone: AtomicBool,
}

/// The sending side of a [`ThreadQueue`]; clone it for more senders.
pub struct QueueSender<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for QueueSender<T> {
    fn clone(&self) -> Self {
        QueueSender { shared: Arc::clone(&self.shared) }
    }
}

/// The receiving side of a [`ThreadQueue`], owned by one thread.
pub struct ThreadQueue<T> {
    shared: Arc<Shared<T>>,
    /// What was taken from `pending` and not yet popped.
    taken: VecDeque<T>,
}

/// A new queue: a sender (clone it for more) and the receiver.
pub fn thread_queue<T>() -> (QueueSender<T>, ThreadQueue<T>) {
    let shared = Arc::new(Shared {
        pending: Mutex::new(VecDeque::new()),
        waiting: AtomicUsize::new(0),
        receiver_gone: AtomicBool::new(false),
    });
    (QueueSender { shared: Arc::clone(&shared) }, ThreadQueue { shared, taken: VecDeque::new() })
}

impl<T> Shared<T> {
    fn pending(&self) -> std::sync::MutexGuard<'_, VecDeque<T>> {
        // Nothing panics while the lock is held; a poisoned lock still holds a valid deque.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T> QueueSender<T> {
    /// Appends `element`; gives it back if the receiver is gone.
    pub fn send(&self, element: T) -> Result<(), T> {
        if self.shared.receiver_gone.load(Ordering::Acquire) {
            return Err(element);
        }
        let mut pending = self.shared.pending();
        pending.push_back(element);
        // Before the caller wakes the receiver, which then sees the count.
        self.shared.waiting.store(pending.len(), Ordering::Release);
        Ok(())
    }
}

impl<T> ThreadQueue<T> {
    /// The oldest element, if any.
    pub fn try_recv(&mut self) -> Option<T> {
        if self.taken.is_empty() {
            if self.shared.waiting.load(Ordering::Acquire) == 0 {
                return None;
            }
            let mut pending = self.shared.pending();
            std::mem::swap(&mut *pending, &mut self.taken);
            self.shared.waiting.store(0, Ordering::Release);
        }
        self.taken.pop_front()
    }

    /// Every element available now, oldest first.
    pub fn try_iter(&mut self) -> impl Iterator<Item = T> + '_ {
        std::iter::from_fn(move || self.try_recv())
    }

    /// True if nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.taken.is_empty() && self.shared.waiting.load(Ordering::Acquire) == 0
    }
}

impl<T> Drop for ThreadQueue<T> {
    /// Senders drop what they would send from now on; what waits is dropped here.
    fn drop(&mut self) {
        self.shared.receiver_gone.store(true, Ordering::Release);
        let mut pending = self.shared.pending();
        pending.clear();
        self.shared.waiting.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_arrive_in_order_per_sender_from_many_threads() {
        let (sender, mut queue) = thread_queue();
        let threads: Vec<_> = (0..4u64)
            .map(|thread| {
                let sender = sender.clone();
                std::thread::spawn(move || (0..1000u64).for_each(|i| sender.send((thread, i)).unwrap()))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let mut next = [0u64; 4];
        for (thread, i) in queue.try_iter() {
            assert_eq!(next[thread as usize], i);
            next[thread as usize] += 1;
        }
        assert_eq!(next, [1000; 4]);
        assert!(queue.is_empty());
    }

    #[test]
    fn a_gone_receiver_gives_elements_back() {
        let (sender, queue) = thread_queue();
        sender.send(1).unwrap();
        drop(queue);
        assert_eq!(sender.send(2), Err(2));
    }
}
