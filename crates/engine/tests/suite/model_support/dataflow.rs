//! The dataflow both models run, and the local steps of its operators.
//!
//! An input operator, an exchange, and a consumer that asks for a notification at the time of
//! every message it takes. Pointstamps live at three locations: the input's output (its
//! capability), the consumer's input (messages not yet consumed) and the consumer's output (its
//! initial capability and its notification capabilities). Timestamps are `0..TIMES`, totally
//! ordered; every path summary is the identity.
//!
//! This module owns the counts of pointstamps, the progress batches a worker sent (`Log`), one
//! worker's operators and progress view (`Worker`), and the local steps (`Step`) with the
//! progress batch each one produces. Which steps are enabled beyond what a worker holds (to
//! whom an input may send, which views a notification may commit to) is the model's.

use super::views::{commit, View};

/// Timestamps `0..TIMES`, totally ordered.
pub const TIMES: usize = 3;
/// Pointstamp locations: the input operator's output (a source, where its capability lives),
/// the consumer's input (a target, where messages wait) and the consumer's output (a source,
/// where its initial and notification capabilities live).
pub const INPUT_OUT: usize = 0;
pub const CONSUMER_IN: usize = 1;
pub const CONSUMER_OUT: usize = 2;
pub const LOCATIONS: usize = 3;
/// Worker slots: every model has at most three workers (a slot may stay empty).
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
    /// The implicit initial capabilities every worker counts: one per worker the dataflow was
    /// built for (`peers`) at time 0 of every operator output.
    pub fn initial(peers: usize) -> Self {
        let mut counts = Counts::default();
        counts.0[INPUT_OUT][0] = peers as i8;
        counts.0[CONSUMER_OUT][0] = peers as i8;
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

    /// Why worker `w`'s frontier in this view is behind a pointstamp held anywhere (`truth`),
    /// if it is at some location: the Frontier property of both models.
    pub fn frontier_behind(&self, w: usize, truth: &Counts) -> Option<String> {
        (0..LOCATIONS).find_map(|location| {
            let held = truth.frontier(location)?;
            self.frontier(location).is_none_or(|seen| seen > held).then(|| {
                format!(
                    "worker {w}'s frontier at location {location} is {:?} but a pointstamp at time \
                     {held} can reach it (view {:?}, true {:?})",
                    self.frontier(location),
                    self.0,
                    truth.0,
                )
            })
        })
    }

    /// The least time with a positive count at exactly `location`.
    pub fn least_at(&self, location: usize) -> Option<usize> {
        (0..TIMES).find(|&t| self.0[location][t] > 0)
    }
}

/// The batches one worker sent, in sequence order. Batches no one can still need are folded
/// into `prefix`, which keeps states small.
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

    /// Appends a batch and returns its sequence number; empty batches are not sent, as in the
    /// engine.
    pub fn push(&mut self, batch: Counts) -> Option<u8> {
        if batch.is_zero() {
            return None;
        }
        self.batches.push(batch);
        Some(self.sent() - 1)
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

/// The initial counts of `peers` workers plus every batch sent by anyone.
pub fn sent_total(logs: &[Log; WORKERS], peers: usize) -> Counts {
    let mut counts = Counts::initial(peers);
    for log in logs {
        counts.add_all(&log.prefix_sum(log.sent()));
    }
    counts
}

/// The view a worker must have if it applied exactly each sender's batches before `next`.
pub fn view_of_prefixes(logs: &[Log; WORKERS], peers: usize, next: &[u8; WORKERS]) -> Counts {
    let mut counts = Counts::initial(peers);
    for (log, &end) in logs.iter().zip(next.iter()) {
        counts.add_all(&log.prefix_sum(end));
    }
    counts
}

/// One worker: its operators' capabilities, the data in flight to it, its progress view.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Worker {
    /// The input operator's capability (its epoch); `None` once closed, or never held.
    pub epoch: Option<u8>,
    /// The consumer's initial capability (or one handed over to it), until dropped.
    pub held: Option<u8>,
    /// The consumer's notification capabilities, one bit per time.
    pub notify: u8,
    /// Data messages sent to this worker and not yet consumed, per time.
    pub inbox: [u8; TIMES],
    /// How many more data messages this worker's input may send (bounds the state space).
    pub sends_left: u8,
    /// Its progress view: initial counts plus every batch it certainly applied (it may also
    /// have applied more, see `views`).
    pub view: Counts,
    /// Per sender: the sequence number of the next batch not in `view`.
    pub next: [u8; WORKERS],
}

impl Worker {
    /// A worker of a dataflow built for `peers` workers, holding its initial capabilities.
    pub fn initial(peers: usize, sends: u8) -> Self {
        Worker {
            epoch: Some(0),
            held: Some(0),
            sends_left: sends,
            view: Counts::initial(peers),
            ..Worker::default()
        }
    }

    /// Whether its operators hold no capability.
    pub fn holds_nothing(&self) -> bool {
        self.epoch.is_none() && self.held.is_none() && self.notify == 0
    }
}

