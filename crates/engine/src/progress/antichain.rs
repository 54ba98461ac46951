//! Antichains: the frontiers of progress tracking.
//!
//! `Antichain` is a set of mutually incomparable elements (the minimal elements of some set).
//! `MutableAntichain` maintains the minimal elements of a multiset under `(element, delta)`
//! updates and reports how its frontier changed. Nothing here knows about graphs.

use super::change_batch::ChangeBatch;
use crate::order::PartialOrder;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A set of mutually incomparable elements, each minimal among those inserted.
#[derive(Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Antichain<T> {
    elements: Vec<T>,
}

impl<T: PartialOrder> Antichain<T> {
    /// The empty antichain (as a frontier: nothing can happen any more).
    pub fn new() -> Self {
        Antichain { elements: Vec::new() }
    }

    /// The antichain holding just `element`.
    pub fn from_elem(element: T) -> Self {
        Antichain { elements: vec![element] }
    }

    /// Inserts `element` unless some element is less or equal; removes elements it is less
    /// than. Returns true when `element` was added.
    pub fn insert(&mut self, element: T) -> bool {
        if self.elements.iter().any(|x| x.less_equal(&element)) {
            false
        } else {
            self.elements.retain(|x| !element.less_equal(x));
            self.elements.push(element);
            true
        }
    }

    /// True when some element is strictly less than `time`.
    #[inline]
    pub fn less_than(&self, time: &T) -> bool {
        self.elements.iter().any(|x| x.less_than(time))
    }

    /// True when some element is less than or equal to `time`.
    #[inline]
    pub fn less_equal(&self, time: &T) -> bool {
        self.elements.iter().any(|x| x.less_equal(time))
    }

    /// True when every element of `other` is greater or equal to some element of `self`.
    pub fn dominates(&self, other: &Antichain<T>) -> bool {
        other.elements.iter().all(|t| self.less_equal(t))
    }

    /// The elements, in no particular order.
    #[inline]
    pub fn elements(&self) -> &[T] {
        &self.elements
    }

    /// True when there is no element.
    pub fn is_empty(&self) -> bool {
        self.elements.is_empty()
    }

    /// Removes every element.
    pub fn clear(&mut self) {
        self.elements.clear()
    }

    /// Consumes the antichain, returning its elements.
    pub fn into_elements(self) -> Vec<T> {
        self.elements
    }
}

impl<T: PartialOrder> FromIterator<T> for Antichain<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut result = Antichain::new();
        for element in iter {
            result.insert(element);
        }
        result
    }
}

impl<T: fmt::Debug> fmt::Debug for Antichain<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.elements.iter()).finish()
    }
}

/// The minimal elements of a multiset that changes by `(element, delta)` updates.
///
/// Only elements with positive accumulated count form the frontier; negative counts are
/// tolerated (updates from different workers may arrive in any order).
#[derive(Clone)]
pub struct MutableAntichain<T> {
    counts: ChangeBatch<T>,
    frontier: Vec<T>,
    changes: ChangeBatch<T>,
}

impl<T: PartialOrder + Ord + Clone> Default for MutableAntichain<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: PartialOrder + Ord + Clone> MutableAntichain<T> {
    /// An empty multiset.
    pub fn new() -> Self {
        MutableAntichain { counts: ChangeBatch::new(), frontier: Vec::new(), changes: ChangeBatch::new() }
    }

    /// A multiset holding `element` once.
    pub fn new_bottom(element: T) -> Self {
        let mut result = Self::new();
        result.update_iter(Some((element, 1))).for_each(drop);
        result
    }

    /// The current minimal elements with positive count.
    #[inline]
    pub fn frontier(&self) -> &[T] {
        &self.frontier
    }

    /// The frontier as an owned `Antichain`.
    pub fn to_antichain(&self) -> Antichain<T> {
        Antichain { elements: self.frontier.clone() }
    }

