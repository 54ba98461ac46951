//! The worker: owns a thread's dataflows and runs them.
//!
//! A `Worker` holds the allocator, the dataflows built on it, and the activations that say
//! which dataflows must run. `step` receives arrived data and progress (turning channel
//! events into operator activations), schedules every active dataflow once, and flushes.
//! An idle worker parks in `step_or_park` until data or progress arrives. Dataflows that
//! complete are dropped.
//!
//! `WorkerState` is the part shared with scopes while dataflows are built (allocator,
//! identifiers, channel activations, logger). This module does not know about particular
//! operators.

use crate::dataflow::Scope;
use crate::logging::{self, Event, EventClasses, Flush, Logger, Timestamped, Wake};
use crate::progress::{ReceivedMagnitude, Refines, Subgraph, Timestamp};
use crate::rescale::{self, client, Rescaling};
use crate::returned_workers::ReturnedWorkers;
use crate::scheduling::{drain_sorted, Activator, ActiveSet, ChannelActivators};
use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use timely_communication::allocator::inboxes::InboxStats;
use timely_communication::networking::BudgetStats;
use timely_communication::Allocator;

/// How long a joining worker parks at most between checks of its bootstrap.
const BOOTSTRAP_WAIT: Duration = Duration::from_millis(20);

/// How long a parked worker sleeps at most before checking its `StopSignal`.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// How long `step_while` keeps stepping an idle worker before parking it: waking a parked
/// thread costs tens of microseconds, more than most progress round trips take.
const SPIN_BEFORE_PARK: Duration = Duration::from_micros(200);

/// Shared by the workers of one run: raised when one of them fails, so that the others stop
/// instead of waiting for progress that will never come.
#[derive(Clone, Default, Debug)]
pub struct StopSignal(Arc<AtomicBool>);

impl StopSignal {
    /// A signal not yet raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every worker holding the signal to stop.
    pub fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// True once raised.
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The payload with which a worker unwinds when another worker's failure stopped the run.
#[derive(Debug)]
pub struct StoppedByPeer;

pub use crate::cluster_failure::ClusterFailure;

/// A dataflow as the worker sees it: something to schedule until it completes.
pub trait Dataflow {
    /// Runs the dataflow's active operators; returns true while it is incomplete.
    fn schedule(&mut self) -> bool;
}

/// A dataflow's root scope (its outer timestamp is its own: it has no inputs or outputs) as
/// the worker runs it. Each run is one step of the dataflow; when tracing, it is recorded as a
/// run of the root scope, an operator `id` at address `[dataflow index]` (`docs/trace-format.md`),
/// useful when a child's run in it was.
pub(crate) struct RootScope<T: Timestamp> {
    pub(crate) id: usize,
    pub(crate) scope: Subgraph<T, T>,
    pub(crate) logger: Option<Logger>,
}

impl<T: Timestamp + Refines<T>> Dataflow for RootScope<T> {
    fn schedule(&mut self) -> bool {
        let Some(logger) = &self.logger else { return crate::progress::Operate::schedule(&mut self.scope) };
        logger.log(Event::Schedule { id: self.id, start: true, useful: false });
        let incomplete = crate::progress::Operate::schedule(&mut self.scope);
        logger.log(Event::Schedule { id: self.id, start: false, useful: self.scope.worked() });
        incomplete
    }
}

/// State of a worker that scopes and operators share while dataflows are built and run.
pub struct WorkerState {
    allocator: RefCell<Allocator>,
    index: usize,
    identifiers: Cell<usize>,
    channel_activators: RefCell<ChannelActivators>,
    /// Channels that received data before anything was arranged to activate on them: the
    /// first activator arranged for one is activated at once.
    unclaimed: RefCell<HashSet<usize>>,
    /// The channels that carry progress batches (the others carry records).
    progress_channels: RefCell<HashSet<usize>>,
    active_dataflows: ActiveSet,
    dataflows: RefCell<Vec<Option<Box<dyn Dataflow>>>>,
    logger: RefCell<Option<Logger>>,
    rescaling: Rescaling,
    /// What the deltas of the progress batches received so far add up to, shared by the
    /// progcasters of every scope.
    received_magnitude: ReceivedMagnitude,
}

impl WorkerState {
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

    /// Per dataflow slot, whether it holds a dataflow that has not completed.
    pub(crate) fn dataflow_slots(&self) -> Vec<bool> {
        self.dataflows.borrow().iter().map(Option::is_some).collect()
    }

