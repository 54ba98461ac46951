//! The engine built without trace files (feature `trace-files` off): a [`ProcessTrace`] that
//! cannot exist. Asking for a trace is an error that says why and what to change, so that a
//! program never runs untraced when its user asked for a trace. This module owns only that
//! refusal.

use std::io;

use timely_communication::Config;

use super::settings::TraceSettings;
use crate::worker::Worker;

/// What the error of a trace asked for says, for a program built without trace files.
pub const BUILT_WITHOUT_TRACE_FILES: &str = "this program was built without trace files \
     (the feature `trace-files` of timely-engine is off, so Arrow and Parquet were left out); \
     build it with `timely-engine = { ..., features = [\"trace-files\"] }` to trace it";

/// A process's trace, in a build that cannot write one: no value of it exists.
pub enum ProcessTrace {}

impl ProcessTrace {
    /// Refuses the trace `settings` ask for: the program was built without trace files.
    pub fn start(settings: TraceSettings, _config: &mut Config) -> io::Result<Self> {
        let asked = match &settings.directory {
            Some(directory) => format!("a trace into {}", directory.display()),
            None => "a trace".to_string(),
        };
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{asked} was asked for, but {BUILT_WITHOUT_TRACE_FILES}"),
        ))
    }

    /// Makes `worker` record its events into this trace (never called: there is no trace).
    pub fn install(&self, _worker: &mut Worker) {
        match *self {}
    }

    /// Writes what is left (never called: there is no trace).
    pub fn finish(self, _succeeded: bool) -> io::Result<()> {
        match self {}
    }
}