/// The true counts: every capability held and every message not yet consumed.
pub fn truth(workers: &[Worker]) -> Counts {
    let mut counts = Counts::default();
    for worker in workers {
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

/// A worker's local step; it ends by sending the step's progress batch. Worker indices are
/// `u8` to keep traces of millions of states small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The input moves its capability from its epoch to the next time.
    Advance(u8),
    /// The input drops its capability.
    Close(u8),
    /// The input sends a data message at its epoch to worker `to`.
    Send { from: u8, to: u8 },
    /// The consumer takes a message at time `t` and asks for a notification at `t`.
    Consume(u8, u8),
    /// The consumer is notified at `t` and releases that capability; its worker has applied
    /// each sender's batches below `next` (it committed to that possible view).
    Notify { w: u8, t: u8, next: [u8; WORKERS] },
    /// The consumer drops its initial (or handed-over) capability.
    DropHeld(u8),
}

/// Whether `view`'s frontier at the consumer's input has passed `t`.
pub fn passed(view: &Counts, t: usize) -> bool {
    view.frontier(CONSUMER_IN).is_none_or(|f| f > t)
}

/// The local steps worker `w` can take: its input advances (up to `last_epoch`), closes, or
/// sends to any worker `routes` allows; its consumer takes a message, drops its initial
/// capability, or is notified at `t` in any view `notifying(t)` gives (views that passed `t`).
pub fn steps(
    worker: &Worker,
    w: usize,
    last_epoch: u8,
    routes: impl Fn(usize) -> bool,
    notifying: impl Fn(usize) -> Vec<View>,
) -> Vec<Step> {
    let mut steps = Vec::new();
    let wu = w as u8;
    if let Some(e) = worker.epoch {
        if e < last_epoch {
            steps.push(Step::Advance(wu));
        }
        steps.push(Step::Close(wu));
        if worker.sends_left > 0 {
            for to in (0..WORKERS).filter(|&to| routes(to)) {
                steps.push(Step::Send { from: wu, to: to as u8 });
            }
        }
    }
    for t in (0..TIMES).filter(|&t| worker.inbox[t] > 0) {
        steps.push(Step::Consume(wu, t as u8));
    }
    if worker.held.is_some() {
        steps.push(Step::DropHeld(wu));
    }
    for t in (0..TIMES).filter(|&t| worker.notify & (1 << t) != 0) {
        for (next, _) in notifying(t) {
            steps.push(Step::Notify { w: wu, t: t as u8, next });
        }
    }
    steps
}

impl Step {
    /// The worker taking the step (and sending its batch).
    pub fn worker(self) -> usize {
        match self {
            Step::Advance(w)
            | Step::Close(w)
            | Step::Send { from: w, .. }
            | Step::Consume(w, _)
            | Step::Notify { w, .. }
            | Step::DropHeld(w) => w as usize,
        }
    }

    /// Takes the step and returns its progress batch (not yet sent), or why the step was
    /// wrong in itself (a notification delivered while a pointstamp at or before its time can
    /// still reach the consumer's input).
    pub fn apply(self, workers: &mut [Worker; WORKERS], logs: &[Log; WORKERS]) -> Result<Counts, String> {
        let mut batch = Counts::default();
        let worker = &mut workers[self.worker()];
        match self {
            Step::Advance(_) => {
                let e = worker.epoch.as_mut().expect("advance without capability");
                batch.add(INPUT_OUT, *e as usize + 1, 1);
                batch.add(INPUT_OUT, *e as usize, -1);
                *e += 1;
            }
            Step::Close(_) => {
                let e = worker.epoch.take().expect("close without capability");
                batch.add(INPUT_OUT, e as usize, -1);
            }
            Step::Send { to, .. } => {
                let e = worker.epoch.expect("send without capability") as usize;
                worker.sends_left -= 1;
                batch.add(CONSUMER_IN, e, 1);
                workers[to as usize].inbox[e] += 1;
            }
            Step::Consume(_, t) => {
                let t = t as usize;
                worker.inbox[t] -= 1;
                batch.add(CONSUMER_IN, t, -1);
                if worker.notify & (1 << t) == 0 {
                    worker.notify |= 1 << t;
                    batch.add(CONSUMER_OUT, t, 1);
                }
            }
            Step::Notify { w, t, next } => {
                if let Some(early) = truth(workers).frontier(CONSUMER_IN).filter(|&f| f <= t as usize) {
                    return Err(format!(
                        "worker {w} notified at {t} while a pointstamp at {early} can reach its input"
                    ));
                }
                let worker = &mut workers[w as usize];
                commit(worker, logs, next);
                worker.notify &= !(1 << t);
                batch.add(CONSUMER_OUT, t as usize, -1);
            }
            Step::DropHeld(_) => {
                let t = worker.held.take().expect("drop without capability");
                batch.add(CONSUMER_OUT, t as usize, -1);
            }
        }
        Ok(batch)
    }
}
