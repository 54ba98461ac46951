//! Cost of `hash_of`, the hash that routes keys to workers in `aggregate`/`count_by_key`.
//!
//! One criterion iteration hashes 1,000 keys of one kind: `u64`, `(u64, u64)`, short
//! strings (words of 3 to 10 letters) and 64-byte strings. Throughput is keys/s. The
//! checksum of the hashes is passed through `black_box` so nothing is optimised away.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hash::Hash;
use std::time::Duration;
use timely_engine::dataflow::operators::hash_of;

const KEYS: u64 = 1_000;

fn hash_all<K: Hash>(keys: &[K]) -> u64 {
    keys.iter().fold(0u64, |sum, key| sum.wrapping_add(hash_of(key)))
}

fn word(i: u64, len: u64) -> String {
    (0..len).map(|j| char::from(b'a' + ((i * 7 + j * 13) % 26) as u8)).collect()
}

fn bench_keys<K: Hash>(c: &mut Criterion, name: &str, keys: Vec<K>) {
    let mut group = c.benchmark_group("hash_of");
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(KEYS));
    group.bench_with_input(BenchmarkId::from_parameter(name), &keys, |b, keys| {
        b.iter(|| hash_all(black_box(keys)))
    });
    group.finish();
}

fn hash_of_keys(c: &mut Criterion) {
    bench_keys(c, "u64", (0..KEYS).map(|i| i.wrapping_mul(0x9e37_79b9)).collect());
    bench_keys(c, "u64_pair", (0..KEYS).map(|i| (i, i ^ 0x5555)).collect());
    bench_keys(c, "word", (0..KEYS).map(|i| word(i, 3 + i % 8)).collect());
    bench_keys(c, "string64", (0..KEYS).map(|i| word(i, 64)).collect());
}

criterion_group!(benches, hash_of_keys);
criterion_main!(benches);
