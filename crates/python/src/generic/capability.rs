//! `Capability` and `InputCapability`: the rights to send at a time, as Python holds them.
//!
//! A `Capability` is valid until released, across runs of its operator: changing or
//! dropping one outside its operator's run activates the operator so that the change is
//! reported. An `InputCapability` is valid only during the run that received its records.
//! Ports and notificators resolve a Python capability argument here, to the engine's
//! capability of the right operator. A source's capabilities are also released when its
//! worker's process leaves the cluster (the engine releases its operator's capabilities,
//! `OperatorBuilder::release_on_leave`): using one then raises `LeavingError`.

use crate::errors::LeavingError;
use crate::generic::local::Local;
use crate::generic::state::OpState;
use crate::time::{from_py, show, to_py, Time};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::cell::RefCell;
use std::rc::Rc;
use timely_engine::dataflow::operators::{Capability, InputCapability};

/// An engine capability with the state of the operator it belongs to.
pub struct Held {
    pub capability: Capability<Time>,
    pub op: Rc<OpState>,
}

fn delayed(held: &Held, time: &Bound<'_, PyAny>) -> PyResult<PyCapability> {
    let time = from_py(time, held.op.depth)?;
    let capability = held
        .capability
        .try_delayed(&time)
        .map_err(|_| held.op.not_later("delayed", held.capability.time(), &time))?;
    held.op.changed();
    Ok(PyCapability::new(Held { capability, op: held.op.clone() }))
}

fn downgrade(held: &mut Held, time: &Bound<'_, PyAny>) -> PyResult<()> {
    let time = from_py(time, held.op.depth)?;
    let before = held.capability.time().clone();
    held.capability.try_downgrade(&time).map_err(|_| held.op.not_later("downgrade", &before, &time))?;
    held.op.changed();
    Ok(())
}

/// Why a capability is no longer held.
enum Gone {
    /// Released by Python, or taken over (the text says by what, after "released").
    Released(&'static str),
    /// Released because the worker's process is leaving; the source's name.
    Leaving(String),
}

/// A capability's state: held, or released (and why). A held capability of a source that
/// its worker's leave released (the engine's operator-wide release) counts as released.
struct CapSlot {
    held: Option<Held>,
    gone: Gone,
}

type CapCell = Rc<RefCell<CapSlot>>;

/// The error for using a capability of source `source` that its worker's leave released.
fn leaving(source: &str) -> PyErr {
    LeavingError::new_err(format!(
        "the capability of source '{}' was released because this worker's process is leaving \
         the cluster: the source should stop (return from its logic, or stop once \
         worker.leaving is True); what it gave before is delivered",
        source
    ))
}

impl CapSlot {
    fn held(&self) -> PyResult<&Held> {
        match (&self.held, &self.gone) {
            (Some(held), _) if held.capability.is_released() => Err(leaving(&held.op.name)),
            (Some(held), _) => Ok(held),
            (None, Gone::Released(why)) => {
                Err(PyValueError::new_err(format!("capability was released{}", why)))
            }
            (None, Gone::Leaving(source)) => Err(leaving(source)),
        }
    }

    /// True when no capability is held: released by Python, or by the worker's leave.
    fn is_released(&self) -> bool {
        self.held.as_ref().is_none_or(|held| held.capability.is_released())
    }

