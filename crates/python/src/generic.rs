//! Generic operators from Python: `source`, `sink`, `unary`, `unary_frontier`,
//! `unary_notify`, `binary`, `binary_frontier`, `binary_notify`, with capabilities,
//! input and output ports, frontiers and notificators exposed as Python objects.
//!
//! Every operator is built with the engine's `OperatorBuilder`. The engine's ports,
//! notificator and the snapshot of the input frontiers live in reference-counted cells
//! shared by the operator's closure and the Python wrappers (`InputPort`, `OutputPort`,
//! `Notificator`). The wrappers are created once per operator and handed to the logic at
//! every run; they work only while the operator's logic runs and raise `RuntimeError`
//! otherwise, so a wrapper kept past its call fails clearly instead of touching the engine
//! at the wrong moment. An `InputCapability` is valid only during the run that received its
//! records. A `Capability` is valid until released, across runs: changing or dropping one
//! outside its operator's run activates the operator so that the change is reported.
//!
//! The wrappers' engine state stays on its worker's thread (`Local`): the Python objects
//! themselves are sendable shells, which raise when used on another thread and, when an
//! exception carries them to the caller of `execute`, can be dropped there harmlessly.
//!
//! Python sees no timestamp type: every wrapper holds a trait object implemented for each
//! timestamp depth `T`, and converts times with `PyTime`.

use crate::errors::{add_note, catch_panic, DataflowError, WorkerContext};
use crate::record::{Record, Routed};
use crate::scope::{Nest, PyScope, ScopeHandle};
use crate::stream::{PyStream, StreamHandle, StreamObj};
use crate::time::PyTime;
use pyo3::exceptions::{PyAttributeError, PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::any::Any;
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Mutex;
use std::thread::ThreadId;
use timely_engine::dataflow::channels::Data;
use timely_engine::dataflow::operators::{
    Capability, CapabilityError, CapabilityRef, FrontierNotificator, InputCapability, InputPort,
    OperatorBuilder, OutputPort,
};
use timely_engine::dataflow::{Exchange, Pipeline, Scope, Stream};
use timely_engine::scheduling::Activator;
use timely_engine::MutableAntichain;

/// Records per batch when `give_all` consumes an iterable.
const GIVE_BATCH: usize = 1024;

// ---------------------------------------------------------------------------------------
// Operator state shared by the closure and the Python wrappers.

/// What an operator's logic sees besides its ports.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// No frontiers; not scheduled for frontier changes alone.
    Plain,
    /// Input frontiers visible (`input.frontier`); scheduled when they change.
    Frontier,
    /// Like `Frontier`, with a notificator.
    Notify,
}

/// What to build.
pub struct Spec {
    /// The operator's name.
    pub name: String,
    /// Frontier visibility and notifications.
    pub kind: Kind,
    /// `constructor(capability, info) -> logic` if `constructed`, else the logic itself.
    pub callable: Py<PyAny>,
    /// Whether `callable` is a constructor.
    pub constructed: bool,
    /// Per input: None (pipeline) or a key function (exchange to the worker `route(key(x))`).
    pub exchanges: Vec<Option<Py<PyAny>>>,
    /// Whether the operator has an output.
    pub output: bool,
}

/// The state of one operator that its Python wrappers share.
struct OpState<T: PyTime> {
    name: String,
    /// True while the operator's logic runs.
    live: Cell<bool>,
    /// Number of completed runs; input capabilities are valid in their run only.
    generation: Cell<u64>,
    activator: Activator,
    /// Whether the logic may see its input frontiers.
    watch: bool,
    /// The input frontiers at the start of the current run (if `watch`).
    frontiers: RefCell<Vec<MutableAntichain<T>>>,
}

impl<T: PyTime> OpState<T> {
    fn ensure_live(&self, what: &str) -> PyResult<()> {
        if self.live.get() {
            Ok(())
        } else {
            Err(PyRuntimeError::new_err(format!(
                "{} of operator '{}' can only be used while the operator's logic runs",
                what, self.name
            )))
        }
    }

    fn begin(&self, frontiers: &[MutableAntichain<T>]) {
        if self.watch {
            let mut mine = self.frontiers.borrow_mut();
            for (mine, current) in mine.iter_mut().zip(frontiers) {
                mine.clone_from(current);
            }
        }
        self.live.set(true);
    }

    fn end(&self) {
        self.live.set(false);
        self.generation.set(self.generation.get() + 1);
    }

    /// A capability changed: outside the operator's run, schedule the operator so that
    /// the change reaches progress tracking.
    fn changed(&self) {
        if !self.live.get() {
            self.activator.activate();
        }
    }

    fn frontier(&self, input: usize) -> PyResult<PyFrontier> {
        if !self.watch {
            return Err(PyAttributeError::new_err(format!(
                "operator '{}' does not watch its input frontiers: use the _frontier or _notify variant (or sink) to see them",
                self.name
            )));
        }
        self.ensure_live("the frontier")?;
        let frontiers = self.frontiers.borrow();
        let frontier = frontiers.get(input).ok_or_else(|| {
            PyIndexError::new_err(format!(
                "operator '{}' has {} input(s), not input {}",
                self.name,
                frontiers.len(),
                input
            ))
        })?;
        let mut elements = frontier.frontier().to_vec();
        elements.sort();
        Ok(PyFrontier::new(Box::new(Snapshot(elements))))
    }

    fn wrong_operator(&self) -> PyErr {
        PyValueError::new_err(format!("the capability belongs to another operator, not to '{}'", self.name))
    }
}

/// Python objects owned by an operator's closure. The engine drops finished operators while
/// stepping, detached from the interpreter, where dropping a `Py` only queues its release
/// for whichever thread attaches next: possibly another worker, which must not free this
/// worker's objects (user state, unsendable objects of other modules). This guard releases
/// them on the dropping thread, attached.
struct Attached<T>(Option<T>);

