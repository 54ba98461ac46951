//! `Capability` and `InputCapability`: the rights to send at a time, as Python holds them.
//!
//! A `Capability` is valid until released, across runs of its operator: changing or
//! dropping one outside its operator's run activates the operator so that the change is
//! reported. An `InputCapability` is valid only during the run that received its records.
//! Ports and notificators resolve a Python capability argument here, to the engine's
//! capability of the right depth and operator.

use crate::generic::local::Local;
use crate::generic::state::{not_later, OpState};
use crate::time::{dispatch, show, Depth, Family, PyTime};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::cell::RefCell;
use std::rc::Rc;
use timely_engine::dataflow::operators::{Capability, InputCapability};

/// An engine capability with the state of the operator it belongs to.
pub struct Held<T: PyTime> {
    pub capability: Capability<T>,
    pub op: Rc<OpState<T>>,
}

/// The family of held capabilities, one per timestamp depth.
pub struct Holds;

impl Family for Holds {
    type At<T: PyTime> = Held<T>;
}

fn delayed<T: PyTime>(held: &Held<T>, time: &Bound<'_, PyAny>) -> PyResult<PyCapability> {
    let time = T::from_py(time)?;
    let capability = held
        .capability
        .try_delayed(&time)
        .map_err(|_| not_later("delayed", held.capability.time(), &time))?;
    held.op.changed();
    Ok(PyCapability::new(Held { capability, op: held.op.clone() }))
}

fn downgrade<T: PyTime>(held: &mut Held<T>, time: &Bound<'_, PyAny>) -> PyResult<()> {
    let time = T::from_py(time)?;
    let before = held.capability.time().clone();
    held.capability.try_downgrade(&time).map_err(|_| not_later("downgrade", &before, &time))?;
    held.op.changed();
    Ok(())
}

/// A capability's state: held, or released (and why).
struct CapSlot {
    held: Option<Depth<Holds>>,
    gone: &'static str,
}

type CapCell = Rc<RefCell<CapSlot>>;

impl CapSlot {
    fn held(&self) -> PyResult<&Depth<Holds>> {
        self.held
            .as_ref()
            .ok_or_else(|| PyValueError::new_err(format!("capability was released{}", self.gone)))
    }

    /// Gives the capability up, activating its operator if that is not running.
    fn release(&mut self) {
        if let Some(held) = self.held.take() {
            dispatch!(&held, h => h.op.changed());
        }
    }
}

impl Drop for CapSlot {
    fn drop(&mut self) {
        self.release();
    }
}

/// The error for an object borrowed elsewhere right now.
fn busy(what: &str) -> PyErr {
    PyRuntimeError::new_err(format!("{} is in use", what))
}

/// The right to send records at a time (and later ones) from an operator's output.
///
/// The operator's initial capability is handed to its constructor; others come from
/// `InputCapability.retain()`/`delayed(t)`, from `delayed(t)`, and from notifications. A
/// capability stays valid across runs of its operator until released: by `release()`, at
/// the end of a `with` block, or when the object is garbage collected. While any worker
/// holds a capability for time `t`, downstream frontiers stay at or before `t`.
#[pyclass(name = "Capability", module = "timely_py._core")]
pub struct PyCapability {
    slot: Local<CapCell>,
}

impl PyCapability {
    /// Hands `held` to Python.
    pub fn new<T: PyTime>(held: Held<T>) -> Self {
        let slot = Rc::new(RefCell::new(CapSlot { held: Some(T::wrap::<Holds>(held)), gone: "" }));
        PyCapability { slot: Local::new("this Capability", slot) }
    }

    /// Applies `f` to the held capability.
    pub fn with<R>(&self, f: impl FnOnce(&Depth<Holds>) -> PyResult<R>) -> PyResult<R> {
        let cell = self.slot.get()?;
        let slot = cell.try_borrow().map_err(|_| busy("the capability"))?;
        f(slot.held()?)
    }

    /// Takes the capability over from Python (which then sees it released, `gone` saying
    /// why), if it belongs to operator `op`.
    pub fn take<T: PyTime>(&self, op: &Rc<OpState<T>>, gone: &'static str) -> PyResult<Held<T>> {
        let cell = self.slot.get()?;
        let mut slot = cell.try_borrow_mut().map_err(|_| busy("the capability"))?;
        match T::get::<Holds>(slot.held()?) {
            Some(held) if Rc::ptr_eq(&held.op, op) => {}
            _ => return Err(op.wrong_operator()),
        }
        slot.gone = gone;
        let held = slot.held.take().expect("checked above");
        T::take::<Holds>(held).map_err(|_| op.wrong_operator())
    }

    fn release_now(&self) -> PyResult<()> {
        let cell = self.slot.get()?;
        cell.try_borrow_mut().map_err(|_| busy("the capability"))?.release();
        Ok(())
    }
}

