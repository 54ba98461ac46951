//! `Stream`: a stream of Python records, as Python holds it.
//!
//! A `PyStream` holds a `StreamHandle`: an engine stream with its worker's error context
//! and the depth of its scope (how many coordinates its times have). The operators live in
//! `operators` (one file per family), each written once for the one timestamp type
//! (`time::Time`); this module owns only the stream types.

use crate::errors::{DataflowError, WorkerContext};
use crate::record::Record;
use crate::time::Time;
use pyo3::prelude::*;
use std::rc::Rc;
use timely_engine::dataflow::Stream;

/// A stream of Python records, with its worker's error context and its scope's depth.
pub struct StreamHandle {
    pub stream: Stream<Time, Record>,
    pub context: Rc<WorkerContext>,
    /// Number of loops around the stream's scope: its times have `depth + 1` coordinates.
    pub depth: usize,
}

impl StreamHandle {
    /// Another stream of the same scope and worker.
    pub fn wrap(&self, stream: Stream<Time, Record>) -> StreamHandle {
        StreamHandle { stream, context: self.context.clone(), depth: self.depth }
    }
}

/// A stream of records in a dataflow: apply operators to build the dataflow.
#[pyclass(name = "Stream", module = "timely_py._core", unsendable)]
pub struct PyStream {
    pub(crate) inner: StreamHandle,
}

impl From<StreamHandle> for PyStream {
    fn from(handle: StreamHandle) -> Self {
        PyStream { inner: handle }
    }
}

impl PyStream {
    /// This stream, which an operator combines with a stream `depth` loops deep: both must
    /// belong to one scope (the engine checks that it is the same scope).
    pub fn at(&self, depth: usize, operator: &str) -> PyResult<&StreamHandle> {
        if self.inner.depth != depth {
            return Err(DataflowError::new_err(format!(
                "{}: both streams must belong to the same scope",
                operator
            )));
        }
        Ok(&self.inner)
    }
}

#[pymethods]
impl PyStream {
    /// Number of loops around the stream's scope.
    #[getter]
    fn depth(&self) -> usize {
        self.inner.depth
    }
}
