//! The model's state: workers, the progress batches they sent, and the join in progress.
//!
//! This module owns the data of one state and the pure functions over it that the actions and
//! the properties share (true counts, views, frontiers, prefix sums). It does not decide which
//! actions are enabled (`actions`) nor what must hold (`properties`).

/// Timestamps `0..TIMES`, totally ordered.
pub const TIMES: usize = 3;
/// Pointstamp locations: the input operator's output (a source, where its capability lives),
/// the consumer's input (a target, where messages wait) and the consumer's output (a source,
/// where its initial and notification capabilities live).
pub const INPUT_OUT: usize = 0;
pub const CONSUMER_IN: usize = 1;
pub const CONSUMER_OUT: usize = 2;
pub const LOCATIONS: usize = 3;
/// Workers before the join: worker 0 is the bootstrap server.
pub const INITIAL: usize = 2;
pub const SERVER: usize = 0;
/// The joining worker's index.
pub const JOINER: usize = 2;
pub const WORKERS: usize = 3;

/// Whether pointstamps at location `from` can reach location `to` (timestamps unchanged: the
/// exchange edge and the consumer's internal path are identity summaries, the graph is acyclic).
pub fn reaches(from: usize, to: usize) -> bool {
    from <= to
}

/// Counts (or deltas) per pointstamp `(location, time)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Counts(pub [[i8; TIMES]; LOCATIONS]);

impl Counts {
    /// The implicit initial capabilities every worker counts: one per initial worker at time 0
    /// of every operator output.
    pub fn initial() -> Self {
        let mut counts = Counts::default();
        counts.0[INPUT_OUT][0] = INITIAL as i8;
        counts.0[CONSUMER_OUT][0] = INITIAL as i8;
        counts
    }

    pub fn add(&mut self, location: usize, time: usize, delta: i8) {
        self.0[location][time] += delta;
    }

    pub fn add_all(&mut self, other: &Counts) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0.iter()) {
            for (a, b) in mine.iter_mut().zip(theirs.iter()) {
                *a += *b;
            }
        }
    }

    pub fn is_zero(&self) -> bool {
        *self == Counts::default()
    }

    /// The least time with a positive count at a location that reaches `location`: the
    /// frontier there (`None` when empty). Non-positive counts are not in the frontier.
    pub fn frontier(&self, location: usize) -> Option<usize> {
        (0..TIMES).find(|&t| (0..LOCATIONS).any(|l| reaches(l, location) && self.0[l][t] > 0))
    }

    /// The least time with a positive count at exactly `location`.
    pub fn least_at(&self, location: usize) -> Option<usize> {
        (0..TIMES).find(|&t| self.0[location][t] > 0)
    }
}

/// One worker: its operators' capabilities, the data in flight to it, its progress view.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Worker {
    /// The input operator's capability (its epoch); `None` once closed, or never held.
    pub epoch: Option<u8>,
    /// The consumer's initial capability (the joiner's: the one handed over), until dropped.
    pub held: Option<u8>,
    /// The consumer's notification capabilities, one bit per time.
    pub notify: u8,
    /// Data messages sent to this worker and not yet consumed, per time.
    pub inbox: [u8; TIMES],
    /// How many more data messages this worker's input may send (bounds the state space).
    pub sends_left: u8,
    /// Its progress view: implicit initial counts plus every batch it applied (for an initial
    /// worker: certainly applied; it may also have applied any prefix of the rest, see `views`).
    pub view: Counts,
    /// Per sender: the sequence number of the next batch not in `view`.
    pub next: [u8; WORKERS],
}

/// The batches one worker sent, in sequence order. Batches every receiver has applied (and
/// no joiner can still ask for) are folded into `prefix`, which keeps states small.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Log {
    /// Sequence number of `batches[0]`.
    pub base: u8,
    /// Sum of the batches before `base`.
    pub prefix: Counts,
    pub batches: Vec<Counts>,
}

impl Log {
    /// The sequence number of the next batch this worker sends.
    pub fn sent(&self) -> u8 {
        self.base + self.batches.len() as u8
    }

    /// The batch with sequence number `seq`, if sent and retained.
    pub fn get(&self, seq: u8) -> Option<&Counts> {
        seq.checked_sub(self.base).and_then(|i| self.batches.get(i as usize))
    }

    /// Sum of batches `0..end` (`end` must not be below `base`).
    pub fn prefix_sum(&self, end: u8) -> Counts {
        let mut sum = self.prefix;
        for batch in &self.batches[..(end - self.base) as usize] {
            sum.add_all(batch);
        }
        sum
    }

    /// Folds batches below `keep` into `prefix`.
    pub fn trim(&mut self, keep: u8) {
        let drop = keep.saturating_sub(self.base) as usize;
        for batch in self.batches.drain(..drop) {
            self.prefix.add_all(&batch);
        }
        self.base = self.base.max(keep);
    }
}

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
        let worker = |index: usize| Worker {
            epoch: (index < INITIAL).then_some(0),
            held: (index < INITIAL).then_some(0),
            notify: 0,
            inbox: [0; TIMES],
            sends_left: sends[index],
            view: if index < INITIAL { Counts::initial() } else { Counts::default() },
            next: [0; WORKERS],
        };
        State { workers: [worker(0), worker(1), worker(2)], logs: Default::default(), join: Join::default() }
    }

    /// The true counts: every capability held and every message not yet consumed.
    pub fn truth(&self) -> Counts {
        let mut counts = Counts::default();
        for worker in &self.workers {
            if let Some(e) = worker.epoch {
                counts.add(INPUT_OUT, e as usize, 1);
            }
            if let Some(t) = worker.held {
                counts.add(CONSUMER_OUT, t as usize, 1);
            }
            for t in 0..TIMES {
                if worker.notify & (1 << t) != 0 {
                    counts.add(CONSUMER_OUT, t, 1);
                }
                counts.add(CONSUMER_IN, t, worker.inbox[t] as i8);
            }
        }
        counts
    }

    /// The initial counts plus every batch sent by anyone.
    pub fn sent_total(&self) -> Counts {
        let mut counts = Counts::initial();
        for log in &self.logs {
            counts.add_all(&log.prefix_sum(log.sent()));
        }
        counts
    }

    /// The view a worker must have if it applied exactly each sender's batches before `next`.
    pub fn view_of_prefixes(&self, next: &[u8; WORKERS]) -> Counts {
        let mut counts = Counts::initial();
        for (log, &end) in self.logs.iter().zip(next.iter()) {
            counts.add_all(&log.prefix_sum(end));
        }
        counts
    }

    /// Appends a batch from `sender` (empty batches are not sent, as in the engine).
    pub fn send_batch(&mut self, sender: usize, batch: Counts) -> Option<u8> {
        if batch.is_zero() {
            return None;
        }
        let log = &mut self.logs[sender];
        log.batches.push(batch);
        Some(log.sent() - 1)
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
