//! Nesting: loop scopes (`iterative`), regions, feedback edges, and streams entering and
//! leaving nested scopes. The one place that relates a timestamp depth to the depths around
//! it: a loop scope one level deeper, its parent one level shallower, a region the same.

use crate::errors::{catch_panic, DataflowError};
use crate::record::Record;
use crate::scope::{PyScope, ScopeHandle};
use crate::stream::{PyStream, StreamHandle};
use crate::time::{dispatch, Depth, Family, PyTime, MAX_LOOP_DEPTH, T1, T2, T3};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use timely_engine::dataflow::operators::LoopHandle;
use timely_engine::Refines;

/// The family of feedback handles, one per timestamp depth.
pub struct LoopHandles;

impl Family for LoopHandles {
    type At<T: PyTime> = LoopHandle<T, Record>;
}

/// The input of a feedback edge; pass it to `stream.connect_loop`.
#[pyclass(name = "LoopHandle", module = "timely_py._core", unsendable)]
pub struct PyLoopHandle {
    inner: Option<Depth<LoopHandles>>,
}

fn child<T: PyTime, TInner: PyTime + Refines<T>>(scope: &ScopeHandle<T>, name: &str) -> PyResult<PyScope> {
    Ok(scope.wrap(catch_panic(|| scope.scope.new_child::<TInner>(name))?).into())
}

fn region<T: PyTime>(scope: &ScopeHandle<T>, name: &str) -> PyResult<PyScope> {
    child::<T, T>(scope, name)
}

fn enter<T: PyTime, TInner: PyTime + Refines<T>>(
    stream: &StreamHandle<T>,
    inner: &ScopeHandle<TInner>,
) -> PyResult<PyStream> {
    Ok(inner.stream(catch_panic(|| stream.stream.enter(&inner.scope))?).into())
}

fn leave<T: PyTime + Refines<TOuter>, TOuter: PyTime>(
    stream: &StreamHandle<T>,
    outer: &ScopeHandle<TOuter>,
) -> PyResult<PyStream> {
    Ok(outer.stream(catch_panic(|| stream.stream.leave(&outer.scope))?).into())
}

fn feedback<T: PyTime>(
    scope: &ScopeHandle<T>,
    summary: &Bound<'_, PyAny>,
) -> PyResult<(PyLoopHandle, PyStream)> {
    let summary = T::summary_from_py(summary)?;
    let (handle, stream) = catch_panic(|| scope.scope.feedback::<Record>(summary))?;
    Ok((PyLoopHandle { inner: Some(T::wrap::<LoopHandles>(handle)) }, scope.stream(stream).into()))
}

fn connect_loop<T: PyTime>(stream: &StreamHandle<T>, handle: Depth<LoopHandles>) -> PyResult<()> {
    let handle = T::take::<LoopHandles>(handle)
        .map_err(|_| DataflowError::new_err("connect_loop: the feedback handle belongs to another scope"))?;
    catch_panic(|| stream.stream.connect_loop(handle))
}

#[pymethods]
impl PyScope {
    /// A nested loop scope; its timestamps add an iteration coordinate.
    #[pyo3(signature = (name="Iterative"))]
    fn iterative(&self, name: &str) -> PyResult<PyScope> {
        match &self.inner {
            Depth::Root(s) => child::<_, T1>(s, name),
            Depth::Loop1(s) => child::<_, T2>(s, name),
            Depth::Loop2(s) => child::<_, T3>(s, name),
            Depth::Loop3(_) => {
                Err(DataflowError::new_err(format!("loops nest at most {} deep", MAX_LOOP_DEPTH)))
            }
        }
    }

    /// A nested scope with the same timestamps, to group operators.
    #[pyo3(signature = (name="Region"))]
    fn region(&self, name: &str) -> PyResult<PyScope> {
        dispatch!(&self.inner, s => region(s, name))
    }

    /// A feedback edge: returns `(handle, stream)`; the stream carries what is later passed
    /// to `stream.connect_loop(handle)`, with times advanced by `summary` (for a loop,
    /// `(0, 1)`: the next iteration).
    fn feedback(&self, py: Python<'_>, summary: &Bound<'_, PyAny>) -> PyResult<Py<PyTuple>> {
        let (handle, stream) = dispatch!(&self.inner, s => feedback(s, summary))?;
        let (handle, stream) = (Py::new(py, handle)?, Py::new(py, stream)?);
        Ok(PyTuple::new(py, [handle.into_any(), stream.into_any()])?.unbind())
    }
}

#[pymethods]
impl PyStream {
    /// Brings the stream into `scope`, nested directly in the stream's scope.
    fn enter(&self, scope: &PyScope) -> PyResult<PyStream> {
        match (&self.inner, &scope.inner) {
            (Depth::Root(s), Depth::Root(inner)) => enter(s, inner),
            (Depth::Root(s), Depth::Loop1(inner)) => enter(s, inner),
            (Depth::Loop1(s), Depth::Loop1(inner)) => enter(s, inner),
            (Depth::Loop1(s), Depth::Loop2(inner)) => enter(s, inner),
            (Depth::Loop2(s), Depth::Loop2(inner)) => enter(s, inner),
            (Depth::Loop2(s), Depth::Loop3(inner)) => enter(s, inner),
            (Depth::Loop3(s), Depth::Loop3(inner)) => enter(s, inner),
            _ => {
                Err(DataflowError::new_err("enter: the scope must be nested directly in the stream's scope"))
            }
        }
    }

    /// Takes the stream out to `scope`, the scope enclosing the stream's scope.
    fn leave(&self, scope: &PyScope) -> PyResult<PyStream> {
        match (&self.inner, &scope.inner) {
            (Depth::Root(s), Depth::Root(outer)) => leave(s, outer),
            (Depth::Loop1(s), Depth::Root(outer)) => leave(s, outer),
            (Depth::Loop1(s), Depth::Loop1(outer)) => leave(s, outer),
            (Depth::Loop2(s), Depth::Loop1(outer)) => leave(s, outer),
            (Depth::Loop2(s), Depth::Loop2(outer)) => leave(s, outer),
            (Depth::Loop3(s), Depth::Loop2(outer)) => leave(s, outer),
            (Depth::Loop3(s), Depth::Loop3(outer)) => leave(s, outer),
            _ => Err(DataflowError::new_err("leave: the scope must directly enclose the stream's scope")),
        }
    }

    /// Feeds the stream into the feedback edge of `handle` (from `scope.feedback`).
    fn connect_loop(&self, handle: &mut PyLoopHandle) -> PyResult<()> {
        let inner = handle
            .inner
            .take()
            .ok_or_else(|| DataflowError::new_err("connect_loop: this loop handle is already connected"))?;
        dispatch!(&self.inner, s => connect_loop(s, inner))
    }
}
