//! How a run is traced: [`TraceSettings`] from the command line (`--trace DIR`,
//! `--trace-events LIST`, `--trace-flush SECONDS`), the environment (`TIMELY_TRACE_DIR`,
//! `TIMELY_TRACE_EVENTS`, `TIMELY_TRACE_FLUSH`) or code. This module only reads and checks
//! options; it starts nothing.

use std::path::PathBuf;
use std::time::Duration;

use timely_communication::networking::{parse_seconds, SecondsError};
use timely_communication::{ArgsError, RuntimeArgs, RuntimeOption};
#[cfg(feature = "trace-files")]
use timely_trace::BatchCallback;
use timely_trace::{EventClasses, UnknownEventClass};

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
    ///
    /// # Errors
    ///
    /// A command line that cannot be read, or a trace option or variable with a bad value.
    pub fn from_args<I: IntoIterator<Item = String>>(
        args: I,
    ) -> Result<(Option<Self>, Vec<String>), TraceSettingsError> {
        let args = RuntimeArgs::parse(args)?;
        Ok((TraceSettings::from_runtime_args(&args)?, args.rest))
    }

    /// The settings the trace options of `args` ([`RuntimeArgs::parse`]) describe, with the
    /// environment variables for options not given, as [`TraceSettings::from_args`] reads them.
    ///
    /// # Errors
    ///
    /// [`TraceSettingsError::Events`] or [`TraceSettingsError::Flush`], naming the option as
    /// written or the variable, and the value.
    pub fn from_runtime_args(args: &RuntimeArgs) -> Result<Option<Self>, TraceSettingsError> {
        let Some((_, directory)) = given(args, RuntimeOption::Trace, TRACE_DIR_VARIABLE) else {
            return Ok(None);
        };
        TraceSettings::options_of(args, Some(directory.into())).map(Some)
    }

    /// Settings without a directory (a callback receives the events), with the event classes
    /// and flush interval the environment names (`TIMELY_TRACE_EVENTS`, `TIMELY_TRACE_FLUSH`),
    /// read as [`TraceSettings::from_args`] reads them.
    ///
    /// # Errors
    ///
    /// As [`TraceSettings::from_runtime_args`], naming the variable.
    pub fn from_environment_without_directory() -> Result<Self, TraceSettingsError> {
        TraceSettings::options_of(&RuntimeArgs::default(), None)
    }

    /// The settings for `directory` with the event classes and flush interval of `args` or
    /// the environment.
    fn options_of(args: &RuntimeArgs, directory: Option<PathBuf>) -> Result<Self, TraceSettingsError> {
        let mut settings = TraceSettings { directory, ..TraceSettings::to_directory(PathBuf::new()) };
        if let Some((setting, text)) = given(args, RuntimeOption::TraceEvents, TRACE_EVENTS_VARIABLE) {
            settings.classes = read_events(setting, &text)?;
        }
        if let Some((setting, text)) = given(args, RuntimeOption::TraceFlush, TRACE_FLUSH_VARIABLE) {
            settings.flush_interval = read_flush(setting, &text)?;
        }
        Ok(settings)
    }

    /// Settings for `directory` (none: only a callback receives events), recording the event
    /// classes `events` names (comma-separated; default all), with files closed every
    /// `flush_seconds` (default 1): the keywords of Python's `execute`, whose names the
    /// errors give (`trace_events`, `trace_flush`).
    ///
    /// # Errors
    ///
    /// An unknown event class, or a flush interval that is not a positive number of seconds.
    pub fn with_options(
        directory: Option<PathBuf>,
        events: Option<&str>,
        flush_seconds: Option<f64>,
    ) -> Result<Self, TraceSettingsError> {
        let mut settings = TraceSettings { directory, ..TraceSettings::to_directory(PathBuf::new()) };
        if let Some(events) = events {
            settings.classes = read_events("trace_events".to_string(), events)?;
        }
        if let Some(seconds) = flush_seconds {
            settings.flush_interval = read_flush("trace_flush".to_string(), &seconds.to_string())?;
        }
        Ok(settings)
    }
}

/// Trace settings that cannot be used; each names the option as written (`--trace-flush`),
/// the environment variable or the keyword, and holds the value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceSettingsError {
    /// The command line cannot be read.
    #[error(transparent)]
    Args(#[from] ArgsError),
    /// A list of event classes with an unknown class.
    #[error("{setting}: {error}")]
    Events {
        /// `--trace-events`, `TIMELY_TRACE_EVENTS` or `trace_events`.
        setting: String,
        /// The class not known, with the list of known ones.
        error: UnknownEventClass,
    },
    /// A flush interval that is not a positive number of seconds.
    #[error("{setting}: {error}")]
    Flush {
        /// `--trace-flush`, `TIMELY_TRACE_FLUSH` or `trace_flush`.
        setting: String,
        /// The value, and what is wrong with it.
        error: SecondsError,
    },
}

/// The value of `option` as written, or else of the environment variable `variable` (unset
/// when empty or white space), with the option's spelling or the variable's name.
fn given(args: &RuntimeArgs, option: RuntimeOption, variable: &str) -> Option<(String, String)> {
    match args.get(option) {
        Some((written, value)) => Some((written.to_string(), value.to_string())),
        None => {
            let value = std::env::var(variable).ok().filter(|value| !value.trim().is_empty())?;
            Some((variable.to_string(), value))
        }
    }
}

fn read_events(setting: String, text: &str) -> Result<EventClasses, TraceSettingsError> {
    EventClasses::parse(text).map_err(|error| TraceSettingsError::Events { setting, error })
}

/// A flush interval, read as every duration of the runtime is ([`parse_seconds`]).
fn read_flush(setting: String, text: &str) -> Result<Duration, TraceSettingsError> {
    parse_seconds(text).map_err(|error| TraceSettingsError::Flush { setting, error })
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
        let flush = |setting: &str, text: &str| TraceSettingsError::Flush {
            setting: setting.to_string(),
            error: SecondsError::NotSeconds(text.to_string()),
        };
        for (args, expected) in [
            (vec!["--trace"], TraceSettingsError::Args(ArgsError::MissingValue("--trace".to_string()))),
            (vec!["--trace", "d", "--trace-flush", "0"], flush("--trace-flush", "0")),
            (vec!["--trace", "d", "--trace-flush=soon"], flush("--trace-flush", "soon")),
            (
                vec!["--trace", "d", "--trace-events", "everything"],
                TraceSettingsError::Events {
                    setting: "--trace-events".to_string(),
                    error: UnknownEventClass("everything".to_string()),
                },
            ),
        ] {
            let error = TraceSettings::from_args(strings(&args)).err().expect("an error");
            assert_eq!(error, expected, "{args:?}");
        }
        let message = flush("--trace-flush", "soon").to_string();
        assert_eq!(message, "--trace-flush: expected a positive number of seconds, found \"soon\"");
        let keyword = TraceSettings::with_options(None, None, Some(f64::NAN)).err().expect("an error");
        assert_eq!(keyword, flush("trace_flush", "NaN"));
    }

    #[test]
    fn after_a_double_dash_nothing_is_read() {
        let (settings, rest) = TraceSettings::from_args(strings(&["--", "--trace", "d"])).unwrap();
        assert!(settings.is_none() || std::env::var(TRACE_DIR_VARIABLE).is_ok());
        assert_eq!(rest, strings(&["--", "--trace", "d"]));
    }
}
