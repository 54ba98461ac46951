//! Trace files of timely_py runs, as `docs/trace-format.md` specifies them.
//!
//! This crate owns the trace format: its vocabulary of event kinds and classes
//! ([`schema`]), columnar batches of events ([`batch`]), the per-process metadata file
//! ([`metadata`]), and the background thread that turns batches into Hive-partitioned
//! Parquet files or hands them to a callback ([`writer`]), and batches as Arrow IPC bytes
//! ([`ipc`]). It must not know how events come
//! about: the engine decides what to record and when, and passes rows in.

pub mod batch;
pub mod ipc;
pub mod metadata;
pub mod schema;
pub mod writer;

pub use batch::{EventBatch, Row};
pub use metadata::{ClockSample, ProcessMetadata, Status};
pub use schema::{ChannelKind, EventClass, EventClasses, Kind, Wake, FORMAT_VERSION};
pub use writer::{BatchCallback, ClockRecorder, TraceConfig, TraceWriter, WorkerSink};