impl<T> Attached<T> {
    fn new(value: T) -> Self {
        Attached(Some(value))
    }

    fn get(&self) -> &T {
        self.0.as_ref().expect("present until dropped")
    }
}

impl<T> Drop for Attached<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            Python::attach(|_py| drop(value));
        }
    }
}

thread_local! {
    static THREAD: ThreadId = std::thread::current().id();
    static LOCALS: RefCell<HashMap<u64, Box<dyn Any>>> = RefCell::new(HashMap::new());
    static NEXT_LOCAL: Cell<u64> = const { Cell::new(0) };
}

/// This thread's id (None while the thread's locals are being destroyed).
fn this_thread() -> Option<ThreadId> {
    THREAD.try_with(|id| *id).ok()
}

/// A value that stays on the worker thread that created it. The Python wrappers of ports,
/// capabilities and operator facts hold only its key, so they are ordinary (sendable)
/// Python objects: used on another thread they raise, and if an exception carries one to
/// the caller of `execute` (user callbacks in its traceback), dropping it there leaves the
/// value to its own thread, which drops it when it ends.
struct Local<T: Clone + 'static> {
    owner: ThreadId,
    key: u64,
    what: &'static str,
    marker: PhantomData<fn() -> T>,
}

impl<T: Clone + 'static> Local<T> {
    fn new(what: &'static str, value: T) -> Self {
        let key = NEXT_LOCAL.with(|next| {
            let key = next.get();
            next.set(key + 1);
            key
        });
        LOCALS.with(|locals| locals.borrow_mut().insert(key, Box::new(value)));
        Local { owner: std::thread::current().id(), key, what, marker: PhantomData }
    }

    fn get(&self) -> PyResult<T> {
        if this_thread() != Some(self.owner) {
            return Err(PyRuntimeError::new_err(format!(
                "{} belongs to another worker: use it only on the worker (thread) whose operator made it",
                self.what
            )));
        }
        LOCALS
            .with(|locals| {
                locals.borrow().get(&self.key).and_then(|value| value.downcast_ref::<T>()).cloned()
            })
            .ok_or_else(|| PyRuntimeError::new_err(format!("{} is no longer available", self.what)))
    }
}

impl<T: Clone + 'static> Drop for Local<T> {
    fn drop(&mut self) {
        if this_thread() == Some(self.owner) {
            let value = LOCALS.try_with(|locals| locals.borrow_mut().remove(&self.key)).ok().flatten();
            drop(value);
        }
    }
}

/// A time as Python would print it: `3` or `(3, 1)`.
fn show<T: PyTime>(time: &T) -> String {
    let mut coordinates = Vec::new();
    time.write(&mut coordinates);
    if coordinates.len() == 1 {
        coordinates[0].to_string()
    } else {
        format!("({})", coordinates.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", "))
    }
}

fn not_later<T: PyTime>(what: &str, held: &T, requested: &T) -> PyErr {
    PyValueError::new_err(format!(
        "{}: time {} is not at or after the capability's time {}",
        what,
        show(requested),
        show(held)
    ))
}

// ---------------------------------------------------------------------------------------
// Frontiers.

