//! What a trace event pays for its time: one reading of the monotonic clock
//! (`clock::now_ns`, what workers stamped events with before) against one stamp
//! (`clock::stamp`, the time-stamp counter where the kernel trusts it), and what the trace
//! writer pays to turn a worker's hand-over of 4,096 stamps into nanoseconds.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use timely_communication::clock;

fn trace_clock(c: &mut Criterion) {
    let mut group = c.benchmark_group("trace_clock");
    group.bench_function("now_ns", |b| b.iter(|| black_box(clock::now_ns())));
    group.bench_function("stamp", |b| b.iter(|| black_box(clock::stamp())));
    let stamps: Vec<i64> = (0..4096).map(|_| clock::stamp()).collect();
    group.throughput(Throughput::Elements(stamps.len() as u64));
    group.bench_function("stamps_to_ns (4,096 stamps)", |b| {
        b.iter(|| {
            let mut converted = stamps.clone();
            clock::stamps_to_ns(&mut converted);
            black_box(converted)
        })
    });
    group.finish();
}

criterion_group!(benches, trace_clock);
criterion_main!(benches);
