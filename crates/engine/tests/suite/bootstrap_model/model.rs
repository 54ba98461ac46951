//! The model's state: workers, the progress batches they sent, and the join in progress.
//!
//! This module owns the data of one state and the pure functions over it that the actions and
//! the properties share (true counts, prefix sums); the dataflow's counts, logs and workers
//! are `model_support::dataflow`'s. It does not decide which actions are enabled (`actions`)
//! nor what must hold (`properties`).

use std::fmt;

use crate::model_support::dataflow;
pub use crate::model_support::dataflow::{Counts, Log, Worker, CONSUMER_OUT, INPUT_OUT, TIMES, WORKERS};

/// Workers before the join: worker 0 is the bootstrap server.
pub const INITIAL: usize = 2;
pub const SERVER: usize = 0;
/// The joining worker's index.
pub const JOINER: usize = 2;

/// The join of worker `JOINER`, served by worker `SERVER`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Join {
    /// The server's snapshot `r[v]` for the initial workers, once it handled the join.
    pub snapshot: Option<[u8; INITIAL]>,
    /// Each initial worker's bootstrap message `s[v]`, once it back-filled.
    pub backfill: [Option<u8>; INITIAL],
    /// Sequence number of the server's batch announcing the joiner's capabilities.
    pub announce: Option<u8>,
    /// Capabilities the server promised but has not announced yet: `(input, consumer)` times
    /// (only the late-announcement variant has any).
    pub promised: Option<(Option<u8>, Option<u8>)>,
    /// Whether the joiner finished its bootstrap.
    pub booted: bool,
    /// Batches `[next, end)` per initial worker that a broken joiner applies out of order
    /// (only the broken variants that keep batches below `r` or run early have any).
    pub replay: [Option<(u8, u8)>; INITIAL],
}

/// A complete state of the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    pub workers: [Worker; WORKERS],
    pub logs: [Log; WORKERS],
    pub join: Join,
}

impl State {
    /// Two running workers at epoch 0 holding their initial capabilities; the joiner exists
    /// only as a slot (no capabilities, nothing sent to it) until the join.
    pub fn initial(sends: [u8; WORKERS]) -> Self {
        let worker = |index: usize| {
            if index < INITIAL {
                Worker::initial(INITIAL, sends[index])
            } else {
                Worker { sends_left: sends[index], ..Worker::default() }
            }
        };
        State { workers: [worker(0), worker(1), worker(2)], logs: Default::default(), join: Join::default() }
    }

    /// The true counts: every capability held and every message not yet consumed.
    pub fn truth(&self) -> Counts {
        dataflow::truth(&self.workers)
    }

    /// The initial counts plus every batch sent by anyone.
    pub fn sent_total(&self) -> Counts {
        dataflow::sent_total(&self.logs, INITIAL)
    }

    /// The view a worker must have if it applied exactly each sender's batches before `next`.
    pub fn view_of_prefixes(&self, next: &[u8; WORKERS]) -> Counts {
        dataflow::view_of_prefixes(&self.logs, INITIAL, next)
    }

    /// Appends a batch from `sender` (empty batches are not sent, as in the engine).
    pub fn send_batch(&mut self, sender: usize, batch: Counts) -> Option<u8> {
        self.logs[sender].push(batch)
    }

    /// Folds every batch no one can still need into its log's prefix.
    pub fn compact(&mut self) {
        for sender in 0..WORKERS {
            let keep = self.retained_from(sender);
            self.logs[sender].trim(keep);
        }
    }

    /// The lowest sequence number of `sender`'s batches someone may still apply or request.
    fn retained_from(&self, sender: usize) -> u8 {
        let mut keep = self.logs[sender].sent();
        for worker in &self.workers[..INITIAL] {
            keep = keep.min(worker.next[sender]);
        }
        if self.join.snapshot.is_some() || sender == JOINER {
            keep = keep.min(self.workers[JOINER].next[sender]);
        } else if let Some(s) = self.join.backfill[sender] {
            keep = keep.min(s);
        }
        if sender < INITIAL {
            if let Some((next, _)) = self.join.replay[sender] {
                keep = keep.min(next);
            }
        }
        keep
    }
}

/// A state in one line: per worker its capabilities, inbox, view and applied batches.
impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (w, k) in self.workers.iter().enumerate() {
            write!(
                f,
                "w{w}[epoch {:?} held {:?} notify {:03b} inbox {:?} view {:?} next {:?}] ",
                k.epoch, k.held, k.notify, k.inbox, k.view.0, k.next
            )?;
        }
        let sent: Vec<u8> = self.logs.iter().map(|log| log.sent()).collect();
        write!(f, "sent {sent:?} join {:?}", self.join)
    }
}
