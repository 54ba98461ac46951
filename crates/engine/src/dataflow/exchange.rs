//! Exchanging edges: parallelization contracts that route each record to a worker through
//! the allocator.
//!
//! An exchanging edge asks two things per batch of records at one time: which workers are
//! candidates (`Members`: every worker this worker knows, or the members the cluster agreed
//! on for that time, see `membership`), and which of them each record goes to (`Partition`:
//! a hash modulo the number of candidates, or a batch-at-once choice such as a Python key
//! function's). `Exchange` is the common case: `hash(record) % peers` over every known
//! worker, so workers that join take a share of the hashes as soon as they are known.
//!
//! This module owns the routing of records on an edge; it does not decide membership.

use super::channels::{ExchangeData, LogPuller, LogPusher, Message, MessagePuller, MessagePusher, Pact};
use super::forwarded::ForwardingPuller;
use super::Scope;
use crate::logging::Logger;
use crate::progress::Timestamp;
use crate::rescale::forward_inbox::{ForwardedInbox, Stranded};
use crate::scheduling::Activator;
use crate::worker::WorkerState;
use std::rc::Rc;
use timely_communication::{JoinedPushers, Push};

/// Chooses a worker for each record of a batch.
pub trait Partition<D>: 'static {
    /// Moves every record of `data` to `targets[members[i]]`, choosing `i` in
    /// `0..members.len()` per record (`members` is never empty), or to a member the record
    /// names itself ([`ToWorker`]).
    fn partition(&mut self, data: &mut Vec<D>, members: &[usize], targets: &mut [Vec<D>]);

    /// What becomes of the records a worker that left received on this edge in a dataflow it
    /// never built (`forwarded`): by default they stop the run with an error.
    const STRANDED: Stranded = Stranded::Fail;
}

/// Partitions by `hash(record) % members`.
pub struct ByHash<F>(pub F);

impl<D: 'static, F: FnMut(&D) -> u64 + 'static> Partition<D> for ByHash<F> {
    /// Records that went to a leaver went there by one hash: one stayer takes them all.
    const STRANDED: Stranded = Stranded::Forward;

    #[inline]
    fn partition(&mut self, data: &mut Vec<D>, members: &[usize], targets: &mut [Vec<D>]) {
        if let [only] = members {
            // Every record goes to one worker: hand over the whole buffer.
            move_all(data, &mut targets[*only]);
            return;
        }
        let count = members.len() as u64;
        if count.is_power_of_two() {
            // The same choice as `% count`, without a division per record.
            let mask = count - 1;
            route_by(data, targets, |datum| members[((self.0)(datum) & mask) as usize]);
        } else {
            route_by(data, targets, |datum| members[((self.0)(datum) % count) as usize]);
        }
    }
}

/// Moves every record of `data` to `targets[choose(record)]`. A batch whose records all go
/// to one target moves whole, with no allocation or copy; finding that out stores nothing
/// per record, and a batch for several targets stops it at its first record for another.
#[inline]
fn route_by<D>(data: &mut Vec<D>, targets: &mut [Vec<D>], mut choose: impl FnMut(&D) -> usize) {
    let Some(first) = data.first().map(&mut choose) else {
        return;
    };
    // How many records, from the first, go where the first goes.
    let same = 1 + data[1..].iter().take_while(|&datum| choose(datum) == first).count();
    if same == data.len() {
        move_all(data, &mut targets[first]);
        return;
    }
    for (index, datum) in data.drain(..).enumerate() {
        let target = if index < same { first } else { choose(&datum) };
        targets[target].push(datum);
    }
}

/// Moves every record of `data` to the end of `target`: the buffer itself when `target` is
/// empty.
#[inline]
fn move_all<D>(data: &mut Vec<D>, target: &mut Vec<D>) {
    if target.is_empty() {
        std::mem::swap(target, data);
    } else {
        target.append(data);
    }
}

/// Sends each record to the worker its function names, which must be one of the members
/// (with [`NotGone`]: a worker that has not left). For edges whose sender already chose the
/// worker, such as a router that follows a table of its own.
pub struct ToWorker<F>(pub F);

impl<D: 'static, F: FnMut(&D) -> usize + 'static> Partition<D> for ToWorker<F> {
    #[inline]
    fn partition(&mut self, data: &mut Vec<D>, members: &[usize], targets: &mut [Vec<D>]) {
        to_named(data, members, targets, &mut self.0);
    }
}

/// Moves every record of `data` to `targets[worker(record)]`, a member.
#[inline]
fn to_named<D>(
    data: &mut Vec<D>,
    members: &[usize],
    targets: &mut [Vec<D>],
    worker: impl FnMut(&D) -> usize,
) {
    let mut worker = worker;
    route_by(data, targets, |datum| {
        let target = worker(datum);
        debug_assert!(members.binary_search(&target).is_ok(), "record for worker {target}, not a member");
        target
    });
}

/// Sends each record to the worker its function names, like [`ToWorker`], for records that
/// are copies sent to every worker (commands every worker applies): what a worker that left
/// received of them in a dataflow it never built is retired, not delivered again.
pub struct CopiesToWorker<F>(pub F);

