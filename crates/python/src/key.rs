//! Canonical exchange keys and their routing: which worker receives a key.
//!
//! Keys that compare equal in Python go to the same worker, on every thread and in every
//! process of a run (Python's own `hash` cannot serve: it is salted per process for str and
//! bytes). The rule, documented for users in `docs/design.md` ("Routing keys"):
//!
//! * A number equal to an int *is* that int: bools, integral floats of any magnitude
//!   (`2.0**70`), `complex(n, 0)`, and any `numbers.Number` with `int(x) == x`
//!   (`Fraction(4, 2)`, `Decimal(2)`). An int `n` goes to worker `n % peers` (Python's modulo,
//!   so never negative), which users rely on (`exchange(lambda x: x)` puts int `x` on worker
//!   `x % peers`).
//! * Any other key goes to worker `key_hash(key) % peers`, `key_hash` being XXH3-64 over
//!   the key's canonical form, one seed per kind so that kinds do not collide by design:
//!   - an int in 64 bits: its 8 little-endian bytes; a larger int: Python's numeric hash;
//!   - another number: Python's numeric hash, which is equal for equal numbers of every
//!     built-in numeric type (`0.5`, `Fraction(1, 2)`, `Decimal("0.5")`) and, unlike str
//!     hashing, not salted per process; every NaN (float, complex, Decimal) has one fixed hash;
//!   - str: its UTF-8 bytes; bytes: its bytes (`b"a" != "a"`, and they hash apart);
//!   - None: a fixed hash; tuples (namedtuples too): the element hashes in order;
//!     frozensets: an order-independent sum of the element hashes;
//!   - anything else: Python's `hash(key)`, which is stable within one process only: such
//!     keys are routed consistently by the threads of one process, and across processes
//!     only if their type's `__hash__` is itself deterministic (key by a tuple of the
//!     fields otherwise).
//!
//! This module decides the worker of a key and nothing else: it does not move records.

use pyo3::exceptions::{PyArithmeticError, PyRecursionError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyComplex, PyFloat, PyFrozenSet, PyInt, PyString, PyTuple, PyType};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The XXH3 seeds of the kinds of canonical forms.
mod seed {
    pub const INT: u64 = 1;
    pub const BIG_INT: u64 = 2;
    pub const NUMBER: u64 = 3;
    pub const NAN: u64 = 4;
    pub const STR: u64 = 5;
    pub const BYTES: u64 = 6;
    pub const NONE: u64 = 7;
    pub const TUPLE: u64 = 8;
    pub const FROZENSET: u64 = 9;
    pub const OBJECT: u64 = 10;
}

/// Tuples and frozensets nested deeper than this are refused rather than overflow the stack.
const MAX_DEPTH: usize = 1000;

/// 2^63 as a float: integral floats in `[-2^63, 2^63)` convert to `i64` exactly.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// A key's int value, when the key is a number equal to an int.
enum Integral<'py> {
    /// An int that fits in 64 bits.
    Small(i64),
    /// A larger int (a Python int object).
    Big(Bound<'py, PyAny>),
    /// Not a number equal to an int.
    No,
}

/// The worker (of `peers`) that receives records with exchange key `key` (module docs).
pub fn route(key: &Bound<'_, PyAny>, peers: u64) -> PyResult<u64> {
    match integral(key)? {
        Integral::Small(n) => Ok(n.rem_euclid(peers as i64) as u64),
        Integral::Big(n) => n.rem(peers)?.extract::<u64>(),
        Integral::No => Ok(key_hash(key, 0)? % peers),
    }
}

/// The stable 64-bit hash of `key`'s canonical form (module docs); `depth` is its nesting
/// inside tuples and frozensets.
fn key_hash(key: &Bound<'_, PyAny>, depth: usize) -> PyResult<u64> {
    match integral(key)? {
        Integral::Small(n) => Ok(hash_u64(n as u64, seed::INT)),
        Integral::Big(n) => Ok(hash_u64(n.hash()? as u64, seed::BIG_INT)),
        Integral::No => other_hash(key, depth),
    }
}

fn hash_u64(value: u64, seed: u64) -> u64 {
    xxh3_64_with_seed(&value.to_le_bytes(), seed)
}

/// The hash of a key that is not a number equal to an int.
fn other_hash(key: &Bound<'_, PyAny>, depth: usize) -> PyResult<u64> {
    if let Ok(text) = key.cast::<PyString>() {
        return Ok(xxh3_64_with_seed(text.to_cow()?.as_bytes(), seed::STR));
    }
    if let Ok(bytes) = key.cast::<PyBytes>() {
        return Ok(xxh3_64_with_seed(bytes.as_bytes(), seed::BYTES));
    }
    if let Ok(tuple) = key.cast::<PyTuple>() {
        return tuple_hash(tuple, depth);
    }
    if key.is_none() {
        return Ok(hash_u64(0, seed::NONE));
    }
    if let Ok(set) = key.cast::<PyFrozenSet>() {
        return frozenset_hash(set, depth);
    }
    if is_number(key)? {
        if is_nan(key)? {
            return Ok(hash_u64(0, seed::NAN));
        }
        return Ok(hash_u64(key.hash()? as u64, seed::NUMBER));
    }
    Ok(hash_u64(key.hash()? as u64, seed::OBJECT))
}

