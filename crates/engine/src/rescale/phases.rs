//! The names of the trace activities (`docs/trace-format.md`) that mark each phase of a join
//! or a leave on the workers' timelines, and [`phase`], which runs work as one of them.

use crate::logging::Activity;
use crate::worker::WorkerState;

/// A joining process connects to every process of the cluster (before its workers start).
pub const CONNECT: &str = "rescale: connect";
/// An existing worker back-fills its channels with endpoints to the joined workers.
pub const BACKFILL: &str = "rescale: back-fill";
/// The server snapshots and sends its progress state; the joiner waits for it.
pub const STATE: &str = "rescale: state transfer";
/// The server announces the capabilities it hands over to a joining worker.
pub const HANDOVER: &str = "rescale: capability hand-over";
/// The joiner requests and waits for missing progress batches; the server answers.
pub const RANGES: &str = "rescale: range requests";
/// A leaving worker, from the leave's notice until it is drained and drops its dataflows.
pub const LEAVE: &str = "rescale: leave";

/// Runs `work` as the trace activity `phase` of the worker.
pub(crate) fn phase<R>(state: &WorkerState, phase: &str, work: impl FnOnce() -> R) -> R {
    let _activity = Activity::begin(state.logger(), phase);
    work()
}
