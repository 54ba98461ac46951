//! `hash_of` is the documented stable function: XXH3-64 (seed 0) of the bytes a key's `Hash`
//! writes, integers little endian, `usize` as 8 bytes; the same for every process and release.

use std::hash::Hasher;
use timely_engine::dataflow::operators::{hash_of, StableHasher};
use xxhash_rust::xxh3::xxh3_64;

#[test]
fn hash_of_has_fixed_values() {
    // Fixed values: a change here re-routes keys between releases, which clusters must not see.
    assert_eq!(hash_of(&0u64), 0xc77b_3abb_6f87_acd9);
    assert_eq!(hash_of(&42u64), 0xd5a6_f8c8_38df_27c8);
    assert_eq!(hash_of("word"), 0xeba9_afe8_3831_0f22);
    assert_eq!(hash_of(&(7u32, -1i64)), 0xf52a_798b_deaa_80e0);
}

#[test]
fn hash_of_is_xxh3_of_the_written_bytes() {
    assert_eq!(hash_of(&42u64), xxh3_64(&42u64.to_le_bytes()));
    assert_eq!(hash_of(&42usize), xxh3_64(&42u64.to_le_bytes()));
    assert_eq!(hash_of(&-3i32), xxh3_64(&(-3i32).to_le_bytes()));
    assert_eq!(hash_of("word"), xxh3_64(b"word\xff"));
    let mut tuple = 7u32.to_le_bytes().to_vec();
    tuple.extend_from_slice(&(-1i64).to_le_bytes());
    assert_eq!(hash_of(&(7u32, -1i64)), xxh3_64(&tuple));
}

#[test]
fn long_keys_hash_like_one_buffer_however_written() {
    let text: String = (0..1000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let mut expected = text.clone().into_bytes();
    expected.push(0xff);
    assert_eq!(hash_of(text.as_str()), xxh3_64(&expected));
    for split in [0, 1, 63, 64, 65, 500, 1001] {
        let mut hasher = StableHasher::new();
        hasher.write(&expected[..split]);
        hasher.write(&expected[split..]);
        assert_eq!(hasher.finish(), xxh3_64(&expected), "split at {split}");
    }
}

#[test]
fn distinct_small_keys_spread_over_workers() {
    let mut per_worker = [0u32; 3];
    for key in 0..3000u64 {
        per_worker[(hash_of(&key) % 3) as usize] += 1;
    }
    assert!(per_worker.iter().all(|&n| (900..1100).contains(&n)), "uneven spread: {per_worker:?}");
}