/// The element hashes in order, after the length.
fn tuple_hash(tuple: &Bound<'_, PyTuple>, depth: usize) -> PyResult<u64> {
    let depth = nested(depth)?;
    let mut hash = hash_u64(tuple.len() as u64, seed::TUPLE);
    for item in tuple.iter() {
        hash = hash_u64(key_hash(&item, depth)?, hash);
    }
    Ok(hash)
}

/// The sum of the mixed element hashes (independent of iteration order), with the length.
fn frozenset_hash(set: &Bound<'_, PyFrozenSet>, depth: usize) -> PyResult<u64> {
    let depth = nested(depth)?;
    let mut sum = 0u64;
    for item in set.iter() {
        sum = sum.wrapping_add(hash_u64(key_hash(&item, depth)?, seed::FROZENSET));
    }
    Ok(hash_u64(sum, hash_u64(set.len() as u64, seed::FROZENSET)))
}

fn nested(depth: usize) -> PyResult<usize> {
    if depth >= MAX_DEPTH {
        return Err(PyRecursionError::new_err(format!(
            "exchange key: tuples or frozensets nested more than {MAX_DEPTH} deep"
        )));
    }
    Ok(depth + 1)
}

/// The int a key equals, if it is a number equal to an int.
fn integral<'py>(key: &Bound<'py, PyAny>) -> PyResult<Integral<'py>> {
    if let Ok(int) = key.cast::<PyInt>() {
        return Ok(int_value(int.as_any()));
    }
    if let Ok(float) = key.cast::<PyFloat>() {
        return float_integral(key.py(), float.value());
    }
    if key.is_instance_of::<PyString>()
        || key.is_instance_of::<PyBytes>()
        || key.is_instance_of::<PyTuple>()
        || key.is_instance_of::<PyFrozenSet>()
        || key.is_none()
    {
        return Ok(Integral::No);
    }
    if let Ok(complex) = key.cast::<PyComplex>() {
        if complex.imag() == 0.0 {
            return float_integral(key.py(), complex.real());
        }
        return Ok(Integral::No);
    }
    if is_number(key)? {
        return number_integral(key);
    }
    Ok(Integral::No)
}

fn int_value<'py>(int: &Bound<'py, PyAny>) -> Integral<'py> {
    match int.extract::<i64>() {
        Ok(n) => Integral::Small(n),
        Err(_) => Integral::Big(int.clone()),
    }
}

fn float_integral(py: Python<'_>, value: f64) -> PyResult<Integral<'_>> {
    if !value.is_finite() || value.fract() != 0.0 {
        return Ok(Integral::No);
    }
    if (-TWO_POW_63..TWO_POW_63).contains(&value) {
        return Ok(Integral::Small(value as i64));
    }
    Ok(Integral::Big(py.get_type::<PyInt>().call1((value,))?))
}

/// A number of another type (`Fraction`, `Decimal`, ...): the int it equals, if `int(key)`
/// succeeds and compares equal to it.
fn number_integral<'py>(key: &Bound<'py, PyAny>) -> PyResult<Integral<'py>> {
    if is_nan(key)? {
        return Ok(Integral::No);
    }
    let py = key.py();
    let int = match py.get_type::<PyInt>().call1((key,)) {
        Ok(int) => int,
        Err(error) if not_an_int(py, &error) => return Ok(Integral::No),
        Err(error) => return Err(error),
    };
    if int.eq(key)? {
        return Ok(int_value(&int));
    }
    Ok(Integral::No)
}

/// Whether `int(x)` failed because `x` has no int value (infinite, complex, ...).
fn not_an_int(py: Python<'_>, error: &PyErr) -> bool {
    error.is_instance_of::<PyTypeError>(py)
        || error.is_instance_of::<PyValueError>(py)
        || error.is_instance_of::<PyArithmeticError>(py)
}

fn is_number(key: &Bound<'_, PyAny>) -> PyResult<bool> {
    if key.is_instance_of::<PyFloat>() || key.is_instance_of::<PyComplex>() {
        return Ok(true);
    }
    static NUMBER: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    key.is_instance(NUMBER.import(key.py(), "numbers", "Number")?)
}

fn is_nan(key: &Bound<'_, PyAny>) -> PyResult<bool> {
    if let Ok(float) = key.cast::<PyFloat>() {
        return Ok(float.value().is_nan());
    }
    if let Ok(complex) = key.cast::<PyComplex>() {
        return Ok(complex.real().is_nan() || complex.imag().is_nan());
    }
    key.ne(key)
}

/// The worker (of `peers`) that `exchange`, `count_by_key`, `aggregate` and the generic
/// operators' `exchange=` send a record with key `key` to. Keys that compare equal go to the
/// same worker in every process; ints (and numbers equal to ints) go to `key % peers`.
#[pyfunction]
pub fn route_key(key: &Bound<'_, PyAny>, peers: u64) -> PyResult<u64> {
    if peers == 0 || peers > i64::MAX as u64 {
        return Err(PyValueError::new_err(format!("peers must be in 1..2**63, not {peers}")));
    }
    route(key, peers)
}
