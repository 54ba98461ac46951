//! `Scope`: where operators are added, from Python.
//!
//! A Python `Scope` wraps a scope of any supported timestamp depth behind the `ScopeObj`
//! trait; `Nest` connects each depth to the next (loops) and the previous one (leaving).
//! Scopes are context managers: leaving the `with` block finishes the scope.

use crate::errors::{catch_panic, DataflowError, WorkerContext};
use crate::handles::PyInputHandle;
use crate::record::Record;
use crate::stream::{PyStream, StreamHandle, StreamObj};
use crate::time::{PyTime, MAX_LOOP_DEPTH, T0, T1, T2, T3};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::any::Any;
use std::rc::Rc;
use timely_engine::dataflow::operators::LoopHandle;
use timely_engine::dataflow::Scope;

/// A scope of timestamp `T` with its worker's error context.
pub struct ScopeHandle<T: PyTime> {
    pub scope: Scope<T>,
    pub context: Rc<WorkerContext>,
}

impl<T: Nest> ScopeHandle<T> {
    /// Wraps a stream of this scope.
    pub fn stream(&self, stream: timely_engine::dataflow::Stream<T, Record>) -> Box<dyn StreamObj> {
        Box::new(StreamHandle { stream, context: self.context.clone() })
    }
}

/// A scope of any timestamp depth.
pub trait ScopeObj {
    /// For downcasting to `ScopeHandle<T>`.
    fn as_any(&self) -> &dyn Any;
    /// Number of loops enclosing the scope.
    fn depth(&self) -> usize;
    /// The scope's address.
    fn address(&self) -> Vec<usize>;
    /// True while operators can be added.
    fn is_open(&self) -> bool;
    /// An input fed by `handle` (root scopes only).
    fn input_from(&self, handle: &mut PyInputHandle) -> PyResult<Box<dyn StreamObj>>;
    /// A stream of `items` at the minimum time.
    fn to_stream(&self, items: Vec<Record>) -> PyResult<Box<dyn StreamObj>>;
    /// A nested loop scope.
    fn iterative(&self, name: &str) -> PyResult<Box<dyn ScopeObj>>;
    /// A nested scope with the same timestamps.
    fn region(&self, name: &str) -> PyResult<Box<dyn ScopeObj>>;
    /// A feedback operator: its (type-erased) loop handle and output stream.
    fn feedback(&self, summary: &Bound<'_, PyAny>) -> PyResult<(Box<dyn Any>, Box<dyn StreamObj>)>;
    /// Merges streams of this scope.
    fn concatenate(&self, streams: Vec<&dyn StreamObj>) -> PyResult<Box<dyn StreamObj>>;
    /// Finishes the scope, installing it into its parent.
    fn finish(&self) -> PyResult<()>;
    /// The generic operators (see `generic`).
    fn generic(&self) -> &dyn crate::generic::GenericScope;
}

/// How a timestamp depth relates to the depths around it.
pub trait Nest: PyTime {
    /// Opens a loop scope nested in `scope`.
    fn open_loop(scope: &ScopeHandle<Self>, name: &str) -> PyResult<Box<dyn ScopeObj>>;
    /// Brings `stream` into `inner` if it is a loop scope nested in the stream's scope.
    fn enter_loop(stream: &StreamHandle<Self>, inner: &dyn Any) -> Option<PyResult<Box<dyn StreamObj>>>;
    /// Takes `stream` out of its loop scope into `outer` if that is the loop's parent.
    fn leave_loop(stream: &StreamHandle<Self>, outer: &dyn Any) -> Option<PyResult<Box<dyn StreamObj>>>;
}

fn open_loop<T: Nest, TInner: Nest + timely_engine::Refines<T>>(
    scope: &ScopeHandle<T>,
    name: &str,
) -> PyResult<Box<dyn ScopeObj>> {
    let child = catch_panic(|| scope.scope.new_child::<TInner>(name))?;
    Ok(Box::new(ScopeHandle { scope: child, context: scope.context.clone() }))
}

fn enter<T: Nest, TInner: Nest + timely_engine::Refines<T>>(
    stream: &StreamHandle<T>,
    inner: &dyn Any,
) -> Option<PyResult<Box<dyn StreamObj>>> {
    let inner = inner.downcast_ref::<ScopeHandle<TInner>>()?;
    Some(catch_panic(|| stream.stream.enter(&inner.scope)).map(|entered| inner.stream(entered)))
}

fn leave<T: Nest + timely_engine::Refines<TOuter>, TOuter: Nest>(
    stream: &StreamHandle<T>,
    outer: &dyn Any,
) -> Option<PyResult<Box<dyn StreamObj>>> {
    let outer = outer.downcast_ref::<ScopeHandle<TOuter>>()?;
    Some(catch_panic(|| stream.stream.leave(&outer.scope)).map(|left| outer.stream(left)))
}

impl Nest for T0 {
    fn open_loop(scope: &ScopeHandle<Self>, name: &str) -> PyResult<Box<dyn ScopeObj>> {
        open_loop::<T0, T1>(scope, name)
    }
    fn enter_loop(stream: &StreamHandle<Self>, inner: &dyn Any) -> Option<PyResult<Box<dyn StreamObj>>> {
        enter::<T0, T1>(stream, inner)
    }
    fn leave_loop(_stream: &StreamHandle<Self>, _outer: &dyn Any) -> Option<PyResult<Box<dyn StreamObj>>> {
        None
    }
}

impl Nest for T1 {
    fn open_loop(scope: &ScopeHandle<Self>, name: &str) -> PyResult<Box<dyn ScopeObj>> {
        open_loop::<T1, T2>(scope, name)
    }
    fn enter_loop(stream: &StreamHandle<Self>, inner: &dyn Any) -> Option<PyResult<Box<dyn StreamObj>>> {
        enter::<T1, T2>(stream, inner)
    }
    fn leave_loop(stream: &StreamHandle<Self>, outer: &dyn Any) -> Option<PyResult<Box<dyn StreamObj>>> {
        leave::<T1, T0>(stream, outer)
    }
}

impl Nest for T2 {
    fn open_loop(scope: &ScopeHandle<Self>, name: &str) -> PyResult<Box<dyn ScopeObj>> {
        open_loop::<T2, T3>(scope, name)
    }
    fn enter_loop(stream: &StreamHandle<Self>, inner: &dyn Any) -> Option<PyResult<Box<dyn StreamObj>>> {
        enter::<T2, T3>(stream, inner)
    }
    fn leave_loop(stream: &StreamHandle<Self>, outer: &dyn Any) -> Option<PyResult<Box<dyn StreamObj>>> {
        leave::<T2, T1>(stream, outer)
    }
}

impl Nest for T3 {
    fn open_loop(_scope: &ScopeHandle<Self>, _name: &str) -> PyResult<Box<dyn ScopeObj>> {
        Err(DataflowError::new_err(format!("loops nest at most {} deep", MAX_LOOP_DEPTH)))
    }
    fn enter_loop(_stream: &StreamHandle<Self>, _inner: &dyn Any) -> Option<PyResult<Box<dyn StreamObj>>> {
        None
    }
    fn leave_loop(stream: &StreamHandle<Self>, outer: &dyn Any) -> Option<PyResult<Box<dyn StreamObj>>> {
        leave::<T3, T2>(stream, outer)
    }
}

impl<T: Nest> ScopeObj for ScopeHandle<T> {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn depth(&self) -> usize {
        T::LEN - 1
    }

