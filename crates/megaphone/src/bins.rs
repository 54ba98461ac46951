//! Bins: the unit of state that routing tables assign and migrations move.
//!
//! A key belongs to bin `hash_of(key) & (bins - 1)` (the engine's stable hash, so every
//! process agrees). This module owns the bin count, the key-to-bin function and [`Hashed`]:
//! a key carrying that hash, so that the per-key tables of a worker's state reuse it rather
//! than hash the key again. Which worker owns a bin is the routing table's business (`table`).

use crate::error::MegaphoneError;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};
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

    /// The bin of a key hashed already.
    #[inline]
    pub fn of_hashed<K>(&self, key: &Hashed<K>) -> usize {
        self.of_hash(key.hash)
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

/// A key with its stable hash (`hash_of`), computed once. Its `Hash` implementation writes
/// only that hash, which [`CarriedHash`] passes to the table: a table of `Hashed` keys does
/// not hash a key again. Equality compares the hashes first, then the keys.
#[derive(Clone, Debug)]
pub struct Hashed<K> {
    hash: u64,
    key: K,
}

impl<K: Hash> Hashed<K> {
    /// `key` and its stable hash.
    #[inline]
    pub fn new(key: K) -> Self {
        Hashed { hash: hash_of(&key), key }
    }
}

impl<K> Hashed<K> {
    /// The key.
    #[inline]
    pub fn key(&self) -> &K {
        &self.key
    }

    /// The key, without its hash.
    pub fn into_key(self) -> K {
        self.key
    }
}

impl<K: PartialEq> PartialEq for Hashed<K> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.key == other.key
    }
}

impl<K: Eq> Eq for Hashed<K> {}

impl<K> Hash for Hashed<K> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// The `BuildHasher` of tables keyed by [`Hashed`] keys: the table's hash is the key's
/// stable hash mixed with a seed drawn at random for each table (a folded multiplication), so
/// the key is not hashed again. The stable hash is the same in every process and run, so keys
/// that share the bits choosing a table slot could be chosen on purpose to make lookups slow;
/// with the seed, which keys share a slot is as unpredictable as with a randomly keyed hasher
/// (only keys whose whole stable hash is equal still collide). Mixing also spreads the keys of
/// one bin, which share their low bits, over the whole table.
#[derive(Clone, Copy, Debug)]
pub struct CarriedHash {
    seed: u64,
}

impl Default for CarriedHash {
    fn default() -> Self {
        CarriedHash { seed: RandomState::new().hash_one(0u64) }
    }
}

impl BuildHasher for CarriedHash {
    type Hasher = Carried;

    #[inline]
    fn build_hasher(&self) -> Carried {
        Carried { hash: 0, seed: self.seed }
    }
}

/// The hasher of [`CarriedHash`]: keeps the last `u64` written (a `Hashed` key writes only
/// its hash) and mixes it with the seed; other bytes are folded in, so it stays a valid
/// hasher for any input.
#[derive(Debug)]
pub struct Carried {
    hash: u64,
    seed: u64,
}

impl Hasher for Carried {
    #[inline]
    fn finish(&self) -> u64 {
        let product = u128::from(self.hash ^ self.seed) * u128::from(MIX);
        (product as u64) ^ ((product >> 64) as u64)
    }

    #[inline]
    fn write_u64(&mut self, hash: u64) {
        self.hash = hash;
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.hash = (self.hash.rotate_left(8) ^ u64::from(byte)).wrapping_mul(MIX);
        }
    }
}

/// An odd constant with well-spread bits (the golden ratio's fraction, times 2^64).
const MIX: u64 = 0x9E37_79B9_7F4A_7C15;

#[cfg(test)]
mod tests {
    use crate::bins::{Bins, CarriedHash, Hashed, DEFAULT_BINS, MAX_BINS};
    use crate::error::MegaphoneError;
    use std::collections::HashMap;
    use std::hash::BuildHasher;

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

    #[test]
    fn hashed_keys_carry_the_stable_hash_into_tables() {
        let bins = Bins::new(4096).unwrap();
        let key = Hashed::new("word".to_owned());
        assert_eq!(bins.of_hashed(&key), bins.of("word"));
        // A table's hash depends on the key's stable hash and the table's seed only.
        let (one, other) = (CarriedHash::default(), CarriedHash::default());
        assert_eq!(one.hash_one(&key), one.hash_one(Hashed::new("word".to_owned())));
        assert_ne!(one.hash_one(&key), other.hash_one(&key), "tables draw different seeds");
        assert_eq!(key, Hashed::new("word".to_owned()));
        assert_ne!(key, Hashed::new("other".to_owned()));
        // Keys of one bin share their low bits; a table of them still finds each one.
        let one_bin: Vec<u64> = (0..200_000u64).filter(|k| bins.of(k) == 7).take(40).collect();
        let table: HashMap<Hashed<u64>, u64, CarriedHash> =
            one_bin.iter().map(|&k| (Hashed::new(k), k * 2)).collect();
        assert_eq!(table.len(), one_bin.len());
        assert!(one_bin.iter().all(|&k| table[&Hashed::new(k)] == k * 2));
        assert_eq!(Hashed::new(9u64).into_key(), 9);
    }
}
