//! The background writer of a process's trace.
//!
//! [`TraceWriter::start`] spawns one thread per process. Workers hand it vectors of events
//! through their [`WorkerSink`]s (a bounded queue: a worker waits only when it is full, and
//! then records how long); the network threads record frames into the process's
//! [`NetworkSink`], which the thread collects at least every half flush interval. The thread
//! has the events write their rows (`trace_wait` rows in time order among them) straight into
//! the rows gathered for the open file of their worker (`crate::files`), and into a batch for
//! the callback if one is configured. It keeps the process's metadata file up to date. This module must not decide
//! what events mean or when they happen.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::batch::EventBatch;
use crate::files::Files;
use crate::metadata::{ClockSample, ProcessMetadata, Status};
use crate::schema::{ChannelKind, EventClass, EventClasses, Kind};
use crate::sink::{write_wait, Command, NetworkEvent, NetworkSink, PendingEvents, TraceEvent, WorkerSink};

/// Receives every batch of events with the global index of the worker that recorded it.
pub type BatchCallback = Box<dyn FnMut(usize, &RecordBatch) + Send>;

/// Hand-overs that may wait for the writer, per worker.
const QUEUE_PER_WORKER: usize = 8;

/// Where a process's trace goes and what it holds.
pub struct TraceConfig {
    /// The trace directory (files are written when set).
    pub directory: Option<PathBuf>,
    /// A receiver of every batch (called on the writer thread).
    pub callback: Option<BatchCallback>,
    /// The event classes recorded.
    pub classes: EventClasses,
    /// A file is closed, and a worker's events handed over, at least this often.
    pub flush_interval: Duration,
    /// The process's trace clock: what events are stamped with.
    pub clock: TraceClock,
}

/// The clock a process's events are stamped with: stamps, and how they become nanoseconds
/// since the Unix epoch (the writer thread converts them as it writes rows, so the workers
/// pay only for the stamp).
#[derive(Clone, Copy, Debug)]
pub struct TraceClock {
    /// A stamp of now.
    pub stamp: fn() -> i64,
    /// Turns stamps into nanoseconds since the Unix epoch, in place. Converting a stamp
    /// again gives the same nanoseconds, and stamps in order stay in order.
    pub to_ns: fn(&mut [i64]),
}

impl TraceClock {
    /// A clock whose stamps are nanoseconds since the Unix epoch already.
    pub fn nanoseconds(now_ns: fn() -> i64) -> Self {
        TraceClock { stamp: now_ns, to_ns: |_| () }
    }

    /// A stamp of now, in nanoseconds.
    fn now_ns(&self) -> i64 {
        let mut now = [(self.stamp)()];
        (self.to_ns)(&mut now);
        now[0]
    }
}

impl TraceConfig {
    /// Files in `directory`, every class, a flush every second.
    pub fn new(directory: Option<PathBuf>, clock: TraceClock) -> Self {
        TraceConfig {
            directory,
            callback: None,
            classes: EventClasses::all(),
            flush_interval: Duration::from_secs(1),
            clock,
        }
    }
}

