//! The views an initial worker may hold: its applied batches plus any prefix of what is in flight.
//!
//! The initial workers do not apply progress batches as separate steps. A worker's state keeps
//! the batches it has certainly applied (`next`, `view`); every batch sent to it after those
//! may or may not have arrived yet. So a state stands for all its *possible views*: per sender
//! any prefix between `next` and what that sender sent, as long as a joiner's batches come
//! after the server's announcement when the protocol has that barrier. The properties are
//! checked on every possible view, and a decision that reads the view (a notification, the
//! server's snapshot, a range the server serves) picks a possible view and commits to it.
//!
//! This is a partial-order reduction of the model where every delivery is its own step:
//! applying a batch at worker `w` commutes with every step of other workers (it reads only
//! batches already sent and writes only `w`'s view), so every interleaving can be reordered to
//! apply batches just before the decision that reads them, and the states in between are
//! covered because the properties quantify over every possible view.
//!
//! This module owns the enumeration of possible views; it does not judge them.

use super::model::{Counts, State, JOINER, SERVER, WORKERS};

/// Per sender, the sequence number of the next batch not in the view, and the view itself.
pub type View = ([u8; WORKERS], Counts);

/// Every view worker `w` may hold: its committed view extended by any prefix of each
/// sender's batches in flight to it. `barrier` is the server's announcement batch when
/// receivers must apply it before any joiner batch.
pub fn possible_views(state: &State, w: usize, barrier: Option<u8>) -> Vec<View> {
    let worker = &state.workers[w];
    let mut views = vec![(worker.next, worker.view)];
    for sender in 0..WORKERS {
        let mut extended = Vec::new();
        for (next, view) in views {
            let (mut next, mut view) = (next, view);
            extended.push((next, view));
            while let Some(batch) = state.logs[sender].get(next[sender]) {
                view.add_all(batch);
                next[sender] += 1;
                extended.push((next, view));
            }
        }
        views = extended;
    }
    if let Some(a) = barrier {
        views.retain(|(next, _)| next[JOINER] == worker.next[JOINER] || next[SERVER] > a);
    }
    views
}

/// The views among `views` that no other view in `views` is below in every sender: applying
/// more batches later is always possible, so committing to a least view loses no behaviour.
pub fn least(views: Vec<View>) -> Vec<View> {
    let below = |a: &[u8; WORKERS], b: &[u8; WORKERS]| a != b && a.iter().zip(b).all(|(x, y)| x <= y);
    views.iter().filter(|(next, _)| !views.iter().any(|(other, _)| below(other, next))).copied().collect()
}

/// Worker `w` applies, per sender, every batch below `through` it had not applied yet.
pub fn commit(state: &mut State, w: usize, through: [u8; WORKERS]) {
    for (sender, &end) in through.iter().enumerate() {
        while state.workers[w].next[sender] < end {
            let seq = state.workers[w].next[sender];
            let batch = *state.logs[sender].get(seq).expect("a sent batch is retained");
            state.workers[w].view.add_all(&batch);
            state.workers[w].next[sender] += 1;
        }
    }
}

/// The server receives every batch of `sender` below `end` (to serve a range ending there).
pub fn serve_range(state: &mut State, sender: usize, end: u8) {
    let mut through = state.workers[SERVER].next;
    through[sender] = through[sender].max(end);
    commit(state, SERVER, through);
}
