//! Probes: watch a stream's frontier from the worker's program.
//!
//! A `ProbeHandle` reports the frontier of the streams it probes: `less_than(t)` is true
//! while records at times before `t` may still appear there. The worker's program steps the
//! worker until the probe passes the time it waits for. A probed stream whose dataflow is
//! dropped before it completes (its worker left the cluster, or the run was abandoned) shows
//! no more times: nothing can appear there any more, and a program waiting on it goes on.

use super::builder::OperatorBuilder;
use crate::dataflow::channels::{Data, Pipeline};
use crate::dataflow::Stream;
use crate::progress::{Antichain, MutableAntichain, Timestamp};
use std::cell::RefCell;
use std::rc::Rc;

/// Observes the frontier of probed streams.
pub struct ProbeHandle<T: Timestamp> {
    frontier: Rc<RefCell<MutableAntichain<T>>>,
}

impl<T: Timestamp> Clone for ProbeHandle<T> {
    fn clone(&self) -> Self {
        ProbeHandle { frontier: self.frontier.clone() }
    }
}

impl<T: Timestamp> Default for ProbeHandle<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Timestamp> ProbeHandle<T> {
    /// A handle that probes nothing yet (its frontier is empty: `done()` is true).
    pub fn new() -> Self {
        ProbeHandle { frontier: Rc::new(RefCell::new(MutableAntichain::new())) }
    }

    /// True while records at some time strictly before `time` may still appear.
    #[inline]
    pub fn less_than(&self, time: &T) -> bool {
        self.frontier.borrow().less_than(time)
    }

    /// True while records at some time before or at `time` may still appear.
    #[inline]
    pub fn less_equal(&self, time: &T) -> bool {
        self.frontier.borrow().less_equal(time)
    }

    /// True once no more records can appear.
    pub fn done(&self) -> bool {
        self.frontier.borrow().is_empty()
    }

    /// The current frontier.
    pub fn frontier(&self) -> Antichain<T> {
        self.frontier.borrow().to_antichain()
    }
}

impl<T: Timestamp, D: Data> Stream<T, D> {
    /// Probes the stream with a new handle.
    pub fn probe(&self) -> ProbeHandle<T> {
        let handle = ProbeHandle::new();
        self.probe_with(&handle);
        handle
    }

    /// Probes the stream with `handle` (which may probe several streams; it then reports
    /// their combined frontier) and passes the records on.
    pub fn probe_with(&self, handle: &ProbeHandle<T>) -> Stream<T, D> {
        let mut builder = OperatorBuilder::new("Probe", self.scope());
        let mut input = builder.new_input(self, Pipeline);
        let (mut output, stream) = builder.new_output();
        // Until the probe first runs, the handle holds the minimum time for this stream.
        let mut shown = Shown::new(handle.frontier.clone());
        let mut changes: Vec<(T, i64)> = Vec::new();
        builder.build_logic(move |frontiers| {
            input.for_each(|capability, data| output.session(&capability).give_vec(data));
            let current = frontiers[0].frontier();
            if current != &shown.times[..] {
                changes.extend(shown.times.drain(..).map(|t| (t, -1)));
                changes.extend(current.iter().cloned().map(|t| (t, 1)));
                shown.times.extend(current.iter().cloned());
                shown.frontier.borrow_mut().update_iter(changes.drain(..)).for_each(drop);
            }
            false
        });
        stream
    }
}

/// The times one probed stream shows in its handle's frontier. When the probe operator is
/// dropped (with its dataflow) they are withdrawn: a dataflow that completed shows none
/// already, and one dropped before it completed has nothing more to show on this worker.
struct Shown<T: Timestamp> {
    frontier: Rc<RefCell<MutableAntichain<T>>>,
    times: Vec<T>,
}

impl<T: Timestamp> Shown<T> {
    /// Shows the minimum time in `frontier`.
    fn new(frontier: Rc<RefCell<MutableAntichain<T>>>) -> Self {
        frontier.borrow_mut().update_iter(Some((T::minimum(), 1))).for_each(drop);
        Shown { frontier, times: vec![T::minimum()] }
    }
}

impl<T: Timestamp> Drop for Shown<T> {
    fn drop(&mut self) {
        let withdrawn = self.times.drain(..).map(|t| (t, -1));
        // (A handle's borrows last one call of it: none is held while a dataflow is dropped.)
        if let Ok(mut frontier) = self.frontier.try_borrow_mut() {
            frontier.update_iter(withdrawn).for_each(drop);
        }
    }
}
