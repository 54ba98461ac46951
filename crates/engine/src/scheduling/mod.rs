//! Activations: which operators must run.
//!
//! Every scope owns an `ActiveSet`, the indices of its children that asked to run. An
//! `Activator` names one operator by the chain of sets from the worker down to the
//! operator's scope; activating it marks the operator and every enclosing scope, so the
//! worker schedules exactly the scopes on the path. Operators are activated when data
//! arrives for them, when their input frontier changes, or explicitly (an input handle was
//! fed, a user asked). This module owns that bookkeeping, not the scheduling loop itself.
//! [`ChannelActivators`] is the worker's map from a channel to the activator its arrivals wake.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

/// Indices of the children of one scope (or dataflows of a worker) that asked to run.
/// Duplicates are allowed; the scheduler removes them.
pub type ActiveSet = Rc<RefCell<Vec<usize>>>;

/// Activates one operator (or scope) and every scope enclosing it.
#[derive(Clone)]
pub struct Activator {
    chain: Rc<[(ActiveSet, usize)]>,
}

impl Activator {
    /// An activator that marks `index` in `set`, outermost first.
    pub fn new(chain: Vec<(ActiveSet, usize)>) -> Self {
        Activator { chain: chain.into() }
    }

    /// An activator for child `index` of the scope whose own activator is `self` and whose
    /// set of active children is `set`.
    pub fn child(&self, set: &ActiveSet, index: usize) -> Self {
        let mut chain = self.chain.to_vec();
        chain.push((set.clone(), index));
        Activator::new(chain)
    }

    /// The index of the dataflow the operator belongs to (the outermost entry of the chain).
    pub(crate) fn dataflow(&self) -> Option<usize> {
        self.chain.first().map(|&(_, index)| index)
    }

    /// Asks for the operator to be scheduled at the worker's next step.
    ///
    /// Repeated activations of the same operator in a row (an input fed record by record)
    /// are recorded once.
    #[inline]
    pub fn activate(&self) {
        for (set, index) in self.chain.iter() {
            let mut set = set.borrow_mut();
            if set.last() != Some(index) {
                set.push(*index);
            }
        }
    }
}

/// The activator of each channel, by channel identifier, looked up for every arrival.
pub type ChannelActivators = HashMap<usize, Activator, BuildHasherDefault<ChannelHasher>>;

/// Hashes a channel identifier with one multiplication (Fibonacci hashing). The keys are the
/// identifiers this worker allocated, so SipHash's defence against chosen keys buys nothing
/// here, while it cost about a tenth of a one-worker step.
#[derive(Default)]
pub struct ChannelHasher(u64);

/// 2^64 divided by the golden ratio: spreads consecutive identifiers over the high bits.
const FIBONACCI: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for ChannelHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*byte)).wrapping_mul(FIBONACCI);
        }
    }

    #[inline]
    fn write_usize(&mut self, identifier: usize) {
        self.0 = (self.0 ^ identifier as u64).wrapping_mul(FIBONACCI);
    }
}

/// Removes duplicates from `set` and returns its indices in increasing order.
pub fn drain_sorted(set: &ActiveSet, into: &mut Vec<usize>) {
    let mut set = set.borrow_mut();
    into.extend(set.drain(..));
    into.sort_unstable();
    into.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activation_marks_every_enclosing_scope() {
        let worker: ActiveSet = Default::default();
        let scope: ActiveSet = Default::default();
        let dataflow = Activator::new(vec![(worker.clone(), 2)]);
        let operator = dataflow.child(&scope, 5);
        operator.activate();
        operator.activate();
        // Repeated activations in a row are recorded once.
        assert_eq!(*worker.borrow(), vec![2]);
        dataflow.child(&scope, 3).activate();
        operator.activate();
        assert_eq!(*worker.borrow(), vec![2]);
        assert_eq!(*scope.borrow(), vec![5, 3, 5]);
        let mut sorted = Vec::new();
        drain_sorted(&scope, &mut sorted);
        assert_eq!(sorted, vec![3, 5]);
        assert!(scope.borrow().is_empty());
    }

    #[test]
    fn channel_activators_find_every_channel() {
        let set: ActiveSet = Default::default();
        let mut activators = ChannelActivators::default();
        let channels: Vec<usize> = (0..500).chain([usize::MAX - 1, 1 << 40]).collect();
        for (index, &channel) in channels.iter().enumerate() {
            activators.insert(channel, Activator::new(vec![(set.clone(), index)]));
        }
        for &channel in channels.iter().rev() {
            activators[&channel].activate();
        }
        let expected: Vec<usize> = (0..channels.len()).rev().collect();
        assert_eq!(*set.borrow(), expected);
        assert!(!activators.contains_key(&500));
    }
}
