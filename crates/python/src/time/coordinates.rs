//! Timestamps as flat coordinates: `(epoch, i1, ...)`, read from and written to Python, and
//! printed the way Python shows them. Knows nothing of scopes, streams or depths.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyTuple};
use timely_engine::Product;

/// A timestamp with a flat coordinate form.
pub trait Coordinates: Sized {
    /// Number of coordinates.
    const LEN: usize;
    /// Appends the coordinates.
    fn write(&self, out: &mut Vec<u64>);
    /// Builds from exactly `LEN` coordinates.
    fn read(coordinates: &[u64]) -> Self;
}

impl Coordinates for u64 {
    const LEN: usize = 1;
    fn write(&self, out: &mut Vec<u64>) {
        out.push(*self);
    }
    fn read(coordinates: &[u64]) -> Self {
        coordinates[0]
    }
}

impl<A: Coordinates> Coordinates for Product<A, u64> {
    const LEN: usize = A::LEN + 1;
    fn write(&self, out: &mut Vec<u64>) {
        self.outer.write(out);
        out.push(self.inner);
    }
    fn read(coordinates: &[u64]) -> Self {
        Product::new(A::read(&coordinates[..A::LEN]), coordinates[A::LEN])
    }
}

fn describe(obj: &Bound<'_, PyAny>) -> String {
    obj.repr().map(|r| r.to_string()).unwrap_or_else(|_| "<unprintable>".into())
}

/// Reads `n` non-negative int coordinates from an int (n = 1) or a tuple.
pub fn read_coordinates(obj: &Bound<'_, PyAny>, n: usize, what: &str) -> PyResult<Vec<u64>> {
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
        return Ok(vec![one(obj)?]);
    }
    let tuple = obj.cast::<PyTuple>().map_err(|_| error())?;
    if tuple.len() != n {
        return Err(error());
    }
    tuple.iter().map(|item| one(&item)).collect()
}

/// The time of `time` as Python sees it: an int, or a flat tuple inside loops.
pub fn to_py<'py, T: Coordinates>(py: Python<'py>, time: &T) -> PyResult<Bound<'py, PyAny>> {
    let mut coordinates = Vec::with_capacity(T::LEN);
    time.write(&mut coordinates);
    if coordinates.len() == 1 {
        Ok(coordinates[0].into_pyobject(py)?.into_any())
    } else {
        Ok(PyTuple::new(py, coordinates)?.into_any())
    }
}

/// A time as Python prints it: `3` at a dataflow's root, `(3, 1, 0)` two loops deep.
pub fn show<T: Coordinates>(time: &T) -> String {
    let mut coordinates = Vec::with_capacity(T::LEN);
    time.write(&mut coordinates);
    if coordinates.len() == 1 {
        coordinates[0].to_string()
    } else {
        format!("({})", coordinates.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", "))
    }
}
