//! Tracing a run into files or a callback: the process's trace writer from the first worker
//! to the last event (feature `trace-files`).
//!
//! [`ProcessTrace`] starts the writer of one process ([`timely_trace`]), installs on each of
//! its workers a logger whose events write their own rows on the writer's thread
//! (`super::rows`), records the frames of a cluster's network threads (`super::frames`), has
//! the clock measurements of a process other than 0 recorded into its metadata
//! (`crate::clock_watch`), and finishes the trace when the run ends. This module must not
//! decide where events happen (that is the event points' business, [`crate::logging`]), nor
//! how files are laid out ([`timely_trace`]).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use timely_communication::{clock, Config, FrameObserver};
use timely_trace::{EventClass, ProcessMetadata, Status, TraceClock, TraceConfig, TraceWriter, WorkerSink};

use super::frames::{BothObservers, FrameRecorder};
use super::settings::TraceSettings;
use crate::clock_watch::ClockWatch;
use crate::logging::{Event, Flush, Timestamped};
use crate::worker::Worker;

/// The trace of one process's run: its writer, from the first worker to the last event.
pub struct ProcessTrace {
    writer: TraceWriter,
    /// Records clock measurements (processes other than 0 of a cluster).
    clock_watch: Option<ClockWatch>,
}

impl ProcessTrace {
    /// Starts the writer for this process of `config`'s run, and has a cluster's `config`
    /// tell the trace of every frame its network threads move (when network events are
    /// recorded). Process 0's clock is the reference (offset 0, error 0); another process's
    /// measurements, made by the transport, are recorded as they come (checked every flush
    /// interval).
    pub fn start(settings: TraceSettings, config: &mut Config) -> io::Result<Self> {
        let (process, processes, workers) = shape(config);
        let argv: Vec<String> = std::env::args().collect();
        let program = settings.program.clone().or_else(|| argv.first().cloned()).unwrap_or_default();
        let start_time_ns = clock::now_ns();
        let metadata = ProcessMetadata {
            program,
            flush_interval_ns: settings.flush_interval.as_nanos() as i64,
            event_classes: settings.classes.names().into_iter().map(String::from).collect(),
            ..ProcessMetadata::starting(process, processes, workers, start_time_ns, argv)
        };
        let clock = TraceClock { stamp: clock::stamp, to_ns: clock::stamps_to_ns };
        let mut files = TraceConfig::new(settings.directory, clock);
        files.callback = settings.callback;
        files.classes = settings.classes;
        files.flush_interval = settings.flush_interval;
        let writer = TraceWriter::start(files, metadata, workers)?;
        let clock_watch = match process {
            0 => None,
            _ => Some(ClockWatch::start(writer.clock_recorder(), settings.flush_interval)?),
        };
        let trace = ProcessTrace { writer, clock_watch };
        trace.observe_frames(config);
        Ok(trace)
    }

    /// Has a cluster's `config` record the frames of its network threads into this trace,
    /// if network events are recorded (an observer already there keeps being told).
    fn observe_frames(&self, config: &mut Config) {
        let Config::Cluster(cluster) = config else { return };
        if self.writer.classes().contains(EventClass::Network) {
            let recorder: Arc<dyn FrameObserver> = Arc::new(FrameRecorder::new(self.writer.network_sink()));
            cluster.frames = Some(match cluster.frames.take() {
                Some(existing) => Arc::new(BothObservers(existing, recorder)),
                None => recorder,
            });
        }
    }

    /// Makes `worker` record its events into this trace.
    pub fn install(&self, worker: &mut Worker) {
        let mut sink = self.writer.sink(worker.index());
        worker.install_logger(self.writer.classes(), move |_, events, why| hand_over(&mut sink, events, why));
    }

    /// Writes what is left and records how the run ended.
    pub fn finish(self, succeeded: bool) -> io::Result<()> {
        drop(self.clock_watch);
        self.writer.finish(if succeeded { Status::Complete } else { Status::Failed })
    }
}

/// This process's index, the number of processes and the workers per process.
fn shape(config: &Config) -> (usize, usize, usize) {
    match config {
        Config::Thread => (0, 1, 1),
        Config::Process(workers) => (0, 1, *workers),
        Config::Cluster(cluster) => (cluster.process, cluster.processes, cluster.threads),
    }
}

/// Hands `events` to `sink` when the logger says it must, or when they are due (always
/// before the worker parks for a while, so that a live reader is not kept waiting).
fn hand_over(sink: &mut WorkerSink<Timestamped>, events: &mut Vec<Timestamped>, why: Flush) {
    let parking = matches!(events.last(), Some(Timestamped { event: Event::Park { .. }, .. }));
    let due = if parking { sink.has_waited(PARK_HAND_OVER) } else { sink.is_due() };
    if why != Flush::Step || due {
        sink.hand_over(events);
    }
}

/// A worker about to park hands its rows over if they have waited this long.
const PARK_HAND_OVER: Duration = Duration::from_millis(100);
