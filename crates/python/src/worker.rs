//! `Worker` and `execute`: running Python programs on engine workers.
//!
//! `execute` starts the workers (threads of this process), calls the user's `main(worker)`
//! on each with the interpreter attached, and after `main` returns keeps stepping the
//! worker until its dataflows complete. Stepping runs without the interpreter; operators
//! re-attach once per batch. On a worker whose process is leaving, a `LeavingError` (its
//! input refused a record) that ends `main` ends it as a return would: the worker still
//! leaves cleanly. The calling thread waits without the interpreter, checking
//! for Ctrl-C; an interrupt or a failed worker stops every worker, and the first real
//! exception (not a cancellation) is raised to the caller of `execute`.

use crate::errors::{catch_panic, ClusterError, LeavingError, TimelyError, WorkerCancelled, WorkerContext};
use crate::leave_signal::LeaveSignal;
use crate::record::PythonFailure;
use crate::scope::PyScope;
use crate::time::Time;
use crate::tracing::{self, PyActivity, RunTrace};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::cell::{Cell, RefCell, RefMut};
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use timely_communication::{initialize_from, Allocator, Config, WorkerPanicked};
use timely_engine::logging::Logger;
use timely_engine::{ClusterFailure, ProcessTrace, ReturnedWorkers, TraceSettings, Worker, WorkerState};

/// How long a parked worker sleeps before checking whether the run is being stopped.
const PARK_SLICE: Duration = Duration::from_millis(50);
/// The longest `worker.leave()` steps its worker while a join is in progress before it raises.
const LEAVE_WAITS_FOR_JOIN: Duration = Duration::from_secs(60);
/// The environment variable under which the launcher gives a joining process the exit status
/// that tells it the join was postponed (`docs/launcher.md`).
const JOIN_POSTPONED_EXIT: &str = "TIMELY_JOIN_POSTPONED_EXIT";

/// Lets the worker cross `Python::detach`, whose closure runs on this same thread.
struct SameThread<T>(T);
// SAFETY: `Python::detach` runs its closure synchronously on the calling thread, so the
// wrapped value never moves to, or is shared with, another thread.
unsafe impl<T> Send for SameThread<T> {}

/// A number of the calling thread, never given to another thread of the process (0 only
/// where a thread's locals are gone, so never an owner). Cheaper than
/// `std::thread::current().id()`, which clones the thread's handle: `Worker.step` checks
/// its owner several times a round.
fn thread_token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local!(static TOKEN: u64 = NEXT.fetch_add(1, Ordering::Relaxed));
    TOKEN.try_with(|token| *token).unwrap_or(0)
}

/// A value that lives on the thread that created it. It can only be used there; when its
/// owner drops it on another thread (a user callback kept by an exception's traceback
/// can carry a worker to the caller of `execute`), the value is leaked rather than touched.
struct ThreadBound<T> {
    owner: u64,
    value: Option<T>,
}

// SAFETY: the value is only reached through `get`, which checks that the current thread is
// the owner, and `Drop` never touches it on another thread.
unsafe impl<T> Send for ThreadBound<T> {}
unsafe impl<T> Sync for ThreadBound<T> {}

impl<T> ThreadBound<T> {
    fn new(value: T) -> Self {
        ThreadBound { owner: thread_token(), value: Some(value) }
    }

    fn get(&self) -> PyResult<&T> {
        if thread_token() != self.owner {
            return Err(PyRuntimeError::new_err("a Worker can only be used on its own thread"));
        }
        self.value.as_ref().ok_or_else(|| PyRuntimeError::new_err("the worker has finished its run"))
    }

    /// Takes the value out (on its own thread), leaving an empty shell.
    fn take(&mut self) -> Option<T> {
        if thread_token() == self.owner {
            self.value.take()
        } else {
            None
        }
    }
}

impl<T> Drop for ThreadBound<T> {
    fn drop(&mut self) {
        if thread_token() != self.owner {
            std::mem::forget(self.value.take());
        }
    }
}