#[pymethods]
impl PyCapability {
    /// The time: an int at a dataflow's root, a tuple inside loops.
    #[getter]
    fn time<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.with(|held| dispatch!(held, h => h.capability.time().to_py(py)))
    }

    /// True once released.
    #[getter]
    fn released(&self) -> PyResult<bool> {
        Ok(self.slot.get()?.try_borrow().map_err(|_| busy("the capability"))?.held.is_none())
    }

    /// A new capability for `time`, which must be at or after this capability's time.
    fn delayed(&self, time: &Bound<'_, PyAny>) -> PyResult<PyCapability> {
        self.with(|held| dispatch!(held, h => delayed(h, time)))
    }

    /// Moves this capability to `time`, which must be at or after its time.
    fn downgrade(&self, time: &Bound<'_, PyAny>) -> PyResult<()> {
        let cell = self.slot.get()?;
        let mut slot = cell.try_borrow_mut().map_err(|_| busy("the capability"))?;
        slot.held()?;
        dispatch!(slot.held.as_mut().expect("checked above"), h => downgrade(h, time))
    }

    /// Gives the capability up; using it afterwards raises `ValueError`. Releasing twice
    /// does nothing.
    fn release(&self) -> PyResult<()> {
        self.release_now()
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        slf.with(|_| Ok(()))?;
        Ok(slf)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.release_now()?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let describe =
            |slot: &CapSlot| slot.held.as_ref().map(|h| dispatch!(h, h => show(h.capability.time())));
        match self.slot.get().ok().and_then(|cell| cell.try_borrow().ok().map(|slot| describe(&slot))) {
            Some(Some(time)) => format!("Capability(time={})", time),
            Some(None) => "Capability(released)".to_owned(),
            None => "Capability(<another worker's>)".to_owned(),
        }
    }
}

/// The capability of received records, valid during the run that received them.
pub struct Received<T: PyTime> {
    pub capability: InputCapability<T>,
    pub op: Rc<OpState<T>>,
    pub generation: u64,
}

/// The family of received capabilities, one per timestamp depth.
pub struct Receipts;

impl Family for Receipts {
    type At<T: PyTime> = Rc<Received<T>>;
}

impl<T: PyTime> Received<T> {
    /// An error unless the run that received the records is still running.
    pub fn check(&self) -> PyResult<()> {
        if self.op.live.get() && self.op.generation.get() == self.generation {
            Ok(())
        } else {
            Err(PyRuntimeError::new_err(format!(
                "the input capability for time {} of operator '{}' is valid only during the run that received its records; call retain() then to keep a Capability",
                show(self.capability.time()),
                self.op.name
            )))
        }
    }

    fn retain(&self) -> PyResult<PyCapability> {
        self.check()?;
        Ok(PyCapability::new(Held { capability: self.capability.retain(), op: self.op.clone() }))
    }

    fn delayed(&self, time: &Bound<'_, PyAny>) -> PyResult<PyCapability> {
        self.check()?;
        let time = T::from_py(time)?;
        let capability = self
            .capability
            .try_delayed(&time)
            .map_err(|_| not_later("delayed", self.capability.time(), &time))?;
        Ok(PyCapability::new(Held { capability, op: self.op.clone() }))
    }
}

/// The time of a batch of received records. Pass it to `output.give` to send at that
/// time; `retain()` or `delayed(t)` turn it into a `Capability` to keep. It is valid only
/// during the operator run that received the records.
#[pyclass(name = "InputCapability", module = "timely_py._core")]
pub struct PyInputCapability {
    inner: Local<Depth<Receipts>>,
}

impl PyInputCapability {
    /// Hands `received` to Python.
    pub fn new<T: PyTime>(received: Received<T>) -> Self {
        PyInputCapability {
            inner: Local::new("this InputCapability", T::wrap::<Receipts>(Rc::new(received))),
        }
    }

    /// The received capability, if it belongs to operator `op` and its run is still running.
    pub fn of<T: PyTime>(&self, op: &Rc<OpState<T>>) -> PyResult<Rc<Received<T>>> {
        let inner = self.inner.get()?;
        let received = T::take::<Receipts>(inner).map_err(|_| op.wrong_operator())?;
        if !Rc::ptr_eq(&received.op, op) {
            return Err(op.wrong_operator());
        }
        received.check()?;
        Ok(received)
    }
}

#[pymethods]
impl PyInputCapability {
    /// The records' time: an int at a dataflow's root, a tuple inside loops.
    #[getter]
    fn time<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        dispatch!(&self.inner.get()?, r => r.capability.time().to_py(py))
    }

    /// A `Capability` for the records' time.
    fn retain(&self) -> PyResult<PyCapability> {
        dispatch!(&self.inner.get()?, r => r.retain())
    }

    /// A `Capability` for `time`, which must be at or after the records' time.
    fn delayed(&self, time: &Bound<'_, PyAny>) -> PyResult<PyCapability> {
        dispatch!(&self.inner.get()?, r => r.delayed(time))
    }

    fn __repr__(&self) -> String {
        match self.inner.get() {
            Ok(inner) => {
                format!("InputCapability(time={})", dispatch!(&inner, r => show(r.capability.time())))
            }
            Err(_) => "InputCapability(<another worker's>)".to_owned(),
        }
    }
}
