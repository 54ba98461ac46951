//! Timestamps as Python sees them, and the closed set of timestamp depths.
//!
//! A dataflow's root scope uses non-negative ints; each nested loop adds a coordinate, and
//! Python sees the time as a flat tuple `(epoch, i1, ...)` (see `coordinates`). Path
//! summaries (for `feedback`) use the same shapes. Loops nest up to `MAX_LOOP_DEPTH` deep.
//!
//! Python objects that wrap something typed by its timestamp (a stream, a scope, a
//! capability, a port) hold a `Depth<F>`: one closed enum with a variant per supported
//! depth, where the family `F` names what is held at each depth. Code written once for any
//! `T: PyTime` is applied to it with the one `dispatch!` macro; `PyTime::wrap` and
//! `PyTime::get` go from a typed value to its `Depth` and back. This module must not know
//! what the families are.

mod coordinates;

pub use coordinates::show;
use coordinates::{read_coordinates, to_py, Coordinates};
use pyo3::prelude::*;
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

/// What a `Depth` holds at each timestamp depth (a stream of that depth, say).
pub trait Family {
    /// The value held at timestamps `T`.
    type At<T: PyTime>;
}

/// A value of family `F` at one of the supported timestamp depths.
pub enum Depth<F: Family> {
    /// A dataflow's root scope.
    Root(F::At<T0>),
    /// One loop deep.
    Loop1(F::At<T1>),
    /// Two loops deep.
    Loop2(F::At<T2>),
    /// Three loops deep.
    Loop3(F::At<T3>),
}

/// Evaluates `$body` with `$x` bound to the value inside a `Depth`, whatever its depth:
/// `dispatch!(&stream.inner, s => s.depth())`. The body is compiled once per depth.
macro_rules! dispatch {
    ($value:expr, $x:ident => $body:expr) => {
        match $value {
            $crate::time::Depth::Root($x) => $body,
            $crate::time::Depth::Loop1($x) => $body,
            $crate::time::Depth::Loop2($x) => $body,
            $crate::time::Depth::Loop3($x) => $body,
        }
    };
}
pub(crate) use dispatch;

impl<F: Family> Depth<F> {
    /// Number of loops around the value's scope.
    pub fn depth(&self) -> usize {
        match self {
            Depth::Root(_) => 0,
            Depth::Loop1(_) => 1,
            Depth::Loop2(_) => 2,
            Depth::Loop3(_) => 3,
        }
    }
}

impl<F: Family> Clone for Depth<F>
where
    F::At<T0>: Clone,
    F::At<T1>: Clone,
    F::At<T2>: Clone,
    F::At<T3>: Clone,
{
    fn clone(&self) -> Self {
        match self {
            Depth::Root(x) => Depth::Root(x.clone()),
            Depth::Loop1(x) => Depth::Loop1(x.clone()),
            Depth::Loop2(x) => Depth::Loop2(x.clone()),
            Depth::Loop3(x) => Depth::Loop3(x.clone()),
        }
    }
}

/// A timestamp type usable from Python: one of `T0` to `T3`.
pub trait PyTime: Timestamp + Coordinates + Refines<Self> {
    /// The time as a Python int or tuple.
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, self)
    }
    /// Reads a time from Python.
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Self::read(&read_coordinates(obj, Self::LEN, "a timestamp")?))
    }
    /// Reads a path summary (the amounts added to each coordinate) from Python.
    fn summary_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self::Summary>;
    /// `value` as the variant of this depth.
    fn wrap<F: Family>(value: F::At<Self>) -> Depth<F>;
    /// The value of `depth` if it is at this depth.
    fn get<F: Family>(depth: &Depth<F>) -> Option<&F::At<Self>>;
    /// The value of `depth` if it is at this depth, else `depth` back.
    fn take<F: Family>(depth: Depth<F>) -> Result<F::At<Self>, Depth<F>>;
}

macro_rules! py_time {
    ($t:ty, $variant:ident, $summary:expr) => {
        impl PyTime for $t {
            fn summary_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Self::Summary> {
                let coordinates = read_coordinates(obj, <$t>::LEN, "a summary")?;
                Ok($summary(&coordinates))
            }
            fn wrap<F: Family>(value: F::At<Self>) -> Depth<F> {
                Depth::$variant(value)
            }
            fn get<F: Family>(depth: &Depth<F>) -> Option<&F::At<Self>> {
                match depth {
                    Depth::$variant(value) => Some(value),
                    _ => None,
                }
            }
            fn take<F: Family>(depth: Depth<F>) -> Result<F::At<Self>, Depth<F>> {
                match depth {
                    Depth::$variant(value) => Ok(value),
                    other => Err(other),
                }
            }
        }
    };
}
py_time!(T0, Root, |c: &[u64]| c[0]);
py_time!(T1, Loop1, <T1>::read);
py_time!(T2, Loop2, <T2>::read);
py_time!(T3, Loop3, <T3>::read);
