//! Notifications: run logic once no more records can arrive at a time.
//!
//! A `FrontierNotificator` keeps capabilities for requested times and yields each once the
//! input frontiers have passed it (no frontier element is less or equal to it), in
//! timestamp order. `Notificator` pairs it with the frontiers of one operator run, which
//! is the handle `unary_notify` and `binary_notify` hand to their logic.

use super::capability::Capability;
use crate::progress::{MutableAntichain, Timestamp};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A capability ordered by its time, for the min-heap of deliverable notifications.
struct ByTime<T: Timestamp>(Capability<T>);

impl<T: Timestamp> PartialEq for ByTime<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0.time() == other.0.time()
    }
}
impl<T: Timestamp> Eq for ByTime<T> {}
impl<T: Timestamp> PartialOrd for ByTime<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T: Timestamp> Ord for ByTime<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.time().cmp(other.0.time())
    }
}

/// Requested notifications and those ready to deliver.
pub struct FrontierNotificator<T: Timestamp> {
    pending: Vec<Capability<T>>,
    available: BinaryHeap<Reverse<ByTime<T>>>,
}

impl<T: Timestamp> Default for FrontierNotificator<T> {
    fn default() -> Self {
        FrontierNotificator { pending: Vec::new(), available: BinaryHeap::new() }
    }
}

impl<T: Timestamp> FrontierNotificator<T> {
    /// No notifications requested.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests a notification at `capability`'s time, holding the capability until then.
    pub fn notify_at(&mut self, capability: Capability<T>) {
        self.pending.push(capability);
    }

    /// Moves requests whose time no frontier can still reach into the deliverable set.
    pub fn make_available(&mut self, frontiers: &[&MutableAntichain<T>]) {
        let mut index = 0;
        while index < self.pending.len() {
            let time = self.pending[index].time();
            if frontiers.iter().any(|f| f.less_equal(time)) {
                index += 1;
            } else {
                self.available.push(Reverse(ByTime(self.pending.swap_remove(index))));
            }
        }
    }

    /// The earliest deliverable notification, with the number of requests merged into it.
    pub fn next_count(&mut self, frontiers: &[&MutableAntichain<T>]) -> Option<(Capability<T>, usize)> {
        if self.available.is_empty() {
            self.make_available(frontiers);
        }
        let Reverse(ByTime(capability)) = self.available.pop()?;
        let mut count = 1;
        while self.available.peek().is_some_and(|Reverse(ByTime(c))| c.time() == capability.time()) {
            self.available.pop();
            count += 1;
        }
        Some((capability, count))
    }

    /// The earliest deliverable notification.
    pub fn next(&mut self, frontiers: &[&MutableAntichain<T>]) -> Option<Capability<T>> {
        self.next_count(frontiers).map(|(capability, _)| capability)
    }

    /// Delivers every deliverable notification in time order.
    pub fn for_each(
        &mut self,
        frontiers: &[&MutableAntichain<T>],
        mut logic: impl FnMut(Capability<T>, &mut Self),
    ) {
        self.make_available(frontiers);
        while let Some(capability) = self.next(frontiers) {
            logic(capability, self);
        }
    }

    /// The times of requested notifications not yet delivered.
    pub fn pending(&self) -> impl Iterator<Item = &T> {
        self.pending.iter().map(|c| c.time()).chain(self.available.iter().map(|Reverse(ByTime(c))| c.time()))
    }

    /// True when no notification is requested.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.available.is_empty()
    }
}

/// The notifications of one operator run: requests plus the current input frontiers.
pub struct Notificator<'a, T: Timestamp> {
    frontiers: &'a [&'a MutableAntichain<T>],
    inner: &'a mut FrontierNotificator<T>,
}

impl<'a, T: Timestamp> Notificator<'a, T> {
    /// Pairs `inner` with `frontiers`.
    pub fn new(frontiers: &'a [&'a MutableAntichain<T>], inner: &'a mut FrontierNotificator<T>) -> Self {
        inner.make_available(frontiers);
        Notificator { frontiers, inner }
    }

    /// Requests a notification once the frontiers pass `capability`'s time.
    pub fn notify_at(&mut self, capability: Capability<T>) {
        self.inner.notify_at(capability);
    }

    /// The input frontier of input `input`.
    pub fn frontier(&self, input: usize) -> &MutableAntichain<T> {
        self.frontiers[input]
    }

    /// Delivers every deliverable notification in time order; `logic` may request more.
    pub fn for_each(&mut self, mut logic: impl FnMut(Capability<T>, usize, &mut Self)) {
        while let Some((capability, count)) = self.next_count() {
            logic(capability, count, self);
        }
    }

    /// The earliest deliverable notification and how many requests it merges.
    pub fn next_count(&mut self) -> Option<(Capability<T>, usize)> {
        self.inner.next_count(self.frontiers)
    }
}

impl<T: Timestamp> Iterator for Notificator<'_, T> {
    type Item = (Capability<T>, usize);
    fn next(&mut self) -> Option<Self::Item> {
        self.next_count()
    }
}
