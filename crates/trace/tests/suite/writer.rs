//! The trace writer through its public API: files, partitions, rotation, metadata, the
//! callback, event classes and the record of waiting for a full queue.

use std::fs;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use timely_trace::{
    ChannelKind, ClockSample, EventBatch, EventClass, EventClasses, Kind, NetworkEvent, ProcessMetadata, Row,
    Status, TraceClock, TraceConfig, TraceEvent, TraceWriter, WorkerSink,
};

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64
}

fn metadata(process: usize) -> ProcessMetadata {
    ProcessMetadata {
        clock: ClockSample::default(),
        ..ProcessMetadata::starting(process, 1, 2, now(), vec!["writer-test".into()])
    }
}

/// Every row of every complete file under `dir`, sorted by file name.
fn read_dir(dir: &Path) -> Vec<RecordBatch> {
    let mut names: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    let mut batches = Vec::new();
    for path in names.into_iter().filter(|p| p.extension().is_some_and(|e| e == "parquet")) {
        let file = fs::File::open(path).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
        batches.extend(reader.map(|b| b.unwrap()));
    }
    batches
}

fn times(batches: &[RecordBatch]) -> Vec<i64> {
    batches.iter().flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec()).collect()
}

/// A test's events: time, kind and operator (for `channel_created`: the id of a data channel).
#[derive(Clone, Copy, Debug)]
struct Event(i64, Kind, Option<i64>);

impl TraceEvent for Event {
    fn stamp(&self) -> i64 {
        self.0
    }

    fn kind(&self) -> Kind {
        self.1
    }

    fn write(&self, _worker: usize, batch: &mut EventBatch) {
        batch.push(&match self.1 {
            Kind::ChannelCreated => {
                Row { channel: self.2, channel_kind: Some(ChannelKind::Data), ..Row::new(self.0, self.1) }
            }
            _ => Row { operator: self.2, ..Row::new(self.0, self.1) },
        });
    }
}

fn schedule(time: i64, operator: i64) -> Event {
    Event(time, Kind::ScheduleStart, Some(operator))
}

/// Buffers events as a worker does, handing over every `batch` of them and when dropped.
struct Recorder {
    sink: WorkerSink<Event>,
    events: Vec<Event>,
    batch: usize,
}

impl Recorder {
    fn new(writer: &TraceWriter, worker: usize, batch: usize) -> Self {
        Recorder { sink: writer.sink(worker), events: Vec::new(), batch }
    }

    fn push(&mut self, event: Event) {
        self.events.push(event);
        if self.events.len() >= self.batch {
            self.sink.hand_over(&mut self.events);
        }
    }

    fn hand_over_if_due(&mut self) {
        if self.sink.is_due() {
            self.sink.hand_over(&mut self.events);
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.sink.hand_over(&mut self.events);
    }
}

#[test]
fn writes_partitions_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let writer = TraceWriter::start(
        TraceConfig::new(Some(dir.path().into()), TraceClock::nanoseconds(now)),
        metadata(0),
        2,
    )
    .unwrap();
    let (mut zero, mut one) = (Recorder::new(&writer, 0, 4096), Recorder::new(&writer, 1, 4096));
    for time in 0..10_000 {
        zero.push(schedule(time, 1));
        if time % 2 == 0 {
            one.push(schedule(time, 2));
        }
    }
    writer.record_clock(ClockSample { offset_ns: 5, error_ns: 2, measured_at_ns: 7 });
    drop((zero, one));
    writer.finish(Status::Complete).unwrap();

    let process = dir.path().join("process=0");
    assert_eq!(times(&read_dir(&process.join("worker=0"))), (0..10_000).collect::<Vec<_>>());
    assert_eq!(times(&read_dir(&process.join("worker=1"))), (0..10_000).step_by(2).collect::<Vec<_>>());
    let metadata = ProcessMetadata::read(&process).unwrap();
    assert_eq!(metadata.status, Status::Complete);
    assert!(metadata.end_time_ns.is_some());
    assert_eq!(metadata.clock, ClockSample { offset_ns: 5, error_ns: 2, measured_at_ns: 7 });
    assert_eq!(metadata.clock_history.len(), 1);
    let leftovers: Vec<_> = walk(dir.path()).into_iter().filter(|p| p.ends_with(".tmp")).collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn a_clock_recorder_on_another_thread_appends_to_the_history_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let writer = TraceWriter::start(
        TraceConfig::new(Some(dir.path().into()), TraceClock::nanoseconds(now)),
        metadata(1),
        1,
    )
    .unwrap();
    let recorder = writer.clock_recorder();
    let samples: Vec<ClockSample> =
        (1..=3).map(|i| ClockSample { offset_ns: -i, error_ns: 10 * i, measured_at_ns: 100 * i }).collect();
    let sent = samples.clone();
    std::thread::spawn(move || sent.into_iter().for_each(|sample| recorder.record(sample))).join().unwrap();
    writer.finish(Status::Complete).unwrap();
    let metadata = ProcessMetadata::read(&dir.path().join("process=1")).unwrap();
    assert_eq!(metadata.clock_history, samples);
    assert_eq!(metadata.clock, samples[2]);
}