impl<D: 'static, F: FnMut(&D) -> usize + 'static> Partition<D> for CopiesToWorker<F> {
    const STRANDED: Stranded = Stranded::Retire;

    #[inline]
    fn partition(&mut self, data: &mut Vec<D>, members: &[usize], targets: &mut [Vec<D>]) {
        to_named(data, members, targets, &mut self.0);
    }
}

/// The workers that receive records at a time.
pub trait Members<T>: 'static {
    /// Sets `members` to the workers (ascending, at least one, each one `worker` can send to)
    /// that receive records at `time`; `worker` is the sending worker's state.
    fn update(&mut self, time: &T, worker: &WorkerState, members: &mut Vec<usize>);
}

/// Every worker present as this worker knows it when the records are sent: those that joined,
/// without those whose process is leaving or gone.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllWorkers {
    /// The version of the workers present and the number of workers `members` was set for.
    seen: Option<(u64, usize)>,
}

impl<T> Members<T> for AllWorkers {
    #[inline]
    fn update(&mut self, _time: &T, worker: &WorkerState, members: &mut Vec<usize>) {
        let now = Some((worker.rescaling().leaves().version(), worker.peers()));
        if self.seen != now {
            *members = worker.members();
            self.seen = now;
        }
    }
}

/// Every worker that has not left, leaving ones included (what a leaver still needs, such as
/// the announcements of membership changes, reaches it until it is drained and asks for no
/// more), except those [`NotGone::excluding`] names.
#[derive(Clone, Debug, Default)]
pub struct NotGone {
    /// The version of the workers present and the number of workers `members` was set for.
    seen: Option<(u64, usize)>,
    /// Workers that never receive from this edge.
    excluded: Vec<usize>,
}

impl NotGone {
    /// Every worker that has not left but those of `excluded`: for an edge built while they
    /// were leaving, in a dataflow they may never build (nothing sent to a worker that never
    /// builds a dataflow is ever consumed, so its time would never complete).
    pub fn excluding(excluded: Vec<usize>) -> Self {
        NotGone { seen: None, excluded }
    }
}

impl<T> Members<T> for NotGone {
    #[inline]
    fn update(&mut self, _time: &T, worker: &WorkerState, members: &mut Vec<usize>) {
        let now = Some((worker.rescaling().leaves().version(), worker.peers()));
        if self.seen != now {
            *members = worker.rescaling().leaves().receivers(worker.peers());
            members.retain(|w| !self.excluded.contains(w));
            self.seen = now;
        }
    }
}

/// Routes records with a `Partition` over the `Members` at their time.
pub struct ExchangeWith<M, P> {
    members: M,
    partition: P,
}

impl<M, P> ExchangeWith<M, P> {
    /// Routes with `partition` over `members`.
    pub fn new(members: M, partition: P) -> Self {
        ExchangeWith { members, partition }
    }
}

impl<T, D, M, P> Pact<T, D> for ExchangeWith<M, P>
where
    T: Timestamp,
    D: ExchangeData,
    M: Members<T>,
    P: Partition<D>,
{
    fn connect(
        self,
        scope: &Scope<T>,
        identifier: usize,
        activator: Activator,
    ) -> (MessagePusher<T, D>, MessagePuller<T, D>) {
        let worker = scope.worker();
        let ((pushers, mut puller), joined) =
            worker.allocator().allocate_joinable::<Message<T, D>>(identifier);
        if worker.allocator().can_rescale() {
            // What a leaver received here in a dataflow it never built may be handed to this
            // worker (`forwarded`).
            let inbox = ForwardedInbox::new(P::STRANDED, activator.clone());
            if let Some(leaver) = worker.receive_forwarded_on(identifier, &inbox) {
                crate::rescale::stranded::unplaceable(worker, leaver, identifier);
            }
            let violations = worker.allocator().violations();
            puller = Box::new(ForwardingPuller::new(puller, inbox, violations, identifier));
        }
        worker.activate_on_channel(identifier, activator);
        let index = scope.index();
        let logger = scope.logger();
        let pushers: Vec<_> = pushers
            .into_iter()
            .enumerate()
            .map(|(target, p)| LogPusher::new(p, identifier, index, target, logger.clone()))
            .collect();
        let puller = Box::new(LogPuller::new(puller, identifier, index, logger.clone()));
        let pusher = ExchangePusher {
            worker: worker.clone(),
            buffers: (0..pushers.len()).map(|_| Vec::new()).collect(),
            pushers,
            members: Vec::new(),
            membership: self.members,
            partition: self.partition,
            joined,
            logging: (identifier, index, logger),
        };
        (Box::new(pusher), puller)
    }
}

/// Routes each record to the worker it names (`worker(record)`), among the workers that have
/// not left.
pub fn to_worker<D, F: FnMut(&D) -> usize + 'static>(worker: F) -> ExchangeWith<NotGone, ToWorker<F>> {
    ExchangeWith::new(NotGone::default(), ToWorker(worker))
}

