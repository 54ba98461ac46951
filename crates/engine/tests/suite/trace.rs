//! Traced runs through the public API: the trace directory a run leaves behind holds every
//! worker's events in the documented layout, sends match receives, and the metadata says
//! how the run ended.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, Int8Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use timely_engine::dataflow::{InputHandle, ProbeHandle};
use timely_engine::{execute_from_args, execute_traced, Config, TraceSettings};
use timely_trace::{EventClass, EventClasses, ProcessMetadata, Status};

/// One event, with the columns these tests look at.
#[derive(Debug, Clone)]
struct Event {
    time: i64,
    kind: String,
    operator: Option<i64>,
    name: Option<String>,
    channel: Option<i64>,
    source: Option<i64>,
    target: Option<i64>,
    seq: Option<i64>,
    records: Option<i64>,
}

fn column(batch: &RecordBatch, name: &str, row: usize) -> Option<i64> {
    let array = batch.column_by_name(name).unwrap().as_primitive::<Int64Type>();
    array.is_valid(row).then(|| array.value(row))
}

fn read_worker(dir: &Path) -> Vec<Event> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut events = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with("part-") && name.ends_with(".parquet"), "unexpected file {name}");
        let reader = ParquetRecordBatchReaderBuilder::try_new(fs::File::open(&path).unwrap()).unwrap();
        for batch in reader.build().unwrap() {
            let batch = batch.unwrap();
            let kinds = batch.column_by_name("kind").unwrap().as_dictionary::<Int8Type>();
            let kind_names = kinds.values().as_string::<i32>();
            let names = batch.column_by_name("name").unwrap().as_string::<i32>();
            for row in 0..batch.num_rows() {
                events.push(Event {
                    time: column(&batch, "time_ns", row).unwrap(),
                    kind: kind_names.value(kinds.keys().value(row) as usize).to_string(),
                    operator: column(&batch, "operator", row),
                    name: names.is_valid(row).then(|| names.value(row).to_string()),
                    channel: column(&batch, "channel", row),
                    source: column(&batch, "source_worker", row),
                    target: column(&batch, "target_worker", row),
                    seq: column(&batch, "seq", row),
                    records: column(&batch, "records", row),
                });
            }
        }
    }
    events
}

/// Every event of process 0's workers, by worker.
fn read_trace(root: &Path, workers: usize) -> Vec<Vec<Event>> {
    (0..workers).map(|w| read_worker(&root.join(format!("process=0/worker={w}")))).collect()
}

/// Hello on `workers` workers for `rounds` rounds, traced into `settings`; each worker's count of
/// records seen.
fn traced_hello(workers: usize, rounds: u64, settings: TraceSettings) -> Vec<u64> {
    execute_traced(Config::Process(workers), Some(settings), move |worker| {
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        let seen = std::rc::Rc::new(std::cell::Cell::new(0u64));
        let count = seen.clone();
        worker.dataflow(|scope| {
            scope
                .input_from(&mut input)
                .exchange(|x: &u64| *x)
                .inspect(move |_| count.set(count.get() + 1))
                .probe_with(&probe);
        });
        let feeding = worker.activity("feed");
        for round in 0..rounds {
            if worker.index() == 0 {
                input.send(round);
            }
            input.advance_to(round + 1);
            worker.step_while(|| probe.less_than(input.time()));
        }
        drop(feeding);
        input.close();
        while worker.step() {}
        seen.get()
    })
    .unwrap()
}

