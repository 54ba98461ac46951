//! The stable hash that routes keys to workers: `hash_of` and its `StableHasher`.
//!
//! `hash_of(key)` is the 64-bit XXH3 hash (seed 0) of the bytes that `key`'s `Hash`
//! implementation writes, with every integer written little endian and `usize`/`isize`
//! widened to 8 bytes. It depends neither on the Rust release (unlike `DefaultHasher`,
//! whose algorithm may change), nor on the process, nor on the platform's endianness or
//! pointer width, so every process of a cluster routes a key to the same worker.
//!
//! This module owns only the hash function; which worker a hash selects (`hash % peers`)
//! is the exchange channel's business.

use std::hash::{Hash, Hasher};
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

/// Bytes buffered before the hasher switches to streaming XXH3: most keys (integers,
/// words, small tuples) fit, and hashing them is one one-shot XXH3 call.
const INLINE: usize = 64;

/// A `Hasher` computing XXH3-64 (seed 0) of everything written to it, integers little
/// endian. Equal byte sequences hash equally however they were split into writes.
pub struct StableHasher {
    inline: [u8; INLINE],
    len: usize,
    streaming: Option<Box<Xxh3>>,
}

impl StableHasher {
    /// An empty hasher.
    pub fn new() -> Self {
        StableHasher { inline: [0; INLINE], len: 0, streaming: None }
    }
}

impl Default for StableHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl Hasher for StableHasher {
    fn finish(&self) -> u64 {
        match &self.streaming {
            Some(state) => state.digest(),
            None => xxh3_64(&self.inline[..self.len]),
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        if let Some(state) = &mut self.streaming {
            state.update(bytes);
        } else if self.len + bytes.len() <= INLINE {
            self.inline[self.len..self.len + bytes.len()].copy_from_slice(bytes);
            self.len += bytes.len();
        } else {
            let mut state = Box::new(Xxh3::new());
            state.update(&self.inline[..self.len]);
            state.update(bytes);
            self.streaming = Some(state);
        }
    }

    fn write_u16(&mut self, n: u16) {
        self.write(&n.to_le_bytes());
    }

    fn write_u32(&mut self, n: u32) {
        self.write(&n.to_le_bytes());
    }

    fn write_u64(&mut self, n: u64) {
        self.write(&n.to_le_bytes());
    }

    fn write_u128(&mut self, n: u128) {
        self.write(&n.to_le_bytes());
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_i16(&mut self, n: i16) {
        self.write_u16(n as u16);
    }

    fn write_i32(&mut self, n: i32) {
        self.write_u32(n as u32);
    }

    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }

    fn write_i128(&mut self, n: i128) {
        self.write_u128(n as u128);
    }

    fn write_isize(&mut self, n: isize) {
        self.write_u64(n as i64 as u64);
    }
}

/// The stable 64-bit hash of `key` that routes it to a worker (see the module docs).
pub fn hash_of<K: Hash + ?Sized>(key: &K) -> u64 {
    let mut hasher = StableHasher::new();
    key.hash(&mut hasher);
    hasher.finish()
}