/// What a worker owns on its thread.
struct WorkerParts {
    peers: Cell<usize>,
    /// The workers of one process: the same in every process, for the whole run.
    threads: usize,
    /// The workers present, as of the last step.
    members: RefCell<Members>,
    /// True once this worker's process is leaving (as of the last step).
    leaving: Cell<bool>,
    /// Set when the process is asked to leave from outside (SIGUSR1).
    leave_signal: LeaveSignal,
    /// The worker's shared state, for getters operators may call while the worker steps.
    state: Rc<WorkerState>,
    worker: RefCell<Worker>,
    context: Rc<WorkerContext>,
    /// The worker's trace logger, for user activities (None when the run is not traced).
    logger: Option<Logger>,
}

/// The workers present, and the version of the leaves and number of workers they are for.
#[derive(Default)]
struct Members {
    seen: Option<(u64, usize)>,
    list: Vec<usize>,
}

impl WorkerParts {
    /// Takes note of the cluster's membership after a step, for the getters (which operators
    /// may call while the worker steps).
    fn observe(&self, worker: &Worker) {
        let state = worker.state();
        let peers = state.peers();
        self.peers.set(peers);
        self.leaving.set(worker.is_leaving());
        let seen = Some((state.rescaling().leaves().version(), peers));
        let mut members = self.members.borrow_mut();
        if members.seen != seen {
            *members = Members { seen, list: state.members() };
        }
    }
}

/// One worker: its index among all workers, the number of workers, and the means to step
/// its dataflows.
#[pyclass(name = "Worker", module = "timely_py._core")]
pub struct PyWorker {
    index: usize,
    parts: ThreadBound<WorkerParts>,
}

impl PyWorker {
    fn new(
        allocator: Allocator,
        abort: Arc<AtomicBool>,
        leave_signal: LeaveSignal,
        trace: Option<&ProcessTrace>,
    ) -> Self {
        let mut worker = Worker::new(allocator);
        let logger = tracing::install(trace, &mut worker);
        let context = Rc::new(WorkerContext::new(worker.index(), abort));
        let threads = worker.state().workers_of(0).len();
        let parts = WorkerParts {
            peers: Cell::new(worker.peers()),
            threads,
            members: RefCell::default(),
            leaving: Cell::new(false),
            leave_signal,
            state: Rc::clone(worker.state()),
            worker: RefCell::new(worker),
            context,
            logger,
        };
        parts.observe(&parts.worker.borrow());
        PyWorker { index: parts.context.index, parts: ThreadBound::new(parts) }
    }

    fn parts(&self) -> PyResult<&WorkerParts> {
        self.parts.get()
    }

    fn worker(&self) -> PyResult<RefMut<'_, Worker>> {
        self.parts()?.worker.try_borrow_mut().map_err(|_| {
            PyRuntimeError::new_err(
                "the worker is busy: step() and dataflow() cannot be called from inside an operator",
            )
        })
    }

    fn step_detached(&self, py: Python<'_>, timeout: Option<Duration>) -> PyResult<bool> {
        let mut guard = self.worker()?;
        self.parts()?.leave_signal.apply(&mut guard);
        let worker = SameThread(&mut *guard);
        let stepped = py.detach(move || {
            let worker = worker;
            std::panic::catch_unwind(AssertUnwindSafe(|| worker.0.step_or_park(timeout)))
        });
        let active = stepped.or_else(|payload| self.failure(payload))?;
        let parts = self.parts()?;
        parts.context.check()?;
        parts.observe(&guard);
        Ok(active)
    }

    /// The Python exception for a step that unwound: the cluster failed, or Python code the
    /// engine ran (encoding records for another process) raised. Other panics continue.
    fn failure(&self, payload: Box<dyn std::any::Any + Send>) -> PyResult<bool> {
        let context = &self.parts()?.context;
        context.stop_run();
        let payload = match payload.downcast::<ClusterFailure>() {
            Ok(failure) => {
                return Err(ClusterError::new_err(format!("worker {}: {}", self.index, failure.0)))
            }
            Err(payload) => payload,
        };
        match payload.downcast::<PythonFailure>() {
            Ok(failure) => Err(failure.0),
            Err(payload) => std::panic::resume_unwind(payload),
        }
    }

    /// Steps until every dataflow completes or the run is stopped.
    fn drain(&self, py: Python<'_>, returned: &ReturnedWorkers) -> PyResult<()> {
        self.worker()?.program_returned();
        while self.step_detached(py, Some(PARK_SLICE))? {}
        // As `Worker::linger`, with the interpreter detached while it waits and steps.
        returned.arrive();
        while !returned.all_done() {
            let guard = self.worker()?;
            let worker = SameThread(&*guard);
            py.detach(move || {
                let worker = worker;
                worker.0.wait_for_events(PARK_SLICE)
            });
            drop(guard);
            while self.step_detached(py, Some(PARK_SLICE))? {}
        }
        Ok(())
    }
}

