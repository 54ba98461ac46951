//! `Notificator` and `NotificationItems`: the notifications of `unary_notify` and
//! `binary_notify` operators, as Python requests and receives them.

use crate::generic::capability::{Held, PyCapability, PyInputCapability};
use crate::generic::frontier::PyFrontier;
use crate::generic::local::Local;
use crate::generic::state::OpState;
use crate::time::{show, to_py, Time};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use std::cell::RefCell;
use std::rc::Rc;
use timely_engine::dataflow::operators::{Capability, FrontierNotificator};
use timely_engine::MutableAntichain;

/// An operator's notificator with the state of its operator.
pub struct NotifyCell {
    notificator: RefCell<FrontierNotificator<Time>>,
    op: Rc<OpState>,
}

impl NotifyCell {
    /// The notificator of the operator of `op`.
    pub fn new(op: &Rc<OpState>) -> Self {
        NotifyCell { notificator: RefCell::new(FrontierNotificator::new()), op: op.clone() }
    }

    fn request(&self, capability: Capability<Time>) -> PyResult<()> {
        self.notificator
            .try_borrow_mut()
            .map_err(|_| PyRuntimeError::new_err("the notificator is in use"))?
            .notify_at(capability);
        Ok(())
    }

    fn notify_at(&self, capability: &Bound<'_, PyAny>) -> PyResult<()> {
        self.op.ensure_live("the notificator")?;
        if let Ok(capability) = capability.cast::<PyCapability>() {
            let held = capability.try_borrow()?.take(&self.op, " (notify_at took it)")?;
            self.request(held.capability)
        } else if let Ok(capability) = capability.cast::<PyInputCapability>() {
            let received = capability.try_borrow()?.of(&self.op)?;
            self.request(received.capability.retain())
        } else {
            Err(PyTypeError::new_err("notify_at expects a Capability or an InputCapability"))
        }
    }

    fn next(&self) -> PyResult<Option<(PyCapability, usize)>> {
        self.op.ensure_live("the notificator")?;
        let frontiers = self.op.frontiers.borrow();
        let frontiers: Vec<&MutableAntichain<Time>> = frontiers.iter().collect();
        let next = self
            .notificator
            .try_borrow_mut()
            .map_err(|_| PyRuntimeError::new_err("the notificator is in use"))?
            .next_count(&frontiers);
        Ok(next
            .map(|(capability, count)| (PyCapability::new(Held { capability, op: self.op.clone() }), count)))
    }

    /// The pending times, sorted.
    fn pending(&self) -> Vec<Time> {
        let notificator = self.notificator.borrow();
        let mut times: Vec<Time> = notificator.pending().cloned().collect();
        times.sort();
        times
    }

    fn describe(&self) -> String {
        let pending = self.pending().iter().map(|t| show(t, self.op.depth)).collect::<Vec<_>>();
        format!("Notificator(operator='{}', pending=[{}])", self.op.name, pending.join(", "))
    }

    /// True if a requested notification is deliverable with the current frontiers.
    pub fn deliverable(&self) -> bool {
        let frontiers = self.op.frontiers.borrow();
        let notificator = self.notificator.borrow();
        let deliverable = notificator.pending().any(|t| !frontiers.iter().any(|f| f.less_equal(t)));
        deliverable
    }
}

/// Notifications of a `unary_notify`/`binary_notify` operator.
///
/// `notify_at(capability)` requests a notification at the capability's time, holding it
/// until then (a `Capability` is taken over; an `InputCapability` is retained). Iterating
/// (`for capability in notificator:`) delivers, in time order, every requested time that
/// no input frontier can still reach, each once, as a `Capability` for that time;
/// `items()` also yields how many requests each delivery merges. Requests made while
/// iterating are delivered in the same loop if already complete.
/// Valid only while the operator's logic runs.
#[pyclass(name = "Notificator", module = "timely_py._core")]
pub struct PyNotificator {
    inner: Local<Rc<NotifyCell>>,
}

impl PyNotificator {
    /// Hands `notify` to Python.
    pub fn new(notify: Rc<NotifyCell>) -> Self {
        PyNotificator { inner: Local::new("this Notificator", notify) }
    }
}

#[pymethods]
impl PyNotificator {
    /// Requests a notification once the input frontiers have passed `capability`'s time.
    fn notify_at(&self, capability: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.get()?.notify_at(capability)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self) -> PyResult<Option<PyCapability>> {
        Ok(self.inner.get()?.next()?.map(|(capability, _)| capability))
    }

    /// An iterator of `(capability, count)` for the deliverable notifications, in time
    /// order; `count` is the number of requests for that time.
    fn items(&self) -> PyResult<PyNotificationItems> {
        Ok(PyNotificationItems { inner: Local::new("this notification iterator", self.inner.get()?) })
    }

    /// The times of requested notifications not yet delivered, sorted.
    #[getter]
    fn pending<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let n = self.inner.get()?;
        n.op.ensure_live("the notificator")?;
        n.pending().iter().map(|t| to_py(py, t, n.op.depth)).collect()
    }

    /// The frontier of input `input` (0 or 1), as of the start of this run.
    #[pyo3(signature = (input=0))]
    fn frontier(&self, input: usize) -> PyResult<PyFrontier> {
        self.inner.get()?.op.frontier(input)
    }

    fn __repr__(&self) -> String {
        match self.inner.get() {
            Ok(inner) => inner.describe(),
            Err(_) => "Notificator(<another worker's>)".to_owned(),
        }
    }
}

/// Iterator over `(capability, count)` notifications (from `Notificator.items()`).
#[pyclass(name = "NotificationItems", module = "timely_py._core")]
pub struct PyNotificationItems {
    inner: Local<Rc<NotifyCell>>,
}

#[pymethods]
impl PyNotificationItems {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self) -> PyResult<Option<(PyCapability, usize)>> {
        self.inner.get()?.next()
    }
}
