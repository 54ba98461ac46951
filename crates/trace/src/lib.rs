//! Trace files of timely_py runs, as `docs/trace-format.md` specifies them.
//!
//! This crate owns the trace format: its vocabulary of event kinds and classes
//! ([`schema`]), columnar batches of events ([`batch`]), the per-process metadata file
//! ([`metadata`]), the sinks through which workers and network threads hand events over
//! ([`sink`]), the background thread that has them written as rows ([`writer`]) and writes
//! Hive-partitioned Parquet files (`files`) or hands batches to a callback, and batches as
//! Arrow IPC bytes ([`ipc`]). It must not know how events come about: the engine decides what
//! to record and when, and says how its events become rows.

pub mod batch;
mod encoding;
mod files;
pub mod ipc;
pub mod metadata;
mod row_group;
pub mod schema;
pub mod schema_docs;
pub mod sink;
pub mod writer;

pub use batch::{Cells, EventBatch, Int, Row};
pub use metadata::{ClockSample, ProcessMetadata, Status};
pub use schema::{ChannelKind, EventClass, EventClasses, Kind, Wake, FORMAT_VERSION};
pub use sink::{NetworkEvent, NetworkSink, TraceEvent, WorkerSink};
pub use writer::{BatchCallback, ClockRecorder, TraceClock, TraceConfig, TraceWriter};