#[test]
fn a_traced_run_leaves_complete_files() {
    let dir = tempfile::tempdir().unwrap();
    let seen = traced_hello(2, 50, TraceSettings::to_directory(dir.path()));
    assert_eq!(seen.iter().sum::<u64>(), 50);
    let metadata = ProcessMetadata::read(&dir.path().join("process=0")).unwrap();
    assert_eq!(metadata.status, Status::Complete);
    assert_eq!((metadata.process, metadata.processes, metadata.workers_per_process), (0, 1, 2));
    let trace = read_trace(dir.path(), 2);
    for events in &trace {
        assert!(events.windows(2).all(|w| w[0].time <= w[1].time), "time goes back");
        let names: Vec<_> =
            events.iter().filter(|e| e.kind == "operator_created").map(|e| e.name.clone()).collect();
        for expected in ["Input", "Exchange", "Inspect", "Probe"] {
            assert!(names.contains(&Some(expected.to_string())), "{names:?}");
        }
        let activities: Vec<_> = events.iter().filter(|e| e.kind.starts_with("activity_")).collect();
        assert_eq!(activities.len(), 2);
        assert!(activities.iter().all(|e| e.name.as_deref() == Some("feed")));
        let starts = events.iter().filter(|e| e.kind == "schedule_start").count();
        assert_eq!(starts, events.iter().filter(|e| e.kind == "schedule_stop").count());
        assert!(starts > 0);
    }
    // Every message sent was received, with its record count; records add up.
    let all: Vec<&Event> = trace.iter().flatten().collect();
    let key = |e: &Event| (e.channel, e.source, e.target, e.seq);
    let sends: HashMap<_, _> =
        all.iter().filter(|e| e.kind == "message_send").map(|e| (key(e), e.records)).collect();
    let receives: HashMap<_, _> =
        all.iter().filter(|e| e.kind == "message_recv").map(|e| (key(e), e.records)).collect();
    assert_eq!(sends, receives);
    // Records entering the exchange: 50 from the input, sent once each.
    let exchange_channel = all
        .iter()
        .filter(|e| e.kind == "message_recv")
        .filter(|e| e.source != e.target)
        .map(|e| e.channel)
        .next()
        .expect("some record crossed workers");
    let crossed: i64 = all
        .iter()
        .filter(|e| e.kind == "message_send" && e.channel == exchange_channel)
        .filter_map(|e| e.records)
        .sum();
    assert_eq!(crossed, 50);
    // Every progress batch sent is received by both workers.
    let progress_sends = all.iter().filter(|e| e.kind == "progress_send").count();
    assert_eq!(all.iter().filter(|e| e.kind == "progress_recv").count(), 2 * progress_sends);
    let operators: Vec<_> =
        trace[0].iter().filter(|e| e.kind == "schedule_start").filter_map(|e| e.operator).collect();
    let created: Vec<_> =
        trace[0].iter().filter(|e| e.kind == "operator_created").filter_map(|e| e.operator).collect();
    assert!(operators.iter().all(|op| created.contains(op)), "a scheduled operator was not created");
}

#[test]
fn switched_off_classes_leave_no_events() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = TraceSettings::to_directory(dir.path());
    settings.classes = EventClasses::all().without(EventClass::Schedule).without(EventClass::Messages);
    traced_hello(2, 10, settings);
    let metadata = ProcessMetadata::read(&dir.path().join("process=0")).unwrap();
    assert!(!metadata.event_classes.contains(&"schedule".to_string()));
    let kinds: Vec<String> = read_trace(dir.path(), 2).into_iter().flatten().map(|e| e.kind).collect();
    assert!(kinds
        .iter()
        .all(|k| !k.starts_with("schedule_") && !k.starts_with("message_") && k != "progress_push"));
    assert!(kinds.iter().any(|k| k == "progress_send") && kinds.iter().any(|k| k == "operator_created"));
}

#[test]
fn execute_from_args_reads_the_trace_options() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["prog", "-w", "2", "--trace", dir.path().to_str().unwrap(), "--trace-events", "operators"];
    let results = execute_from_args(args.iter().map(|s| s.to_string()), |worker| {
        worker.dataflow::<u64, _>(|scope| {
            let mut input = InputHandle::new();
            scope.input_from(&mut input).exchange(|x: &u64| *x).inspect(|_| {});
        });
        worker.index()
    })
    .unwrap();
    assert_eq!(results, vec![0, 1]);
    let kinds: Vec<String> = read_trace(dir.path(), 2).into_iter().flatten().map(|e| e.kind).collect();
    assert!(kinds.iter().all(|k| k == "channel_created" || k == "operator_created"), "{kinds:?}");
}

#[test]
fn a_failed_run_is_recorded_as_failed() {
    let dir = tempfile::tempdir().unwrap();
    let outcome =
        execute_traced(Config::Process(2), Some(TraceSettings::to_directory(dir.path())), |worker| {
            let _work = worker.activity("about to fail");
            if worker.index() == 1 {
                panic!("boom");
            }
        });
    assert!(outcome.is_err());
    let metadata = ProcessMetadata::read(&dir.path().join("process=0")).unwrap();
    assert_eq!(metadata.status, Status::Failed);
    // What the workers recorded before failing is there, each activity ended by unwinding.
    let events = read_worker(&dir.path().join("process=0/worker=1"));
    assert_eq!(events.iter().filter(|e| e.kind.starts_with("activity_")).count(), 2);
}
