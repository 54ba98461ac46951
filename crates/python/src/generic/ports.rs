//! `InputPort`, `OutputPort` and `OutputSession`: a generic operator's inputs and output as
//! Python uses them. Valid only while the operator's logic runs.

use crate::generic::capability::{PyCapability, PyInputCapability, Received};
use crate::generic::frontier::PyFrontier;
use crate::generic::local::Local;
use crate::generic::state::OpState;
use crate::record::Record;
use crate::time::Time;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::cell::RefCell;
use std::rc::Rc;
use timely_engine::dataflow::channels::Data;
use timely_engine::dataflow::operators::{
    CapabilityError, CapabilityRef, InputCapability, InputPort, OutputPort,
};

/// Records per batch when `give_all` consumes an iterable.
const GIVE_BATCH: usize = 1024;

/// An engine input (pipelined or exchanged, records arrive as they are).
pub type Port<Time> = InputPort<Time, Record>;

/// The next batch of `port`, its records as a Python list.
fn batch<'py, D: Data>(
    py: Python<'py>,
    port: &mut InputPort<Time, D>,
    object: fn(D) -> Py<PyAny>,
) -> PyResult<Option<(InputCapability<Time>, Bound<'py, PyList>)>> {
    match port.next() {
        None => Ok(None),
        Some((capability, data)) => Ok(Some((capability, PyList::new(py, data.drain(..).map(object))?))),
    }
}

/// An operator input with the state of its operator.
pub struct InputCell {
    port: RefCell<Port<Time>>,
    index: usize,
    op: Rc<OpState>,
}

impl InputCell {
    /// Input `index` of the operator of `op`.
    pub fn new(port: Port<Time>, index: usize, op: &Rc<OpState>) -> Self {
        InputCell { port: RefCell::new(port), index, op: op.clone() }
    }

    fn next<'py>(&self, py: Python<'py>) -> PyResult<Option<(PyInputCapability, Bound<'py, PyList>)>> {
        self.op.ensure_live("the input")?;
        let mut port = self.port.try_borrow_mut().map_err(|_| {
            PyRuntimeError::new_err(format!("the input of operator '{}' is in use", self.op.name))
        })?;
        let next = batch(py, &mut port, |Record(x)| x)?;
        Ok(next.map(|(capability, records)| {
            let received = Received { capability, op: self.op.clone(), generation: self.op.generation.get() };
            (PyInputCapability::new(received), records)
        }))
    }

    /// Drops whatever arrived (after a failure).
    pub fn drain(&self) {
        if let Ok(mut port) = self.port.try_borrow_mut() {
            while port.next().is_some() {}
        }
    }
}

/// An operator input. Iterate it for the batches received since the last run:
/// `for capability, records in input:` yields an `InputCapability` and a list of records.
/// The logic should consume every batch at each run. `frontier` (in frontier and notify
/// operators and sinks) is the input frontier. Valid only while the operator's logic runs.
#[pyclass(name = "InputPort", module = "timely_py._core")]
pub struct PyInputPort {
    inner: Local<Rc<InputCell>>,
}

impl PyInputPort {
    /// Hands `input` to Python.
    pub fn new(input: Rc<InputCell>) -> Self {
        PyInputPort { inner: Local::new("this InputPort", input) }
    }
}

#[pymethods]
impl PyInputPort {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<(PyInputCapability, Bound<'py, PyList>)>> {
        self.inner.get()?.next(py)
    }

    /// The input frontier (a `Frontier`), as of the start of this run. Raises
    /// `AttributeError` in operators that do not watch frontiers (`unary`, `binary`).
    #[getter]
    fn frontier(&self) -> PyResult<PyFrontier> {
        let input = self.inner.get()?;
        input.op.frontier(input.index)
    }

    fn __repr__(&self) -> String {
        match self.inner.get() {
            Ok(input) => format!("InputPort(operator='{}', input={})", input.op.name, input.index),
            Err(_) => "InputPort(<another worker's>)".to_owned(),
        }
    }
}

/// An operator output with the state of its operator.
pub struct OutputCell {
    port: RefCell<OutputPort<Time, Record>>,
    op: Rc<OpState>,
}

impl OutputCell {
    /// The output of the operator of `op`.
    pub fn new(port: OutputPort<Time, Record>, op: &Rc<OpState>) -> Self {
        OutputCell { port: RefCell::new(port), op: op.clone() }
    }