/// Routes each copy of a record to the worker it names (`worker(copy)`), among the workers
/// that have not left ([`CopiesToWorker`]).
pub fn copies_to_worker<D, F: FnMut(&D) -> usize + 'static>(
    worker: F,
) -> ExchangeWith<NotGone, CopiesToWorker<F>> {
    ExchangeWith::new(NotGone::default(), CopiesToWorker(worker))
}

/// Routes each record to worker `hash(record) % peers`, `peers` being every worker this worker
/// knows when the record is sent (after a join, some hashes go to the new workers).
pub struct Exchange<D, F: Fn(&D) -> u64> {
    hash: F,
    marker: std::marker::PhantomData<D>,
}

impl<D, F: Fn(&D) -> u64> Exchange<D, F> {
    /// Routes records by `hash`.
    pub fn new(hash: F) -> Self {
        Exchange { hash, marker: std::marker::PhantomData }
    }
}

impl<T: Timestamp, D: ExchangeData, F: Fn(&D) -> u64 + 'static> Pact<T, D> for Exchange<D, F> {
    fn connect(
        self,
        scope: &Scope<T>,
        identifier: usize,
        activator: Activator,
    ) -> (MessagePusher<T, D>, MessagePuller<T, D>) {
        ExchangeWith::new(AllWorkers::default(), ByHash(self.hash)).connect(scope, identifier, activator)
    }
}

/// The sending end of an exchanging edge: a logging pusher per worker, one buffer per worker.
struct ExchangePusher<T, D, M, P> {
    worker: Rc<WorkerState>,
    pushers: Vec<LogPusher<MessagePusher<T, D>>>,
    buffers: Vec<Vec<D>>,
    /// The members at the time of the last message.
    members: Vec<usize>,
    membership: M,
    partition: P,
    joined: JoinedPushers<Message<T, D>>,
    /// Channel, this worker and the logger, for the pushers of joined workers.
    logging: (usize, usize, Option<Logger>),
}

impl<T, D, M, P> ExchangePusher<T, D, M, P> {
    /// Adds the pushers of workers that joined since the last push.
    #[inline]
    fn add_joined(&mut self) {
        if let Some(joined) = self.joined.take() {
            let (channel, source, logger) = &self.logging;
            for (target, pusher) in joined {
                debug_assert_eq!(target, self.pushers.len(), "joined workers arrive in index order");
                self.pushers.push(LogPusher::new(pusher, *channel, *source, target, logger.clone()));
                self.buffers.push(Vec::new());
            }
        }
    }
}

impl<T: Clone, D, M: Members<T>, P: Partition<D>> Push<Message<T, D>> for ExchangePusher<T, D, M, P> {
    fn push(&mut self, element: &mut Option<Message<T, D>>) {
        self.add_joined();
        match element {
            Some(message) => {
                self.membership.update(&message.time, &self.worker, &mut self.members);
                self.partition.partition(&mut message.data, &self.members, &mut self.buffers);
                for (target, buffer) in self.buffers.iter_mut().enumerate() {
                    if !buffer.is_empty() {
                        let data = std::mem::take(buffer);
                        let mut slot = Some(Message::new(message.time.clone(), data, message.from));
                        self.pushers[target].push(&mut slot);
                        if let Some(recycled) = slot {
                            *buffer = recycled.data;
                            buffer.clear();
                        }
                    }
                }
            }
            None => self.pushers.iter_mut().for_each(|p| p.done()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_batches_are_split_in_order() {
        for members in [vec![0, 1], vec![0, 1, 2], vec![0, 2]] {
            let data: Vec<u64> = (0..1000).map(|i| (i * 7919) % 1001).collect();
            let mut targets = vec![Vec::new(); 3];
            let mut batch = data.clone();
            ByHash(|x: &u64| *x).partition(&mut batch, &members, &mut targets);
            assert!(batch.is_empty(), "every record is routed");
            for (target, received) in targets.iter().enumerate() {
                let expected: Vec<u64> = data
                    .iter()
                    .copied()
                    .filter(|x| members[(*x % members.len() as u64) as usize] == target)
                    .collect();
                assert_eq!(received, &expected, "worker {target} of members {members:?}");
            }
        }
    }

    #[test]
    fn a_batch_for_one_target_moves_whole() {
        let mut targets = vec![Vec::new(), Vec::new()];
        let mut mixed = vec![1, 1, 3, 2, 3];
        ByHash(|x: &u64| *x).partition(&mut mixed, &[0, 1], &mut targets);
        assert_eq!(targets, [vec![2], vec![1, 1, 3, 3]], "a long first run, then others");
        targets[1].clear();
        let odd: Vec<u64> = (0..100).map(|i| 2 * i + 1).collect();
        let mut batch = odd.clone();
        let buffer_of_batch = batch.as_ptr();
        ByHash(|x: &u64| *x).partition(&mut batch, &[0, 1], &mut targets);
        assert_eq!((targets[1].as_ptr(), &targets[1]), (buffer_of_batch, &odd), "the same buffer");
        let mut even = vec![4, 6];
        ByHash(|x: &u64| *x).partition(&mut even, &[0, 1], &mut targets);
        assert_eq!(targets[0], [2, 4, 6], "a target holding records gets the others appended");
    }
}