fn walk(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path.display().to_string());
        }
    }
    found
}

#[test]
fn files_close_on_time_while_running() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = TraceConfig::new(Some(dir.path().into()), TraceClock::nanoseconds(now));
    config.flush_interval = Duration::from_millis(50);
    let writer = TraceWriter::start(config, metadata(3), 1).unwrap();
    let mut sink = Recorder::new(&writer, 6, 4096);
    let worker_dir = dir.path().join("process=3").join("worker=6");
    for round in 0..4 {
        sink.push(schedule(round, 1));
        std::thread::sleep(Duration::from_millis(30));
        sink.hand_over_if_due();
        std::thread::sleep(Duration::from_millis(80));
    }
    // Complete files are there before the run ends.
    assert!(read_dir(&worker_dir).len() >= 2);
    drop(sink);
    writer.finish(Status::Complete).unwrap();
    let names: Vec<String> =
        walk(&worker_dir).into_iter().map(|p| p.rsplit('/').next().unwrap().into()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    let expected: Vec<String> = (0..sorted.len()).map(|n| format!("part-{n:06}.parquet")).collect();
    assert_eq!(sorted, expected, "parts are numbered without gaps");
    assert_eq!(times(&read_dir(&worker_dir)), vec![0, 1, 2, 3]);
}

#[test]
fn callback_sees_what_files_hold() {
    let dir = tempfile::tempdir().unwrap();
    let seen: Arc<Mutex<Vec<(usize, i64)>>> = Default::default();
    let record = seen.clone();
    let mut config = TraceConfig::new(Some(dir.path().into()), TraceClock::nanoseconds(now));
    config.callback = Some(Box::new(move |worker, batch: &RecordBatch| {
        let times = batch.column(0).as_primitive::<Int64Type>();
        record.lock().unwrap().extend(times.values().iter().map(|t| (worker, *t)));
    }));
    let writer = TraceWriter::start(config, metadata(0), 1).unwrap();
    let mut sink = Recorder::new(&writer, 0, 100);
    (0..1000).for_each(|t| sink.push(schedule(t, 1)));
    drop(sink);
    writer.finish(Status::Complete).unwrap();
    let from_files = times(&read_dir(&dir.path().join("process=0/worker=0")));
    let from_callback: Vec<i64> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(w, t)| {
            assert_eq!(*w, 0);
            *t
        })
        .collect();
    assert_eq!(from_callback, from_files);
    // Every event pushed, plus any record of waiting for the writer (at a real time).
    let pushed: Vec<i64> = from_files.iter().copied().filter(|t| *t < 1000).collect();
    assert_eq!(pushed, (0..1000).collect::<Vec<_>>());
}

#[test]
fn switched_off_classes_are_not_recorded() {
    let seen: Arc<Mutex<Vec<String>>> = Default::default();
    let record = seen.clone();
    let mut config = TraceConfig::new(None, TraceClock::nanoseconds(now));
    config.classes = EventClasses::all().without(EventClass::Schedule);
    config.callback = Some(Box::new(move |_, batch: &RecordBatch| {
        let kinds = batch.column(1).as_dictionary::<arrow_array::types::Int8Type>();
        let names = kinds.values().as_string::<i32>();
        let mut seen = record.lock().unwrap();
        seen.extend(kinds.keys().values().iter().map(|k| names.value(*k as usize).to_string()));
    }));
    let writer = TraceWriter::start(config, metadata(0), 1).unwrap();
    let mut sink = Recorder::new(&writer, 0, 4096);
    sink.push(schedule(1, 1));
    sink.push(Event(2, Kind::Park, None));
    drop(sink);
    writer.finish(Status::Complete).unwrap();
    assert_eq!(*seen.lock().unwrap(), vec!["park".to_string()]);
}

