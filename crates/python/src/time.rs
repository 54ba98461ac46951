//! Timestamps as Python sees them.
//!
//! A dataflow's root scope uses non-negative ints; each nested loop adds a coordinate, and
//! Python sees the time as a flat tuple `(epoch, i1, ...)`. Path summaries (for `feedback`)
//! use the same shapes. Loops nest up to `MAX_LOOP_DEPTH` deep.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use timely_engine::progress::Refines;
use timely_engine::{Product, Timestamp};

/// How many loops can nest inside a dataflow.
pub const MAX_LOOP_DEPTH: usize = 3;

/// Root timestamps.
pub type T0 = u64;
/// One loop deep.
pub type T1 = Product<T0, u64>;
/// Two loops deep.
pub type T2 = Product<T1, u64>;
/// Three loops deep.
pub type T3 = Product<T2, u64>;

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
fn read_coordinates(obj: &Bound<'_, PyAny>, n: usize, what: &str) -> PyResult<Vec<u64>> {
    let shape =
        if n == 1 { "a non-negative int".to_owned() } else { format!("a tuple of {} non-negative ints", n) };
    let error = || PyTypeError::new_err(format!("{} must be {}, got {}", what, shape, describe(obj)));
    let one = |item: &Bound<'_, PyAny>| -> PyResult<u64> {
        if item.is_instance_of::<pyo3::types::PyBool>() || !item.is_instance_of::<pyo3::types::PyInt>() {
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

fn write_coordinates<'py>(py: Python<'py>, coordinates: &[u64]) -> PyResult<Bound<'py, PyAny>> {
    if coordinates.len() == 1 {
        Ok(coordinates[0].into_pyobject(py)?.into_any())
    } else {
        Ok(PyTuple::new(py, coordinates)?.into_any())
    }
}

/// A timestamp type usable from Python.
pub trait PyTime: Timestamp + Coordinates + Refines<Self> {
    /// The time as a Python int or tuple.
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut coordinates = Vec::with_capacity(Self::LEN);
        self.write(&mut coordinates);
        write_coordinates(py, &coordinates)
    }
    /// Reads a time from Python.
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Self::read(&read_coordinates(obj, Self::LEN, "a timestamp")?))
    }
    /// Reads a path summary (the amounts added to each coordinate) from Python.
    fn summary_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self::Summary>;
}

impl PyTime for T0 {
    fn summary_from_py(obj: &Bound<'_, PyAny>) -> PyResult<u64> {
        Ok(read_coordinates(obj, 1, "a summary")?[0])
    }
}

macro_rules! product_time {
    ($t:ty) => {
        impl PyTime for $t {
            fn summary_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self::Summary> {
                Ok(<$t>::read(&read_coordinates(obj, <$t>::LEN, "a summary")?))
            }
        }
    };
}
product_time!(T1);
product_time!(T2);
product_time!(T3);