trait FrontierObj: Send {
    fn less_than(&self, time: &Bound<'_, PyAny>) -> PyResult<bool>;
    fn less_equal(&self, time: &Bound<'_, PyAny>) -> PyResult<bool>;
    fn elements<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>>;
    fn len(&self) -> usize;
    fn describe(&self) -> String;
}

/// The elements of a frontier, sorted.
struct Snapshot<T: PyTime>(Vec<T>);

impl<T: PyTime> FrontierObj for Snapshot<T> {
    fn less_than(&self, time: &Bound<'_, PyAny>) -> PyResult<bool> {
        let time = T::from_py(time)?;
        Ok(self.0.iter().any(|e| e.less_than(&time)))
    }
    fn less_equal(&self, time: &Bound<'_, PyAny>) -> PyResult<bool> {
        let time = T::from_py(time)?;
        Ok(self.0.iter().any(|e| e.less_equal(&time)))
    }
    fn elements<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.0.iter().map(|t| t.to_py(py)).collect()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn describe(&self) -> String {
        format!("[{}]", self.0.iter().map(show).collect::<Vec<_>>().join(", "))
    }
}

/// An input frontier: the minimal times at which records may still arrive, as of the
/// start of the operator's current run. An empty frontier means no more records at all.
///
/// `len(frontier)` counts its elements, so `bool(frontier)` is False once it is empty.
#[pyclass(name = "Frontier", module = "timely_py._core")]
pub struct PyFrontier {
    inner: Mutex<Box<dyn FrontierObj>>,
}

impl PyFrontier {
    fn new(inner: Box<dyn FrontierObj>) -> Self {
        PyFrontier { inner: Mutex::new(inner) }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Box<dyn FrontierObj>> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[pymethods]
impl PyFrontier {
    /// True if records at some time strictly before `time` may still arrive.
    fn less_than(&self, time: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.inner().less_than(time)
    }

    /// True if records at some time at or before `time` may still arrive (so `time` is
    /// not complete yet).
    fn less_equal(&self, time: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.inner().less_equal(time)
    }

    /// True once no more records can arrive.
    #[getter]
    fn empty(&self) -> bool {
        self.inner().len() == 0
    }

    /// The frontier's times, sorted.
    #[getter]
    fn elements<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.inner().elements(py)
    }

    fn __len__(&self) -> usize {
        self.inner().len()
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PyList::new(py, self.inner().elements(py)?)?.try_iter().map(|i| i.into_any())
    }

    fn __repr__(&self) -> String {
        format!("Frontier({})", self.inner().describe())
    }
}

// ---------------------------------------------------------------------------------------
// Capabilities.

trait CapObj {
    fn as_any(&self) -> &dyn Any;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
    fn time<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>>;
    fn describe(&self) -> String;
    fn delayed(&self, time: &Bound<'_, PyAny>) -> PyResult<Box<dyn CapObj>>;
    fn downgrade(&mut self, time: &Bound<'_, PyAny>) -> PyResult<()>;
    /// Called before the capability is dropped.
    fn releasing(&self);
}

/// An engine capability with the state of the operator it belongs to.
struct Held<T: PyTime> {
    capability: Capability<T>,
    op: Rc<OpState<T>>,
}

impl<T: PyTime> CapObj for Held<T> {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
    fn time<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.capability.time().to_py(py)
    }
    fn describe(&self) -> String {
        show(self.capability.time())
    }
    fn delayed(&self, time: &Bound<'_, PyAny>) -> PyResult<Box<dyn CapObj>> {
        let time = T::from_py(time)?;
        let capability = self
            .capability
            .try_delayed(&time)
            .map_err(|_| not_later("delayed", self.capability.time(), &time))?;
        self.op.changed();
        Ok(Box::new(Held { capability, op: self.op.clone() }))
    }
    fn downgrade(&mut self, time: &Bound<'_, PyAny>) -> PyResult<()> {
        let time = T::from_py(time)?;
        let held = self.capability.time().clone();
        self.capability.try_downgrade(&time).map_err(|_| not_later("downgrade", &held, &time))?;
        self.op.changed();
        Ok(())
    }
    fn releasing(&self) {
        self.op.changed();
    }
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

/// A capability's state: held, or released (and why).
struct CapSlot {
    held: Option<Box<dyn CapObj>>,
    gone: &'static str,
}

type CapCell = Rc<RefCell<CapSlot>>;

impl CapSlot {
    fn held(&self) -> PyResult<&dyn CapObj> {
        self.held
            .as_deref()
            .ok_or_else(|| PyValueError::new_err(format!("capability was released{}", self.gone)))
    }
}

impl Drop for CapSlot {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            held.releasing();
        }
    }
}

fn busy(what: &str) -> PyErr {
    PyRuntimeError::new_err(format!("{} is in use", what))
}

impl PyCapability {
    fn new(inner: Box<dyn CapObj>) -> Self {
        let slot = Rc::new(RefCell::new(CapSlot { held: Some(inner), gone: "" }));
        PyCapability { slot: Local::new("this Capability", slot) }
    }

    fn cell(&self) -> PyResult<CapCell> {
        self.slot.get()
    }

    /// Applies `f` to the held capability.
    fn with<R>(&self, f: impl FnOnce(&dyn CapObj) -> PyResult<R>) -> PyResult<R> {
        let cell = self.cell()?;
        let slot = cell.try_borrow().map_err(|_| busy("the capability"))?;
        f(slot.held()?)
    }

    fn release_now(&self) -> PyResult<()> {
        let cell = self.cell()?;
        let taken = cell.try_borrow_mut().map_err(|_| busy("the capability"))?.held.take();
        if let Some(held) = taken {
            held.releasing();
        }
        Ok(())
    }
}

#[pymethods]
impl PyCapability {
    /// The time: an int at a dataflow's root, a tuple inside loops.
    #[getter]
    fn time<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.with(|held| held.time(py))
    }

    /// True once released.
    #[getter]
    fn released(&self) -> PyResult<bool> {
        Ok(self.cell()?.try_borrow().map_err(|_| busy("the capability"))?.held.is_none())
    }

    /// A new capability for `time`, which must be at or after this capability's time.
    fn delayed(&self, time: &Bound<'_, PyAny>) -> PyResult<PyCapability> {
        Ok(PyCapability::new(self.with(|held| held.delayed(time))?))
    }

    /// Moves this capability to `time`, which must be at or after its time.
    fn downgrade(&self, time: &Bound<'_, PyAny>) -> PyResult<()> {
        let cell = self.cell()?;
        let mut slot = cell.try_borrow_mut().map_err(|_| busy("the capability"))?;
        slot.held()?;
        slot.held.as_mut().expect("checked above").downgrade(time)
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
        match self
            .cell()
            .ok()
            .and_then(|cell| cell.try_borrow().ok().map(|slot| slot.held.as_ref().map(|h| h.describe())))
        {
            Some(Some(time)) => format!("Capability(time={})", time),
            Some(None) => "Capability(released)".to_owned(),
            None => "Capability(<another worker's>)".to_owned(),
        }
    }
}

trait InputCapObj {
    fn as_any(&self) -> &dyn Any;
    fn time<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>>;
    fn describe(&self) -> String;
    fn retain(&self) -> PyResult<Box<dyn CapObj>>;
    fn delayed(&self, time: &Bound<'_, PyAny>) -> PyResult<Box<dyn CapObj>>;
}

/// The capability of received records, valid during the run that received them.
struct Received<T: PyTime> {
    capability: InputCapability<T>,
    op: Rc<OpState<T>>,
    generation: u64,
}

impl<T: PyTime> Received<T> {
    fn check(&self) -> PyResult<()> {
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
}

impl<T: PyTime> InputCapObj for Received<T> {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn time<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.capability.time().to_py(py)
    }
    fn describe(&self) -> String {
        show(self.capability.time())
    }
    fn retain(&self) -> PyResult<Box<dyn CapObj>> {
        self.check()?;
        Ok(Box::new(Held { capability: self.capability.retain(), op: self.op.clone() }))
    }
    fn delayed(&self, time: &Bound<'_, PyAny>) -> PyResult<Box<dyn CapObj>> {
        self.check()?;
        let time = T::from_py(time)?;
        let capability = self
            .capability
            .try_delayed(&time)
            .map_err(|_| not_later("delayed", self.capability.time(), &time))?;
        Ok(Box::new(Held { capability, op: self.op.clone() }))
    }
}

/// The time of a batch of received records. Pass it to `output.give` to send at that
/// time; `retain()` or `delayed(t)` turn it into a `Capability` to keep. It is valid only
/// during the operator run that received the records.
#[pyclass(name = "InputCapability", module = "timely_py._core")]
pub struct PyInputCapability {
    inner: Local<Rc<dyn InputCapObj>>,
}

impl PyInputCapability {
    fn new(inner: Rc<dyn InputCapObj>) -> Self {
        PyInputCapability { inner: Local::new("this InputCapability", inner) }
    }
}

#[pymethods]
impl PyInputCapability {
    /// The records' time: an int at a dataflow's root, a tuple inside loops.
    #[getter]
    fn time<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.inner.get()?.time(py)
    }

    /// A `Capability` for the records' time.
    fn retain(&self) -> PyResult<PyCapability> {
        Ok(PyCapability::new(self.inner.get()?.retain()?))
    }

    /// A `Capability` for `time`, which must be at or after the records' time.
    fn delayed(&self, time: &Bound<'_, PyAny>) -> PyResult<PyCapability> {
        Ok(PyCapability::new(self.inner.get()?.delayed(time)?))
    }

    fn __repr__(&self) -> String {
        match self.inner.get() {
            Ok(inner) => format!("InputCapability(time={})", inner.describe()),
            Err(_) => "InputCapability(<another worker's>)".to_owned(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Input ports.

/// What an input port receives: records, or records with their routing hash.
trait Payload: Data {
    fn object(self) -> Py<PyAny>;
}

impl Payload for Record {
    #[inline]
    fn object(self) -> Py<PyAny> {
        self.0
    }
}

impl Payload for Routed {
    #[inline]
    fn object(self) -> Py<PyAny> {
        (self.1).0
    }
}

trait InputObj {
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Option<(PyInputCapability, Bound<'py, PyList>)>>;
    fn frontier(&self) -> PyResult<PyFrontier>;
    fn describe(&self) -> String;
    /// Drops whatever arrived (after a failure).
    fn drain(&self);
}

struct InputCell<T: PyTime, D: Payload> {
    port: RefCell<InputPort<T, D>>,
    index: usize,
    op: Rc<OpState<T>>,
}

impl<T: PyTime, D: Payload> InputObj for InputCell<T, D> {
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Option<(PyInputCapability, Bound<'py, PyList>)>> {
        self.op.ensure_live("the input")?;
        let mut port = self.port.try_borrow_mut().map_err(|_| {
            PyRuntimeError::new_err(format!("the input of operator '{}' is in use", self.op.name))
        })?;
        match port.next() {
            None => Ok(None),
            Some((capability, data)) => {
                let records = PyList::new(py, data.drain(..).map(Payload::object))?;
                let received =
                    Received { capability, op: self.op.clone(), generation: self.op.generation.get() };
                Ok(Some((PyInputCapability::new(Rc::new(received)), records)))
            }
        }
    }

    fn frontier(&self) -> PyResult<PyFrontier> {
        self.op.frontier(self.index)
    }

    fn describe(&self) -> String {
        format!("InputPort(operator='{}', input={})", self.op.name, self.index)
    }

    fn drain(&self) {
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
    inner: Local<Rc<dyn InputObj>>,
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
        self.inner.get()?.frontier()
    }

    fn __repr__(&self) -> String {
        self.inner
            .get()
            .map(|inner| inner.describe())
            .unwrap_or_else(|_| "InputPort(<another worker's>)".to_owned())
    }
}

// ---------------------------------------------------------------------------------------
// Output ports.

trait OutputObj {
    fn send(&self, capability: &Bound<'_, PyAny>, data: &mut Vec<Record>) -> PyResult<()>;
    fn describe(&self) -> String;
}

struct OutputCell<T: PyTime> {
    port: RefCell<OutputPort<T, Record>>,
    op: Rc<OpState<T>>,
}

impl<T: PyTime> OutputCell<T> {
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
}

impl<T: PyTime> OutputObj for OutputCell<T> {
    fn send(&self, capability: &Bound<'_, PyAny>, data: &mut Vec<Record>) -> PyResult<()> {
        self.op.ensure_live("the output")?;
        if let Ok(capability) = capability.cast::<PyCapability>() {
            capability.try_borrow()?.with(|held| {
                let held = held.as_any().downcast_ref::<Held<T>>().ok_or_else(|| self.op.wrong_operator())?;
                self.give(&held.capability, data)
            })
        } else if let Ok(capability) = capability.cast::<PyInputCapability>() {
            let capability = capability.try_borrow()?.inner.get()?;
            let received =
                capability.as_any().downcast_ref::<Received<T>>().ok_or_else(|| self.op.wrong_operator())?;
            if !Rc::ptr_eq(&received.op, &self.op) {
                return Err(self.op.wrong_operator());
            }
            received.check()?;
            self.give(&received.capability, data)
        } else {
            Err(PyTypeError::new_err(format!(
                "expected a Capability or an InputCapability, got {}",
                capability.repr().map(|r| r.to_string()).unwrap_or_else(|_| "an unprintable object".into())
            )))
        }
    }

    fn describe(&self) -> String {
        format!("OutputPort(operator='{}')", self.op.name)
    }
}

fn give_iterable(
    output: &dyn OutputObj,
    capability: &Bound<'_, PyAny>,
    records: &Bound<'_, PyAny>,
) -> PyResult<()> {
    // Checks the capability even when the iterable is empty.
    let mut batch = Vec::new();
    output.send(capability, &mut batch)?;
    // The iterable may run Python code: the port is borrowed only while a batch is sent.
    for item in records.try_iter()? {
        batch.push(Record(item?.unbind()));
        if batch.len() >= GIVE_BATCH {
            output.send(capability, &mut batch)?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        output.send(capability, &mut batch)?;
    }
    Ok(())
}

/// An operator output. `give(capability, record)` and `give_all(capability, records)`
/// send at the time of `capability`, a `Capability` or `InputCapability` of this operator.
/// Valid only while the operator's logic runs.
#[pyclass(name = "OutputPort", module = "timely_py._core")]
pub struct PyOutputPort {
    inner: Local<Rc<dyn OutputObj>>,
}

#[pymethods]
impl PyOutputPort {
    /// Sends `record` at the time of `capability`.
    fn give(&self, capability: &Bound<'_, PyAny>, record: Py<PyAny>) -> PyResult<()> {
        self.inner.get()?.send(capability, &mut vec![Record(record)])
    }

    /// Sends every record of the iterable `records` at the time of `capability`.
    fn give_all(&self, capability: &Bound<'_, PyAny>, records: &Bound<'_, PyAny>) -> PyResult<()> {
        give_iterable(&*self.inner.get()?, capability, records)
    }

    /// A session sending at the time of `capability`; use it as a context manager:
    /// `with output.session(cap) as session: session.give(x)`.
    fn session(&self, capability: &Bound<'_, PyAny>) -> PyResult<PyOutputSession> {
        let output = self.inner.get()?;
        output.send(capability, &mut Vec::new())?;
        Ok(PyOutputSession {
            output: Local::new("this output session", output),
            capability: capability.clone().unbind(),
        })
    }

    fn __repr__(&self) -> String {
        self.inner
            .get()
            .map(|inner| inner.describe())
            .unwrap_or_else(|_| "OutputPort(<another worker's>)".to_owned())
    }
}

/// Sends records at one capability's time (from `OutputPort.session`).
#[pyclass(name = "OutputSession", module = "timely_py._core")]
pub struct PyOutputSession {
    output: Local<Rc<dyn OutputObj>>,
    capability: Py<PyAny>,
}

#[pymethods]
impl PyOutputSession {
    /// Sends one record.
    fn give(&self, py: Python<'_>, record: Py<PyAny>) -> PyResult<()> {
        self.output.get()?.send(self.capability.bind(py), &mut vec![Record(record)])
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

// ---------------------------------------------------------------------------------------
// Notificators.

trait NotifyObj {
    fn notify_at(&self, capability: &Bound<'_, PyAny>) -> PyResult<()>;
    fn next(&self) -> PyResult<Option<(PyCapability, usize)>>;
    fn pending<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>>;
    fn frontier(&self, input: usize) -> PyResult<PyFrontier>;
    fn describe(&self) -> String;
    /// True if a requested notification is deliverable with the current frontiers.
    fn deliverable(&self) -> bool;
}

struct NotifyCell<T: PyTime> {
    notificator: RefCell<FrontierNotificator<T>>,
    op: Rc<OpState<T>>,
}

impl<T: PyTime> NotifyCell<T> {
    fn request(&self, capability: Capability<T>) -> PyResult<()> {
        self.notificator
            .try_borrow_mut()
            .map_err(|_| PyRuntimeError::new_err("the notificator is in use"))?
            .notify_at(capability);
        Ok(())
    }
}

impl<T: PyTime> NotifyObj for NotifyCell<T> {
    fn notify_at(&self, capability: &Bound<'_, PyAny>) -> PyResult<()> {
        self.op.ensure_live("the notificator")?;
        if let Ok(capability) = capability.cast::<PyCapability>() {
            let cell = capability.try_borrow()?.cell()?;
            let inner = {
                let mut slot = cell.try_borrow_mut().map_err(|_| busy("the capability"))?;
                match slot.held()?.as_any().downcast_ref::<Held<T>>() {
                    Some(held) if Rc::ptr_eq(&held.op, &self.op) => {}
                    _ => return Err(self.op.wrong_operator()),
                }
                slot.gone = " (notify_at took it)";
                slot.held.take().expect("checked above")
            };
            let held = inner.into_any().downcast::<Held<T>>().map_err(|_| self.op.wrong_operator())?;
            self.request(held.capability)
        } else if let Ok(capability) = capability.cast::<PyInputCapability>() {
            let capability = capability.try_borrow()?.inner.get()?;
            let received =
                capability.as_any().downcast_ref::<Received<T>>().ok_or_else(|| self.op.wrong_operator())?;
            if !Rc::ptr_eq(&received.op, &self.op) {
                return Err(self.op.wrong_operator());
            }
            received.check()?;
            self.request(received.capability.retain())
        } else {
            Err(PyTypeError::new_err("notify_at expects a Capability or an InputCapability"))
        }
    }

    fn next(&self) -> PyResult<Option<(PyCapability, usize)>> {
        self.op.ensure_live("the notificator")?;
        let frontiers = self.op.frontiers.borrow();
        let frontiers: Vec<&MutableAntichain<T>> = frontiers.iter().collect();
        let next = self
            .notificator
            .try_borrow_mut()
            .map_err(|_| PyRuntimeError::new_err("the notificator is in use"))?
            .next_count(&frontiers);
        Ok(next.map(|(capability, count)| {
            (PyCapability::new(Box::new(Held { capability, op: self.op.clone() })), count)
        }))
    }

    fn pending<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.op.ensure_live("the notificator")?;
        let notificator = self.notificator.borrow();
        let mut times: Vec<&T> = notificator.pending().collect();
        times.sort();
        times.into_iter().map(|t| t.to_py(py)).collect()
    }

    fn frontier(&self, input: usize) -> PyResult<PyFrontier> {
        self.op.frontier(input)
    }

    fn describe(&self) -> String {
        let notificator = self.notificator.borrow();
        let mut times: Vec<&T> = notificator.pending().collect();
        times.sort();
        format!(
            "Notificator(operator='{}', pending=[{}])",
            self.op.name,
            times.into_iter().map(show).collect::<Vec<_>>().join(", ")
        )
    }

    fn deliverable(&self) -> bool {
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
    inner: Local<Rc<dyn NotifyObj>>,
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
        self.inner.get()?.pending(py)
    }

    /// The frontier of input `input` (0 or 1), as of the start of this run.
    #[pyo3(signature = (input=0))]
    fn frontier(&self, input: usize) -> PyResult<PyFrontier> {
        self.inner.get()?.frontier(input)
    }

    fn __repr__(&self) -> String {
        self.inner
            .get()
            .map(|inner| inner.describe())
            .unwrap_or_else(|_| "Notificator(<another worker's>)".to_owned())
    }
}

/// Iterator over `(capability, count)` notifications (from `Notificator.items()`).
#[pyclass(name = "NotificationItems", module = "timely_py._core")]
pub struct PyNotificationItems {
    inner: Local<Rc<dyn NotifyObj>>,
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

// ---------------------------------------------------------------------------------------
// Operator facts.

/// Facts about an operator, handed to its constructor.
#[pyclass(name = "OperatorInfo", module = "timely_py._core")]
pub struct PyOperatorInfo {
    name: String,
    index: usize,
    address: Vec<usize>,
    worker: usize,
    peers: usize,
    activator: Local<Activator>,
}

#[pymethods]
impl PyOperatorInfo {
    /// The operator's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The operator's index in its scope.
    #[getter]
    fn index(&self) -> usize {
        self.index
    }

    /// The operator's address: the indices of its enclosing scopes and its own.
    #[getter]
    fn address(&self) -> Vec<usize> {
        self.address.clone()
    }

    /// This worker's index.
    #[getter]
    fn worker(&self) -> usize {
        self.worker
    }

    /// The number of workers.
    #[getter]
    fn peers(&self) -> usize {
        self.peers
    }

    /// Schedules the operator at the worker's next step (a source's logic runs only at
    /// start and when activated).
    fn activate(&self) -> PyResult<()> {
        self.activator.get()?.activate();
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!(
            "OperatorInfo(name='{}', index={}, address={:?}, worker={}, peers={})",
            self.name, self.index, self.address, self.worker, self.peers
        )
    }
}

// ---------------------------------------------------------------------------------------
// Building operators.

/// An operator input's stream: as is (pipeline), or with routing hashes (exchange).
enum Feed<T: PyTime> {
    Pipelined(Stream<T, Record>),
    Hashed(Stream<T, Routed>),
}

fn input_cell<T: PyTime, D: Payload>(
    port: InputPort<T, D>,
    index: usize,
    op: &Rc<OpState<T>>,
) -> Rc<dyn InputObj> {
    Rc::new(InputCell { port: RefCell::new(port), index, op: op.clone() })
}

/// Builds the operator of `spec` reading `inputs` in `scope`.
fn build_operator<T: Nest>(
    py: Python<'_>,
    scope: &Scope<T>,
    context: &Rc<WorkerContext>,
    inputs: Vec<&Stream<T, Record>>,
    spec: Spec,
) -> PyResult<Option<Stream<T, Record>>> {
    let Spec { name, kind, callable, constructed, exchanges, output } = spec;
    let single = inputs.len() == 1;
    let built = catch_panic(|| {
        let feeds: Vec<Feed<T>> = inputs
            .iter()
            .zip(exchanges)
            .enumerate()
            .map(|(i, (stream, exchange))| match exchange {
                None => Feed::Pipelined((*stream).clone()),
                Some(key) => {
                    let step = if single {
                        format!("{}.exchange", name)
                    } else {
                        format!("{}.exchange{}", name, i + 1)
                    };
                    Feed::Hashed(crate::stream::keyed_records(stream, context, step, Some(key)))
                }
            })
            .collect();
        let mut builder = OperatorBuilder::new(&name, scope);
        if kind == Kind::Plain {
            builder.set_notify(false);
        }
        let info = builder.info().clone();
        let op = Rc::new(OpState {
            name: name.clone(),
            live: Cell::new(false),
            generation: Cell::new(0),
            activator: info.activator.clone(),
            watch: kind != Kind::Plain,
            frontiers: RefCell::new(vec![MutableAntichain::new(); feeds.len()]),
        });
        let ports: Vec<Rc<dyn InputObj>> = feeds
            .into_iter()
            .enumerate()
            .map(|(i, feed)| match feed {
                Feed::Pipelined(stream) => input_cell(builder.new_input(&stream, Pipeline), i, &op),
                Feed::Hashed(stream) => input_cell(
                    builder.new_input(&stream, Exchange::new(|Routed(hash, _): &Routed| *hash)),
                    i,
                    &op,
                ),
            })
            .collect();
        let output = output.then(|| {
            let (port, stream) = builder.new_output::<Record>();
            (Rc::new(OutputCell { port: RefCell::new(port), op: op.clone() }), stream)
        });
        let notify = (kind == Kind::Notify).then(|| {
            Rc::new(NotifyCell { notificator: RefCell::new(FrontierNotificator::new()), op: op.clone() })
        });
        (info, op, ports, output, notify, builder)
    })?;
    let (info, op, ports, output, notify, builder) = built;

    // The Python objects handed to the logic at every run.
    let mut args: Vec<Py<PyAny>> = Vec::new();
    for port in ports.iter() {
        args.push(Py::new(py, PyInputPort { inner: Local::new("this InputPort", port.clone()) })?.into_any());
    }
    if let Some((port, _)) = &output {
        args.push(
            Py::new(
                py,
                PyOutputPort { inner: Local::new("this OutputPort", port.clone() as Rc<dyn OutputObj>) },
            )?
            .into_any(),
        );
    }
    if let Some(notify) = &notify {
        args.push(
            Py::new(
                py,
                PyNotificator { inner: Local::new("this Notificator", notify.clone() as Rc<dyn NotifyObj>) },
            )?
            .into_any(),
        );
    }
    let args = PyTuple::new(py, args)?.unbind();

    let logic: Rc<OnceCell<Py<PyAny>>> = Rc::new(OnceCell::new());
    let mut initial = None;
    {
        let python = Attached::new((logic.clone(), args));
        let op = op.clone();
        let context = context.clone();
        let notify = notify.clone();
        catch_panic(|| {
            builder.build(|capability| {
                initial = Some(capability);
                move |frontiers: &[MutableAntichain<T>]| {
                    let (logic, args) = python.get();
                    let Some(logic) = logic.get() else {
                        // The constructor failed: the run is being stopped.
                        ports.iter().for_each(|p| p.drain());
                        return false;
                    };
                    op.begin(frontiers);
                    let ran = context.run(&op.name, |py| {
                        logic.bind(py).call1(args.bind(py).clone())?;
                        Ok(())
                    });
                    op.end();
                    match ran {
                        None => ports.iter().for_each(|p| p.drain()),
                        Some(()) => {
                            // Notifications that became deliverable while the logic ran
                            // (or that it did not take) must not wait for another event.
                            if notify.as_ref().is_some_and(|n| n.deliverable()) {
                                op.activator.activate();
                            }
                        }
                    }
                    false
                }
            })
        })?;
    }
    let capability = initial.expect("the builder hands out the initial capability");
    let stream = output.map(|(_, stream)| stream);

    if !constructed {
        drop(capability);
        let _ = logic.set(callable);
        return Ok(stream);
    }
    let capability = PyCapability::new(Box::new(Held { capability, op: op.clone() }));
    let info = PyOperatorInfo {
        name: name.clone(),
        index: info.index,
        address: info.address.clone(),
        worker: info.worker,
        peers: info.peers,
        activator: Local::new("this OperatorInfo", info.activator.clone()),
    };
    let constructed = match callable.bind(py).call1((capability, info)) {
        Ok(logic) => logic,
        Err(error) => {
            add_note(py, &error, &format!("raised in the constructor of operator '{}'", name));
            return Err(error);
        }
    };
    if !constructed.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "the constructor of operator '{}' must return the operator's logic (a callable), got {}",
            name,
            constructed.repr().map(|r| r.to_string()).unwrap_or_default()
        )));
    }
    let _ = logic.set(constructed.unbind());
    Ok(stream)
}

/// Generic operators on a stream of any timestamp depth.
pub trait GenericStream {
    /// Builds the operator of `spec` reading this stream (and `other`, for binary
    /// operators); returns its output stream, if it has one.
    fn build(
        &self,
        py: Python<'_>,
        other: Option<&dyn StreamObj>,
        spec: Spec,
    ) -> PyResult<Option<Box<dyn StreamObj>>>;
}

/// Generic operators on a scope of any timestamp depth.
pub trait GenericScope {
    /// A source operator: `constructor(capability, info)` returns `logic(output)`.
    fn source(&self, py: Python<'_>, name: &str, constructor: Py<PyAny>) -> PyResult<Box<dyn StreamObj>>;
}

impl<T: Nest> GenericStream for StreamHandle<T> {
    fn build(
        &self,
        py: Python<'_>,
        other: Option<&dyn StreamObj>,
        spec: Spec,
    ) -> PyResult<Option<Box<dyn StreamObj>>> {
        let mut inputs = vec![&self.stream];
        if let Some(other) = other {
            let other = other.as_any().downcast_ref::<StreamHandle<T>>().ok_or_else(|| {
                DataflowError::new_err(format!("{}: both streams must belong to the same scope", spec.name))
            })?;
            inputs.push(&other.stream);
        }
        let stream = build_operator(py, self.stream.scope(), &self.context, inputs, spec)?;
        Ok(stream.map(|stream| {
            Box::new(StreamHandle { stream, context: self.context.clone() }) as Box<dyn StreamObj>
        }))
    }
}

impl<T: Nest> GenericScope for ScopeHandle<T> {
    fn source(&self, py: Python<'_>, name: &str, constructor: Py<PyAny>) -> PyResult<Box<dyn StreamObj>> {
        let spec = Spec {
            name: name.to_owned(),
            kind: Kind::Frontier,
            callable: constructor,
            constructed: true,
            exchanges: vec![],
            output: true,
        };
        let stream =
            build_operator(py, &self.scope, &self.context, vec![], spec)?.expect("a source has an output");
        Ok(self.stream(stream))
    }
}

// ---------------------------------------------------------------------------------------
// Python methods.

fn callable(py: Python<'_>, object: Py<PyAny>, what: &str) -> PyResult<Py<PyAny>> {
    if object.bind(py).is_callable() {
        Ok(object)
    } else {
        Err(PyTypeError::new_err(format!("{} must be callable, got {}", what, object.bind(py).repr()?)))
    }
}

fn exchange(py: Python<'_>, key: Option<Py<PyAny>>, what: &str) -> PyResult<Option<Py<PyAny>>> {
    match key {
        None => Ok(None),
        Some(key) if key.bind(py).is_none() => Ok(None),
        Some(key) => {
            callable(py, key, &format!("{} (a key function, or None for no exchange)", what)).map(Some)
        }
    }
}

impl PyStream {
    #[allow(clippy::too_many_arguments)]
    fn generic_operator(
        &self,
        py: Python<'_>,
        other: Option<&PyStream>,
        name: &str,
        kind: Kind,
        callable_: Py<PyAny>,
        constructed: bool,
        exchanges: Vec<Option<Py<PyAny>>>,
        output: bool,
    ) -> PyResult<Option<PyStream>> {
        let what = if constructed { "constructor" } else { "logic" };
        let spec = Spec {
            name: name.to_owned(),
            kind,
            callable: callable(py, callable_, what)?,
            constructed,
            exchanges,
            output,
        };
        let stream = self.inner.generic().build(py, other.map(|o| &*o.inner), spec)?;
        Ok(stream.map(|inner| PyStream { inner }))
    }

    fn unary_kind(
        &self,
        py: Python<'_>,
        name: &str,
        kind: Kind,
        callable: Py<PyAny>,
        constructed: bool,
        key: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        let exchanges = vec![exchange(py, key, "exchange")?];
        Ok(self
            .generic_operator(py, None, name, kind, callable, constructed, exchanges, true)?
            .expect("unary operators have an output"))
    }

    #[allow(clippy::too_many_arguments)]
    fn binary_kind(
        &self,
        py: Python<'_>,
        other: &PyStream,
        name: &str,
        kind: Kind,
        callable: Py<PyAny>,
        constructed: bool,
        exchange1: Option<Py<PyAny>>,
        exchange2: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        let exchanges = vec![exchange(py, exchange1, "exchange1")?, exchange(py, exchange2, "exchange2")?];
        Ok(self
            .generic_operator(py, Some(other), name, kind, callable, constructed, exchanges, true)?
            .expect("binary operators have an output"))
    }
}

#[pymethods]
impl PyStream {
    /// A one-input, one-output operator with Python logic.
    ///
    /// `constructor(capability, info)` runs now, with the operator's initial `Capability`
    /// (at the first time; drop or release it unless the operator sends records that no
    /// input justifies) and its `OperatorInfo`, and returns `logic(input, output)`, which
    /// runs whenever records arrive (or the operator is activated). `exchange`, if given,
    /// is a key function: record `x` goes to worker `route_key(key(x), peers)` (`key(x) % peers`
    /// for ints; equal keys meet on one worker); None keeps records on this worker.
    #[pyo3(signature = (constructor, name="Unary", exchange=None))]
    fn unary(
        &self,
        py: Python<'_>,
        constructor: Py<PyAny>,
        name: &str,
        exchange: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        self.unary_kind(py, name, Kind::Plain, constructor, true, exchange)
    }

    /// Like `unary`, but the logic also runs when the input frontier changes and can read
    /// it as `input.frontier` (a `Frontier`).
    #[pyo3(signature = (constructor, name="UnaryFrontier", exchange=None))]
    fn unary_frontier(
        &self,
        py: Python<'_>,
        constructor: Py<PyAny>,
        name: &str,
        exchange: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        self.unary_kind(py, name, Kind::Frontier, constructor, true, exchange)
    }

    /// A one-input, one-output operator with notifications: `logic(input, output,
    /// notificator)` runs when records arrive or the input frontier changes; it requests
    /// notifications with `notificator.notify_at(capability)` and receives them by
    /// iterating the notificator once no more records can arrive at their times.
    #[pyo3(signature = (logic, name="UnaryNotify", exchange=None))]
    fn unary_notify(
        &self,
        py: Python<'_>,
        logic: Py<PyAny>,
        name: &str,
        exchange: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        self.unary_kind(py, name, Kind::Notify, logic, false, exchange)
    }

    /// A two-input, one-output operator: `constructor(capability, info)` returns
    /// `logic(input1, input2, output)`. `exchange1`/`exchange2` route the inputs like
    /// `unary`'s `exchange`.
    #[pyo3(signature = (other, constructor, name="Binary", exchange1=None, exchange2=None))]
    fn binary(
        &self,
        py: Python<'_>,
        other: PyRef<'_, PyStream>,
        constructor: Py<PyAny>,
        name: &str,
        exchange1: Option<Py<PyAny>>,
        exchange2: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        self.binary_kind(py, &other, name, Kind::Plain, constructor, true, exchange1, exchange2)
    }

    /// Like `binary`, with both input frontiers visible (`input1.frontier`,
    /// `input2.frontier`).
    #[pyo3(signature = (other, constructor, name="BinaryFrontier", exchange1=None, exchange2=None))]
    fn binary_frontier(
        &self,
        py: Python<'_>,
        other: PyRef<'_, PyStream>,
        constructor: Py<PyAny>,
        name: &str,
        exchange1: Option<Py<PyAny>>,
        exchange2: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        self.binary_kind(py, &other, name, Kind::Frontier, constructor, true, exchange1, exchange2)
    }

    /// A two-input operator with notifications: `logic(input1, input2, output,
    /// notificator)`; a notification is delivered once neither input can still receive
    /// records at its time.
    #[pyo3(signature = (other, logic, name="BinaryNotify", exchange1=None, exchange2=None))]
    fn binary_notify(
        &self,
        py: Python<'_>,
        other: PyRef<'_, PyStream>,
        logic: Py<PyAny>,
        name: &str,
        exchange1: Option<Py<PyAny>>,
        exchange2: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        self.binary_kind(py, &other, name, Kind::Notify, logic, false, exchange1, exchange2)
    }

    /// A one-input operator without output: `logic(input)` runs when records arrive or
    /// the input frontier (`input.frontier`) changes.
    #[pyo3(signature = (logic, name="Sink", exchange=None))]
    fn sink(
        &self,
        py: Python<'_>,
        logic: Py<PyAny>,
        name: &str,
        exchange: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let exchanges = vec![self::exchange(py, exchange, "exchange")?];
        self.generic_operator(py, None, name, Kind::Frontier, logic, false, exchanges, false)?;
        Ok(())
    }
}

#[pymethods]
impl PyScope {
    /// An operator without inputs that produces records.
    ///
    /// `constructor(capability, info)` runs now and returns `logic(output)`. The logic
    /// runs once at start and then whenever activated: `info.activate()` schedules it at
    /// the worker's next step. Send with `output.give(capability, x)`; `downgrade` the
    /// capability as times complete and release it when done: a source holding no
    /// capability is finished, and one that holds a capability must be activated again.
    #[pyo3(signature = (constructor, name="Source"))]
    fn source(&self, py: Python<'_>, constructor: Py<PyAny>, name: &str) -> PyResult<PyStream> {
        let constructor = callable(py, constructor, "constructor")?;
        Ok(PyStream { inner: self.inner.generic().source(py, name, constructor)? })
    }
}

/// Adds this module's classes to `timely_py._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCapability>()?;
    m.add_class::<PyInputCapability>()?;
    m.add_class::<PyInputPort>()?;
    m.add_class::<PyOutputPort>()?;
    m.add_class::<PyOutputSession>()?;
    m.add_class::<PyNotificator>()?;
    m.add_class::<PyNotificationItems>()?;
    m.add_class::<PyFrontier>()?;
    m.add_class::<PyOperatorInfo>()?;
    Ok(())
}
