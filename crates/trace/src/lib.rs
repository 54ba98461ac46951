//! Trace files of timely_py runs, as `docs/trace-format.md` specifies them.
//!
//! This crate owns the trace format: its vocabulary of event kinds and classes
//! ([`schema`], with their prose in [`schema_docs`]), and, with the feature `files`, columnar
//! batches of events (`batch`), the per-process metadata file (`metadata`), the sinks through
//! which workers and network threads hand events over (`sink`), the background thread that
//! has them written as rows (`writer`) and writes Hive-partitioned Parquet files (`files`) or
//! hands batches to a callback, and batches as Arrow IPC bytes (`ipc`). Without `files` the
//! crate is the vocabulary alone and depends on nothing: a program that records no trace
//! compiles neither Arrow nor Parquet. It must not know how events come about: the engine
//! decides what to record and when, and says how its events become rows.

pub mod schema;
pub mod schema_docs;

#[cfg(feature = "files")]
pub mod batch;
#[cfg(feature = "files")]
mod encoding;
#[cfg(feature = "files")]
mod files;
#[cfg(feature = "files")]
pub mod ipc;
#[cfg(feature = "files")]
pub mod metadata;
#[cfg(feature = "files")]
mod row_group;
#[cfg(feature = "files")]
pub mod sink;
#[cfg(feature = "files")]
pub mod writer;

pub use schema::{ChannelKind, EventClass, EventClasses, Kind, UnknownEventClass, Wake, FORMAT_VERSION};

#[cfg(feature = "files")]
pub use batch::{Cells, EventBatch, Int, Row};
#[cfg(feature = "files")]
pub use metadata::{ClockSample, ProcessMetadata, Status};
#[cfg(feature = "files")]
pub use sink::{NetworkEvent, NetworkSink, TraceEvent, WorkerSink};
#[cfg(feature = "files")]
pub use writer::{BatchCallback, ClockRecorder, TraceClock, TraceConfig, TraceWriter};