    fn new_dataflow_slot(&self) -> (usize, Activator) {
        let mut dataflows = self.dataflows.borrow_mut();
        dataflows.push(None);
        let index = dataflows.len() - 1;
        drop(dataflows);
        // A joining worker builds with what its server's welcome says.
        client::await_welcome(self);
        assert!(
            !self.rescaling.leaves().has_left(),
            "this worker left the cluster: it cannot build a dataflow any more"
        );
        // The workers that left hold no initial capability of a dataflow they did not build.
        self.rescaling.dataflow_started(index, self.rescaling.leaves().builders(index, self.peers()));
        (index, Activator::new(vec![(self.active_dataflows.clone(), index)]))
    }

    fn install_dataflow(&self, index: usize, dataflow: Box<dyn Dataflow>) {
        self.dataflows.borrow_mut()[index] = Some(dataflow);
        self.active_dataflows.borrow_mut().push(index);
    }
}

/// A worker: one thread's share of every dataflow.
pub struct Worker {
    state: Rc<WorkerState>,
    scheduled: Vec<usize>,
    stop: Option<StopSignal>,
    /// Whether the last step ran any dataflow.
    worked: bool,
}

impl Worker {
    /// A worker communicating through `allocator`.
    ///
    pub fn new(mut allocator: Allocator) -> Self {
        let index = allocator.index();
        let rescaling = Rescaling::new(&mut allocator);
        let state = WorkerState {
            allocator: RefCell::new(allocator),
            index,
            identifiers: Cell::new(0),
            channel_activators: RefCell::default(),
            unclaimed: RefCell::default(),
            progress_channels: RefCell::new(HashSet::new()),
            active_dataflows: Default::default(),
            dataflows: RefCell::new(Vec::new()),
            logger: RefCell::new(None),
            rescaling,
            received_magnitude: ReceivedMagnitude::new(index),
        };
        Worker { state: Rc::new(state), scheduled: Vec::new(), stop: None, worked: false }
    }

    /// On a worker of a process that joined a running cluster (`--join`), completes the
    /// bootstrap of its progress state from the server and returns true; returns false on
    /// every other worker. Call it after building every dataflow, as every worker builds them;
    /// a joining worker then only steps (its operators run once the state is complete).
    pub fn bootstrap(&mut self) -> bool {
        client::await_welcome(&self.state);
        let Some(server) = client::pending(&self.state) else {
            return self.state.rescaling.is_joining();
        };
        let _activity = Activity::begin(self.state.logger(), rescale::phases::RANGES);
        while !client::advance(&self.state, server) {
            self.step_or_park(Some(BOOTSTRAP_WAIT));
        }
        self.state.rescaling.bootstrapped();
        self.state.allocator.borrow_mut().release();
        true
    }

    /// This worker's index among all workers.
    pub fn index(&self) -> usize {
        self.state.index
    }

    /// The number of workers.
    pub fn peers(&self) -> usize {
        self.state.peers()
    }

    /// Installs a logger: dataflows built afterwards report trace events of `classes` to
    /// `action(worker, events, why)` (see [`logging::Action`]).
    pub fn install_logger<F>(&mut self, classes: EventClasses, action: F)
    where
        F: FnMut(usize, &mut Vec<Timestamped>, Flush) + 'static,
    {
        *self.state.logger.borrow_mut() = Some(Logger::new(self.state.index, classes, action));
    }

    /// Records a user activity in the trace, from now until the returned guard is dropped:
    /// `let _loading = worker.activity("load graph");`. Activities nest.
    pub fn activity(&self, name: &str) -> Activity {
        Activity::begin(self.state.logger(), name)
    }

    /// Builds a dataflow with top-level timestamp `T`, described by `func`.
    pub fn dataflow<T: Timestamp, R>(&mut self, func: impl FnOnce(&Scope<T>) -> R) -> R {
        self.dataflow_named("Dataflow", func)
    }

    /// Builds a dataflow with a name (shown in traces).
    pub fn dataflow_named<T: Timestamp, R>(&mut self, name: &str, func: impl FnOnce(&Scope<T>) -> R) -> R {
        let scope = self.new_dataflow(name);
        let result = func(&scope);
        scope.finish();
        result
    }

    /// Starts describing a dataflow; `Scope::finish` installs it. Prefer `dataflow`; this
    /// form serves callers that cannot pass a closure (the Python layer).
    pub fn new_dataflow<T: Timestamp>(&mut self, name: &str) -> Scope<T> {
        let (index, activator) = self.state.new_dataflow_slot();
        let state = self.state.clone();
        let install = Box::new(move |dataflow: Box<dyn Dataflow>| state.install_dataflow(index, dataflow));
        Scope::new_root(self.state.clone(), name, index, activator, install)
    }

    /// Receives arrived data and progress, runs every active dataflow once and flushes.
    /// Returns true while some dataflow is incomplete.
    pub fn step(&mut self) -> bool {
        self.step_or_park(Some(Duration::ZERO))
    }