    fn give<C: CapabilityRef<Time>>(&self, capability: &C, data: &mut Vec<Record>) -> PyResult<()> {
        let mut port = self.port.try_borrow_mut().map_err(|_| {
            PyRuntimeError::new_err(format!("the output of operator '{}' is in use", self.op.name))
        })?;
        let mut session = port.try_session(capability).map_err(|error| match error {
            CapabilityError::WrongOperator => self.op.wrong_operator(),
            other => PyValueError::new_err(other.to_string()),
        })?;
        session.give_vec(data);
        Ok(())
    }

    /// Sends `data` at the time of the Python capability object `capability`.
    fn send(&self, capability: &Bound<'_, PyAny>, data: &mut Vec<Record>) -> PyResult<()> {
        self.op.ensure_live("the output")?;
        if let Ok(capability) = capability.cast::<PyCapability>() {
            capability.try_borrow()?.with(|held| self.give(&held.capability, data))
        } else if let Ok(capability) = capability.cast::<PyInputCapability>() {
            let received = capability.try_borrow()?.of(&self.op)?;
            self.give(&received.capability, data)
        } else {
            Err(PyTypeError::new_err(format!(
                "expected a Capability or an InputCapability, got {}",
                capability.repr().map(|r| r.to_string()).unwrap_or_else(|_| "an unprintable object".into())
            )))
        }
    }
}

fn send(output: &OutputCell, capability: &Bound<'_, PyAny>, data: &mut Vec<Record>) -> PyResult<()> {
    output.send(capability, data)
}

fn give_iterable(
    output: &OutputCell,
    capability: &Bound<'_, PyAny>,
    records: &Bound<'_, PyAny>,
) -> PyResult<()> {
    // Checks the capability even when the iterable is empty.
    let mut batch = Vec::new();
    send(output, capability, &mut batch)?;
    // The iterable may run Python code: the port is borrowed only while a batch is sent.
    for item in records.try_iter()? {
        batch.push(Record(item?.unbind()));
        if batch.len() >= GIVE_BATCH {
            send(output, capability, &mut batch)?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        send(output, capability, &mut batch)?;
    }
    Ok(())
}

/// An operator output. `give(capability, record)` and `give_all(capability, records)`
/// send at the time of `capability`, a `Capability` or `InputCapability` of this operator.
/// Valid only while the operator's logic runs.
#[pyclass(name = "OutputPort", module = "timely_py._core")]
pub struct PyOutputPort {
    inner: Local<Rc<OutputCell>>,
}

impl PyOutputPort {
    /// Hands `output` to Python.
    pub fn new(output: Rc<OutputCell>) -> Self {
        PyOutputPort { inner: Local::new("this OutputPort", output) }
    }
}

#[pymethods]
impl PyOutputPort {
    /// Sends `record` at the time of `capability`.
    fn give(&self, capability: &Bound<'_, PyAny>, record: Py<PyAny>) -> PyResult<()> {
        send(&*self.inner.get()?, capability, &mut vec![Record(record)])
    }

    /// Sends every record of the iterable `records` at the time of `capability`.
    fn give_all(&self, capability: &Bound<'_, PyAny>, records: &Bound<'_, PyAny>) -> PyResult<()> {
        give_iterable(&*self.inner.get()?, capability, records)
    }

    /// A session sending at the time of `capability`; use it as a context manager:
    /// `with output.session(cap) as session: session.give(x)`.
    fn session(&self, capability: &Bound<'_, PyAny>) -> PyResult<PyOutputSession> {
        let output = self.inner.get()?;
        send(&output, capability, &mut Vec::new())?;
        Ok(PyOutputSession {
            output: Local::new("this output session", output),
            capability: capability.clone().unbind(),
        })
    }

    fn __repr__(&self) -> String {
        match self.inner.get() {
            Ok(output) => format!("OutputPort(operator='{}')", output.op.name),
            Err(_) => "OutputPort(<another worker's>)".to_owned(),
        }
    }
}

/// Sends records at one capability's time (from `OutputPort.session`).
#[pyclass(name = "OutputSession", module = "timely_py._core")]
pub struct PyOutputSession {
    output: Local<Rc<OutputCell>>,
    capability: Py<PyAny>,
}

#[pymethods]
impl PyOutputSession {
    /// Sends one record.
    fn give(&self, py: Python<'_>, record: Py<PyAny>) -> PyResult<()> {
        send(&*self.output.get()?, self.capability.bind(py), &mut vec![Record(record)])
    }

    /// Sends every record of an iterable.
    fn give_all(&self, py: Python<'_>, records: &Bound<'_, PyAny>) -> PyResult<()> {
        give_iterable(&*self.output.get()?, self.capability.bind(py), records)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        false
    }
}
