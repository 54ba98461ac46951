//! Checks of the Python arguments of operators, made when the dataflow is built so that a
//! wrong argument raises `TypeError` naming it there, not later inside a worker's step.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// `object`, if callable; else a `TypeError` saying that `what` must be callable.
pub fn callable(py: Python<'_>, object: Py<PyAny>, what: &str) -> PyResult<Py<PyAny>> {
    if object.bind(py).is_callable() {
        Ok(object)
    } else {
        Err(PyTypeError::new_err(format!("{} must be callable, got {}", what, object.bind(py).repr()?)))
    }
}

/// `object` (None and Python's `None` both mean absent), if absent or callable.
pub fn optional_callable(
    py: Python<'_>,
    object: Option<Py<PyAny>>,
    what: &str,
) -> PyResult<Option<Py<PyAny>>> {
    match object {
        Some(object) if !object.bind(py).is_none() => callable(py, object, what).map(Some),
        _ => Ok(None),
    }
}