    /// Steps while `condition` holds. A worker that stays idle for a moment parks until
    /// data or progress arrives, so `condition` must depend on the dataflows' progress.
    ///
    pub fn step_while(&mut self, mut condition: impl FnMut() -> bool) {
        let mut idle_since: Option<std::time::Instant> = None;
        while condition() {
            let idle = idle_since.map_or(Duration::ZERO, |since| since.elapsed());
            self.step_or_park(if idle > SPIN_BEFORE_PARK { None } else { Some(Duration::ZERO) });
            if self.worked {
                idle_since = None;
            } else if idle_since.is_none() {
                idle_since = Some(std::time::Instant::now());
            }
        }
    }

    /// Makes this worker stop (unwinding with `StoppedByPeer` from its next step) once
    /// `signal` is raised; a parked worker notices within 100 ms.
    pub fn set_stop_signal(&mut self, signal: StopSignal) {
        self.stop = Some(signal);
    }

    /// Like `step`, but if nothing is active, first waits up to `timeout` (None: until
    /// something arrives) for data or progress from other workers.
    pub fn step_or_park(&mut self, timeout: Option<Duration>) -> bool {
        let timeout = match &self.stop {
            Some(signal) if signal.is_raised() => std::panic::resume_unwind(Box::new(StoppedByPeer)),
            Some(_) => Some(timeout.map_or(STOP_CHECK, |t| t.min(STOP_CHECK))),
            None => timeout,
        };
        self.state.receive_events(false);
        // Not parked while a bootstrap or leave message, a join or a departure waits to be
        // handled below: it may be all that was coming (a leaver's last message).
        let idle = self.state.active_dataflows.borrow().is_empty() && !rescale::has_arrivals(&self.state);
        if idle && timeout != Some(Duration::ZERO) && self.has_dataflows() {
            let logger = self.state.logger();
            logging::log(&logger, || Event::Park { timeout });
            if let Some(logger) = &logger {
                logger.flush();
            }
            self.state.allocator.borrow().await_events(timeout);
            let arrived = self.state.receive_events(logger.is_some());
            logging::log(&logger, || Event::Unpark { wake: self.wake(arrived) });
        }
        // Joins and bootstrap messages, after the unpark so that their trace activities are
        // not inside a park.
        rescale::handle(&self.state);
        drain_sorted(&self.state.active_dataflows, &mut self.scheduled);
        self.worked = !self.scheduled.is_empty();
        for index in self.scheduled.drain(..) {
            // (A leaver's dataflows are dropped while activations for them may still come.)
            let dataflow = self.state.dataflows.borrow_mut().get_mut(index).and_then(Option::take);
            if let Some(mut dataflow) = dataflow {
                if dataflow.schedule() {
                    self.state.dataflows.borrow_mut()[index] = Some(dataflow);
                }
            }
        }
        // A leaver whose program returned builds nothing more: it says so at once.
        if self.state.rescaling.leaves().may_announce_built() {
            rescale::leave::announce_left(&self.state, self.state.dataflows.borrow().len());
        }
        self.state.allocator.borrow_mut().release();
        if let Some(logger) = self.state.logger() {
            logger.flush();
        }
        // (Only a leaving worker looks further: steps of the others pay one flag.) A leaver
        // goes only once this step left nothing to do: an operator activated for the
        // next step may hold records it has not consumed yet (another operator of this worker
        // gave them through a pipeline, such as a loop's feedback edge, or sent them to itself
        // through an exchange), which hold no capability but are counted everywhere.
        let leaving = self.state.rescaling.leaves().is_leaving();
        let idle = || {
            self.state.active_dataflows.borrow().is_empty()
                && self.state.allocator.borrow().events().borrow().is_empty()
        };
        let gone = || self.state.rescaling.leaves().is_drained();
        if leaving && !gone() && idle() && rescale::leave::drained(&self.state) {
            // Everything it sent is flushed and nothing can reach it any more: it goes.
            let built = self.state.dataflows.borrow().len();
            rescale::leave::announce_left(&self.state, built);
            rescale::stranded::report(&self.state);
            self.state.allocator.borrow_mut().release();
            self.drop_dataflows();
        }
        if !self.worked && timeout == Some(Duration::ZERO) {
            // A program polling an idle worker gives its core to the threads it waits for
            // (other workers, a cluster's network threads), which could otherwise not run
            // while every core is taken by a polling worker.
            std::thread::yield_now();
        }
        self.has_dataflows()
    }

