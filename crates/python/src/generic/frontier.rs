//! `Frontier`: a snapshot of an operator's input frontier, as Python reads it. Owns only
//! the snapshot; when it is taken is `state`'s concern.

use crate::time::{dispatch, show, Depth, Family, PyTime};
use pyo3::prelude::*;
use pyo3::types::PyList;

/// The family of frontier snapshots (their elements, sorted), one per timestamp depth.
pub struct Times;

impl Family for Times {
    type At<T: PyTime> = Vec<T>;
}

/// An input frontier: the minimal times at which records may still arrive, as of the
/// start of the operator's current run. An empty frontier means no more records at all.
///
/// `len(frontier)` counts its elements, so `bool(frontier)` is False once it is empty.
#[pyclass(name = "Frontier", module = "timely_py._core")]
pub struct PyFrontier {
    elements: Depth<Times>,
}

impl PyFrontier {
    /// A frontier of `elements`, which it sorts.
    pub fn new<T: PyTime>(mut elements: Vec<T>) -> Self {
        elements.sort();
        PyFrontier { elements: T::wrap::<Times>(elements) }
    }
}

fn less_than<T: PyTime>(elements: &[T], time: &Bound<'_, PyAny>) -> PyResult<bool> {
    let time = T::from_py(time)?;
    Ok(elements.iter().any(|e| e.less_than(&time)))
}

fn less_equal<T: PyTime>(elements: &[T], time: &Bound<'_, PyAny>) -> PyResult<bool> {
    let time = T::from_py(time)?;
    Ok(elements.iter().any(|e| e.less_equal(&time)))
}

#[pymethods]
impl PyFrontier {
    /// True if records at some time strictly before `time` may still arrive.
    fn less_than(&self, time: &Bound<'_, PyAny>) -> PyResult<bool> {
        dispatch!(&self.elements, e => less_than(e, time))
    }

    /// True if records at some time at or before `time` may still arrive (so `time` is
    /// not complete yet).
    fn less_equal(&self, time: &Bound<'_, PyAny>) -> PyResult<bool> {
        dispatch!(&self.elements, e => less_equal(e, time))
    }

    /// True once no more records can arrive.
    #[getter]
    fn empty(&self) -> bool {
        self.__len__() == 0
    }

    /// The frontier's times, sorted.
    #[getter]
    fn elements<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        dispatch!(&self.elements, e => e.iter().map(|t| t.to_py(py)).collect())
    }

    fn __len__(&self) -> usize {
        dispatch!(&self.elements, e => e.len())
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PyList::new(py, self.elements(py)?)?.try_iter().map(|i| i.into_any())
    }

    fn __repr__(&self) -> String {
        let shown = dispatch!(&self.elements, e => e.iter().map(show).collect::<Vec<_>>());
        format!("Frontier([{}])", shown.join(", "))
    }
}
