//! The background writer of a process's trace.
//!
//! [`TraceWriter::start`] spawns one thread per process. Each worker gets a [`WorkerSink`],
//! its own buffer of rows, which it hands over in batches through a bounded queue: the
//! worker never waits for the disk unless the queue is full, and then it records how long
//! it waited (a `trace_wait` event). The thread appends batches to the open file of their
//! worker (`process=P/worker=W/.part-N.parquet.tmp`), closes a file and renames it to
//! `part-N.parquet` once it has been open for the flush interval (or grew large), and hands
//! every batch to a callback if one is configured. It keeps the process's metadata file up to
//! date. This module must not decide what events mean or when they happen.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::batch::{EventBatch, Row};
use crate::metadata::{ClockSample, ProcessMetadata, Status};
use crate::schema::{schema, EventClasses, Kind};

/// Receives every batch of events with the global index of the worker that recorded it.
pub type BatchCallback = Box<dyn FnMut(usize, &RecordBatch) + Send>;

/// Rows a worker gathers before handing them to the writer.
pub const DEFAULT_BATCH_ROWS: usize = 4096;
/// A file is closed once it holds this many rows, even before the flush interval.
const MAX_FILE_ROWS: usize = 1 << 22;
/// Rows per Parquet row group.
const ROW_GROUP_ROWS: usize = 1 << 20;
/// Batches that may wait for the writer, per worker.
const QUEUE_PER_WORKER: usize = 8;

/// Where a process's trace goes and what it holds.
pub struct TraceConfig {
    /// The trace directory (files are written when set).
    pub directory: Option<PathBuf>,
    /// A receiver of every batch (called on the writer thread).
    pub callback: Option<BatchCallback>,
    /// The event classes recorded.
    pub classes: EventClasses,
    /// A file is closed, and a worker's buffer handed over, at least this often.
    pub flush_interval: Duration,
    /// Rows a worker gathers before handing them over.
    pub batch_rows: usize,
    /// The process's trace clock: nanoseconds since the Unix epoch.
    pub clock: fn() -> i64,
}

impl TraceConfig {
    /// Files in `directory`, every class, a flush every second.
    pub fn new(directory: Option<PathBuf>, clock: fn() -> i64) -> Self {
        TraceConfig {
            directory,
            callback: None,
            classes: EventClasses::all(),
            flush_interval: Duration::from_secs(1),
            batch_rows: DEFAULT_BATCH_ROWS,
            clock,
        }
    }
}

enum Command {
    Batch { worker: usize, batch: RecordBatch },
    Clock(ClockSample),
    Finish { status: Status, end_time_ns: i64 },
}

/// A process's trace writer: the handle that owns the writing thread.
pub struct TraceWriter {
    sender: Sender<Command>,
    thread: Option<JoinHandle<io::Result<()>>>,
    classes: EventClasses,
    flush_interval: Duration,
    batch_rows: usize,
    clock: fn() -> i64,
}

impl TraceWriter {
    /// Creates the process's directory, writes its metadata (status `running`) and starts
    /// the writing thread for `workers` local workers.
    pub fn start(config: TraceConfig, metadata: ProcessMetadata, workers: usize) -> io::Result<TraceWriter> {
        let (sender, receiver) = crossbeam_channel::bounded(QUEUE_PER_WORKER * workers.max(1));
        let files = match &config.directory {
            Some(root) => Some(Files::create(root, metadata, config.flush_interval)?),
            None => None,
        };
        let mut state = WriterState { files, callback: config.callback, error: None };
        let thread =
            std::thread::Builder::new().name("timely:trace".into()).spawn(move || state.run(receiver))?;
        Ok(TraceWriter {
            sender,
            thread: Some(thread),
            classes: config.classes,
            flush_interval: config.flush_interval,
            batch_rows: config.batch_rows.max(1),
            clock: config.clock,
        })
    }

    /// The event classes recorded.
    pub fn classes(&self) -> EventClasses {
        self.classes
    }

    /// A buffer for the worker with global index `worker`.
    pub fn sink(&self, worker: usize) -> WorkerSink {
        WorkerSink {
            worker,
            batch: EventBatch::new(),
            sender: self.sender.clone(),
            classes: self.classes,
            batch_rows: self.batch_rows,
            hand_over_every: self.flush_interval / 2,
            last_handed_over: Instant::now(),
            clock: self.clock,
            pending_waits: Vec::new(),
        }
    }

    /// Records a measurement of this process's clock against process 0's.
    pub fn record_clock(&self, sample: ClockSample) {
        self.clock_recorder().record(sample);
    }

    /// A handle that records clock measurements from another thread.
    pub fn clock_recorder(&self) -> ClockRecorder {
        ClockRecorder { sender: self.sender.clone() }
    }

    /// Writes what the sinks handed over (drop every sink first), closes every file and
    /// records how the run ended. Returns the first error the writer met, if any.
    pub fn finish(mut self, status: Status) -> io::Result<()> {
        self.stop(status)
    }

