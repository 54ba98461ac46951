//! The timely_py engine: timely dataflow in Rust.
//!
//! Layout: `order` (partial orders), `progress` (timestamps, frontiers, reachability,
//! the progress protocol, scopes at run time), `scheduling` (activations), `dataflow`
//! (scopes, streams, channels, operators), `worker` and `execute` (running workers; a
//! worker's state, in `worker`, lies below what runs it), `rescale` (processes joining and
//! leaving a running cluster: the state a worker keeps, below the protocols that change it),
//! `cluster_failure` (stopping a worker whose cluster failed), `logging` (trace event
//! points), `trace` (tracing a run into files), `clock_watch` (clock measurements into the
//! trace).
//!
//! Features: `trace-files` writes traces (Parquet files, or Arrow batches for a callback)
//! through `timely_trace`'s writer, and brings Arrow and Parquet in. Off by default: a program
//! that does not trace compiles neither, and asking it for a trace (`--trace DIR`,
//! `TIMELY_TRACE_DIR`) fails with an error that says it was built without trace files.
//!
//! ```
//! use timely_engine::dataflow::{InputHandle, ProbeHandle};
//!
//! let seen = timely_engine::example(|worker| {
//!     let mut input = InputHandle::new();
//!     let probe = ProbeHandle::new();
//!     let captured = worker.dataflow::<u64, _>(|scope| {
//!         let stream = scope.input_from(&mut input).map(|x: u64| x * 2).probe_with(&probe);
//!         stream.capture()
//!     });
//!     for round in 0..3u64 {
//!         input.send(round);
//!         input.advance_to(round + 1);
//!         worker.step_while(|| probe.less_than(input.time()));
//!     }
//!     captured
//! });
//! assert_eq!(seen.extract(), vec![(0, 0), (1, 2), (2, 4)]);
//! ```

#[cfg(feature = "trace-files")]
mod clock_watch;
mod cluster_failure;
pub mod dataflow;
pub mod execute;
pub mod logging;
pub mod order;
pub mod progress;
pub mod rescale;
pub mod returned_workers;
pub mod scheduling;
pub mod trace;
pub mod wire_fuzz;
pub mod worker;

pub use execute::{
    example, execute, execute_from_args, execute_traced, runtime_from_args, ExecuteError, RuntimeArgsError,
};
pub use order::{PartialOrder, Product, TotalOrder};
pub use progress::{
    Antichain, ChangeBatch, MutableAntichain, Nesting, PathSummary, Refines, Timestamp, VecLoop, VecTime,
};
pub use returned_workers::ReturnedWorkers;
pub use timely_communication::Config;
pub use trace::{ProcessTrace, TraceSettings, TraceSettingsError};
pub use worker::{Activity, ClusterFailure, StopSignal, StoppedByPeer, Worker, WorkerState};