#[test]
fn a_full_queue_is_recorded_as_a_wait() {
    let waits: Arc<Mutex<Vec<i64>>> = Default::default();
    let record = waits.clone();
    let mut config = TraceConfig::new(None, TraceClock::nanoseconds(now));
    config.callback = Some(Box::new(move |_, batch: &RecordBatch| {
        std::thread::sleep(Duration::from_millis(5)); // a slow consumer
        let kinds = batch.column(1).as_dictionary::<arrow_array::types::Int8Type>();
        let durations = batch.column_by_name("duration_ns").unwrap().as_primitive::<Int64Type>();
        for row in 0..batch.num_rows() {
            if kinds.keys().value(row) == Kind::TraceWait.code() {
                record.lock().unwrap().push(durations.value(row));
            }
        }
    }));
    let writer = TraceWriter::start(config, metadata(0), 1).unwrap();
    let mut sink = Recorder::new(&writer, 0, 1);
    (0..40).for_each(|t| sink.push(schedule(t, 1)));
    drop(sink);
    writer.finish(Status::Complete).unwrap();
    let waits = waits.lock().unwrap();
    assert!(!waits.is_empty(), "the sink waited for a full queue without recording it");
    assert!(waits.iter().all(|w| *w > 0));
}

#[test]
fn an_unusable_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("not-a-directory");
    fs::write(&blocker, b"x").unwrap();
    let error = TraceWriter::start(
        TraceConfig::new(Some(blocker.clone()), TraceClock::nanoseconds(now)),
        metadata(0),
        1,
    )
    .err()
    .expect("a file where the directory should be");
    assert!(error.to_string().contains("not-a-directory"), "{error}");
}

#[test]
fn a_dropped_writer_marks_the_run_failed() {
    let dir = tempfile::tempdir().unwrap();
    let writer = TraceWriter::start(
        TraceConfig::new(Some(dir.path().into()), TraceClock::nanoseconds(now)),
        metadata(0),
        1,
    )
    .unwrap();
    let mut sink = Recorder::new(&writer, 0, 4096);
    sink.push(schedule(1, 1));
    drop(sink);
    drop(writer);
    let process = dir.path().join("process=0");
    assert_eq!(ProcessMetadata::read(&process).unwrap().status, Status::Failed);
    assert_eq!(times(&read_dir(&process.join("worker=0"))), vec![1]);
}

#[test]
fn a_wait_is_recorded_in_time_order_among_rows_stamped_before_it() {
    let times: Arc<Mutex<Vec<i64>>> = Default::default();
    let record = times.clone();
    let mut config = TraceConfig::new(None, TraceClock::nanoseconds(now));
    config.callback = Some(Box::new(move |_, batch: &RecordBatch| {
        std::thread::sleep(Duration::from_millis(5)); // a slow consumer: the queue fills up
        let column = batch.column_by_name("time_ns").unwrap().as_primitive::<Int64Type>();
        record.lock().unwrap().extend(column.values().iter().copied());
    }));
    let writer = TraceWriter::start(config, metadata(0), 1).unwrap();
    let mut sink = Recorder::new(&writer, 0, 1);
    // The engine hands over events it stamped earlier, so waits start after all of them.
    let base = now();
    (0..40).for_each(|t| sink.push(schedule(base + t, 1)));
    drop(sink);
    writer.finish(Status::Complete).unwrap();
    let times = times.lock().unwrap();
    assert!(times.len() > 40, "waits were recorded");
    assert!(times.windows(2).all(|pair| pair[0] <= pair[1]), "{times:?}");
}

#[test]
fn network_events_go_to_their_workers_partitions_with_their_channels_kind() {
    let dir = tempfile::tempdir().unwrap();
    let writer = TraceWriter::start(
        TraceConfig::new(Some(dir.path().into()), TraceClock::nanoseconds(now)),
        metadata(1),
        2,
    )
    .unwrap();
    let network = writer.network_sink();
    let mut creator = Recorder::new(&writer, 5, 1);
    creator.push(Event(0, Kind::ChannelCreated, Some(4)));
    let frame = |time_ns, kind, worker| NetworkEvent {
        stamp: time_ns,
        kind,
        worker,
        channel: 4,
        source_worker: 0,
        target_worker: 2,
        seq: time_ns,
        bytes: 100,
    };
    let threads: Vec<_> = [(Kind::NetworkSendStart, 2), (Kind::NetworkRecvEnd, 3)]
        .into_iter()
        .map(|(kind, worker)| {
            let network = network.clone();
            std::thread::spawn(move || (0..500).for_each(|t| network.record([frame(t, kind, worker)])))
        })
        .collect();
    threads.into_iter().for_each(|thread| thread.join().unwrap());
    drop(creator);
    writer.finish(Status::Complete).unwrap();
    let process = dir.path().join("process=1");
    for worker in [2, 3] {
        let batches = read_dir(&process.join(format!("worker={worker}")));
        assert_eq!(times(&batches), (0..500).collect::<Vec<_>>(), "worker {worker}");
        let bytes = batches[0].column_by_name("bytes").unwrap().as_primitive::<Int64Type>();
        assert_eq!(bytes.value(0), 100);
        let kinds = batches[0].column_by_name("channel_kind").unwrap().as_string::<i32>();
        assert!(kinds.iter().all(|kind| kind == Some("data")), "worker {worker}");
    }
}