#[pymethods]
impl PyWorker {
    /// This worker's index, from 0 to `peers - 1`.
    #[getter]
    fn index(&self) -> usize {
        self.index
    }

    /// The number of worker indices in use: workers are `0..peers` (it grows when processes
    /// join, and stays when they leave; updated at every step). `members` lists the workers
    /// present.
    #[getter]
    fn peers(&self) -> PyResult<usize> {
        Ok(self.parts()?.peers.get())
    }

    /// The workers present, ascending: those that joined, without those whose process is
    /// leaving or left (updated at every step).
    #[getter]
    fn members(&self) -> PyResult<Vec<usize>> {
        Ok(self.parts()?.members.borrow().list.clone())
    }

    /// The workers of process `process` (processes run the same number of workers, numbered
    /// in process order; indices stay when others leave): what a `Controller` evacuates
    /// before that process leaves.
    fn workers_of(&self, process: usize) -> PyResult<Vec<usize>> {
        let threads = self.parts()?.threads;
        Ok((process * threads..(process + 1) * threads).collect())
    }

    /// In a cluster of several processes, what this worker's process holds of the messages
    /// it received and what spilled to disk past its receive budget
    /// (`TIMELY_RECEIVE_BUDGET`, `docs/networking.md`), with what this worker keeps for
    /// channels it has not built yet; None in a single process. Keys: `receive_budget`,
    /// `held_bytes`, `peak_held_bytes`, `spilled_messages`, `spilled_bytes`,
    /// `spill_failures` (the process's), `early_messages`, `early_bytes`,
    /// `early_bytes_limit`, `dropped_after_close` (this worker's). Callable from inside an operator.
    fn network_stats<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some((budget, inboxes)) = self.parts()?.state.network_stats() else {
            return Ok(None);
        };
        let stats = PyDict::new(py);
        stats.set_item("receive_budget", budget.limit)?;
        stats.set_item("held_bytes", budget.held_bytes)?;
        stats.set_item("peak_held_bytes", budget.peak_held_bytes)?;
        stats.set_item("spilled_messages", budget.spilled_messages)?;
        stats.set_item("spilled_bytes", budget.spilled_bytes)?;
        stats.set_item("spill_failures", budget.spill_failures)?;
        stats.set_item("early_messages", inboxes.early_messages)?;
        stats.set_item("early_bytes", inboxes.early_bytes)?;
        stats.set_item("early_bytes_limit", inboxes.early_limit)?;
        stats.set_item("dropped_after_close", inboxes.dropped_after_close)?;
        Ok(Some(stats))
    }

    /// True once this worker's process is leaving the cluster: `leave()` was called on one of
    /// its workers, or the launcher asked it to leave (`launch.remove_process`). Updated at
    /// every step. From then on its input handles are released (what they accepted is
    /// delivered) and `send` raises `LeavingError`, and so are the capabilities of its
    /// generic sources (`Scope.source`): a leaving worker's program should stop
    /// feeding and return. One that goes on still leaves: once the leave is complete its
    /// steps return False and its probes are done.
    #[getter]
    fn leaving(&self) -> PyResult<bool> {
        Ok(self.parts()?.leaving.get())
    }

    /// Makes this worker's process leave the running cluster (`docs/rescaling.md`, "Leaving a
    /// running cluster"). Its other workers follow, the other processes stop routing records
    /// to it and its keyed state's keys move to the workers present. Its input handles are
    /// released at once (those of its other workers at their next step): what they accepted
    /// is delivered, and they refuse records from then on (`LeavingError`). Once nothing more
    /// can reach the process and its operators hold no capability, its dataflows end, `run`
    /// returns on it and the process exits while the cluster goes on. While a process is
    /// joining the cluster (not yet bootstrapped everywhere), it steps this worker until the
    /// join is over, for at most `LEAVE_WAITS_FOR_JOIN`, then leaves. Raises `ValueError`
    /// outside a cluster of several processes, and `TimelyError` (nothing happens) when no
    /// other process is present to take its work, or the join did not end in time.
    fn leave(&self, py: Python<'_>) -> PyResult<()> {
        if !self.worker()?.state().allocator().can_rescale() {
            return Err(PyValueError::new_err(
                "leave() needs a cluster of several processes: a process alone has nowhere to hand its work",
            ));
        }
        let deadline = Instant::now() + LEAVE_WAITS_FOR_JOIN;
        loop {
            let refused = match self.worker()?.leave() {
                Ok(()) => break,
                Err(refused) => refused,
            };
            if !refused.waits_for_join() || Instant::now() >= deadline {
                return Err(TimelyError::new_err(refused.to_string()));
            }
            self.step_detached(py, Some(Duration::from_millis(10)))?;
        }
        self.parts()?.leaving.set(true);
        Ok(())
    }

    /// Runs every operator that has work once; returns True while dataflows are incomplete.
    fn step(&self, py: Python<'_>) -> PyResult<bool> {
        self.step_detached(py, Some(Duration::ZERO))
    }

    /// Steps while `condition()` is true.
    fn step_while(&self, py: Python<'_>, condition: Bound<'_, PyAny>) -> PyResult<()> {
        while condition.call0()?.is_truthy()? {
            self.step_detached(py, Some(Duration::ZERO))?;
        }
        Ok(())
    }

    /// Like `step`, but if nothing is active first waits up to `timeout` seconds (None: until
    /// data or progress arrives) for other workers.
    #[pyo3(signature = (timeout=None))]
    fn step_or_park(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let timeout = match timeout {
            Some(t) if !(t >= 0.0 && t.is_finite()) => {
                return Err(PyValueError::new_err(format!(
                    "timeout must be a non-negative number of seconds, got {}",
                    t
                )))
            }
            Some(t) => Duration::from_secs_f64(t).min(PARK_SLICE),
            None => PARK_SLICE,
        };
        self.step_detached(py, Some(timeout))
    }

    /// Starts describing a dataflow. Use it as a context manager:
    /// `with worker.dataflow() as scope: ...`; leaving the block installs the dataflow.
    #[pyo3(signature = (name="Dataflow"))]
    fn dataflow(&self, name: &str) -> PyResult<PyScope> {
        let mut worker = self.worker()?;
        let scope = catch_panic(|| worker.try_new_dataflow::<Time>(name))?
            .map_err(|refused| LeavingError::new_err(refused.to_string()))?;
        Ok(PyScope::root(scope, self.parts()?.context.clone()))
    }

    /// On a worker of a process that joined a running cluster (`--join W --nn N`): completes
    /// the bootstrap of its progress state from worker `W` and returns True. False on every
    /// worker the cluster started with. Call it after building every dataflow (all workers
    /// build the same ones); a joined worker then just returns, and the runtime steps it
    /// until the dataflows complete.
    fn bootstrap(&self, py: Python<'_>) -> PyResult<bool> {
        let mut guard = self.worker()?;
        let worker = SameThread(&mut *guard);
        let joined = py.detach(move || {
            let worker = worker;
            std::panic::catch_unwind(AssertUnwindSafe(|| worker.0.bootstrap()))
        });
        let joined = joined.or_else(|payload| self.failure(payload))?;
        let parts = self.parts()?;
        parts.context.check()?;
        parts.observe(&guard);
        Ok(joined)
    }

    /// True while some dataflow is incomplete.
    #[getter]
    fn has_dataflows(&self) -> PyResult<bool> {
        Ok(self.worker()?.has_dataflows())
    }

    /// A user activity to record in the trace: `with worker.activity("load graph"): ...`.
    /// Activities nest; without a trace they record nothing.
    fn activity(&self, name: String) -> PyResult<PyActivity> {
        Ok(PyActivity::new(self.parts()?.logger.clone(), name))
    }

    fn __repr__(&self) -> String {
        match self.parts() {
            Ok(parts) => format!("Worker(index={}, peers={})", self.index, parts.peers.get()),
            Err(_) => format!("Worker(index={})", self.index),
        }
    }
}