    fn address(&self) -> Vec<usize> {
        self.scope.address().to_vec()
    }

    fn is_open(&self) -> bool {
        self.scope.is_open()
    }

    fn input_from(&self, handle: &mut PyInputHandle) -> PyResult<Box<dyn StreamObj>> {
        let root = self.as_any().downcast_ref::<ScopeHandle<T0>>().ok_or_else(|| {
            DataflowError::new_err(
                "inputs belong to a dataflow's root scope; bring them into loops with enter()",
            )
        })?;
        let stream = catch_panic(|| root.scope.input_from(handle.handle_mut()))?;
        Ok(root.stream(stream))
    }

    fn to_stream(&self, items: Vec<Record>) -> PyResult<Box<dyn StreamObj>> {
        let stream = catch_panic(|| self.scope.to_stream(items))?;
        Ok(self.stream(stream))
    }

    fn iterative(&self, name: &str) -> PyResult<Box<dyn ScopeObj>> {
        T::open_loop(self, name)
    }

    fn region(&self, name: &str) -> PyResult<Box<dyn ScopeObj>> {
        let child = catch_panic(|| self.scope.new_child::<T>(name))?;
        Ok(Box::new(ScopeHandle { scope: child, context: self.context.clone() }))
    }

    fn feedback(&self, summary: &Bound<'_, PyAny>) -> PyResult<(Box<dyn Any>, Box<dyn StreamObj>)> {
        let summary = T::summary_from_py(summary)?;
        let (handle, stream): (LoopHandle<T, Record>, _) = catch_panic(|| self.scope.feedback(summary))?;
        Ok((Box::new(handle), self.stream(stream)))
    }

