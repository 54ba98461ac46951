//! `WorkerState`: the part of a worker that scopes, operators and the rescaling protocol
//! share while dataflows are built and run.
//!
//! This module owns the worker's allocator, its identifiers, which channel activates what, the
//! dataflows it holds (as [`Dataflow`]s to schedule) and which of them are active, its logger,
//! and its [`Rescaling`] state. It takes in what arrived (turning channel events into
//! activations) but does not run dataflows or the rescaling protocol: the `Worker` does
//! (`crate::worker`), and the protocol (`crate::rescale`) works on this state.

use crate::cluster_failure::ClusterFailure;
use crate::logging::Logger;
use crate::progress::ReceivedMagnitude;
use crate::rescale::forward_inbox::{ForwardedInbox, ForwardedMessage, Stranded};
use crate::rescale::Rescaling;
use crate::scheduling::{Activator, ActiveSet, ChannelActivators};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::{Rc, Weak};
use timely_communication::allocator::inboxes::InboxStats;
use timely_communication::networking::BudgetStats;
use timely_communication::Allocator;

/// A dataflow as the worker sees it: something to schedule until it completes.
pub trait Dataflow {
    /// Runs the dataflow's active operators; returns true while it is incomplete.
    fn schedule(&mut self) -> bool;
}

/// State of a worker that scopes and operators share while dataflows are built and run.
pub struct WorkerState {
    pub(super) allocator: RefCell<Allocator>,
    pub(super) index: usize,
    identifiers: Cell<usize>,
    channel_activators: RefCell<ChannelActivators>,
    /// Channels that received data before anything was arranged to activate on them: the
    /// first activator arranged for one is activated at once.
    unclaimed: RefCell<HashSet<usize>>,
    /// The channels that carry progress batches (the others carry records).
    progress_channels: RefCell<HashSet<usize>>,
    /// Per exchanging channel, where messages a leaver forwards to this worker go
    /// (`dataflow::forwarded`).
    forwarded: RefCell<HashMap<usize, Weak<ForwardedInbox>>>,
    /// Messages forwarded for channels this worker has not built yet, oldest first.
    pending_forwarded: RefCell<HashMap<usize, Vec<ForwardedMessage>>>,
    pub(super) active_dataflows: ActiveSet,
    pub(super) dataflows: RefCell<Vec<Option<Box<dyn Dataflow>>>>,
    pub(super) logger: RefCell<Option<Logger>>,
    pub(super) rescaling: Rescaling,
    /// What the deltas of the progress batches received so far add up to, shared by the
    /// progcasters of every scope.
    received_magnitude: ReceivedMagnitude,
}

impl WorkerState {
    /// The state of a worker communicating through `allocator`, without dataflows.
    pub(super) fn new(mut allocator: Allocator) -> Self {
        let index = allocator.index();
        let rescaling = Rescaling::new(&mut allocator);
        WorkerState {
            allocator: RefCell::new(allocator),
            index,
            identifiers: Cell::new(0),
            channel_activators: RefCell::default(),
            unclaimed: RefCell::default(),
            progress_channels: RefCell::new(HashSet::new()),
            forwarded: RefCell::default(),
            pending_forwarded: RefCell::default(),
            active_dataflows: Default::default(),
            dataflows: RefCell::new(Vec::new()),
            logger: RefCell::new(None),
            rescaling,
            received_magnitude: ReceivedMagnitude::new(index),
        }
    }

    /// This worker's index among all workers.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The number of worker indices used so far (it grows when workers join; indices of
    /// workers that left stay used): workers are `0..peers`, the present ones [`members`].
    ///
    /// [`members`]: WorkerState::members
    pub fn peers(&self) -> usize {
        self.allocator.borrow().peers()
    }

    /// The workers present, ascending: every worker that joined and whose process is neither
    /// leaving nor gone.
    pub fn members(&self) -> Vec<usize> {
        self.rescaling.leaves().members(self.peers())
    }

    /// The workers of process `process`: processes run the same number of workers, numbered
    /// in process order, and indices stay with their process when others leave.
    pub fn workers_of(&self, process: usize) -> std::ops::Range<usize> {
        let threads = self.allocator.borrow().threads();
        process * threads..(process + 1) * threads
    }