/// A process's trace writer: the handle that owns the writing thread.
pub struct TraceWriter {
    sender: Sender<Command>,
    thread: Option<JoinHandle<io::Result<()>>>,
    classes: EventClasses,
    flush_interval: Duration,
    clock: TraceClock,
    network: NetworkSink,
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
        let network = NetworkSink::default();
        let mut state = WriterState {
            output: Outputs {
                files,
                callback: config.callback,
                batch: EventBatch::new(),
                to_ns: config.clock.to_ns,
                error: None,
            },
            rows: Rows::new(config.classes),
            network: network.clone(),
            collect_every: config.flush_interval / 2,
        };
        let thread =
            std::thread::Builder::new().name("timely:trace".into()).spawn(move || state.run(receiver))?;
        Ok(TraceWriter {
            sender,
            thread: Some(thread),
            classes: config.classes,
            flush_interval: config.flush_interval,
            clock: config.clock,
            network,
        })
    }

    /// The event classes recorded.
    pub fn classes(&self) -> EventClasses {
        self.classes
    }

    /// The sink of the worker with global index `worker`, whose events write their rows on
    /// the writer thread.
    pub fn sink<E: TraceEvent>(&self, worker: usize) -> WorkerSink<E> {
        WorkerSink::new(worker, self.sender.clone(), self.flush_interval / 2, self.clock.stamp)
    }

    /// Where the process's network threads record frames.
    pub fn network_sink(&self) -> NetworkSink {
        self.network.clone()
    }

    /// Records a measurement of this process's clock against process 0's.
    pub fn record_clock(&self, sample: ClockSample) {
        self.clock_recorder().record(sample);
    }

    /// A handle that records clock measurements from another thread.
    pub fn clock_recorder(&self) -> ClockRecorder {
        ClockRecorder { sender: self.sender.clone() }
    }

    /// Writes what the sinks handed over (drop every worker sink first), closes every file
    /// and records how the run ended. Returns the first error the writer met, if any.
    pub fn finish(mut self, status: Status) -> io::Result<()> {
        self.stop(status)
    }

    fn stop(&mut self, status: Status) -> io::Result<()> {
        let Some(thread) = self.thread.take() else { return Ok(()) };
        let _ = self.sender.send(Command::Finish { status, end_time_ns: self.clock.now_ns() });
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

/// Collections a network event waits for the creation of its channel before it is written
/// without the channel's kind.
const UNRESOLVED_COLLECTIONS: u32 = 8;

/// Turns events into rows, on the writer thread.
struct Rows {
    classes: EventClasses,
    /// Per worker, the waits for the writer `(start, duration)` not yet written, oldest first:
    /// events stamped before a wait may arrive after it (a worker hands over events it
    /// stamped earlier), so each wait is written before the first event stamped after its
    /// start, or when its worker is done.
    waits: HashMap<usize, Vec<(i64, i64)>>,
    /// What each channel carries, from the `channel_created` rows of this process's workers:
    /// network events name only the channel.
    channel_kinds: HashMap<i64, ChannelKind>,
    /// Network events whose channel no worker of this process has created yet (a frame can
    /// arrive before the dataflow it belongs to is built here), with the collections they
    /// have waited.
    unresolved: Vec<(NetworkEvent, u32)>,
}

impl Rows {
    fn new(classes: EventClasses) -> Self {
        Rows { classes, waits: HashMap::new(), channel_kinds: HashMap::new(), unresolved: Vec::new() }
    }

    /// Hands `output` the rows of a worker's hand-over.
    fn of_worker(
        &mut self,
        worker: usize,
        events: &dyn PendingEvents,
        waits: Vec<(i64, i64)>,
        last: bool,
        output: &mut Outputs,
    ) -> io::Result<()> {
        let pending = self.waits.entry(worker).or_default();
        pending.extend(waits);
        let (classes, kinds) = (self.classes, &mut self.channel_kinds);
        let mut written = 0;
        let outcome = output.write(worker, |batch| {
            let mark = batch.channel_mark();
            written = events.write(batch, classes, pending);
            if last {
                pending[written..].iter().for_each(|wait| write_wait(batch, *wait));
            }
            kinds.extend(batch.channels_since(mark));
        });
        pending.drain(..if last { pending.len() } else { written });
        outcome
    }

    /// Hands `output` the rows of network events (and of those left unresolved before), one
    /// batch per worker, in worker order. Events of channels not created here yet wait for a
    /// later collection, unless this is the last one or channels are not recorded.
    fn of_network(&mut self, events: Vec<NetworkEvent>, last: bool, output: &mut Outputs) -> io::Result<()> {
        if !self.classes.records(Kind::NetworkSendStart) {
            return Ok(());
        }
        let wait = !last && self.classes.contains(EventClass::Operators);
        let mut ready = Vec::with_capacity(events.len());
        let earlier = std::mem::take(&mut self.unresolved);
        for (event, waited) in earlier.into_iter().chain(events.into_iter().map(|event| (event, 0))) {
            let kind = self.channel_kinds.get(&event.channel).copied();
            if kind.is_none() && wait && waited < UNRESOLVED_COLLECTIONS {
                self.unresolved.push((event, waited + 1));
            } else {
                ready.push((event, kind));
            }
        }
        ready.sort_by_key(|(event, _)| (event.worker, event.stamp));
        for chunk in ready.chunk_by(|(a, _), (b, _)| a.worker == b.worker) {
            output.write(chunk[0].0.worker, |batch| {
                chunk.iter().for_each(|(event, kind)| event.write(*kind, batch));
            })?;
        }
        Ok(())
    }
}

/// Where rows go: the files, the callback, and the first error met writing files.
struct Outputs {
    files: Option<Files>,
    callback: Option<BatchCallback>,
    /// The rows for the callback.
    batch: EventBatch,
    /// Turns the stamps of new rows into nanoseconds.
    to_ns: fn(&mut [i64]),
    /// The first error met; no data file is written after it, only the final metadata.
    error: Option<io::Error>,
}

impl Outputs {
    /// Has `rows` append a worker's rows to the batch for the callback, then to the rows of
    /// the worker's file (so `rows` runs once per output, and must append the same rows each
    /// time), with their stamps turned into nanoseconds.
    fn write(&mut self, worker: usize, mut rows: impl FnMut(&mut EventBatch)) -> io::Result<()> {
        let to_ns = self.to_ns;
        let mut rows = move |batch: &mut EventBatch| {
            let first = batch.len();
            rows(batch);
            batch.stamps_to_ns(first, to_ns);
        };
        if let Some(callback) = &mut self.callback {
            rows(&mut self.batch);
            if !self.batch.is_empty() {
                callback(worker, &self.batch.finish());
            }
        }
        self.with_files(|files| files.write(worker, rows))
    }

    /// When the oldest open file is due to be closed (none once writing failed).
    fn files_due(&self) -> Option<Instant> {
        self.files.as_ref().filter(|_| self.error.is_none()).and_then(Files::next_deadline)
    }

    /// Runs `f` on the files unless there are none or writing them failed before.
    fn with_files(&mut self, f: impl FnOnce(&mut Files) -> io::Result<()>) -> io::Result<()> {
        match &mut self.files {
            Some(files) if self.error.is_none() => f(files),
            _ => Ok(()),
        }
    }

    fn note(&mut self, outcome: io::Result<()>) {
        if let Err(error) = outcome {
            log::error!("trace writer: {error}; no more events are written to files");
            self.error.get_or_insert(error);
        }
    }
}

/// The writing thread's state.
struct WriterState {
    output: Outputs,
    rows: Rows,
    network: NetworkSink,
    /// How often network events are collected.
    collect_every: Duration,
}

impl WriterState {
    fn run(&mut self, receiver: Receiver<Command>) -> io::Result<()> {
        let mut next_collection = Instant::now() + self.collect_every;
        loop {
            let now = Instant::now();
            if now >= next_collection {
                next_collection = now + self.collect_every;
                let collected = self.collect_network(false);
                self.output.note(collected);
            }
            if self.output.files_due().is_some_and(|due| due <= now) {
                let closed = self.output.with_files(|files| files.close_due(false));
                self.output.note(closed);
            }
            let deadline =
                self.output.files_due().map_or(next_collection, |due| due.max(now).min(next_collection));
            let outcome = match receiver.recv_deadline(deadline) {
                Ok(Command::Events { worker, events, waits, last }) => {
                    let written = self.rows.of_worker(worker, events.as_ref(), waits, last, &mut self.output);
                    events.recycle();
                    written
                }
                Ok(Command::Clock(sample)) => self.output.with_files(|files| files.record_clock(sample)),
                Ok(Command::Finish { status, end_time_ns }) => return self.finish(status, end_time_ns),
                Err(RecvTimeoutError::Timeout) => Ok(()),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(io::Error::other("trace writer dropped without finishing"))
                }
            };
            self.output.note(outcome);
        }
    }

    fn finish(&mut self, status: Status, end_time_ns: i64) -> io::Result<()> {
        let collected = self.collect_network(true);
        self.output.note(collected);
        let status = if self.output.error.is_some() { Status::Failed } else { status };
        if let Some(files) = &mut self.output.files {
            if let Err(error) = files.finish(status, end_time_ns) {
                self.output.error.get_or_insert(error);
            }
        }
        self.output.error.take().map_or(Ok(()), Err)
    }

    /// Writes the network events recorded since the last collection (`last`: and every one
    /// still waiting for its channel).
    fn collect_network(&mut self, last: bool) -> io::Result<()> {
        let events = self.network.take();
        self.rows.of_network(events, last, &mut self.output)
    }
}