    fn stop(&mut self, status: Status) -> io::Result<()> {
        let Some(thread) = self.thread.take() else { return Ok(()) };
        let _ = self.sender.send(Command::Finish { status, end_time_ns: (self.clock)() });
        thread.join().unwrap_or_else(|_| Err(io::Error::other("the trace writer panicked")))
    }
}

impl Drop for TraceWriter {
    fn drop(&mut self) {
        if let Err(error) = self.stop(Status::Failed) {
            log::error!("trace writer: {error}");
        }
    }
}

/// Records measurements of this process's clock into a [`TraceWriter`]'s metadata, from any
/// thread; measurements recorded after the writer finished are dropped.
#[derive(Clone)]
pub struct ClockRecorder {
    sender: Sender<Command>,
}

impl ClockRecorder {
    /// Records a measurement of this process's clock against process 0's.
    pub fn record(&self, sample: ClockSample) {
        let _ = self.sender.send(Command::Clock(sample));
    }
}

/// A worker's buffer of trace rows.
pub struct WorkerSink {
    worker: usize,
    batch: EventBatch,
    sender: Sender<Command>,
    classes: EventClasses,
    batch_rows: usize,
    hand_over_every: Duration,
    last_handed_over: Instant,
    clock: fn() -> i64,
    /// Waits for the writer (start, duration) not yet recorded, oldest first: rows stamped
    /// before a wait may still arrive after it (the engine hands over events it stamped
    /// earlier), so each is recorded in time order, before the first row stamped after its
    /// start, or when the sink is dropped.
    pending_waits: Vec<(i64, i64)>,
}

impl WorkerSink {
    /// The event classes recorded.
    pub fn classes(&self) -> EventClasses {
        self.classes
    }

    /// The global index of the worker.
    pub fn worker(&self) -> usize {
        self.worker
    }

    /// Records `row` if its class is recorded; hands the buffer over when it is full.
    pub fn push(&mut self, row: &Row<'_>) {
        if self.classes.records(row.kind) {
            self.record_waits_until(row.time_ns);
            self.batch.push(row);
            if self.batch.len() >= self.batch_rows {
                self.hand_over();
            }
        }
    }

    /// Hands the buffer over if it has waited for half the flush interval, so that files
    /// can be closed on time; call it regularly (the engine does at the end of each step).
    pub fn hand_over_if_due(&mut self) {
        self.hand_over_if_waited(self.hand_over_every);
    }

    /// Hands the buffer over if it holds rows and the last hand-over is `wait` ago.
    pub fn hand_over_if_waited(&mut self, wait: Duration) {
        if !self.batch.is_empty() && self.last_handed_over.elapsed() >= wait {
            self.hand_over();
        }
    }

    /// Hands the buffered rows to the writer. If its queue is full, waits, and records the
    /// wait as a `trace_wait` event in the next batch.
    pub fn hand_over(&mut self) {
        self.last_handed_over = Instant::now();
        if self.batch.is_empty() {
            return;
        }
        let command = Command::Batch { worker: self.worker, batch: self.batch.finish() };
        let command = match self.sender.try_send(command) {
            Ok(()) => return,
            Err(TrySendError::Disconnected(_)) => return,
            Err(TrySendError::Full(command)) => command,
        };
        let started = (self.clock)();
        let _ = self.sender.send(command);
        self.pending_waits.push((started, (self.clock)() - started));
    }

    /// Records, as `trace_wait` rows, the pending waits that started no later than `time`.
    fn record_waits_until(&mut self, time: i64) {
        let due = self.pending_waits.partition_point(|(started, _)| *started <= time);
        for (started, waited) in self.pending_waits.drain(..due) {
            self.batch.push(&Row { duration_ns: Some(waited), ..Row::new(started, Kind::TraceWait) });
        }
    }
}

impl Drop for WorkerSink {
    /// Hands over what is left, with every pending wait (a wait for this last hand-over
    /// itself cannot be recorded).
    fn drop(&mut self) {
        self.record_waits_until(i64::MAX);
        self.hand_over();
    }
}

/// The writing thread's state.
struct WriterState {
    files: Option<Files>,
    callback: Option<BatchCallback>,
    /// The first error met; no data file is written after it, only the final metadata.
    error: Option<io::Error>,
}

impl WriterState {
    fn run(&mut self, receiver: Receiver<Command>) -> io::Result<()> {
        loop {
            let deadline = self.files.as_ref().and_then(Files::next_deadline);
            let command = match deadline {
                Some(deadline) => receiver.recv_deadline(deadline),
                None => receiver.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            let outcome = match command {
                Ok(Command::Batch { worker, batch }) => self.write(worker, &batch),
                Ok(Command::Clock(sample)) => self.with_files(|files| files.record_clock(sample)),
                Ok(Command::Finish { status, end_time_ns }) => {
                    let status = if self.error.is_some() { Status::Failed } else { status };
                    if let Some(files) = &mut self.files {
                        if let Err(error) = files.finish(status, end_time_ns) {
                            self.error.get_or_insert(error);
                        }
                    }
                    return self.error.take().map_or(Ok(()), Err);
                }
                Err(RecvTimeoutError::Timeout) => self.with_files(|files| files.close_due(false)),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(io::Error::other("trace writer dropped without finishing"))
                }
            };
            if let Err(error) = outcome {
                log::error!("trace writer: {error}; no more events are written to files");
                self.error.get_or_insert(error);
            }
        }
    }

