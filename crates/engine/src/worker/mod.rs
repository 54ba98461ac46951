//! The worker: owns a thread's dataflows and runs them.
//!
//! A `Worker` holds its [`WorkerState`] (the allocator, the dataflows built on it, and the
//! activations that say which dataflows must run; `state`) and runs it: `step` receives
//! arrived data and progress (turning channel events into operator activations), runs the
//! rescaling protocol's part of the step (`crate::rescale`), schedules every active dataflow
//! once, and flushes. An idle worker parks in `step_or_park` until data or progress arrives.
//! Dataflows that complete are dropped.
//!
//! This module does not know about particular operators; the state it runs is in `state`,
//! which knows nothing of this module nor of the rescaling protocol.

mod state;

pub use crate::logging::Activity;
pub use state::{Dataflow, WorkerState};

use crate::dataflow::Scope;
use crate::logging::{self, Event, EventClasses, Flush, Logger, Timestamped, Wake};
use crate::progress::Timestamp;
use crate::rescale::{self, bootstrap};
use crate::returned_workers::ReturnedWorkers;
use crate::scheduling::drain_sorted;
use state::Arrivals;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
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
    pub fn new(allocator: Allocator) -> Self {
        let state = WorkerState::new(allocator);
        Worker { state: Rc::new(state), scheduled: Vec::new(), stop: None, worked: false }
    }

    /// On a worker of a process that joined a running cluster (`--join`), completes the
    /// bootstrap of its progress state from the server and returns true; returns false on
    /// every other worker. Call it after building every dataflow, as every worker builds them;
    /// a joining worker then only steps (its operators run once the state is complete).
    pub fn bootstrap(&mut self) -> bool {
        bootstrap::await_welcome(&self.state);
        let Some(server) = bootstrap::pending(&self.state) else {
            return self.state.rescaling.is_joining();
        };
        let _activity = Activity::begin(self.state.logger(), rescale::phases::RANGES);
        while !bootstrap::advance(&self.state, server) {
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

    /// Builds a dataflow like [`Worker::dataflow_named`], or says why this worker cannot:
    /// it is leaving and told the others that it builds no more
    /// ([`DataflowRefused`](rescale::leave::DataflowRefused); nothing is built and `func`
    /// is not called).
    ///
    /// # Errors
    ///
    /// [`DataflowRefused`](rescale::leave::DataflowRefused) on such a leaver.
    pub fn try_dataflow<T: Timestamp, R>(
        &mut self,
        name: &str,
        func: impl FnOnce(&Scope<T>) -> R,
    ) -> Result<R, rescale::leave::DataflowRefused> {
        let scope = self.try_new_dataflow(name)?;
        let result = func(&scope);
        scope.finish();
        Ok(result)
    }

    /// Starts describing a dataflow; `Scope::finish` installs it. Prefer `dataflow`; this
    /// form serves callers that cannot pass a closure (the Python layer).
    ///
    /// # Panics
    ///
    /// On a leaver that builds no more dataflows ([`Worker::try_new_dataflow`] says so
    /// instead).
    pub fn new_dataflow<T: Timestamp>(&mut self, name: &str) -> Scope<T> {
        self.try_new_dataflow(name).unwrap_or_else(|refused| panic!("{refused}"))
    }

    /// Starts describing a dataflow, as [`Worker::new_dataflow`], or says why this worker
    /// cannot build one any more.
    ///
    /// # Errors
    ///
    /// [`DataflowRefused`](rescale::leave::DataflowRefused) on a leaver that told the
    /// others how many dataflows it built.
    pub fn try_new_dataflow<T: Timestamp>(
        &mut self,
        name: &str,
    ) -> Result<Scope<T>, rescale::leave::DataflowRefused> {
        if self.state.rescaling.leaves().has_left() {
            return Err(rescale::leave::DataflowRefused);
        }
        let index = self.state.new_dataflow_slot();
        // A joining worker builds with what its server's welcome says.
        bootstrap::await_welcome(&self.state);
        let activator = self.state.start_dataflow(index);
        let state = self.state.clone();
        let install = Box::new(move |dataflow: Box<dyn Dataflow>| state.install_dataflow(index, dataflow));
        Ok(Scope::new_root(self.state.clone(), name, index, activator, install))
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
        if leaving && !gone() {
            rescale::held_report::check(&self.state);
            if idle() {
                rescale::leave::announce_left_if_awaited(&self.state);
            }
        }
        if leaving && gone() {
            rescale::held_report::check_returned(&self.state);
        }
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

impl Drop for Worker {
    fn drop(&mut self) {
        // Dataflows hold handles into the worker state; drop them first.
        self.drop_dataflows();
    }
}
