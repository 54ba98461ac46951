//! Encoding and decoding a batch of 1,000 records as it crosses processes: bincode (the
//! `ExchangeData` default for serde types) against `Abomonated<_>` (abomonation, opt-in
//! for plain types; `timely_engine::dataflow::plain`).
//!
//! One iteration encodes the batch into a reused buffer (`ExchangeData::encode_batch`)
//! and decodes it back into a new `Vec` (`decode_batch`), so criterion's time per
//! iteration is ns per batch. Records are `u64`, `(u64, u64)` and `String`s of 13 bytes.
//! The encoded size of each batch is printed once.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;
use timely_engine::dataflow::{Abomonated, ExchangeData};

const BATCH: u64 = 1_000;

fn round_trip<D: ExchangeData + PartialEq + std::fmt::Debug>(
    c: &mut Criterion,
    records: &str,
    codec: &str,
    batch: Vec<D>,
) {
    let mut bytes = Vec::new();
    D::encode_batch(&batch, &mut bytes);
    assert_eq!(D::decode_batch(&bytes).expect("round trip"), batch);
    println!("codecs/{records}/{codec}: {} bytes per batch of {}", bytes.len(), batch.len());
    let mut group = c.benchmark_group(format!("codecs/{records}"));
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Elements(batch.len() as u64));
    group.bench_with_input(BenchmarkId::from_parameter(codec), &batch, |b, batch| {
        b.iter(|| {
            bytes.clear();
            D::encode_batch(black_box(batch), &mut bytes);
            black_box(D::decode_batch(black_box(&bytes)).expect("decodes"))
        })
    });
    group.finish();
}

/// The same records with bincode and wrapped in `Abomonated`.
fn both<D: ExchangeData + PartialEq + std::fmt::Debug>(
    c: &mut Criterion,
    records: &str,
    make: impl Fn(u64) -> D,
) where
    Abomonated<D>: ExchangeData,
{
    let batch: Vec<D> = (0..BATCH).map(make).collect();
    round_trip(c, records, "bincode", batch.clone());
    round_trip(c, records, "abomonated", batch.into_iter().map(Abomonated).collect());
}

fn codecs(c: &mut Criterion) {
    both(c, "u64", |i| i * 0x9E37_79B9);
    both(c, "pair", |i| (i, i * 0x9E37_79B9));
    both(c, "string", |i| format!("record-{i:06}"));
}

criterion_group!(benches, codecs);
criterion_main!(benches);