    /// In a cluster, what this process's received messages hold against its receive budget
    /// and what spilled, with what this worker keeps for channels it has not allocated.
    pub fn network_stats(&self) -> Option<(BudgetStats, InboxStats)> {
        let allocator = self.allocator.borrow();
        Some((allocator.budget_stats()?, allocator.inbox_stats()?))
    }

    /// A fresh identifier, unique on this worker and the same on every worker that builds
    /// the same dataflows in the same order (used for channels and operators).
    pub fn new_identifier(&self) -> usize {
        let id = self.identifiers.get();
        self.identifiers.set(id + 1);
        id
    }

    /// The channels that received messages nothing of this worker took (no activator was
    /// arranged for them): on a leaver, channels of dataflows it never built.
    pub(crate) fn unclaimed_channels(&self) -> Vec<usize> {
        let mut channels: Vec<usize> = self.unclaimed.borrow().iter().copied().collect();
        channels.sort_unstable();
        channels
    }

    /// The dataflow whose records travel on channel `channel`, if this worker built it and it
    /// has not completed (`None` for progress channels and for channels it does not know).
    pub(crate) fn live_dataflow_of_data_channel(&self, channel: usize) -> Option<usize> {
        if self.progress_channels.borrow().contains(&channel) {
            return None;
        }
        let dataflow = self.channel_activators.borrow().get(&channel)?.dataflow()?;
        let live = self.dataflows.borrow().get(dataflow).is_some_and(Option::is_some);
        live.then_some(dataflow)
    }

    /// Messages a leaver forwards for exchanging channel `channel` go to `inbox`, with those
    /// that arrived before it was built. If some did and the channel cannot take them
    /// ([`Stranded::Fail`]), returns the leaver that forwarded them (the run must stop).
    pub(crate) fn receive_forwarded_on(&self, channel: usize, inbox: &Rc<ForwardedInbox>) -> Option<usize> {
        let pending = self.pending_forwarded.borrow_mut().remove(&channel);
        {
            let mut forwarded = self.forwarded.borrow_mut();
            forwarded.retain(|_, inbox| inbox.strong_count() > 0);
            forwarded.insert(channel, Rc::downgrade(inbox));
        }
        let messages = pending?;
        if inbox.kind() == Stranded::Fail {
            return messages.first().map(|&(leaver, _, _)| leaver);
        }
        messages.into_iter().for_each(|message| inbox.push(message));
        None
    }

    /// What becomes of messages a leaver received on channel `channel` in a dataflow it never
    /// built, if this worker built the channel and it is live (`None` otherwise).
    pub(crate) fn stranded_kind(&self, channel: usize) -> Option<Stranded> {
        self.forwarded.borrow().get(&channel)?.upgrade().map(|inbox| inbox.kind())
    }

    /// Takes in `message`, forwarded by a leaver for channel `channel`: for the channel's
    /// operator, or kept until the channel is built. Dropped when the channel is one of this
    /// worker's that takes none: progress batches count nothing, and a data channel that
    /// cannot take them stops the run by the leaver's list of channels.
    pub(crate) fn take_forwarded(&self, channel: usize, message: ForwardedMessage) {
        if let Some(inbox) = self.forwarded.borrow().get(&channel).and_then(Weak::upgrade) {
            if inbox.kind() != Stranded::Fail {
                inbox.push(message);
            }
            return;
        }
        let known = self.progress_channels.borrow().contains(&channel)
            || self.channel_activators.borrow().get(&channel).is_some();
        if !known {
            self.pending_forwarded.borrow_mut().entry(channel).or_default().push(message);
        }
    }

    /// Takes out the messages forwarded to this worker for channels it never built, per channel.
    pub(crate) fn take_pending_forwarded(&self) -> Vec<(usize, Vec<ForwardedMessage>)> {
        let mut pending: Vec<_> = self.pending_forwarded.borrow_mut().drain().collect();
        pending.sort_unstable_by_key(|(channel, _)| *channel);
        pending
    }