/// Runs `main(worker)` on every worker of `config`, traced as `trace` says (batches for
/// `trace_callback` are delivered on this thread while it waits); returns the results in
/// worker order.
pub fn run(
    py: Python<'_>,
    mut config: Config,
    trace: Option<TraceSettings>,
    trace_callback: Option<Py<PyAny>>,
    main: Py<PyAny>,
) -> PyResult<Vec<Py<PyAny>>> {
    let mut trace = RunTrace::start(py, trace, trace_callback, &mut config)?;
    // A cluster process leaves on SIGUSR1, from before it connects to the end of its run.
    let leave_signal = LeaveSignal::default();
    let _registration = match &config {
        Config::Cluster(_) => Some(leave_signal.register().map_err(|error| {
            PyRuntimeError::new_err(format!("cannot handle SIGUSR1 (the leave request): {error}"))
        })?),
        _ => None,
    };
    // A cluster connects to its other processes here, which may take a while: detached.
    let builders = py.detach(|| config.try_build()).map_err(|error| {
        if error.is_join_postponed() {
            postponed_join(&error.to_string());
        }
        ClusterError::new_err(error.to_string())
    })?;
    let workers = builders.len();
    let abort = Arc::new(AtomicBool::new(false));
    let (done, finished) = mpsc::channel::<()>();
    let worker_abort = abort.clone();
    let worker_trace = trace.as_ref().map(RunTrace::process);
    let returned = ReturnedWorkers::new(workers);
    let guards = initialize_from(builders, move |allocator| {
        let trace = worker_trace.as_deref();
        let leave_signal = leave_signal.clone();
        let abort = worker_abort.clone();
        let outcome =
            Python::attach(|py| run_worker(py, allocator, &main, abort, leave_signal, trace, &returned));
        // (A failed worker counts as done: nobody waits for it.)
        returned.arrive();
        let _ = done.send(());
        outcome
    })
    .map_err(|error| PyRuntimeError::new_err(error.to_string()))?;
    let mut interrupt = None;
    let mut remaining = workers;
    while remaining > 0 {
        let receiver = SameThread(&finished);
        match py.detach(move || {
            let receiver = receiver;
            receiver.0.recv_timeout(Duration::from_millis(50))
        }) {
            Ok(()) => remaining -= 1,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(error) = py.check_signals() {
                    abort.store(true, Ordering::SeqCst);
                    interrupt.get_or_insert(error);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if let Some(trace) = &mut trace {
            trace.deliver(py);
        }
    }
    let results = py.detach(|| guards.join());
    let results = match interrupt {
        Some(error) => Err(error),
        None => collect_results(py, results),
    };
    // The trace closes whatever happened; the run's own error comes first.
    let finished = trace.map_or(Ok(()), |trace| trace.finish(py, results.is_ok()));
    results.and_then(|values| finished.map(|()| values))
}

fn run_worker(
    py: Python<'_>,
    allocator: Allocator,
    main: &Py<PyAny>,
    abort: Arc<AtomicBool>,
    leave_signal: LeaveSignal,
    trace: Option<&ProcessTrace>,
    returned: &ReturnedWorkers,
) -> PyResult<Py<PyAny>> {
    let worker = Py::new(py, PyWorker::new(allocator, abort, leave_signal, trace))?;
    let result = main.call1(py, (worker.clone_ref(py),));
    let result = result.or_else(|error| ended_by_leave(py, &worker, error));
    let result = result.and_then(|value| worker.borrow(py).drain(py, returned).map(|()| value));
    // The worker's engine state (and the user callbacks its operators hold) is dropped
    // here, on its own thread; what may travel with an exception is an empty shell.
    let parts = worker.borrow_mut(py).parts.take();
    if let Some(parts) = &parts {
        if result.is_err() {
            parts.context.stop_run();
            // In a cluster, the other processes learn at once that this one stopped.
            parts.worker.borrow().fail();
        }
    }
    drop(parts);
    result.map_err(|error| release_frames(py, error))
}

/// The result of a `main` that raised `error`: on a worker whose process is leaving, a
/// `LeavingError` (its input refused a record because the program went on feeding) ends
/// `main` as returning None would, so that the worker leaves cleanly; anything else is the
/// run's error.
fn ended_by_leave(py: Python<'_>, worker: &Py<PyWorker>, error: PyErr) -> PyResult<Py<PyAny>> {
    let leaving = || worker.borrow(py).worker().is_ok_and(|worker| worker.is_leaving());
    if error.is_instance_of::<LeavingError>(py) && leaving() {
        return Ok(py.None());
    }
    Err(error)
}

/// Clears the local variables of a traceback's frames (keeping file and line information):
/// the exception travels to the calling thread, and worker-local objects must not.
fn release_frames(py: Python<'_>, error: PyErr) -> PyErr {
    if let Some(traceback) = error.traceback(py) {
        if let Ok(module) = py.import("traceback") {
            let _ = module.call_method1("clear_frames", (traceback,));
        }
    }
    error
}

/// The workers' results, or the most telling failure: a user exception before a
/// cancellation, a cancellation before a panic.
fn collect_results(
    py: Python<'_>,
    results: Vec<Result<PyResult<Py<PyAny>>, WorkerPanicked>>,
) -> PyResult<Vec<Py<PyAny>>> {
    let mut values = Vec::with_capacity(results.len());
    let mut cancelled = None;
    let mut panicked = None;
    for result in results {
        match result {
            Ok(Ok(value)) => values.push(value),
            Ok(Err(error)) if error.is_instance_of::<WorkerCancelled>(py) => {
                cancelled.get_or_insert(error);
            }
            Ok(Err(error)) => return Err(error),
            Err(panic) => {
                panicked.get_or_insert(panic.to_string());
            }
        }
    }
    if let Some(message) = panicked {
        return Err(PyRuntimeError::new_err(message));
    }
    if let Some(error) = cancelled {
        return Err(error);
    }
    Ok(values)
}

/// A joining process whose join was postponed (a leave in progress, `docs/rescaling.md`):
/// when the launcher started it, it exits at once with the status the launcher gave it, after
/// saying why, so that the launcher starts it again later; otherwise the caller raises
/// `ClusterError` with the message.
fn postponed_join(message: &str) {
    let Some(code) = std::env::var(JOIN_POSTPONED_EXIT).ok().and_then(|code| code.parse::<i32>().ok()) else {
        return;
    };
    eprintln!("timely_py: {message}");
    std::process::exit(code);
}
