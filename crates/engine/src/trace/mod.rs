//! Tracing a run: how tracing is switched on ([`settings`]), and, with the feature
//! `trace-files`, the process's trace writer from the first worker to the last event
//! (`process`), the rows of the engine's events (`rows`) and the frames of a cluster's network
//! threads (`frames`), written by [`timely_trace`]'s writer into Parquet files or handed to a
//! callback.
//!
//! Without `trace-files` the engine compiles neither Arrow nor Parquet; [`ProcessTrace`] is
//! then `absent`'s, which refuses every trace asked for (by `--trace DIR`,
//! `TIMELY_TRACE_DIR` or [`TraceSettings`]) with an error saying the program was built
//! without trace files: never a run that silently records nothing. This module must not
//! decide where events happen (that is the event points' business, [`crate::logging`]), nor
//! how files are laid out ([`timely_trace`]).

mod settings;

#[cfg(not(feature = "trace-files"))]
mod absent;
#[cfg(feature = "trace-files")]
mod frames;
#[cfg(feature = "trace-files")]
mod process;
#[cfg(feature = "trace-files")]
mod rows;

pub use settings::{
    TraceSettings, TraceSettingsError, TRACE_DIR_VARIABLE, TRACE_EVENTS_VARIABLE, TRACE_FLUSH_VARIABLE,
};

#[cfg(not(feature = "trace-files"))]
pub use absent::{ProcessTrace, BUILT_WITHOUT_TRACE_FILES};
#[cfg(feature = "trace-files")]
pub use frames::FrameRecorder;
#[cfg(feature = "trace-files")]
pub use process::ProcessTrace;
