//! The stable hash that routes keys to workers: `hash_of` and its `StableHasher`.
//!
//! `hash_of(key)` folds XXH3-64 over the byte strings that `key`'s `Hash` implementation
//! writes, `h = xxh3_64_with_seed(bytes, h)` from `h = 0`, with every integer written little
//! endian and `usize`/`isize` widened to 8 bytes (so a `u64` key hashes to `xxh3_64` of its
//! 8 bytes). It depends neither on the Rust release's hasher (unlike `DefaultHasher`, whose
//! algorithm may change), nor on the process, nor on the platform's endianness or pointer
//! width, so every process of a cluster routes a key to the same worker. One XXH3 call per
//! write keeps short keys cheap and needs no buffer.
//!
//! This module owns only the hash function; which worker a hash selects (`hash % peers`)
//! is the exchange channel's business.

use std::hash::{Hash, Hasher};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// A `Hasher` folding XXH3-64 over what is written to it: `h = xxh3_64_with_seed(bytes, h)`
/// per write, from 0; integers little endian.
#[derive(Default)]
pub struct StableHasher {
    state: u64,
}

impl StableHasher {
    /// An empty hasher (state 0).
    pub fn new() -> Self {
        StableHasher { state: 0 }
    }
}

impl Hasher for StableHasher {
    fn finish(&self) -> u64 {
        self.state
    }

    fn write(&mut self, bytes: &[u8]) {
        self.state = xxh3_64_with_seed(bytes, self.state);
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