#[test]
fn network_events_of_channels_never_created_are_written_without_a_kind() {
    let dir = tempfile::tempdir().unwrap();
    let writer = TraceWriter::start(
        TraceConfig::new(Some(dir.path().into()), TraceClock::nanoseconds(now)),
        metadata(0),
        1,
    )
    .unwrap();
    let frame = NetworkEvent {
        stamp: 3,
        kind: Kind::NetworkRecvEnd,
        worker: 0,
        channel: 9,
        source_worker: 1,
        target_worker: 0,
        seq: 0,
        bytes: 48,
    };
    writer.network_sink().record([frame]);
    writer.finish(Status::Complete).unwrap();
    let batches = read_dir(&dir.path().join("process=0/worker=0"));
    assert_eq!(times(&batches), vec![3]);
    assert!(batches[0].column_by_name("channel_kind").unwrap().is_null(0));
}

#[test]
fn network_events_are_collected_while_running() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = TraceConfig::new(Some(dir.path().into()), TraceClock::nanoseconds(now));
    config.flush_interval = Duration::from_millis(50);
    let writer = TraceWriter::start(config, metadata(0), 1).unwrap();
    let network = writer.network_sink();
    network.record([NetworkEvent {
        stamp: 7,
        kind: Kind::NetworkRecvEnd,
        worker: 0,
        channel: 1,
        source_worker: 1,
        target_worker: 0,
        seq: 0,
        bytes: 48,
    }]);
    // The writer flushes every 50 ms; on a loaded machine its thread may wait far longer for a
    // core, so wait for the file (while the run goes on) rather than for a fixed time.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let worker_dir = dir.path().join("process=0/worker=0");
    while std::time::Instant::now() < deadline && !worker_dir.exists() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut found = times(&read_dir(&worker_dir));
    while found.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        found = times(&read_dir(&worker_dir));
    }
    assert_eq!(found, vec![7], "a complete file, mid-run");
    writer.finish(Status::Complete).unwrap();
}

/// A clock that stamps in tens of nanoseconds.
fn tens() -> i64 {
    now() / 10
}

fn tens_to_ns(stamps: &mut [i64]) {
    stamps.iter_mut().for_each(|stamp| *stamp *= 10);
}

/// A row's kind code, time and duration.
type KindTimeDuration = (i8, i64, Option<i64>);

#[test]
fn stamps_and_waits_become_nanoseconds_through_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Arc<Mutex<Vec<KindTimeDuration>>> = Default::default();
    let record = rows.clone();
    let mut config = TraceConfig::new(Some(dir.path().into()), TraceClock { stamp: tens, to_ns: tens_to_ns });
    config.callback = Some(Box::new(move |_, batch: &RecordBatch| {
        std::thread::sleep(Duration::from_millis(5)); // a slow consumer: the queue fills up
        let kinds = batch.column(1).as_dictionary::<arrow_array::types::Int8Type>();
        let times = batch.column(0).as_primitive::<Int64Type>();
        let durations = batch.column_by_name("duration_ns").unwrap().as_primitive::<Int64Type>();
        let mut record = record.lock().unwrap();
        for row in 0..batch.num_rows() {
            let duration = durations.is_valid(row).then(|| durations.value(row));
            record.push((kinds.keys().value(row), times.value(row), duration));
        }
    }));
    let writer = TraceWriter::start(config, metadata(0), 1).unwrap();
    let mut sink = Recorder::new(&writer, 0, 1);
    let before = now();
    (0..40).for_each(|_| sink.push(schedule(tens(), 1)));
    drop(sink);
    let elapsed = now() - before;
    writer.finish(Status::Complete).unwrap();
    let rows = rows.lock().unwrap();
    let in_files = times(&read_dir(&dir.path().join("process=0").join("worker=0")));
    assert_eq!(in_files, rows.iter().map(|row| row.1).collect::<Vec<_>>(), "files and callback agree");
    assert!(in_files.iter().all(|time| (before - 10..=before + elapsed + 10).contains(time)), "{in_files:?}");
    let waited: i64 = rows.iter().filter(|row| row.0 == Kind::TraceWait.code()).filter_map(|row| row.2).sum();
    assert!(waited > elapsed / 2 && waited <= elapsed, "waited {waited} ns of {elapsed}");
}
