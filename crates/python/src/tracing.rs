//! Tracing from Python: the trace settings `execute` takes as keywords, the trace of one
//! run, batches of events handed to a Python callback, and `worker.activity(name)` as a
//! context manager.
//!
//! Batches for a callback are delivered on the thread that called `execute`, while it waits
//! for the workers, as `pyarrow.RecordBatch`es: the trace's writer thread never needs the
//! interpreter, so a worker holding the interpreter while it waits for the writer cannot
//! deadlock with it. Where events happen is the engine's business; how files are written is
//! the trace crate's.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use timely_communication::Config;
use timely_engine::logging::Logger;
use timely_engine::{Activity, ProcessTrace, TraceSettings, Worker};
use timely_trace::ipc::to_ipc_stream;

/// A batch of events and the worker that recorded it.
type Delivery = (usize, arrow_array::RecordBatch);

/// The trace settings of `execute`'s keywords; None when neither a directory nor a callback
/// is given.
pub fn settings(
    directory: Option<PathBuf>,
    events: Option<&str>,
    flush: Option<f64>,
    has_callback: bool,
) -> PyResult<Option<TraceSettings>> {
    if directory.is_none() && !has_callback {
        if events.is_some() || flush.is_some() {
            return Err(PyValueError::new_err(
                "trace_events and trace_flush need trace_dir or trace_callback",
            ));
        }
        return Ok(None);
    }
    TraceSettings::with_options(directory, events, flush)
        .map(Some)
        .map_err(|error| PyValueError::new_err(error.to_string()))
}

/// The settings of a run traced for a callback alone (no directory), with the event classes
/// and flush interval the environment names (`TIMELY_TRACE_EVENTS`, `TIMELY_TRACE_FLUSH`).
pub fn callback_settings_from_env() -> PyResult<Option<TraceSettings>> {
    TraceSettings::from_environment_without_directory()
        .map(Some)
        .map_err(|error| PyValueError::new_err(error.to_string()))
}

/// The trace of one run of `execute`, as the calling thread holds it.
pub struct RunTrace {
    process: Arc<ProcessTrace>,
    callback: Option<Callback>,
}

/// A Python callback and the batches waiting for it.
struct Callback {
    function: Py<PyAny>,
    batches: Receiver<Delivery>,
    open_stream: Py<PyAny>,
    /// The first exception the callback raised; later batches are dropped.
    error: Option<PyErr>,
}

impl RunTrace {
    /// Starts tracing this process's part of `config`'s run, or returns None without settings.
    pub fn start(
        py: Python<'_>,
        settings: Option<TraceSettings>,
        function: Option<Py<PyAny>>,
        config: &mut Config,
    ) -> PyResult<Option<RunTrace>> {
        let Some(mut settings) = settings else { return Ok(None) };
        settings.program = Some(program_name(py));
        let callback = match function {
            Some(function) => {
                let open_stream = py
                    .import("pyarrow.ipc")
                    .map_err(|error| {
                        PyRuntimeError::new_err(format!(
                            "trace_callback needs pyarrow (pip install pyarrow): {error}"
                        ))
                    })?
                    .getattr("open_stream")?
                    .unbind();
                let (sender, batches) = channel::<Delivery>();
                settings.callback = Some(Box::new(move |worker, batch| {
                    let _ = sender.send((worker, batch.clone()));
                }));
                Some(Callback { function, batches, open_stream, error: None })
            }
            None => None,
        };
        let process = py
            .detach(|| ProcessTrace::start(settings, config))
            .map_err(|error| PyRuntimeError::new_err(format!("cannot start the trace: {error}")))?;
        Ok(Some(RunTrace { process: Arc::new(process), callback }))
    }

    /// The process's trace, for the worker threads.
    pub fn process(&self) -> Arc<ProcessTrace> {
        self.process.clone()
    }

    /// Hands the batches that arrived so far to the callback.
    pub fn deliver(&mut self, py: Python<'_>) {
        if let Some(callback) = &mut self.callback {
            callback.deliver(py);
        }
    }

    /// Closes the trace once every worker has finished (the files and metadata then say
    /// whether the run `succeeded`), delivers the last batches, and returns the callback's
    /// first exception, if it raised one.
    pub fn finish(mut self, py: Python<'_>, succeeded: bool) -> PyResult<()> {
        let process = Arc::try_unwrap(self.process)
            .map_err(|_| PyRuntimeError::new_err("the trace is still in use after the run"))?;
        let finished = py.detach(|| process.finish(succeeded));
        if let Some(callback) = &mut self.callback {
            callback.deliver(py);
            if let Some(error) = callback.error.take() {
                return Err(error);
            }
        }
        finished.map_err(|error| PyRuntimeError::new_err(format!("the trace is incomplete: {error}")))
    }
}

impl Callback {
    fn deliver(&mut self, py: Python<'_>) {
        while let Ok((worker, batch)) = self.batches.try_recv() {
            if self.error.is_none() {
                if let Err(error) = self.call(py, worker, &batch) {
                    self.error = Some(error);
                }
            }
        }
    }

    fn call(&self, py: Python<'_>, worker: usize, batch: &arrow_array::RecordBatch) -> PyResult<()> {
        let bytes = to_ipc_stream(batch).map_err(|error| PyRuntimeError::new_err(error.to_string()))?;
        let reader = self.open_stream.call1(py, (PyBytes::new(py, &bytes),))?;
        let batch = reader.call_method0(py, "read_next_batch")?;
        self.function.call1(py, (worker, batch))?;
        Ok(())
    }
}

/// The program named in the trace's metadata: Python's `sys.argv[0]`.
fn program_name(py: Python<'_>) -> String {
    let argv0 = py.import("sys").and_then(|sys| sys.getattr("argv")).and_then(|argv| argv.get_item(0));
    argv0.and_then(|name| name.extract::<String>()).unwrap_or_else(|_| "python".to_owned())
}

/// Installs `trace` on a new worker; returns the worker's logger (None without a trace).
pub fn install(trace: Option<&ProcessTrace>, worker: &mut Worker) -> Option<Logger> {
    let trace = trace?;
    trace.install(worker);
    worker.state().logger()
}

/// A user activity: `with worker.activity("load graph"): ...` records its start and stop in
/// the trace (nothing when the run is not traced). Activities nest.
#[pyclass(name = "Activity", module = "timely_py._core", unsendable)]
pub struct PyActivity {
    logger: Option<Logger>,
    name: String,
    running: Option<Activity>,
}

impl PyActivity {
    pub fn new(logger: Option<Logger>, name: String) -> Self {
        PyActivity { logger, name, running: None }
    }
}

#[pymethods]
impl PyActivity {
    /// The activity's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    fn __enter__(mut slf: PyRefMut<'_, Self>) -> PyResult<PyRefMut<'_, Self>> {
        if slf.running.is_some() {
            return Err(PyRuntimeError::new_err(format!("activity {:?} is already running", slf.name)));
        }
        slf.running = Some(Activity::begin(slf.logger.clone(), &slf.name));
        Ok(slf)
    }

    #[pyo3(signature = (*_exception))]
    fn __exit__(&mut self, _exception: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.running = None;
        false
    }

    fn __repr__(&self) -> String {
        format!("Activity({:?})", self.name)
    }
}
