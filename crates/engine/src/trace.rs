//! Tracing a run: the settings that switch it on, the process's trace writer, and the
//! translation of the engine's events into the rows of `docs/trace-format.md`.
//!
//! `TraceSettings` come from the command line (`--trace DIR`, `--trace-events LIST`,
//! `--trace-flush SECONDS`), the environment (`TIMELY_TRACE_DIR`, `TIMELY_TRACE_EVENTS`,
//! `TIMELY_TRACE_FLUSH`) or code. `ProcessTrace` starts the writer of one process, installs a
//! logger on each of its workers that turns their events into rows, has the clock
//! measurements of a process other than 0 recorded into its metadata (`crate::clock_watch`),
//! and finishes the trace when the run ends. This module must not decide where events happen (that is the event
//! points' business, `crate::logging`), nor how files are laid out (`timely_trace`).

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use timely_communication::{clock, Config};
use timely_trace::{
    BatchCallback, ChannelKind, ClockSample, EventClasses, Kind, ProcessMetadata, Row, Status, TraceConfig,
    TraceWriter, WorkerSink,
};

use crate::clock_watch::ClockWatch;
use crate::logging::{Event, Flush, Timestamped};
use crate::worker::Worker;

/// The environment variable naming a trace directory (like `--trace DIR`).
pub const TRACE_DIR_VARIABLE: &str = "TIMELY_TRACE_DIR";
/// The environment variable listing the event classes to record (like `--trace-events`).
pub const TRACE_EVENTS_VARIABLE: &str = "TIMELY_TRACE_EVENTS";
/// The environment variable giving the flush interval in seconds (like `--trace-flush`).
pub const TRACE_FLUSH_VARIABLE: &str = "TIMELY_TRACE_FLUSH";

/// How a run is traced.
pub struct TraceSettings {
    /// Where the trace files go (none: only the callback receives events).
    pub directory: Option<PathBuf>,
    /// Receives every batch of events on the writer thread, with the worker's index.
    pub callback: Option<BatchCallback>,
    /// The event classes recorded.
    pub classes: EventClasses,
    /// Trace files are closed at least this often.
    pub flush_interval: Duration,
    /// The program named in the trace's metadata (default: the executable's first argument).
    pub program: Option<String>,
}

impl TraceSettings {
    /// Trace files in `directory`, every event class, files closed every second.
    pub fn to_directory(directory: impl Into<PathBuf>) -> Self {
        TraceSettings {
            directory: Some(directory.into()),
            callback: None,
            classes: EventClasses::all(),
            flush_interval: Duration::from_secs(1),
            program: None,
        }
    }

    /// Reads the trace options out of `args` (`--trace DIR`, `--trace-events LIST`,
    /// `--trace-flush SECONDS`, also as `--trace=DIR`), falling back to the environment
    /// variables for options not given. Returns the settings (none when no directory is
    /// named) and the other arguments in order; arguments after `--` are not read.
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Result<(Option<Self>, Vec<String>), String> {
        let mut given: [Option<String>; 3] = Default::default();
        let names = ["--trace", "--trace-events", "--trace-flush"];
        let mut rest = Vec::new();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            if arg == "--" {
                rest.push(arg);
                rest.extend(args.by_ref());
                break;
            }
            let (name, attached) = match arg.split_once('=') {
                Some((name, value)) => (name.to_string(), Some(value.to_string())),
                None => (arg.clone(), None),
            };
            match names.iter().position(|n| *n == name) {
                Some(slot) => {
                    let value = match attached {
                        Some(value) => value,
                        None => args.next().ok_or_else(|| format!("option {name} requires a value"))?,
                    };
                    given[slot] = Some(value);
                }
                None => rest.push(arg),
            }
        }
        let variables = [TRACE_DIR_VARIABLE, TRACE_EVENTS_VARIABLE, TRACE_FLUSH_VARIABLE];
        for (slot, variable) in given.iter_mut().zip(variables) {
            if slot.is_none() {
                *slot = std::env::var(variable).ok().filter(|v| !v.is_empty());
            }
        }
        let [directory, events, flush] = given;
        let Some(directory) = directory else { return Ok((None, rest)) };
        let flush = match flush {
            Some(text) => Some(text.trim().parse::<f64>().map_err(|_| {
                format!("--trace-flush: expected a positive number of seconds, found {text:?}")
            })?),
            None => None,
        };
        let settings = TraceSettings::with_options(Some(directory.into()), events.as_deref(), flush)
            .map_err(|error| format!("--trace-{error}"))?;
        Ok((Some(settings), rest))
    }

    /// Settings for `directory` (none: only a callback receives events), recording the event
    /// classes `events` names (comma-separated; default all), with files closed every
    /// `flush_seconds` (default 1).
    ///
    /// # Errors
    ///
    /// An unknown event class, or a flush interval that is not a positive number of seconds;
    /// the message starts with the option's name (`events: ...`, `flush: ...`).
    pub fn with_options(
        directory: Option<PathBuf>,
        events: Option<&str>,
        flush_seconds: Option<f64>,
    ) -> Result<Self, String> {
        let mut settings = TraceSettings { directory, ..TraceSettings::to_directory(PathBuf::new()) };
        if let Some(events) = events {
            settings.classes = EventClasses::parse(events).map_err(|error| format!("events: {error}"))?;
        }
        if let Some(seconds) = flush_seconds {
            settings.flush_interval = positive_seconds(seconds)
                .ok_or_else(|| format!("flush: expected a positive number of seconds, found {seconds}"))?;
        }
        Ok(settings)
    }
}

