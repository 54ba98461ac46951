//! Bins: the unit of state that routing tables assign and migrations move.
//!
//! A key belongs to bin `hash_of(key) & (bins - 1)` (the engine's stable hash, so every
//! process agrees). This module owns the bin count and the key-to-bin function; which worker
//! owns a bin is the routing table's business (`table`).

use crate::error::MegaphoneError;
use std::hash::Hash;
use timely_engine::dataflow::operators::hash_of;

/// The largest number of bins: a routing table is a vector of this many workers at most.
pub const MAX_BINS: usize = 1 << 20;

/// The number of bins used when none is chosen.
pub const DEFAULT_BINS: usize = 256;

/// How many bins keys are spread over: a power of two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bins {
    count: usize,
}

impl Default for Bins {
    fn default() -> Self {
        Bins { count: DEFAULT_BINS }
    }
}

impl Bins {
    /// `count` bins.
    ///
    /// # Errors
    ///
    /// [`MegaphoneError::BinCount`] when `count` is zero, not a power of two, or above
    /// [`MAX_BINS`].
    pub fn new(count: usize) -> Result<Self, MegaphoneError> {
        if count.is_power_of_two() && count <= MAX_BINS {
            Ok(Bins { count })
        } else {
            Err(MegaphoneError::BinCount { count, max: MAX_BINS })
        }
    }

    /// The number of bins.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The bin of a key whose hash is `hash`.
    #[inline]
    pub fn of_hash(&self, hash: u64) -> usize {
        (hash & (self.count as u64 - 1)) as usize
    }

    /// The bin of `key`.
    #[inline]
    pub fn of<K: Hash + ?Sized>(&self, key: &K) -> usize {
        self.of_hash(hash_of(key))
    }

    /// Checks that `bin` exists.
    ///
    /// # Errors
    ///
    /// [`MegaphoneError::NoSuchBin`] when it does not.
    pub fn check(&self, bin: usize) -> Result<(), MegaphoneError> {
        if bin < self.count {
            Ok(())
        } else {
            Err(MegaphoneError::NoSuchBin { bin, bins: self.count })
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::bins::{Bins, DEFAULT_BINS, MAX_BINS};
    use crate::error::MegaphoneError;

    #[test]
    fn counts_must_be_powers_of_two_within_the_limit() {
        for count in [1, 2, 256, 4096, MAX_BINS] {
            assert_eq!(Bins::new(count).map(|b| b.count()), Ok(count));
        }
        for count in [0, 3, 100, MAX_BINS * 2] {
            assert_eq!(Bins::new(count), Err(MegaphoneError::BinCount { count, max: MAX_BINS }));
        }
        assert_eq!(Bins::default().count(), DEFAULT_BINS);
    }

    #[test]
    fn keys_spread_over_every_bin() {
        let bins = Bins::new(64).unwrap();
        let mut seen = vec![0usize; 64];
        for key in 0..64_000u64 {
            let bin = bins.of(&key);
            assert_eq!(bin, bins.of(&key), "a key always falls in one bin");
            seen[bin] += 1;
        }
        // 1,000 keys per bin on average: every bin within 20% of that.
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
    }
}
