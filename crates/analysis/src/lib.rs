//! The critical-path analysis's sequential per-partition kernels, in Rust over Arrow.
//!
//! `timely_py.analysis` (PySpark) partitions, joins and aggregates; the algorithms that
//! must see one partition in order run here, with the same input and output schemas and the
//! same results as the plain-Python reference kernels they replace (`docs/critical-path.md`):
//!
//! * [`worker_activities`]: one worker's rows (`WORKER_ROWS`) to its activities
//!   (`ACTIVITIES`): the wait-state analysis ([`waits`]), the background under every other
//!   activity ([`background`]: scopes, the program between steps, before the worker started
//!   and after it finished) and precedence ([`precedence`]);
//! * [`worker_pieces`]: one worker's clock-corrected events to its rows of `WORKER_ROWS`
//!   (runs, steps, scope runs, user activities, parks, instants, input sends, lifetime and
//!   trace bounds: all but the deliveries, which are a join across workers) ([`pieces`]);
//! * [`slice_critical_path`]: one slice's activities (`SLICED`) to its critical path
//!   (`CRITICAL_PATH`) ([`critical_path`]).
//!
//! Besides the kernels, [`perfetto`] writes an analysis's activities and critical path as
//! Chrome trace-event JSON, as the Python reference writer does.
//!
//! Each takes the input's schema and its record batches (several batches are one table) and
//! returns one record batch. Inputs are read in place; a column that is missing, of the wrong
//! type or null where the algorithm needs a value is a [`KernelError`], never a panic.
//! [`schemas`] holds the schemas, [`columns`] the typed access to input columns. This crate
//! knows nothing of Python, Spark, trace files or the engine.

pub mod background;
pub mod columns;
pub mod critical_path;
pub mod perfetto;
pub mod pieces;
pub mod precedence;
pub mod schemas;
pub mod waits;
pub mod worker_rows;

pub use columns::KernelError;
pub use critical_path::slice_critical_path;
pub use pieces::{worker_pieces, Catalogue};
pub use waits::worker_activities;