    /// True when the frontier is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.frontier.is_empty()
    }

    /// True when some frontier element is strictly less than `time`.
    #[inline]
    pub fn less_than(&self, time: &T) -> bool {
        self.frontier.iter().any(|x| x.less_than(time))
    }

    /// True when some frontier element is less than or equal to `time`.
    #[inline]
    pub fn less_equal(&self, time: &T) -> bool {
        self.frontier.iter().any(|x| x.less_equal(time))
    }

    /// The accumulated count of `time` (zero if absent).
    pub fn count_for(&mut self, time: &T) -> i64 {
        self.counts.iter().filter(|(t, _)| t == time).map(|(_, d)| *d).sum()
    }

    /// Applies updates and yields the resulting changes to the frontier: `(t, +1)` for
    /// elements that joined it, `(t, -1)` for elements that left it.
    pub fn update_iter<I>(&mut self, updates: I) -> std::vec::Drain<'_, (T, i64)>
    where
        I: IntoIterator<Item = (T, i64)>,
    {
        let mut rebuild = false;
        for (time, delta) in updates {
            if delta == 0 {
                continue;
            }
            // A positive delta moves the frontier unless a frontier element is <= time;
            // a negative delta moves it only if it lands on a frontier element.
            rebuild |= if delta > 0 {
                !self.frontier.iter().any(|f| f.less_equal(&time))
            } else {
                self.frontier.iter().any(|f| f == &time)
            };
            self.counts.update(time, delta);
        }
        if rebuild {
            self.rebuild();
        }
        self.changes.drain()
    }

    /// Recomputes the frontier from the counts, recording what changed.
    fn rebuild(&mut self) {
        for time in self.frontier.drain(..) {
            self.changes.update(time, -1);
        }
        // Sorted by a linear extension, every element's predecessors come first.
        for (time, count) in self.counts.iter() {
            if *count > 0 && !self.frontier.iter().any(|f| f.less_equal(time)) {
                self.frontier.push(time.clone());
            }
        }
        for time in self.frontier.iter() {
            self.changes.update(time.clone(), 1);
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for MutableAntichain<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.frontier.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::Product;
    use proptest::prelude::*;

    #[test]
    fn antichain_keeps_minimal_elements() {
        let mut a = Antichain::new();
        assert!(a.insert(Product::new(2u64, 3u64)));
        assert!(a.insert(Product::new(3, 1)));
        assert!(!a.insert(Product::new(4, 4)), "dominated");
        assert!(a.insert(Product::new(1, 1)), "dominates both");
        assert_eq!(a.elements(), &[Product::new(1, 1)]);
        assert!(a.less_than(&Product::new(1, 2)));
        assert!(!a.less_than(&Product::new(1, 1)));
        assert!(a.less_equal(&Product::new(1, 1)));
        assert!(!a.less_equal(&Product::new(0, 5)));
    }

    #[test]
    fn mutable_antichain_reports_frontier_changes() {
        let mut m = MutableAntichain::new();
        let changes: Vec<_> = m.update_iter(vec![(5u64, 1), (3, 1)]).collect();
        assert_eq!(changes, vec![(3, 1)]);
        assert_eq!(m.update_iter(Some((3, -1))).collect::<Vec<_>>(), vec![(3, -1), (5, 1)]);
        assert_eq!(m.update_iter(Some((7, 1))).count(), 0);
        assert_eq!(m.update_iter(vec![(5, -1), (7, -1)]).collect::<Vec<_>>(), vec![(5, -1)]);
        assert!(m.is_empty());
    }

    fn reference_frontier(counts: &std::collections::BTreeMap<Product<u8, u8>, i64>) -> Vec<Product<u8, u8>> {
        let positive: Vec<_> = counts.iter().filter(|(_, c)| **c > 0).map(|(t, _)| *t).collect();
        let mut frontier: Vec<_> =
            positive.iter().filter(|t| !positive.iter().any(|u| u.less_than(t))).cloned().collect();
        frontier.sort();
        frontier
    }

    proptest! {
        #[test]
        fn mutable_antichain_tracks_minimal_positive_elements(
            updates in proptest::collection::vec(((0u8..4, 0u8..4), -1i64..2), 0..60)
        ) {
            let mut m = MutableAntichain::new();
            let mut counts = std::collections::BTreeMap::new();
            let mut mirrored = ChangeBatch::new();
            for ((a, b), d) in updates {
                let t = Product::new(a, b);
                *counts.entry(t).or_insert(0) += d;
                mirrored.extend(m.update_iter(Some((t, d))));
                let mut frontier = m.frontier().to_vec();
                frontier.sort();
                prop_assert_eq!(&frontier, &reference_frontier(&counts));
                // The reported changes accumulate to the frontier itself.
                let accumulated: Vec<_> = mirrored.iter().map(|(t, _)| *t).collect();
                prop_assert_eq!(accumulated, frontier);
            }
        }
    }
}
