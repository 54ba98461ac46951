//! Cost of the trace writer's thread per event: the engine's events writing their cells into
//! columns, then written as Parquet files (`files`) or only handed to a callback
//! (`columns`). One criterion iteration starts a writer, hands it `EVENTS` events of a
//! fast-stepping workload's mix (schedules, data messages, progress batches, parks) in
//! vectors of `FLUSH_AT`, as a worker does, and waits for it to finish. Throughput is
//! events/s of the writer thread; what the worker pays is measured by the tracing-overhead
//! benchmark (`benches/trace/overhead.py`).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use timely_communication::clock;
use timely_engine::logging::{Event, Timestamped, Wake, FLUSH_AT};
use timely_trace::{ProcessMetadata, Status, TraceClock, TraceConfig, TraceWriter};

const EVENTS: usize = 200_000;

/// The events of a step of a small dataflow, repeated: eleven kinds in a realistic mix,
/// stamped from now on, 100 ticks apart.
fn workload() -> Vec<Timestamped> {
    let address: &'static [usize] = &[0];
    let start = clock::stamp();
    let step = move |round: usize| {
        let (sequence, time) = (round as u64, start + (round * 2_000) as i64);
        vec![
            Event::Unpark { wake: Wake::Data },
            Event::Schedule { id: 2, start: true, useful: false },
            Event::Messages { send: false, channel: 3, source: 1, target: 0, sequence, length: 200 },
            Event::Messages { send: true, channel: 4, source: 0, target: 1, sequence, length: 100 },
            Event::Schedule { id: 2, start: false, useful: true },
            Event::Progress { send: true, source: 0, channel: 1, sequence, address, updates: 4 },
            Event::Progress { send: false, source: 1, channel: 1, sequence, address, updates: 3 },
            Event::PushProgress { id: 3 },
            Event::Schedule { id: 3, start: true, useful: false },
            Event::Schedule { id: 3, start: false, useful: false },
            Event::Park { timeout: None },
        ]
        .into_iter()
        .enumerate()
        .map(move |(offset, event)| Timestamped { stamp: time + offset as i64 * 100, event })
    };
    (0..).flat_map(step).take(EVENTS).collect()
}

fn metadata() -> ProcessMetadata {
    ProcessMetadata::starting(0, 1, 1, clock::now_ns(), vec!["trace_writer".into()])
}

/// Hands `events` over in worker-sized vectors and waits for the writer to finish.
fn write(events: &[Timestamped], files: bool) {
    let directory = files.then(|| tempfile::tempdir().expect("a temporary directory"));
    let engine_clock = TraceClock { stamp: clock::stamp, to_ns: clock::stamps_to_ns };
    let mut config = TraceConfig::new(directory.as_ref().map(|d| d.path().to_path_buf()), engine_clock);
    if !files {
        config.callback = Some(Box::new(|_, batch| {
            std::hint::black_box(batch.num_rows());
        }));
    }
    let writer = TraceWriter::start(config, metadata(), 1).expect("a writer");
    let mut sink = writer.sink(0);
    for chunk in events.chunks(FLUSH_AT) {
        let mut vector = chunk.to_vec();
        sink.hand_over(&mut vector);
    }
    drop(sink);
    writer.finish(Status::Complete).expect("a complete trace");
}

fn trace_writer(c: &mut Criterion) {
    let events = workload();
    let mut group = c.benchmark_group("trace_writer");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(EVENTS as u64));
    for (name, files) in [("columns", false), ("files", true)] {
        group.bench_with_input(BenchmarkId::from_parameter(name), &events, |b, events| {
            b.iter(|| write(events, files))
        });
    }
    group.finish();
}

criterion_group!(benches, trace_writer);
criterion_main!(benches);
