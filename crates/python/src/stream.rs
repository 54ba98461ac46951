//! `Stream`: a stream of Python records at any timestamp depth, as Python holds it.
//!
//! A `PyStream` holds a `Depth<Streams>`: a `StreamHandle<T>` (an engine stream with its
//! worker's error context) at one of the supported depths. The operators live in
//! `operators` (one file per family), each written once for any `T: PyTime` and applied
//! with `dispatch!`; this module owns only the stream types.

use crate::errors::{DataflowError, WorkerContext};
use crate::record::Record;
use crate::time::{Depth, Family, PyTime};
use pyo3::prelude::*;
use std::rc::Rc;
use timely_engine::dataflow::Stream;

/// A stream of Python records at times `T`, with its worker's error context.
pub struct StreamHandle<T: PyTime> {
    pub stream: Stream<T, Record>,
    pub context: Rc<WorkerContext>,
}

impl<T: PyTime> StreamHandle<T> {
    /// Another stream of the same scope and worker.
    pub fn wrap(&self, stream: Stream<T, Record>) -> StreamHandle<T> {
        StreamHandle { stream, context: self.context.clone() }
    }
}

/// The family of stream handles, one per timestamp depth.
pub struct Streams;

impl Family for Streams {
    type At<T: PyTime> = StreamHandle<T>;
}

/// A stream of records in a dataflow: apply operators to build the dataflow.
#[pyclass(name = "Stream", module = "timely_py._core", unsendable)]
pub struct PyStream {
    pub(crate) inner: Depth<Streams>,
}

impl<T: PyTime> From<StreamHandle<T>> for PyStream {
    fn from(handle: StreamHandle<T>) -> Self {
        PyStream { inner: T::wrap::<Streams>(handle) }
    }
}

impl PyStream {
    /// This stream at timestamps `T`, the depth of another stream that `operator` combines
    /// it with: both must belong to one scope.
    pub fn at<T: PyTime>(&self, operator: &str) -> PyResult<&StreamHandle<T>> {
        T::get::<Streams>(&self.inner).ok_or_else(|| {
            DataflowError::new_err(format!("{}: both streams must belong to the same scope", operator))
        })
    }
}

#[pymethods]
impl PyStream {
    /// Number of loops around the stream's scope.
    #[getter]
    fn depth(&self) -> usize {
        self.inner.depth()
    }
}
