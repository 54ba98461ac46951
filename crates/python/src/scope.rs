//! `Scope`: where inputs and operators are added, from Python.
//!
//! A `PyScope` holds a `ScopeHandle`: an engine scope with its worker's error context and
//! its depth (how many loops are around it). Scopes are context managers: leaving the `with`
//! block finishes the scope. Nesting (loops, regions, feedback) is `loops`'s concern;
//! `source` is `generic`'s.

use crate::errors::{catch_panic, DataflowError, WorkerContext};
use crate::handles::PyInputHandle;
use crate::record::Record;
use crate::stream::{PyStream, StreamHandle};
use crate::time::Time;
use pyo3::prelude::*;
use std::rc::Rc;
use timely_engine::dataflow::{Scope, Stream};

/// A scope with its worker's error context and its depth.
pub struct ScopeHandle {
    pub scope: Scope<Time>,
    pub context: Rc<WorkerContext>,
    /// Number of loops around the scope: its times have `depth + 1` coordinates.
    pub depth: usize,
}

impl ScopeHandle {
    /// Wraps a stream of this scope.
    pub fn stream(&self, stream: Stream<Time, Record>) -> StreamHandle {
        StreamHandle { stream, context: self.context.clone(), depth: self.depth }
    }

    /// Wraps a scope of the same worker, `depth` loops deep.
    pub fn wrap(&self, scope: Scope<Time>, depth: usize) -> ScopeHandle {
        ScopeHandle { scope, context: self.context.clone(), depth }
    }
}

/// A scope being described: add inputs and operators, nest loops and regions; use it as a
/// context manager (`with worker.dataflow() as scope:`) so that leaving the block installs it.
#[pyclass(name = "Scope", module = "timely_py._core", unsendable)]
pub struct PyScope {
    pub(crate) inner: ScopeHandle,
}

impl From<ScopeHandle> for PyScope {
    fn from(handle: ScopeHandle) -> Self {
        PyScope { inner: handle }
    }
}

impl PyScope {
    /// A dataflow's root scope.
    pub fn root(scope: Scope<Time>, context: Rc<WorkerContext>) -> Self {
        ScopeHandle { scope, context, depth: 0 }.into()
    }

    fn address_vec(&self) -> Vec<usize> {
        self.inner.scope.address().to_vec()
    }
}

fn concatenate(scope: &ScopeHandle, streams: &[PyRef<'_, PyStream>]) -> PyResult<PyStream> {
    let typed = streams
        .iter()
        .map(|s| (s.inner.depth == scope.depth).then(|| s.inner.stream.clone()))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| DataflowError::new_err("concatenate: every stream must belong to this scope"))?;
    let stream = catch_panic(|| scope.scope.concatenate(typed))?;
    Ok(scope.stream(stream).into())
}

#[pymethods]
impl PyScope {
    /// Number of loops around this scope (0 for a dataflow's root scope); timestamps have
    /// `depth + 1` coordinates.
    #[getter]
    fn depth(&self) -> usize {
        self.inner.depth
    }

    /// The scope's address: indices of the enclosing scopes and its own.
    #[getter]
    fn address(&self) -> Vec<usize> {
        self.address_vec()
    }

    /// A stream fed by `handle` (an `InputHandle`).
    fn input_from(&self, handle: &mut PyInputHandle) -> PyResult<PyStream> {
        let root = &self.inner;
        if root.depth != 0 {
            return Err(DataflowError::new_err(
                "inputs belong to a dataflow's root scope; bring them into loops with enter()",
            ));
        }
        let stream = catch_panic(|| root.scope.input_from(handle.attach(root.context.clone())))?;
        Ok(root.stream(stream).into())
    }

    /// A stream of the items of `iterable`, at the first time, from every worker.
    fn to_stream(&self, iterable: &Bound<'_, PyAny>) -> PyResult<PyStream> {
        let items = iterable
            .try_iter()?
            .map(|item| item.map(|i| Record(i.unbind())))
            .collect::<PyResult<Vec<_>>>()?;
        let s = &self.inner;
        catch_panic(|| s.stream(s.scope.to_stream(items)).into())
    }

    /// Merges several streams of this scope.
    fn concatenate(&self, streams: Vec<PyRef<'_, PyStream>>) -> PyResult<PyStream> {
        concatenate(&self.inner, &streams)
    }

    /// Finishes describing the scope and installs it.
    fn finish(&self) -> PyResult<()> {
        catch_panic(|| self.inner.scope.finish())
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
        if exc_type.is_none() && self.inner.scope.is_open() {
            self.finish()?;
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("Scope(address={:?}, depth={})", self.address_vec(), self.inner.depth)
    }
}
