//! The views a worker may hold when it applies progress batches lazily.
//!
//! A worker that applies batches lazily does not apply them as separate steps. Its state keeps
//! the batches it has certainly applied (`next`, `view`); every batch sent to it after those
//! may or may not have arrived yet. So a state stands for all its *possible views*: per sender
//! any prefix between `next` and the last batch that sender sent to it. The properties are
//! checked on every possible view, and a decision that reads the view (a notification, say)
//! picks a possible view and commits to it.
//!
//! This is a partial-order reduction of the model where every delivery is its own step:
//! applying a batch at worker `w` commutes with every step of other workers (it reads only
//! batches already sent and writes only `w`'s view), so every interleaving can be reordered to
//! apply batches just before the decision that reads them, and the states in between are
//! covered because the properties quantify over every possible view.
//!
//! This module owns the enumeration of possible views; which batches reach a worker (`limit`)
//! and in which order across senders is the model's.

use super::dataflow::{Counts, Log, Worker, WORKERS};

/// Per sender, the sequence number of the next batch not in the view, and the view itself.
pub type View = ([u8; WORKERS], Counts);

/// Every view `worker` may hold: its committed view extended, per sender, by any prefix of the
/// batches in flight to it, that is up to (not including) `limit(sender)`.
pub fn extensions(worker: &Worker, logs: &[Log; WORKERS], limit: impl Fn(usize) -> u8) -> Vec<View> {
    let mut views = vec![(worker.next, worker.view)];
    for (sender, log) in logs.iter().enumerate() {
        let end = limit(sender);
        let mut extended = Vec::new();
        for (next, view) in views {
            let (mut next, mut view) = (next, view);
            extended.push((next, view));
            while next[sender] < end {
                let Some(batch) = log.get(next[sender]) else { break };
                view.add_all(batch);
                next[sender] += 1;
                extended.push((next, view));
            }
        }
        views = extended;
    }
    views
}

/// The views among `views` that no other view in `views` is below in every sender: applying
/// more batches later is always possible, so committing to a least view loses no behaviour.
pub fn least(views: Vec<View>) -> Vec<View> {
    let below = |a: &[u8; WORKERS], b: &[u8; WORKERS]| a != b && a.iter().zip(b).all(|(x, y)| x <= y);
    views.iter().filter(|(next, _)| !views.iter().any(|(other, _)| below(other, next))).copied().collect()
}

/// `worker` applies, per sender, every batch below `through` it had not applied yet.
pub fn commit(worker: &mut Worker, logs: &[Log; WORKERS], through: [u8; WORKERS]) {
    for (sender, &end) in through.iter().enumerate() {
        while worker.next[sender] < end {
            let batch = logs[sender].get(worker.next[sender]).expect("a sent batch is retained");
            worker.view.add_all(batch);
            worker.next[sender] += 1;
        }
    }
}