    /// Makes this worker's process leave the cluster (`docs/rescaling.md`, "Leaving a running
    /// cluster"); any worker of the process may call it, and the process's other workers leave
    /// as soon as they hear of it (calling it on each of them is harmless). The others stop
    /// routing records to it. Its input handles are released at once (on the process's other
    /// workers, when they handle the notice at the start of a step): what they accepted is
    /// delivered, and they refuse records from then on ([`InputHandle`]'s docs). It keeps
    /// running until nothing more can reach it and its operators hold no capability, then its
    /// dataflows are dropped, its probes show no more times and its steps return false: a
    /// program that goes on feeding (with `try_send`) and stepping still ends.
    ///
    /// [`InputHandle`]: crate::dataflow::InputHandle
    ///
    /// # Errors
    ///
    /// [`LeaveRefused`](rescale::leave::LeaveRefused), with nothing sent, when no other
    /// process is present (or all the others are leaving).
    pub fn leave(&mut self) -> Result<(), rescale::leave::LeaveRefused> {
        rescale::leave::leave(&self.state)
    }

    /// Tells the worker that its program returned and builds no more dataflows (the runtime
    /// calls it once the program returned, before it steps the worker to the end). A leaving
    /// worker then tells the others at once how many dataflows it built, so that they stop
    /// counting it in those it never built ("Dataflows built during a leave" in
    /// `docs/rescaling.md`); from then on it cannot build a dataflow.
    pub fn program_returned(&mut self) {
        self.state.rescaling.leaves().program_returned();
    }

    /// After [`Worker::program_returned`], once this worker's dataflows completed: notes it
    /// in `returned` (this process's workers) and waits until every worker there is done,
    /// handling membership messages meanwhile and stepping whenever they give it work (a
    /// leave of this process asked for later needs every worker of it). See
    /// [`ReturnedWorkers`].
    pub fn linger(&mut self, returned: &ReturnedWorkers) {
        returned.arrive();
        while !returned.all_done() {
            self.wait_for_events(STOP_CHECK);
            while self.step_or_park(None) {}
        }
    }

    /// Parks this worker's thread until something arrives for it, it is woken, or `timeout`
    /// passes.
    pub fn wait_for_events(&self, timeout: Duration) {
        self.state.allocator.borrow().await_events(Some(timeout));
    }

    /// True once this worker's process is leaving: from then on its input handles refuse
    /// records.
    pub fn is_leaving(&self) -> bool {
        self.state.rescaling.leaves().is_leaving()
    }

    /// Records that this worker's run failed: in a cluster, this process's connections then
    /// close without goodbye, so that the other processes stop instead of waiting for it.
    /// (A worker that unwinds from a panic is recorded as failed without this call.)
    pub fn fail(&self) {
        self.state.allocator.borrow().fail();
    }

    /// True while some dataflow is incomplete, a worker that joined still needs this one, or
    /// this worker is leaving and is not drained yet (it still tells the others what it built
    /// and seals the other leavers, even when its dataflows completed first).
    pub fn has_dataflows(&self) -> bool {
        let leaves = self.state.rescaling.leaves();
        self.state.dataflows.borrow().iter().any(|d| d.is_some())
            || self.state.rescaling.is_busy()
            || (leaves.is_leaving() && !leaves.is_drained())
    }

    /// Drops every dataflow, complete or not (when a run is abandoned).
    pub fn drop_dataflows(&mut self) {
        let dataflows = std::mem::take(&mut *self.state.dataflows.borrow_mut());
        drop(dataflows);
    }

    /// The shared worker state (for building custom scopes and operators).
    pub fn state(&self) -> &Rc<WorkerState> {
        &self.state
    }

    /// What woke a parked worker, given what arrived while it slept.
    fn wake(&self, arrived: Arrivals) -> Wake {
        if arrived.records {
            Wake::Data
        } else if arrived.progress {
            Wake::Progress
        } else if !self.state.active_dataflows.borrow().is_empty() {
            Wake::Activation
        } else {
            Wake::Timeout
        }
    }
}

/// What arrived on a worker's channels.
#[derive(Clone, Copy, Default)]
pub(crate) struct Arrivals {
    records: bool,
    progress: bool,
}

/// A user activity in progress; it ends (and is recorded as ended) when dropped.
#[must_use = "the activity ends when this guard is dropped"]
pub struct Activity {
    logger: Option<Logger>,
    name: String,
}

impl Activity {
    /// Records the start of activity `name` in `logger`'s trace (nothing without a logger);
    /// its stop is recorded when the returned guard is dropped.
    pub fn begin(logger: Option<Logger>, name: &str) -> Activity {
        logging::log(&logger, || Event::Activity { name: name.to_owned(), start: true });
        Activity { logger, name: name.to_owned() }
    }
}

impl Drop for Activity {
    fn drop(&mut self) {
        logging::log(&self.logger, || Event::Activity { name: self.name.clone(), start: false });
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Dataflows hold handles into the worker state; drop them first.
        self.drop_dataflows();
    }
}
