//! The reachability tracker on large generated graphs with product timestamps.
//!
//! The graph (`timely_benches::chain_graph`) is a chain of N operators with a feedback loop
//! over 5 operators every 10 operators. Measured:
//! - `build/N`: `GraphBuilder::build` (validation, cycle check, summaries to the scope
//!   output, tracker set-up);
//! - `advance_head/N`: the chain's first operator moves its one capability from `(t, 0)` to
//!   `(t + 1, 0)` (a batch of two updates), `propagate_all`, drain the frontier changes;
//!   every input downstream sees its frontier move;
//! - `advance_all/N`: every chain operator holds a capability and all move forward at
//!   once (a batch of 2N updates), then `propagate_all` and drain.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use std::time::Duration;
use timely_benches::{chain_graph, LoopTime};
use timely_engine::progress::reachability::Tracker;
use timely_engine::progress::Source;
use timely_engine::Product;

const LOOP_EVERY: usize = 10;
const LOOP_SPAN: usize = 5;
const SIZES: [usize; 2] = [1_000, 10_000];

fn tracker_with_capabilities(length: usize, holders: &[Source]) -> Tracker<LoopTime> {
    let (mut tracker, _) = chain_graph(length, LOOP_EVERY, LOOP_SPAN).builder.build().expect("graph builds");
    for source in holders {
        tracker.update_source(*source, Product::new(0, 0), 1);
    }
    tracker.propagate_all();
    tracker.pushed().clear();
    tracker
}

fn advance(tracker: &mut Tracker<LoopTime>, holders: &[Source], time: &mut u64) {
    for source in holders {
        tracker.update_source(*source, Product::new(*time + 1, 0), 1);
        tracker.update_source(*source, Product::new(*time, 0), -1);
    }
    *time += 1;
    tracker.propagate_all();
    let changes = tracker.pushed().drain().count();
    std::hint::black_box(changes);
}

fn tracker(c: &mut Criterion) {
    let mut group = c.benchmark_group("tracker");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    for length in SIZES {
        let graph = chain_graph(length, LOOP_EVERY, LOOP_SPAN);
        eprintln!("tracker graph {}: {} nodes, {} ports", length, graph.nodes, graph.ports);
        group.bench_with_input(BenchmarkId::new("build", length), &length, |b, &length| {
            b.iter_batched(
                || chain_graph(length, LOOP_EVERY, LOOP_SPAN).builder,
                |builder| builder.build().expect("graph builds"),
                BatchSize::LargeInput,
            )
        });
        let head = [graph.head];
        // Criterion calls the closure once per sample; the tracker and its time carry over.
        let mut tracker = tracker_with_capabilities(length, &head);
        let mut time = 0;
        group.bench_function(BenchmarkId::new("advance_head", length), |b| {
            b.iter(|| advance(&mut tracker, &head, &mut time))
        });
        let all = graph.operator_outputs.clone();
        let mut tracker = tracker_with_capabilities(length, &all);
        let mut time = 0;
        group.bench_function(BenchmarkId::new("advance_all", length), |b| {
            b.iter(|| advance(&mut tracker, &all, &mut time))
        });
    }
    group.finish();
}

criterion_group!(benches, tracker);
criterion_main!(benches);
