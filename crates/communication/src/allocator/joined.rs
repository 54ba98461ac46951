//! Endpoints to workers that joined after a channel was allocated.
//!
//! This module owns [`JoinedPushers`], the list through which an allocator hands the owner of
//! a channel the pushers it back-filled when a process joined, and [`Backfills`], the
//! allocator's record of how to make those pushers for each channel allocated so far (one
//! closure per channel, since channels differ in element type).
//!
//! It must not decide when workers join (the cluster allocator learns it from the network)
//! nor route anything: the owner of a channel takes the new pushers at its next push.

use std::cell::RefCell;
use std::ops::Range;
use std::rc::{Rc, Weak};

use crate::Push;

/// New pushers, each with the first worker it reaches.
pub type NewPushers<T> = Vec<(usize, Box<dyn Push<T>>)>;

/// Pushers to workers that joined since the channel's owner last looked, each with the first
/// worker it reaches (for a point-to-point channel, the worker; for a broadcast, the first
/// worker of the joined process).
pub struct JoinedPushers<T>(Rc<RefCell<NewPushers<T>>>);

impl<T> Default for JoinedPushers<T> {
    fn default() -> Self {
        JoinedPushers(Rc::default())
    }
}

impl<T> JoinedPushers<T> {
    /// The pushers added since the last call, in the order of the workers they reach, or
    /// `None` (the common case, one borrow and a length test).
    #[inline]
    pub fn take(&self) -> Option<NewPushers<T>> {
        let mut list = self.0.borrow_mut();
        if list.is_empty() {
            None
        } else {
            Some(std::mem::take(&mut *list))
        }
    }

    /// A handle for the allocator to add pushers through, which does not keep a dropped
    /// channel's list alive.
    pub(crate) fn adder(&self) -> Weak<RefCell<NewPushers<T>>> {
        Rc::downgrade(&self.0)
    }
}

/// Makes the pushers of one channel to the workers of a joined process (`Range` of their
/// indices), given how to reach that process.
pub(crate) type Backfill<S> = Box<dyn Fn(&S, Range<usize>)>;

/// How to back-fill every channel allocated so far, in allocation order.
pub(crate) struct Backfills<S>(Vec<Backfill<S>>);

impl<S> Default for Backfills<S> {
    fn default() -> Self {
        Backfills(Vec::new())
    }
}

impl<S> Backfills<S> {
    /// Remembers that channel `joined` gets pushers made by `make` for each worker that joins
    /// (`per_worker`), or one per joined process covering all of its workers.
    pub(crate) fn register<T: 'static>(
        &mut self,
        joined: &JoinedPushers<T>,
        per_worker: bool,
        make: impl Fn(&S, Range<usize>) -> Box<dyn Push<T>> + 'static,
    ) {
        let list = joined.adder();
        self.0.push(Box::new(move |sender, workers| {
            let Some(list) = list.upgrade() else { return };
            let mut list = list.borrow_mut();
            if per_worker {
                list.extend(workers.map(|worker| (worker, make(sender, worker..worker + 1))));
            } else {
                list.push((workers.start, make(sender, workers)));
            }
        }));
    }

    /// Back-fills every channel with pushers to `workers`, reached through `sender`.
    pub(crate) fn run(&self, sender: &S, workers: Range<usize>) {
        for backfill in &self.0 {
            backfill(sender, workers.clone());
        }
    }
}
