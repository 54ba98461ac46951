//! Throughput of `exchange` into a counting operator, on one and two workers.
//!
//! Every worker sends `batch` distinct `u64` records per round, advances its input and steps
//! until the probe after the counter passes the round. One criterion iteration is one
//! round, and its throughput is `batch * workers` records, so criterion reports records/s
//! over all workers. Each sample checks that every record was counted.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;
use timely_benches::{exchange_rounds, workers_of};
use timely_engine::Config;

fn exchange(c: &mut Criterion) {
    let mut group = c.benchmark_group("exchange");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    for batch in [1_000u64, 100_000] {
        for (name, config) in [("1_worker", Config::Thread), ("2_workers", Config::Process(2))] {
            let workers = workers_of(&config) as u64;
            group.throughput(Throughput::Elements(batch * workers));
            group.bench_with_input(BenchmarkId::new(name, batch), &batch, |b, &batch| {
                b.iter_custom(|rounds| {
                    let run = exchange_rounds(config.clone(), rounds, batch);
                    assert_eq!(run.received, rounds * batch * workers, "records lost or duplicated");
                    run.elapsed
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, exchange);
criterion_main!(benches);
