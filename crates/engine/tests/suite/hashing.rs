//! `hash_of` is the documented stable function: XXH3-64 folded over the bytes a key's `Hash`
//! writes (each write seeded with the hash so far), integers little endian, `usize` as 8 bytes.

use std::hash::Hasher;
use timely_engine::dataflow::operators::{hash_of, StableHasher};
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

#[test]
fn hash_of_has_fixed_values() {
    // Fixed values: a change here re-routes keys between releases, which clusters must not see.
    assert_eq!(hash_of(&0u64), 0xc77b_3abb_6f87_acd9);
    assert_eq!(hash_of(&42u64), 0xd5a6_f8c8_38df_27c8);
    assert_eq!(hash_of("word"), 0x81f0_0338_93c4_ba50);
    assert_eq!(hash_of(&(7u32, -1i64)), 0xf95e_c854_141d_667d);
}

#[test]
fn hash_of_folds_xxh3_over_the_written_bytes() {
    assert_eq!(hash_of(&42u64), xxh3_64(&42u64.to_le_bytes()));
    assert_eq!(hash_of(&42usize), xxh3_64(&42u64.to_le_bytes()));
    assert_eq!(hash_of(&-3i32), xxh3_64(&(-3i32).to_le_bytes()));
    // A str writes its bytes, then 0xff.
    assert_eq!(hash_of("word"), xxh3_64_with_seed(&[0xff], xxh3_64(b"word")));
    let first = xxh3_64(&7u32.to_le_bytes());
    assert_eq!(hash_of(&(7u32, -1i64)), xxh3_64_with_seed(&(-1i64).to_le_bytes(), first));
}

#[test]
fn long_keys_hash_in_one_call() {
    let text: String = (0..1000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    assert_eq!(hash_of(text.as_str()), xxh3_64_with_seed(&[0xff], xxh3_64(text.as_bytes())));
    let mut hasher = StableHasher::new();
    hasher.write(text.as_bytes());
    hasher.write_u8(0xff);
    assert_eq!(hasher.finish(), hash_of(text.as_str()));
}

#[test]
fn distinct_small_keys_spread_over_workers() {
    let mut per_worker = [0u32; 3];
    for key in 0..3000u64 {
        per_worker[(hash_of(&key) % 3) as usize] += 1;
    }
    assert!(per_worker.iter().all(|&n| (900..1100).contains(&n)), "uneven spread: {per_worker:?}");
}
