//! What the model checkers of the rescaling protocols share: the join's
//! (`bootstrap_model`) and the leave's (`leave_model`).
//!
//! Both models run the same small dataflow on a few workers and differ only in the membership
//! change they add. This module owns the parts that do not know about either change:
//!
//! - `dataflow`: the dataflow's pointstamps (`Counts`), the progress batches each worker sent
//!   (`Log`), one worker's operators (`Worker`) and the local steps they take (`Step`);
//! - `views`: the progress views a worker may hold when it applies batches lazily, the
//!   partial-order reduction both models use;
//! - `explorer`: the exhaustive breadth-first search over any `Model`, with fingerprints and
//!   the shortest trace to a violation, and the harness the scenarios run through.

pub mod dataflow;
pub mod explorer;
pub mod views;
