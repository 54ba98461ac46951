//! Per-round latency of the seed's hello dataflow on one and two workers, and on one worker
//! with a logger installed that receives every trace event.
//!
//! One criterion iteration is one round (send one record, advance the input, step until the
//! probe passes the round), so criterion's time per iteration is the time per round.
//! Each sample runs all its rounds inside one `execute`; thread start-up and dataflow
//! construction are outside the timed part.

use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;
use timely_benches::{hello_rounds, hello_rounds_traced};
use timely_engine::Config;

fn hello(c: &mut Criterion) {
    let mut group = c.benchmark_group("hello");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    group.bench_function("1_worker", |b| b.iter_custom(|rounds| hello_rounds(Config::Thread, rounds)));
    group.bench_function("2_workers", |b| b.iter_custom(|rounds| hello_rounds(Config::Process(2), rounds)));
    group.bench_function("1_worker_traced", |b| {
        b.iter_custom(|rounds| hello_rounds_traced(Config::Thread, rounds, true))
    });
    group.finish();
}

criterion_group!(benches, hello);
criterion_main!(benches);