    fn write(&mut self, worker: usize, batch: &RecordBatch) -> io::Result<()> {
        if let Some(callback) = &mut self.callback {
            callback(worker, batch);
        }
        self.with_files(|files| files.write(worker, batch))
    }

    /// Runs `f` on the files unless there are none or writing them failed before.
    fn with_files(&mut self, f: impl FnOnce(&mut Files) -> io::Result<()>) -> io::Result<()> {
        match &mut self.files {
            Some(files) if self.error.is_none() => f(files),
            _ => Ok(()),
        }
    }
}

/// A process's files in the trace directory.
struct Files {
    process_dir: PathBuf,
    metadata: ProcessMetadata,
    flush_interval: Duration,
    open: HashMap<usize, OpenFile>,
    next_part: HashMap<usize, u64>,
}

struct OpenFile {
    writer: ArrowWriter<fs::File>,
    temporary: PathBuf,
    complete: PathBuf,
    opened: Instant,
    rows: usize,
}

impl Files {
    fn create(root: &Path, metadata: ProcessMetadata, flush_interval: Duration) -> io::Result<Files> {
        let process_dir = ProcessMetadata::process_dir(root, metadata.process);
        fs::create_dir_all(&process_dir).map_err(|e| annotate(e, "cannot create", &process_dir))?;
        metadata.write(&process_dir).map_err(|e| annotate(e, "cannot write metadata into", &process_dir))?;
        Ok(Files { process_dir, metadata, flush_interval, open: HashMap::new(), next_part: HashMap::new() })
    }

    /// When the oldest open file is due to be closed.
    fn next_deadline(&self) -> Option<Instant> {
        self.open.values().map(|file| file.opened + self.flush_interval).min()
    }

    fn write(&mut self, worker: usize, batch: &RecordBatch) -> io::Result<()> {
        let file = match self.open.entry(worker) {
            std::collections::hash_map::Entry::Occupied(file) => file.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let part = self.next_part.entry(worker).or_insert(0);
                let file = OpenFile::create(&self.process_dir.join(format!("worker={worker}")), *part)?;
                *part += 1;
                slot.insert(file)
            }
        };
        file.writer.write(batch).map_err(io::Error::other)?;
        file.rows += batch.num_rows();
        if file.rows >= MAX_FILE_ROWS {
            self.open.remove(&worker).expect("the file is open").close()?;
        }
        Ok(())
    }

    /// Closes the files open for the flush interval (every file if `all`).
    fn close_due(&mut self, all: bool) -> io::Result<()> {
        let interval = self.flush_interval;
        let due: Vec<usize> = self
            .open
            .iter()
            .filter(|(_, f)| all || f.opened.elapsed() >= interval)
            .map(|(w, _)| *w)
            .collect();
        for worker in due {
            self.open.remove(&worker).expect("the file is open").close()?;
        }
        Ok(())
    }

    fn record_clock(&mut self, sample: ClockSample) -> io::Result<()> {
        self.metadata.add_clock_sample(sample);
        self.metadata.write(&self.process_dir)
    }

    /// Closes every file and records the run's end (as failed if a file could not be closed).
    fn finish(&mut self, status: Status, end_time_ns: i64) -> io::Result<()> {
        let closed = self.close_due(true);
        self.metadata.status = if closed.is_ok() { status } else { Status::Failed };
        self.metadata.end_time_ns = Some(end_time_ns);
        closed.and(self.metadata.write(&self.process_dir))
    }
}

impl OpenFile {
    fn create(dir: &Path, part: u64) -> io::Result<OpenFile> {
        fs::create_dir_all(dir).map_err(|e| annotate(e, "cannot create", dir))?;
        let name = format!("part-{part:06}.parquet");
        let temporary = dir.join(format!(".{name}.tmp"));
        let file = fs::File::create(&temporary).map_err(|e| annotate(e, "cannot create", &temporary))?;
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).expect("level 1 exists")))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .build();
        let writer = ArrowWriter::try_new(file, schema(), Some(properties)).map_err(io::Error::other)?;
        Ok(OpenFile { writer, temporary, complete: dir.join(name), opened: Instant::now(), rows: 0 })
    }

    /// Writes the footer and gives the file its final name.
    fn close(self) -> io::Result<()> {
        self.writer.close().map_err(io::Error::other)?;
        fs::rename(&self.temporary, &self.complete).map_err(|e| annotate(e, "cannot rename", &self.temporary))
    }
}

fn annotate(error: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(error.kind(), format!("{what} {}: {error}", path.display()))
}
