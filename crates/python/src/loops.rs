//! Nesting: loop scopes (`iterative`), regions, feedback edges, and streams entering and
//! leaving nested scopes. The one place that relates a scope's depth to the depths around
//! it: a loop scope is one level deeper (its times gain a coordinate, `VecLoop`), a region
//! is at the same depth (its times are its parent's).

use crate::errors::{catch_panic, DataflowError};
use crate::record::Record;
use crate::scope::{PyScope, ScopeHandle};
use crate::stream::{PyStream, StreamHandle};
use crate::time::{summary_from_py, Time};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use timely_engine::dataflow::operators::LoopHandle;
use timely_engine::VecLoop;

/// The input of a feedback edge; pass it to `stream.connect_loop`.
#[pyclass(name = "LoopHandle", module = "timely_py._core", unsendable)]
pub struct PyLoopHandle {
    inner: Option<(LoopHandle<Time, Record>, Vec<usize>)>,
}

/// The nesting of a loop scope inside a scope `outer` loops deep.
fn loop_in(outer: usize) -> VecLoop {
    VecLoop::new(outer + 1)
}

fn feedback(scope: &ScopeHandle, summary: &Bound<'_, PyAny>) -> PyResult<(PyLoopHandle, PyStream)> {
    let summary = summary_from_py(summary, scope.depth)?;
    let (handle, stream) = catch_panic(|| scope.scope.feedback::<Record>(summary))?;
    let address = scope.scope.address().to_vec();
    Ok((PyLoopHandle { inner: Some((handle, address)) }, scope.stream(stream).into()))
}

fn connect_loop(
    stream: &StreamHandle,
    (handle, address): (LoopHandle<Time, Record>, Vec<usize>),
) -> PyResult<()> {
    if stream.stream.scope().address() != address.as_slice() {
        return Err(DataflowError::new_err("connect_loop: the feedback handle belongs to another scope"));
    }
    catch_panic(|| stream.stream.connect_loop(handle))
}

#[pymethods]
impl PyScope {
    /// A nested loop scope; its timestamps add an iteration coordinate.
    #[pyo3(signature = (name="Iterative"))]
    fn iterative(&self, name: &str) -> PyResult<PyScope> {
        let scope = &self.inner;
        let child = catch_panic(|| scope.scope.new_nested(name, loop_in(scope.depth)))?;
        Ok(scope.wrap(child, scope.depth + 1).into())
    }

    /// A nested scope with the same timestamps, to group operators.
    #[pyo3(signature = (name="Region"))]
    fn region(&self, name: &str) -> PyResult<PyScope> {
        let scope = &self.inner;
        Ok(scope.wrap(catch_panic(|| scope.scope.new_child::<Time>(name))?, scope.depth).into())
    }

    /// A feedback edge: returns `(handle, stream)`; the stream carries what is later passed
    /// to `stream.connect_loop(handle)`, with times advanced by `summary` (for a loop,
    /// `(0, 1)`: the next iteration).
    fn feedback(&self, py: Python<'_>, summary: &Bound<'_, PyAny>) -> PyResult<Py<PyTuple>> {
        let (handle, stream) = feedback(&self.inner, summary)?;
        let (handle, stream) = (Py::new(py, handle)?, Py::new(py, stream)?);
        Ok(PyTuple::new(py, [handle.into_any(), stream.into_any()])?.unbind())
    }
}

#[pymethods]
impl PyStream {
    /// Brings the stream into `scope`, nested directly in the stream's scope.
    fn enter(&self, scope: &PyScope) -> PyResult<PyStream> {
        let (stream, inner) = (&self.inner, &scope.inner);
        let entered = if inner.depth == stream.depth + 1 {
            catch_panic(|| stream.stream.enter_nested(&inner.scope, loop_in(stream.depth)))?
        } else if inner.depth == stream.depth {
            catch_panic(|| stream.stream.enter(&inner.scope))?
        } else {
            return Err(DataflowError::new_err(
                "enter: the scope must be nested directly in the stream's scope",
            ));
        };
        Ok(inner.stream(entered).into())
    }

    /// Takes the stream out to `scope`, the scope enclosing the stream's scope.
    fn leave(&self, scope: &PyScope) -> PyResult<PyStream> {
        let (stream, outer) = (&self.inner, &scope.inner);
        let left = if stream.depth == outer.depth + 1 {
            catch_panic(|| stream.stream.leave_nested(&outer.scope, loop_in(outer.depth)))?
        } else if stream.depth == outer.depth {
            catch_panic(|| stream.stream.leave(&outer.scope))?
        } else {
            return Err(DataflowError::new_err("leave: the scope must directly enclose the stream's scope"));
        };
        Ok(outer.stream(left).into())
    }

    /// Feeds the stream into the feedback edge of `handle` (from `scope.feedback`).
    fn connect_loop(&self, handle: &mut PyLoopHandle) -> PyResult<()> {
        let inner = handle
            .inner
            .take()
            .ok_or_else(|| DataflowError::new_err("connect_loop: this loop handle is already connected"))?;
        connect_loop(&self.inner, inner)
    }
}
