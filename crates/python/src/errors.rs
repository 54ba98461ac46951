//! Errors: user exceptions inside operators, cancellation, and engine panics.
//!
//! A `WorkerContext` belongs to one worker. When a user callback raises, the exception is
//! kept (first one wins), annotated with the operator's name and worker, and every worker
//! of the run is asked to stop through a shared abort flag; the worker's next `step`
//! raises it. Engine panics on misuse during construction (for example a loop without a
//! feedback edge) become `DataflowError` without Rust panic output.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

create_exception!(timely_py, TimelyError, PyException, "Base class of timely_py's own errors.");
create_exception!(timely_py, DataflowError, TimelyError, "A dataflow was described incorrectly.");
create_exception!(
    timely_py,
    ClusterError,
    TimelyError,
    "The processes of a cluster could not connect, or one of them was lost while running."
);
create_exception!(
    timely_py,
    LeavingError,
    TimelyError,
    "An input handle refused records, or a source used a capability that was released: its worker's process is leaving the cluster (`worker.leaving`)."
);
create_exception!(
    timely_py,
    WorkerCancelled,
    TimelyError,
    "Raised in a worker that stops because another worker failed or the run was interrupted."
);

/// Per-worker error state.
pub struct WorkerContext {
    /// The worker's index.
    pub index: usize,
    failure: RefCell<Option<PyErr>>,
    failed: Cell<bool>,
    abort: Arc<AtomicBool>,
}

impl WorkerContext {
    /// A context sharing `abort` with the other workers of a run.
    pub fn new(index: usize, abort: Arc<AtomicBool>) -> Self {
        WorkerContext { index, failure: RefCell::new(None), failed: Cell::new(false), abort }
    }

    /// Runs user code for operator `operator` with the interpreter attached. A raised
    /// exception is recorded and `None` returned; after a failure nothing runs any more.
    #[inline]
    pub fn run<R>(&self, operator: &str, logic: impl FnOnce(Python<'_>) -> PyResult<R>) -> Option<R> {
        if self.failed.get() {
            return None;
        }
        Python::attach(|py| match logic(py) {
            Ok(result) => Some(result),
            Err(error) => {
                self.fail(py, error, operator);
                None
            }
        })
    }

    /// Records `error` raised in `operator` and asks every worker to stop.
    pub fn fail(&self, py: Python<'_>, error: PyErr, operator: &str) {
        if !self.failed.replace(true) {
            let note = format!("raised in operator '{}' on worker {}", operator, self.index);
            add_note(py, &error, &note);
            *self.failure.borrow_mut() = Some(error);
        }
        self.abort.store(true, Ordering::SeqCst);
    }

    /// Asks every worker of the run to stop.
    pub fn stop_run(&self) {
        self.abort.store(true, Ordering::SeqCst);
    }

    /// Raises this worker's recorded exception, or `WorkerCancelled` if another worker
    /// stopped the run.
    pub fn check(&self) -> PyResult<()> {
        if let Some(error) = self.failure.borrow_mut().take() {
            return Err(error);
        }
        if self.failed.get() || self.abort.load(Ordering::SeqCst) {
            return Err(WorkerCancelled::new_err(
                "the run was stopped by another worker's failure or an interrupt",
            ));
        }
        Ok(())
    }
}

/// Adds a note to an exception (`add_note` on Python 3.11+, `__notes__` before).
pub fn add_note(py: Python<'_>, error: &PyErr, note: &str) {
    let value = error.value(py);
    if value.call_method1("add_note", (note,)).is_err() {
        let notes =
            value.getattr("__notes__").ok().and_then(|n| n.extract::<Vec<String>>().ok()).unwrap_or_default();
        let mut notes = notes;
        notes.push(note.to_owned());
        let _ = value.setattr("__notes__", notes);
    }
}

thread_local! {
    static QUIET_PANICS: Cell<bool> = const { Cell::new(false) };
}

/// Installs a panic hook that stays silent for panics caught by `catch_panic`.
pub fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !QUIET_PANICS.with(|q| q.get()) {
            previous(info);
        }
    }));
}

/// Runs `f`, which may push records to other processes (an input handle's `send`, say),
/// raising the Python error of a record that could not be encoded (`PythonFailure`) to the
/// caller; other panics go on unwinding.
pub fn raise_python_failure<R>(f: impl FnOnce() -> R) -> PyResult<R> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).or_else(|payload| {
        match payload.downcast::<crate::record::PythonFailure>() {
            Ok(failure) => Err(failure.0),
            Err(payload) => std::panic::resume_unwind(payload),
        }
    })
}

/// Runs `f`, turning a panic into a `DataflowError` with the panic's message.
pub fn catch_panic<R>(f: impl FnOnce() -> R) -> PyResult<R> {
    QUIET_PANICS.with(|q| q.set(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET_PANICS.with(|q| q.set(false));
    result.map_err(|payload| DataflowError::new_err(timely_engine::execute::panic_message(payload.as_ref())))
}
