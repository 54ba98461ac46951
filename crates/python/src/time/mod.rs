//! Timestamps as Python sees them.
//!
//! Every Python dataflow uses one timestamp type, the engine's `VecTime`: a dataflow's
//! root scope has one coordinate, and each loop around a scope adds one, as deep as loops
//! nest. Python sees a root time as a non-negative int and a time `depth` loops deep as a
//! flat tuple `(epoch, i1, ..., i_depth)`; path summaries (for `feedback`) have the same
//! shapes. A `VecTime` leaves out trailing zero coordinates, so how many coordinates a
//! time has is the depth of its scope, which the scope, stream or operator holding it
//! knows: every conversion here takes that depth.
//!
//! This module owns the conversions between times and Python objects, and how Python
//! prints times; it knows nothing of scopes or streams.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyTuple};
pub use timely_engine::VecTime as Time;

fn describe(obj: &Bound<'_, PyAny>) -> String {
    obj.repr().map(|r| r.to_string()).unwrap_or_else(|_| "<unprintable>".into())
}

/// Reads the `depth + 1` non-negative int coordinates of a time (or summary, `what`) from
/// an int (at depth 0) or a tuple.
fn read(obj: &Bound<'_, PyAny>, depth: usize, what: &str) -> PyResult<Time> {
    let n = depth + 1;
    let shape =
        if n == 1 { "a non-negative int".to_owned() } else { format!("a tuple of {} non-negative ints", n) };
    let error = || PyTypeError::new_err(format!("{} must be {}, got {}", what, shape, describe(obj)));
    let one = |item: &Bound<'_, PyAny>| -> PyResult<u64> {
        if item.is_instance_of::<PyBool>() || !item.is_instance_of::<PyInt>() {
            return Err(error());
        }
        item.extract::<u64>()
            .map_err(|_| PyValueError::new_err(format!("{} must be {}, got {}", what, shape, describe(obj))))
    };
    if n == 1 {
        return Ok(Time::root(one(obj)?));
    }
    let tuple = obj.cast::<PyTuple>().map_err(|_| error())?;
    if tuple.len() != n {
        return Err(error());
    }
    let coordinates = tuple.iter().map(|item| one(&item)).collect::<PyResult<Vec<u64>>>()?;
    Ok(Time::new(&coordinates))
}

/// Reads a time of a scope `depth` loops deep from Python.
pub fn from_py(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Time> {
    read(obj, depth, "a timestamp")
}

/// Reads a path summary (the amounts added to each coordinate) of a scope `depth` loops deep.
pub fn summary_from_py(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Time> {
    read(obj, depth, "a summary")
}

/// `time`, of a scope `depth` loops deep, as Python sees it: an int, or a flat tuple.
pub fn to_py<'py>(py: Python<'py>, time: &Time, depth: usize) -> PyResult<Bound<'py, PyAny>> {
    if depth == 0 {
        Ok(time.get(0).into_pyobject(py)?.into_any())
    } else {
        Ok(PyTuple::new(py, time.padded(depth + 1))?.into_any())
    }
}

/// A time as Python prints it: `3` at a dataflow's root, `(3, 1, 0)` two loops deep.
pub fn show(time: &Time, depth: usize) -> String {
    if depth == 0 {
        time.get(0).to_string()
    } else {
        let shown: Vec<String> = time.padded(depth + 1).map(|c| c.to_string()).collect();
        format!("({})", shown.join(", "))
    }
}