    fn concatenate(&self, streams: Vec<&dyn StreamObj>) -> PyResult<Box<dyn StreamObj>> {
        let typed = streams
            .into_iter()
            .map(|s| s.as_any().downcast_ref::<StreamHandle<T>>().map(|h| h.stream.clone()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| DataflowError::new_err("concatenate: every stream must belong to this scope"))?;
        let stream = catch_panic(|| self.scope.concatenate(typed))?;
        Ok(self.stream(stream))
    }

    fn finish(&self) -> PyResult<()> {
        catch_panic(|| self.scope.finish())
    }

    fn generic(&self) -> &dyn crate::generic::GenericScope {
        self
    }
}

/// A scope being described: add inputs and operators, nest loops and regions; use it as a
/// context manager (`with worker.dataflow() as scope:`) so that leaving the block installs it.
#[pyclass(name = "Scope", module = "timely_py._core", unsendable)]
pub struct PyScope {
    pub(crate) inner: Box<dyn ScopeObj>,
}

impl PyScope {
    /// A dataflow's root scope.
    pub fn root(scope: Scope<T0>, context: Rc<WorkerContext>) -> Self {
        PyScope { inner: Box::new(ScopeHandle { scope, context }) }
    }

    fn stream(inner: Box<dyn StreamObj>) -> PyStream {
        PyStream { inner }
    }
}

#[pymethods]
impl PyScope {
    /// Number of loops around this scope (0 for a dataflow's root scope); timestamps have
    /// `depth + 1` coordinates.
    #[getter]
    fn depth(&self) -> usize {
        self.inner.depth()
    }

    /// The scope's address: indices of the enclosing scopes and its own.
    #[getter]
    fn address(&self) -> Vec<usize> {
        self.inner.address()
    }

    /// A stream fed by `handle` (an `InputHandle`).
    fn input_from(&self, handle: &mut PyInputHandle) -> PyResult<PyStream> {
        Ok(Self::stream(self.inner.input_from(handle)?))
    }

    /// A stream of the items of `iterable`, at the first time, from every worker.
    fn to_stream(&self, iterable: &Bound<'_, PyAny>) -> PyResult<PyStream> {
        let items = iterable
            .try_iter()?
            .map(|item| item.map(|i| Record(i.unbind())))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Self::stream(self.inner.to_stream(items)?))
    }

    /// A nested loop scope; its timestamps add an iteration coordinate.
    #[pyo3(signature = (name="Iterative"))]
    fn iterative(&self, name: &str) -> PyResult<PyScope> {
        Ok(PyScope { inner: self.inner.iterative(name)? })
    }

    /// A nested scope with the same timestamps, to group operators.
    #[pyo3(signature = (name="Region"))]
    fn region(&self, name: &str) -> PyResult<PyScope> {
        Ok(PyScope { inner: self.inner.region(name)? })
    }

    /// A feedback edge: returns `(handle, stream)`; the stream carries what is later passed
    /// to `stream.connect_loop(handle)`, with times advanced by `summary` (for a loop,
    /// `(0, 1)`: the next iteration).
    fn feedback(&self, py: Python<'_>, summary: &Bound<'_, PyAny>) -> PyResult<Py<PyTuple>> {
        let (handle, stream) = self.inner.feedback(summary)?;
        let handle = Py::new(py, PyLoopHandle { inner: Some(handle) })?;
        let stream = Py::new(py, Self::stream(stream))?;
        Ok(PyTuple::new(py, [handle.into_any(), stream.into_any()])?.unbind())
    }

    /// Merges several streams of this scope.
    fn concatenate(&self, streams: Vec<PyRef<'_, PyStream>>) -> PyResult<PyStream> {
        let inner = self.inner.concatenate(streams.iter().map(|s| &*s.inner).collect())?;
        Ok(Self::stream(inner))
    }

    /// Finishes describing the scope and installs it.
    fn finish(&self) -> PyResult<()> {
        self.inner.finish()
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (exc_type=None, _exc_value=None, _traceback=None))]
    fn __exit__(
        &self,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc_value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_none() && self.inner.is_open() {
            self.inner.finish()?;
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("Scope(address={:?}, depth={})", self.inner.address(), self.inner.depth())
    }
}

/// The input of a feedback edge; pass it to `stream.connect_loop`.
#[pyclass(name = "LoopHandle", module = "timely_py._core", unsendable)]
pub struct PyLoopHandle {
    pub(crate) inner: Option<Box<dyn Any>>,
}
