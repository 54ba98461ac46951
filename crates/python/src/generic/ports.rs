//! `InputPort`, `OutputPort` and `OutputSession`: a generic operator's inputs and output as
//! Python uses them. Valid only while the operator's logic runs.

use crate::generic::capability::{Holds, PyCapability, PyInputCapability, Received};
use crate::generic::frontier::PyFrontier;
use crate::generic::local::Local;
use crate::generic::state::OpState;
use crate::record::Record;
use crate::time::{dispatch, Depth, Family, PyTime};
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
pub type Port<T> = InputPort<T, Record>;

/// The next batch of `port`, its records as a Python list.
fn batch<'py, T: PyTime, D: Data>(
    py: Python<'py>,
    port: &mut InputPort<T, D>,
    object: fn(D) -> Py<PyAny>,
) -> PyResult<Option<(InputCapability<T>, Bound<'py, PyList>)>> {
    match port.next() {
        None => Ok(None),
        Some((capability, data)) => Ok(Some((capability, PyList::new(py, data.drain(..).map(object))?))),
    }
}

/// An operator input with the state of its operator.
pub struct InputCell<T: PyTime> {
    port: RefCell<Port<T>>,
    index: usize,
    op: Rc<OpState<T>>,
}

impl<T: PyTime> InputCell<T> {
    /// Input `index` of the operator of `op`.
    pub fn new(port: Port<T>, index: usize, op: &Rc<OpState<T>>) -> Self {
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

/// The family of operator inputs, one per timestamp depth.
pub struct Inputs;

impl Family for Inputs {
    type At<T: PyTime> = Rc<InputCell<T>>;
}

/// An operator input. Iterate it for the batches received since the last run:
/// `for capability, records in input:` yields an `InputCapability` and a list of records.
/// The logic should consume every batch at each run. `frontier` (in frontier and notify
/// operators and sinks) is the input frontier. Valid only while the operator's logic runs.
#[pyclass(name = "InputPort", module = "timely_py._core")]
pub struct PyInputPort {
    inner: Local<Depth<Inputs>>,
}

impl PyInputPort {
    /// Hands `input` to Python.
    pub fn new<T: PyTime>(input: Rc<InputCell<T>>) -> Self {
        PyInputPort { inner: Local::new("this InputPort", T::wrap::<Inputs>(input)) }
    }
}

#[pymethods]
impl PyInputPort {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<(PyInputCapability, Bound<'py, PyList>)>> {
        dispatch!(&self.inner.get()?, input => input.next(py))
    }

    /// The input frontier (a `Frontier`), as of the start of this run. Raises
    /// `AttributeError` in operators that do not watch frontiers (`unary`, `binary`).
    #[getter]
    fn frontier(&self) -> PyResult<PyFrontier> {
        dispatch!(&self.inner.get()?, input => input.op.frontier(input.index))
    }

    fn __repr__(&self) -> String {
        match self.inner.get() {
            Ok(inner) => dispatch!(&inner, input => {
                format!("InputPort(operator='{}', input={})", input.op.name, input.index)
            }),
            Err(_) => "InputPort(<another worker's>)".to_owned(),
        }
    }
}

/// An operator output with the state of its operator.
pub struct OutputCell<T: PyTime> {
    port: RefCell<OutputPort<T, Record>>,
    op: Rc<OpState<T>>,
}

impl<T: PyTime> OutputCell<T> {
    /// The output of the operator of `op`.
    pub fn new(port: OutputPort<T, Record>, op: &Rc<OpState<T>>) -> Self {
        OutputCell { port: RefCell::new(port), op: op.clone() }
    }

    fn give<C: CapabilityRef<T>>(&self, capability: &C, data: &mut Vec<Record>) -> PyResult<()> {
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
            capability.try_borrow()?.with(|held| {
                let held = T::get::<Holds>(held).ok_or_else(|| self.op.wrong_operator())?;
                self.give(&held.capability, data)
            })
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

/// The family of operator outputs, one per timestamp depth.
pub struct Outputs;

impl Family for Outputs {
    type At<T: PyTime> = Rc<OutputCell<T>>;
}

fn send(output: &Depth<Outputs>, capability: &Bound<'_, PyAny>, data: &mut Vec<Record>) -> PyResult<()> {
    dispatch!(output, o => o.send(capability, data))
}

fn give_iterable(
    output: &Depth<Outputs>,
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
    inner: Local<Depth<Outputs>>,
}

impl PyOutputPort {
    /// Hands `output` to Python.
    pub fn new<T: PyTime>(output: Rc<OutputCell<T>>) -> Self {
        PyOutputPort { inner: Local::new("this OutputPort", T::wrap::<Outputs>(output)) }
    }
}

#[pymethods]
impl PyOutputPort {
    /// Sends `record` at the time of `capability`.
    fn give(&self, capability: &Bound<'_, PyAny>, record: Py<PyAny>) -> PyResult<()> {
        send(&self.inner.get()?, capability, &mut vec![Record(record)])
    }

    /// Sends every record of the iterable `records` at the time of `capability`.
    fn give_all(&self, capability: &Bound<'_, PyAny>, records: &Bound<'_, PyAny>) -> PyResult<()> {
        give_iterable(&self.inner.get()?, capability, records)
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
            Ok(inner) => dispatch!(&inner, o => format!("OutputPort(operator='{}')", o.op.name)),
            Err(_) => "OutputPort(<another worker's>)".to_owned(),
        }
    }
}

/// Sends records at one capability's time (from `OutputPort.session`).
#[pyclass(name = "OutputSession", module = "timely_py._core")]
pub struct PyOutputSession {
    output: Local<Depth<Outputs>>,
    capability: Py<PyAny>,
}

#[pymethods]
impl PyOutputSession {
    /// Sends one record.
    fn give(&self, py: Python<'_>, record: Py<PyAny>) -> PyResult<()> {
        send(&self.output.get()?, self.capability.bind(py), &mut vec![Record(record)])
    }

    /// Sends every record of an iterable.
    fn give_all(&self, py: Python<'_>, records: &Bound<'_, PyAny>) -> PyResult<()> {
        give_iterable(&self.output.get()?, self.capability.bind(py), records)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        false
    }
}
