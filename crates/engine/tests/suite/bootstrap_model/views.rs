//! The views an initial worker may hold: its applied batches plus any prefix of what is in flight.
//!
//! The initial workers apply progress batches lazily (`model_support::views`, which explains
//! why this partial-order reduction keeps every reachable view): a state stands for every view
//! between the batches a worker certainly applied and every batch sent to it, and a decision
//! that reads the view (a notification, the server's snapshot, a range it serves) picks one and
//! commits to it. The join adds one order across senders: with the barrier, a joiner's batches
//! come after the server's announcement batch. The joiner applies its batches as explicit steps
//! (their order is what the bootstrap is about), so it has one view.
//!
//! This module owns the enumeration of an initial worker's possible views; it does not judge
//! them.

use super::model::{State, JOINER, SERVER, WORKERS};
use crate::model_support::views::{self, extensions, View};

/// Every view worker `w` may hold: its committed view extended by any prefix of each
/// sender's batches in flight to it. `barrier` is the server's announcement batch when
/// receivers must apply it before any joiner batch.
pub fn possible_views(state: &State, w: usize, barrier: Option<u8>) -> Vec<View> {
    let worker = &state.workers[w];
    let mut views = extensions(worker, &state.logs, |sender| state.logs[sender].sent());
    if let Some(a) = barrier {
        views.retain(|(next, _)| next[JOINER] == worker.next[JOINER] || next[SERVER] > a);
    }
    views
}

/// Worker `w` applies, per sender, every batch below `through` it had not applied yet.
pub fn commit(state: &mut State, w: usize, through: [u8; WORKERS]) {
    views::commit(&mut state.workers[w], &state.logs, through);
}

/// The server receives every batch of `sender` below `end` (to serve a range ending there).
pub fn serve_range(state: &mut State, sender: usize, end: u8) {
    let mut through = state.workers[SERVER].next;
    through[sender] = through[sender].max(end);
    commit(state, SERVER, through);
}