    /// Gives the capability up, activating its operator if that is not running. One the
    /// worker's leave released keeps that reason.
    fn release(&mut self) {
        if let Some(held) = self.held.take() {
            if held.capability.is_released() {
                self.gone = Gone::Leaving(held.op.name.clone());
            }
            held.op.changed();
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
    pub fn new(held: Held) -> Self {
        let slot = Rc::new(RefCell::new(CapSlot { held: Some(held), gone: Gone::Released("") }));
        PyCapability { slot: Local::new("this Capability", slot) }
    }

    /// Applies `f` to the held capability.
    pub fn with<R>(&self, f: impl FnOnce(&Held) -> PyResult<R>) -> PyResult<R> {
        let cell = self.slot.get()?;
        let slot = cell.try_borrow().map_err(|_| busy("the capability"))?;
        f(slot.held()?)
    }

    /// Takes the capability over from Python (which then sees it released, `gone` saying
    /// why), if it belongs to operator `op`.
    pub fn take(&self, op: &Rc<OpState>, gone: &'static str) -> PyResult<Held> {
        let cell = self.slot.get()?;
        let mut slot = cell.try_borrow_mut().map_err(|_| busy("the capability"))?;
        if !Rc::ptr_eq(&slot.held()?.op, op) {
            return Err(op.wrong_operator());
        }
        slot.gone = Gone::Released(gone);
        Ok(slot.held.take().expect("checked above"))
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
        self.with(|held| to_py(py, held.capability.time(), held.op.depth))
    }

    /// True once released.
    #[getter]
    fn released(&self) -> PyResult<bool> {
        Ok(self.slot.get()?.try_borrow().map_err(|_| busy("the capability"))?.is_released())
    }

    /// A new capability for `time`, which must be at or after this capability's time.
    fn delayed(&self, time: &Bound<'_, PyAny>) -> PyResult<PyCapability> {
        self.with(|held| delayed(held, time))
    }

    /// Moves this capability to `time`, which must be at or after its time.
    fn downgrade(&self, time: &Bound<'_, PyAny>) -> PyResult<()> {
        let cell = self.slot.get()?;
        let mut slot = cell.try_borrow_mut().map_err(|_| busy("the capability"))?;
        slot.held()?;
        downgrade(slot.held.as_mut().expect("checked above"), time)
    }

    /// Gives the capability up; using it afterwards raises `ValueError`. Releasing twice
    /// does nothing. A source's capabilities are also released when its worker's process
    /// leaves the cluster; using one then raises `LeavingError`.
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
        let describe = |slot: &CapSlot| slot.held().ok().map(|h| show(h.capability.time(), h.op.depth));
        match self.slot.get().ok().and_then(|cell| cell.try_borrow().ok().map(|slot| describe(&slot))) {
            Some(Some(time)) => format!("Capability(time={})", time),
            Some(None) => "Capability(released)".to_owned(),
            None => "Capability(<another worker's>)".to_owned(),
        }
    }
}

/// The capability of received records, valid during the run that received them.
pub struct Received {
    pub capability: InputCapability<Time>,
    pub op: Rc<OpState>,
    pub generation: u64,
}

impl Received {
    /// An error unless the run that received the records is still running.
    pub fn check(&self) -> PyResult<()> {
        if self.op.live.get() && self.op.generation.get() == self.generation {
            Ok(())
        } else {
            Err(PyRuntimeError::new_err(format!(
                "the input capability for time {} of operator '{}' is valid only during the run that received its records; call retain() then to keep a Capability",
                show(self.capability.time(), self.op.depth),
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
        let time = from_py(time, self.op.depth)?;
        let capability = self
            .capability
            .try_delayed(&time)
            .map_err(|_| self.op.not_later("delayed", self.capability.time(), &time))?;
        Ok(PyCapability::new(Held { capability, op: self.op.clone() }))
    }
}

/// The time of a batch of received records. Pass it to `output.give` to send at that
/// time; `retain()` or `delayed(t)` turn it into a `Capability` to keep. It is valid only
/// during the operator run that received the records.
#[pyclass(name = "InputCapability", module = "timely_py._core")]
pub struct PyInputCapability {
    inner: Local<Rc<Received>>,
}

impl PyInputCapability {
    /// Hands `received` to Python.
    pub fn new(received: Received) -> Self {
        PyInputCapability { inner: Local::new("this InputCapability", Rc::new(received)) }
    }

    /// The received capability, if it belongs to operator `op` and its run is still running.
    pub fn of(&self, op: &Rc<OpState>) -> PyResult<Rc<Received>> {
        let received = self.inner.get()?;
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
        let received = self.inner.get()?;
        to_py(py, received.capability.time(), received.op.depth)
    }

    /// A `Capability` for the records' time.
    fn retain(&self) -> PyResult<PyCapability> {
        self.inner.get()?.retain()
    }

    /// A `Capability` for `time`, which must be at or after the records' time.
    fn delayed(&self, time: &Bound<'_, PyAny>) -> PyResult<PyCapability> {
        self.inner.get()?.delayed(time)
    }

    fn __repr__(&self) -> String {
        match self.inner.get() {
            Ok(inner) => {
                format!("InputCapability(time={})", show(inner.capability.time(), inner.op.depth))
            }
            Err(_) => "InputCapability(<another worker's>)".to_owned(),
        }
    }
}
