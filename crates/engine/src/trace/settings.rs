//! How a run is traced: [`TraceSettings`] from the command line (`--trace DIR`,
//! `--trace-events LIST`, `--trace-flush SECONDS`), the environment (`TIMELY_TRACE_DIR`,
//! `TIMELY_TRACE_EVENTS`, `TIMELY_TRACE_FLUSH`) or code. This module only reads and checks
//! options; it starts nothing.

use std::path::PathBuf;
use std::time::Duration;

use timely_communication::{RuntimeArgs, RuntimeOption};
#[cfg(feature = "trace-files")]
use timely_trace::BatchCallback;
use timely_trace::EventClasses;

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
    /// Receives every batch of events on the writer thread, with the worker's index (feature
    /// `trace-files`: the batches are Arrow's).
    #[cfg(feature = "trace-files")]
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
            #[cfg(feature = "trace-files")]
            callback: None,
            classes: EventClasses::all(),
            flush_interval: Duration::from_secs(1),
            program: None,
        }
    }

    /// Reads the trace options out of `args` (`--trace DIR`, `--trace-events LIST`,
    /// `--trace-flush SECONDS`, also as `--trace=DIR`), falling back to the environment
    /// variables for options not given. Returns the settings (none when no directory is
    /// named) and the arguments that are not the runtime's (`RuntimeArgs`: the cluster's
    /// options are read, and left out, too), in order; arguments after `--` are not read.
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Result<(Option<Self>, Vec<String>), String> {
        let args = RuntimeArgs::parse(args).map_err(|error| error.to_string())?;
        Ok((TraceSettings::from_runtime_args(&args)?, args.rest))
    }

    /// The settings the trace options of `args` ([`RuntimeArgs::parse`]) describe, with the
    /// environment variables for options not given, as [`TraceSettings::from_args`] reads them.
    ///
    /// # Errors
    ///
    /// As [`TraceSettings::from_args`].
    pub fn from_runtime_args(args: &RuntimeArgs) -> Result<Option<Self>, String> {
        let given = |option, variable| match args.get(option) {
            Some((_, value)) => Some(value.to_string()),
            None => std::env::var(variable).ok().filter(|value: &String| !value.is_empty()),
        };
        let Some(directory) = given(RuntimeOption::Trace, TRACE_DIR_VARIABLE) else { return Ok(None) };
        let events = given(RuntimeOption::TraceEvents, TRACE_EVENTS_VARIABLE);
        let flush = match given(RuntimeOption::TraceFlush, TRACE_FLUSH_VARIABLE) {
            Some(text) => Some(text.trim().parse::<f64>().map_err(|_| {
                format!("--trace-flush: expected a positive number of seconds, found {text:?}")
            })?),
            None => None,
        };
        let settings = TraceSettings::with_options(Some(directory.into()), events.as_deref(), flush)
            .map_err(|error| format!("--trace-{error}"))?;
        Ok(Some(settings))
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
        assert_eq!(rest, strings(&["prog", "x"]), "the cluster's -w is the runtime's too");
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
