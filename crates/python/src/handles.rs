//! `InputHandle` and `ProbeHandle`: how a worker's program feeds and watches dataflows.

use crate::errors::{raise_python_failure, LeavingError, WorkerContext};
use crate::record::Record;
use crate::time::{from_py, Time};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::rc::Rc;
use timely_engine::dataflow::operators::InputError;
use timely_engine::dataflow::{InputHandle, ProbeHandle};

/// Feeds records into a dataflow input at the handle's current time (an int epoch).
///
/// Create it before the dataflow, attach it with `scope.input_from(handle)`, then `send`
/// records, `advance_to` later epochs and `close` it (or use it as a context manager).
///
/// Once its worker is leaving the cluster (`worker.leaving`), the handle is *released*: the
/// records it accepted before are delivered, it holds nothing back, and `send`/`send_batch`
/// raise `LeavingError` without accepting anything; `advance_to` only moves `time`.
#[pyclass(name = "InputHandle", module = "timely_py._core", unsendable)]
pub struct PyInputHandle {
    handle: InputHandle<Time, Record>,
    /// The error context of the worker whose dataflow it feeds, once attached.
    context: Option<Rc<WorkerContext>>,
}

impl PyInputHandle {
    /// The engine handle, to attach to a dataflow of the worker with error context `context`.
    pub fn attach(&mut self, context: Rc<WorkerContext>) -> &mut InputHandle<Time, Record> {
        self.context = Some(context);
        &mut self.handle
    }

    /// Raises the stop of the run (`WorkerCancelled`, or this worker's own failure) once it is
    /// being stopped, for a handle released by its worker's leave: a program that feeds on past
    /// its leave may no longer step, where a stop would otherwise reach it.
    fn check_released(&self) -> PyResult<()> {
        match &self.context {
            Some(context) if self.handle.is_released() => context.check(),
            _ => Ok(()),
        }
    }

    fn input_error(&self, error: InputError) -> PyErr {
        if let Err(stop) = self.check_released() {
            return stop;
        }
        match error {
            InputError::Leaving => {
                LeavingError::new_err(format!("{error} (stop feeding once worker.leaving is True)"))
            }
            other => PyValueError::new_err(other.to_string()),
        }
    }
}

#[pymethods]
impl PyInputHandle {
    #[new]
    fn new() -> Self {
        PyInputHandle { handle: InputHandle::new(), context: None }
    }

    /// The epoch at which records are sent now.
    #[getter]
    fn time(&self) -> u64 {
        self.handle.time().get(0)
    }

    /// True once closed.
    #[getter]
    fn closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// True once released because its worker is leaving the cluster: it accepts no records.
    #[getter]
    fn released(&self) -> bool {
        self.handle.is_released()
    }

    /// Sends one record at the current epoch. Raises `LeavingError`, and does not accept the
    /// record, once this worker is leaving the cluster.
    fn send(&mut self, record: Py<PyAny>) -> PyResult<()> {
        raise_python_failure(|| self.handle.try_send(Record(record)))?.map_err(|e| self.input_error(e))
    }

    /// Sends every record of an iterable at the current epoch. Raises `LeavingError`, and
    /// accepts none of them, once this worker is leaving the cluster.
    fn send_batch(&mut self, records: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut batch = collect_records(records)?;
        raise_python_failure(|| self.handle.try_send_batch(&mut batch))?.map_err(|e| self.input_error(e))
    }

    /// Moves to epoch `time` (not earlier than the current one): no more records will be
    /// sent at earlier epochs. Once the worker is leaving it only moves `time`.
    fn advance_to(&mut self, time: &Bound<'_, PyAny>) -> PyResult<()> {
        let time = from_py(time, 0)?;
        self.check_released()?;
        raise_python_failure(|| self.handle.try_advance_to(time))?.map_err(|e| self.input_error(e))
    }

    /// Closes the input: no more records will be sent. Idempotent.
    fn close(&mut self) -> PyResult<()> {
        raise_python_failure(|| self.handle.close())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        raise_python_failure(|| self.handle.close())?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let shown = |flag: bool| if flag { "True" } else { "False" };
        format!(
            "InputHandle(time={}, closed={}, released={})",
            self.handle.time().get(0),
            shown(self.handle.is_closed()),
            shown(self.handle.is_released())
        )
    }
}

/// Watches the frontier of streams: which epochs may still appear there.
#[pyclass(name = "ProbeHandle", module = "timely_py._core", unsendable)]
#[derive(Default)]
pub struct PyProbeHandle {
    handle: ProbeHandle<Time>,
}

impl PyProbeHandle {
    /// The engine handle.
    pub fn handle(&self) -> &ProbeHandle<Time> {
        &self.handle
    }
}

#[pymethods]
impl PyProbeHandle {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// True while records at some epoch strictly before `time` may still appear.
    fn less_than(&self, time: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.handle.less_than(&from_py(time, 0)?))
    }

    /// True while records at some epoch at or before `time` may still appear.
    fn less_equal(&self, time: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.handle.less_equal(&from_py(time, 0)?))
    }

    /// True once no more records can appear.
    fn done(&self) -> bool {
        self.handle.done()
    }

    /// The epochs that may still appear, as a sorted list of minimal epochs.
    #[getter]
    fn frontier(&self) -> Vec<u64> {
        let mut elements: Vec<u64> = self.handle.frontier().elements().iter().map(|t| t.get(0)).collect();
        elements.sort_unstable();
        elements
    }

    fn __repr__(&self) -> String {
        format!("ProbeHandle(frontier={:?})", self.frontier())
    }
}

/// The items of `records` as records: by index for lists and tuples (the common case, without
/// the iterator protocol's cost per item), through iteration for any other iterable.
fn collect_records(records: &Bound<'_, PyAny>) -> PyResult<Vec<Record>> {
    if let Ok(list) = records.cast::<PyList>() {
        return Ok(list.iter().map(|x| Record(x.unbind())).collect());
    }
    if let Ok(tuple) = records.cast::<PyTuple>() {
        return Ok(tuple.iter().map(|x| Record(x.unbind())).collect());
    }
    records.try_iter()?.map(|x| x.map(|x| Record(x.unbind()))).collect()
}