fn positive_seconds(seconds: f64) -> Option<Duration> {
    (seconds.is_finite() && seconds > 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// The trace of one process's run: its writer, from the first worker to the last event.
pub struct ProcessTrace {
    writer: TraceWriter,
    /// Records clock measurements (processes other than 0 of a cluster).
    clock_watch: Option<ClockWatch>,
}

impl ProcessTrace {
    /// Starts the writer for this process of `config`'s run. Process 0's clock is the
    /// reference (offset 0, error 0); another process's measurements, made by the transport,
    /// are recorded as they come (checked every flush interval).
    pub fn start(settings: TraceSettings, config: &Config) -> io::Result<Self> {
        let (process, processes, workers) = shape(config);
        let argv: Vec<String> = std::env::args().collect();
        let program = settings.program.clone().or_else(|| argv.first().cloned()).unwrap_or_default();
        let start_time_ns = clock::now_ns();
        let metadata = ProcessMetadata {
            format_version: timely_trace::FORMAT_VERSION,
            engine_version: env!("CARGO_PKG_VERSION").to_string(),
            program,
            argv,
            process,
            processes,
            workers_per_process: workers,
            start_time_ns,
            flush_interval_ns: settings.flush_interval.as_nanos() as i64,
            event_classes: settings.classes.names().into_iter().map(String::from).collect(),
            status: Status::Running,
            end_time_ns: None,
            clock: ClockSample { offset_ns: 0, error_ns: 0, measured_at_ns: start_time_ns },
            clock_history: Vec::new(),
        };
        let mut config = TraceConfig::new(settings.directory, clock::now_ns);
        config.callback = settings.callback;
        config.classes = settings.classes;
        config.flush_interval = settings.flush_interval;
        let writer = TraceWriter::start(config, metadata, workers)?;
        let clock_watch = match process {
            0 => None,
            _ => Some(ClockWatch::start(writer.clock_recorder(), settings.flush_interval)?),
        };
        Ok(ProcessTrace { writer, clock_watch })
    }

    /// Makes `worker` record its events into this trace.
    pub fn install(&self, worker: &mut Worker) {
        let mut sink = self.writer.sink(worker.index(), event_row);
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
    let parking = matches!(events.last(), Some((_, Event::Park { .. })));
    let due = if parking { sink.has_waited(PARK_HAND_OVER) } else { sink.is_due() };
    if why != Flush::Step || due {
        sink.hand_over(events);
    }
}

/// A worker about to park hands its rows over if they have waited this long.
const PARK_HAND_OVER: Duration = Duration::from_millis(100);

/// The trace row (`docs/trace-format.md`) of a timestamped event that `worker` recorded.
/// The trace writer calls it on its own thread.
pub fn event_row(worker: usize, (time, event): &Timestamped) -> Row<'_> {
    row(worker, *time, event)
}

/// The row of `event`, which happened on `worker` at `time`.
fn row(worker: usize, time: i64, event: &Event) -> Row<'_> {
    let worker = worker as i64;
    let int = |value: usize| Some(value as i64);
    match event {
        Event::Operates { id, address, name } => Row {
            operator: int(*id),
            address: Some(address),
            name: Some(name),
            ..Row::new(time, Kind::OperatorCreated)
        },
        Event::ProgressChannel { id, scope_address } => Row {
            channel: int(*id),
            channel_kind: Some(ChannelKind::Progress),
            address: Some(scope_address),
            ..Row::new(time, Kind::ChannelCreated)
        },
        Event::Channels { id, scope_address, source, target } => Row {
            channel: int(*id),
            channel_kind: Some(ChannelKind::Data),
            address: Some(scope_address),
            source_operator: int(source.0),
            source_port: int(source.1),
            target_operator: int(target.0),
            target_port: int(target.1),
            ..Row::new(time, Kind::ChannelCreated)
        },
        Event::Schedule { id, start: true, .. } => {
            Row { operator: int(*id), ..Row::new(time, Kind::ScheduleStart) }
        }
        Event::Schedule { id, start: false, useful } => {
            Row { operator: int(*id), useful: Some(*useful), ..Row::new(time, Kind::ScheduleStop) }
        }
        Event::Messages { send, channel, source, target, sequence, length } => Row {
            channel: int(*channel),
            source_worker: int(*source),
            target_worker: int(*target),
            seq: Some(*sequence as i64),
            records: int(*length),
            ..Row::new(time, if *send { Kind::MessageSend } else { Kind::MessageRecv })
        },
        Event::Progress { send, source, channel, sequence, address, updates } => Row {
            channel: int(*channel),
            address: Some(address),
            source_worker: int(*source),
            target_worker: if *send { None } else { Some(worker) },
            seq: Some(*sequence as i64),
            records: int(*updates),
            ..Row::new(time, if *send { Kind::ProgressSend } else { Kind::ProgressRecv })
        },
        Event::PushProgress { id } => Row { operator: int(*id), ..Row::new(time, Kind::ProgressPush) },
        Event::Park { timeout } => {
            Row { duration_ns: timeout.map(|t| t.as_nanos() as i64), ..Row::new(time, Kind::Park) }
        }
        Event::Unpark { wake } => Row { wake: Some(*wake), ..Row::new(time, Kind::Unpark) },
        Event::Activity { name, start } => Row {
            name: Some(name),
            ..Row::new(time, if *start { Kind::ActivityStart } else { Kind::ActivityStop })
        },
        Event::Shutdown { id } => Row { operator: int(*id), ..Row::new(time, Kind::OperatorShutdown) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_are_read_and_removed() {
        let args = strings(&["prog", "--trace", "/tmp/t", "-w", "2", "--trace-events=schedule,park", "x"]);
        let (settings, rest) = TraceSettings::from_args(args).unwrap();
        let settings = settings.expect("a directory was named");
        assert_eq!(settings.directory, Some(PathBuf::from("/tmp/t")));
        assert_eq!(settings.classes.names(), vec!["schedule", "park"]);
        assert_eq!(rest, strings(&["prog", "-w", "2", "x"]));
    }

    #[test]
    fn bad_options_are_errors() {
        for (args, expected) in [
            (vec!["--trace"], "requires a value"),
            (vec!["--trace", "d", "--trace-flush", "0"], "positive number of seconds"),
            (vec!["--trace", "d", "--trace-flush", "soon"], "positive number of seconds"),
            (vec!["--trace", "d", "--trace-events", "everything"], "unknown trace event class"),
        ] {
            let error = TraceSettings::from_args(strings(&args)).err().expect("an error");
            assert!(error.contains(expected), "{args:?}: {error}");
        }
    }

    #[test]
    fn after_a_double_dash_nothing_is_read() {
        let (settings, rest) = TraceSettings::from_args(strings(&["--", "--trace", "d"])).unwrap();
        assert!(settings.is_none() || std::env::var(TRACE_DIR_VARIABLE).is_ok());
        assert_eq!(rest, strings(&["--", "--trace", "d"]));
    }
}
