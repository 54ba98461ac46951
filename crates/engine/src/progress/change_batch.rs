//! `ChangeBatch`: a compacting list of `(item, delta)` updates.
//!
//! The currency of progress tracking: counts of pointstamps change by deltas, and only the
//! net change per item matters. Compaction is lazy and amortized (sort, merge, drop zeros).

/// A list of `(T, i64)` updates that compacts to one net delta per distinct `T`.
#[derive(Clone, Debug)]
pub struct ChangeBatch<T> {
    updates: Vec<(T, i64)>,
    /// The length of the prefix of `updates` known to be compacted.
    clean: usize,
}

impl<T> Default for ChangeBatch<T> {
    fn default() -> Self {
        ChangeBatch { updates: Vec::new(), clean: 0 }
    }
}

impl<T: Ord> ChangeBatch<T> {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// A batch holding one update.
    pub fn new_from(item: T, delta: i64) -> Self {
        let mut batch = Self::new();
        batch.update(item, delta);
        batch
    }

    /// Adds `delta` to the count of `item`.
    #[inline]
    pub fn update(&mut self, item: T, delta: i64) {
        if delta == 0 {
            return;
        }
        // Runs of updates to one item (a message's count, then the next message's at the
        // same time) merge into the last entry instead of growing the list.
        if let Some(last) = self.updates.last_mut() {
            if last.0 == item {
                last.1 += delta;
                if last.1 == 0 {
                    // A zero must not stay in the compacted prefix: the entry is dirty again.
                    self.clean = self.clean.min(self.updates.len() - 1);
                }
                return;
            }
        }
        self.updates.push((item, delta));
        self.maintain();
    }

    /// Adds every update of `iter`.
    pub fn extend<I: IntoIterator<Item = (T, i64)>>(&mut self, iter: I) {
        self.updates.extend(iter.into_iter().filter(|(_, d)| *d != 0));
        self.maintain();
    }

    /// True when every net delta is zero.
    pub fn is_empty(&mut self) -> bool {
        if self.clean < self.updates.len() {
            self.compact();
        }
        self.updates.is_empty()
    }

    /// The compacted updates, each item once with a non-zero delta, sorted by item.
    pub fn iter(&mut self) -> std::slice::Iter<'_, (T, i64)> {
        self.compact();
        self.updates.iter()
    }

    /// Removes and yields the compacted updates.
    pub fn drain(&mut self) -> std::vec::Drain<'_, (T, i64)> {
        self.compact();
        self.clean = 0;
        self.updates.drain(..)
    }

    /// Moves every update into `other`.
    pub fn drain_into(&mut self, other: &mut ChangeBatch<T>) {
        if other.updates.is_empty() {
            std::mem::swap(self, other);
        } else {
            other.extend(self.updates.drain(..));
            self.clean = 0;
        }
    }

    /// Discards every update.
    pub fn clear(&mut self) {
        self.updates.clear();
        self.clean = 0;
    }

    /// The uncompacted updates, as they were recorded (useful for inspection only).
    pub fn unstable_internal_updates(&self) -> &[(T, i64)] {
        &self.updates
    }

    /// Sorts, merges equal items and drops zero deltas.
    pub fn compact(&mut self) {
        if self.clean < self.updates.len() && self.updates.len() > 1 {
            // Unstable: equal items merge, so their order does not matter, and a stable sort
            // would allocate a scratch buffer at every compaction.
            self.updates.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            let mut write = 0;
            for read in 1..self.updates.len() {
                if self.updates[write].0 == self.updates[read].0 {
                    self.updates[write].1 += self.updates[read].1;
                } else {
                    if self.updates[write].1 != 0 {
                        write += 1;
                    }
                    self.updates.swap(write, read);
                }
            }
            if self.updates[write].1 != 0 {
                write += 1;
            }
            self.updates.truncate(write);
        } else if self.updates.len() == 1 && self.updates[0].1 == 0 {
            self.updates.clear();
        }
        self.clean = self.updates.len();
    }

    #[inline]
    fn maintain(&mut self) {
        if self.updates.len() > 32 && self.updates.len() >> 1 >= self.clean {
            self.compact();
        }
    }
}

impl<T: Ord> FromIterator<(T, i64)> for ChangeBatch<T> {
    fn from_iter<I: IntoIterator<Item = (T, i64)>>(iter: I) -> Self {
        let mut batch = Self::new();
        batch.extend(iter);
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn cancelling_updates_leave_nothing() {
        let mut batch = ChangeBatch::new();
        batch.update(3u64, 1);
        batch.update(3u64, -1);
        assert!(batch.is_empty());
        batch.update(5, 2);
        batch.update(4, 1);
        batch.update(5, -1);
        assert_eq!(batch.drain().collect::<Vec<_>>(), vec![(4, 1), (5, 1)]);
        assert!(batch.is_empty());
    }

    #[test]
    fn drain_into_merges() {
        let mut a = ChangeBatch::new_from(1u32, 2);
        let mut b = ChangeBatch::new_from(1u32, -2);
        b.update(7, 1);
        a.drain_into(&mut b);
        assert!(a.is_empty());
        assert_eq!(b.iter().cloned().collect::<Vec<_>>(), vec![(7, 1)]);
    }

    proptest! {
        #[test]
        fn compaction_matches_a_map(updates in proptest::collection::vec((0u8..16, -3i64..4), 0..200)) {
            let mut batch = ChangeBatch::new();
            let mut reference = BTreeMap::new();
            for (item, delta) in updates {
                batch.update(item, delta);
                *reference.entry(item).or_insert(0) += delta;
            }
            reference.retain(|_, d| *d != 0);
            let got: Vec<_> = batch.drain().collect();
            let want: Vec<_> = reference.into_iter().collect();
            prop_assert_eq!(got, want);
        }
    }
}