    /// Mutable access to the allocator.
    pub fn allocator(&self) -> std::cell::RefMut<'_, Allocator> {
        self.allocator.borrow_mut()
    }

    /// Arranges that data arriving on channel `channel` activates `activator`.
    pub fn activate_on_channel(&self, channel: usize, activator: Activator) {
        if self.unclaimed.borrow_mut().remove(&channel) {
            activator.activate();
        }
        self.channel_activators.borrow_mut().insert(channel, activator);
    }

    /// Arranges that progress batches arriving on channel `channel` activate `activator`.
    pub fn activate_on_progress(&self, channel: usize, activator: Activator) {
        self.progress_channels.borrow_mut().insert(channel);
        // Progress batches a leaver forwarded: they count nothing.
        self.pending_forwarded.borrow_mut().remove(&channel);
        self.activate_on_channel(channel, activator);
    }

    /// What the deltas of the progress batches this worker received add up to, across its
    /// scopes (each scope's progcaster charges what arrives).
    pub fn received_magnitude(&self) -> ReceivedMagnitude {
        self.received_magnitude.clone()
    }

    /// The installed logger, if any.
    pub fn logger(&self) -> Option<Logger> {
        self.logger.borrow().clone()
    }

    /// Takes in what arrived; unwinds with [`ClusterFailure`] if the cluster failed, since
    /// what a lost process would have sent can never arrive. An arrival on a channel that
    /// nothing activates on yet (a joining worker waits for its welcome before it builds
    /// anything) is kept for the activator arranged later. With `classify`, says whether
    /// records and whether progress arrived.
    pub(crate) fn receive_events(&self, classify: bool) -> Arrivals {
        let mut allocator = self.allocator.borrow_mut();
        if let Some(failure) = allocator.failure() {
            drop(allocator);
            std::panic::resume_unwind(Box::new(ClusterFailure(failure)));
        }
        allocator.receive();
        let activators = self.channel_activators.borrow();
        let mut arrivals = Arrivals::default();
        for channel in allocator.events().borrow_mut().drain(..) {
            if classify {
                match self.progress_channels.borrow().contains(&channel) {
                    true => arrivals.progress = true,
                    false => arrivals.records = true,
                }
            }
            match activators.get(&channel) {
                Some(activator) => activator.activate(),
                None if self.rescaling.notice(channel) => {}
                None => {
                    self.unclaimed.borrow_mut().insert(channel);
                }
            }
        }
        arrivals
    }

    /// The worker's part in joins of new processes.
    pub fn rescaling(&self) -> &Rescaling {
        &self.rescaling
    }

    /// The number of dataflows this worker has built or started to build.
    pub(crate) fn dataflows_built(&self) -> usize {
        self.dataflows.borrow().len()
    }

    /// Per dataflow slot, whether it holds a dataflow that has not completed.
    pub(crate) fn dataflow_slots(&self) -> Vec<bool> {
        self.dataflows.borrow().iter().map(Option::is_some).collect()
    }

    /// Reserves the slot of a dataflow about to be built; returns its index. (On a joining
    /// worker, the worker then waits for its welcome before [`WorkerState::start_dataflow`].)
    pub(super) fn new_dataflow_slot(&self) -> usize {
        let mut dataflows = self.dataflows.borrow_mut();
        dataflows.push(None);
        dataflows.len() - 1
    }

    /// Starts building dataflow `index`, whose slot is reserved; returns the activator that
    /// schedules it.
    pub(super) fn start_dataflow(&self, index: usize) -> Activator {
        // (`Worker::try_new_dataflow` refuses a leaver that said it builds no more.)
        debug_assert!(!self.rescaling.leaves().has_left(), "a dataflow built after this worker's Left");
        // The workers that left hold no initial capability of a dataflow they did not build.
        self.rescaling.dataflow_started(index, self.rescaling.leaves().builders(index, self.peers()));
        Activator::new(vec![(self.active_dataflows.clone(), index)])
    }

    pub(super) fn install_dataflow(&self, index: usize, dataflow: Box<dyn Dataflow>) {
        self.dataflows.borrow_mut()[index] = Some(dataflow);
        self.active_dataflows.borrow_mut().push(index);
    }
}

/// What arrived on a worker's channels.
#[derive(Clone, Copy, Default)]
pub(crate) struct Arrivals {
    pub(super) records: bool,
    pub(super) progress: bool,
}
