//! `Frontier`: a snapshot of an operator's input frontier, as Python reads it. Owns only
//! the snapshot; when it is taken is `state`'s concern.

use crate::time::{from_py, show, to_py, Time};
use pyo3::prelude::*;
use pyo3::types::PyList;
use timely_engine::PartialOrder;

/// An input frontier: the minimal times at which records may still arrive, as of the
/// start of the operator's current run. An empty frontier means no more records at all.
///
/// `len(frontier)` counts its elements, so `bool(frontier)` is False once it is empty.
#[pyclass(name = "Frontier", module = "timely_py._core")]
pub struct PyFrontier {
    /// The elements, sorted.
    elements: Vec<Time>,
    /// Number of loops around the operator's scope.
    depth: usize,
}

impl PyFrontier {
    /// A frontier of `elements` of a scope `depth` loops deep; it sorts them.
    pub fn new(mut elements: Vec<Time>, depth: usize) -> Self {
        elements.sort();
        PyFrontier { elements, depth }
    }
}

#[pymethods]
impl PyFrontier {
    /// True if records at some time strictly before `time` may still arrive.
    fn less_than(&self, time: &Bound<'_, PyAny>) -> PyResult<bool> {
        let time = from_py(time, self.depth)?;
        Ok(self.elements.iter().any(|e| e.less_than(&time)))
    }

    /// True if records at some time at or before `time` may still arrive (so `time` is
    /// not complete yet).
    fn less_equal(&self, time: &Bound<'_, PyAny>) -> PyResult<bool> {
        let time = from_py(time, self.depth)?;
        Ok(self.elements.iter().any(|e| e.less_equal(&time)))
    }

    /// True once no more records can arrive.
    #[getter]
    fn empty(&self) -> bool {
        self.__len__() == 0
    }

    /// The frontier's times, sorted.
    #[getter]
    fn elements<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.elements.iter().map(|t| to_py(py, t, self.depth)).collect()
    }

    fn __len__(&self) -> usize {
        self.elements.len()
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PyList::new(py, self.elements(py)?)?.try_iter().map(|i| i.into_any())
    }

    fn __repr__(&self) -> String {
        let shown = self.elements.iter().map(|t| show(t, self.depth)).collect::<Vec<_>>();
        format!("Frontier([{}])", shown.join(", "))
    }
}
