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
//!   - an int in 64 bits (inside tuples and frozensets): the int itself, mixed by the
//!     container's XXH3; a larger int: XXH3 of Python's numeric hash;
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
use pyo3::type_object::PyTypeCheck;
use pyo3::types::{PyBytes, PyComplex, PyFloat, PyFrozenSet, PyInt, PyString, PyTuple, PyType};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The XXH3 seeds of the kinds of canonical forms.
mod seed {
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

/// A key's canonical form: the int it equals, or the stable hash of what it is.
enum Canonical<'py> {
    /// An int that fits in 64 bits.
    Int(i64),
    /// A larger int (a Python int object).
    BigInt(Bound<'py, PyAny>),
    /// Any other key, by its stable hash.
    Hashed(u64),
}

/// The worker (of `peers`) that receives records with exchange key `key` (module docs).
pub fn route(key: &Bound<'_, PyAny>, peers: u64) -> PyResult<u64> {
    match canonical(key, 0)? {
        Canonical::Int(n) => Ok(n.rem_euclid(peers as i64) as u64),
        Canonical::BigInt(n) => n.rem(peers)?.extract::<u64>(),
        Canonical::Hashed(hash) => Ok(hash % peers),
    }
}

/// The stable 64-bit hash of `key`'s canonical form (module docs); `depth` is its nesting
/// inside tuples and frozensets.
fn key_hash(key: &Bound<'_, PyAny>, depth: usize) -> PyResult<u64> {
    match canonical(key, depth)? {
        Canonical::Int(n) => Ok(n as u64),
        Canonical::BigInt(n) => Ok(hash_u64(n.hash()? as u64, seed::BIG_INT)),
        Canonical::Hashed(hash) => Ok(hash),
    }
}

fn hash_u64(value: u64, seed: u64) -> u64 {
    xxh3_64_with_seed(&value.to_le_bytes(), seed)
}

/// The canonical form of `key`: exact built-in types are recognised first (the common,
/// fast case), then their subclasses, then other numbers and other objects.
fn canonical<'py>(key: &Bound<'py, PyAny>, depth: usize) -> PyResult<Canonical<'py>> {
    if key.is_exact_instance_of::<PyInt>() {
        return Ok(int_value(key));
    }
    if let Some(text) = as_a::<PyString>(key) {
        return Ok(Canonical::Hashed(xxh3_64_with_seed(text.to_cow()?.as_bytes(), seed::STR)));
    }
    if let Some(float) = as_a::<PyFloat>(key) {
        return float_canonical(key, float.value());
    }
    if let Some(tuple) = as_a::<PyTuple>(key) {
        return Ok(Canonical::Hashed(tuple_hash(tuple, depth)?));
    }
    if key.is_instance_of::<PyInt>() {
        return Ok(int_value(key));
    }
    if let Some(bytes) = as_a::<PyBytes>(key) {
        return Ok(Canonical::Hashed(xxh3_64_with_seed(bytes.as_bytes(), seed::BYTES)));
    }
    if key.is_none() {
        return Ok(Canonical::Hashed(hash_u64(0, seed::NONE)));
    }
    if let Some(complex) = as_a::<PyComplex>(key) {
        return complex_canonical(key, complex.real(), complex.imag());
    }
    if let Some(set) = as_a::<PyFrozenSet>(key) {
        return Ok(Canonical::Hashed(frozenset_hash(set, depth)?));
    }
    other_canonical(key)
}

/// `key` as a `T` if it is one: a type flag check, without the error object a failed `cast`
/// builds (routing tries several types per key).
fn as_a<'a, 'py, T: PyTypeCheck>(key: &'a Bound<'py, PyAny>) -> Option<&'a Bound<'py, T>> {
    if key.is_instance_of::<T>() {
        key.cast::<T>().ok()
    } else {
        None
    }
}

fn int_value<'py>(int: &Bound<'py, PyAny>) -> Canonical<'py> {
    match int.extract::<i64>() {
        Ok(n) => Canonical::Int(n),
        Err(_) => Canonical::BigInt(int.clone()),
    }
}

/// A float (or a complex with this real part and no imaginary part): the int it equals,
/// or the hash of its Python numeric hash (one hash for every NaN). Decided on the bits, with
/// no rounding calls: this is the path of every float key.
fn float_canonical<'py>(key: &Bound<'py, PyAny>, value: f64) -> PyResult<Canonical<'py>> {
    if value.is_nan() {
        return Ok(nan());
    }
    if value.is_infinite() {
        return Ok(number_hash(if value > 0.0 { 314_159 } else { -314_159 }));
    }
    let (mantissa, exponent) = decompose(value);
    let integral = exponent >= 0
        || mantissa == 0
        || (exponent > -64 && i64::from(mantissa.trailing_zeros()) >= -exponent);
    if !integral {
        return Ok(number_hash(float_numeric_hash(value < 0.0, mantissa, exponent)));
    }
    if (-TWO_POW_63..TWO_POW_63).contains(&value) {
        return Ok(Canonical::Int(value as i64));
    }
    Ok(Canonical::BigInt(key.py().get_type::<PyInt>().call1((value,))?))
}

/// `|value| = mantissa * 2^exponent` exactly, for a finite float (`mantissa < 2^53`).
fn decompose(value: f64) -> (u64, i64) {
    let bits = value.to_bits();
    let (exponent_bits, fraction) = ((bits >> 52) & 0x7ff, bits & ((1 << 52) - 1));
    match exponent_bits {
        0 => (fraction, -1074),
        _ => (fraction | 1 << 52, exponent_bits as i64 - 1075),
    }
}

fn complex_canonical<'py>(key: &Bound<'py, PyAny>, real: f64, imag: f64) -> PyResult<Canonical<'py>> {
    if real.is_nan() || imag.is_nan() {
        return Ok(nan());
    }
    if imag == 0.0 {
        return float_canonical(key, real);
    }
    numeric(key)
}

/// Python's numeric hash of the finite float `+-mantissa * 2^exponent` (`hash(value)`, as
/// the Python docs' "Hashing of numeric types" define it on 64-bit builds): the value modulo
/// 2^61 - 1 with the value's sign, -2 instead of -1. Computed here because a call into the
/// interpreter for it would make float keys slower to route.
fn float_numeric_hash(negative: bool, mantissa: u64, exponent: i64) -> i64 {
    const MODULUS: u64 = (1 << 61) - 1;
    // 2^61 = 1 (mod MODULUS), so multiplying by 2^e is a rotation of the low 61 bits
    // (mantissa < 2^53 < MODULUS); exponent >= -1074 > -61 * 18.
    let shift = ((exponent + 61 * 18) % 61) as u32;
    let rotated = ((mantissa << shift) & MODULUS) | (mantissa >> (61 - shift));
    let hash = if negative { -(rotated as i64) } else { rotated as i64 };
    if hash == -1 {
        -2
    } else {
        hash
    }
}

/// A number that equals no int, by its Python numeric hash.
fn numeric<'py>(key: &Bound<'py, PyAny>) -> PyResult<Canonical<'py>> {
    Ok(number_hash(key.hash()? as i64))
}

/// The canonical hash of a number with Python numeric hash `hash`.
fn number_hash<'py>(hash: i64) -> Canonical<'py> {
    Canonical::Hashed(hash_u64(hash as u64, seed::NUMBER))
}

fn nan<'py>() -> Canonical<'py> {
    Canonical::Hashed(hash_u64(0, seed::NAN))
}

/// The element hashes folded in order (each step `h -> (h ^ element) * K` rotated, a
/// bijection of `h`, so tuples differing in one element differ), from the length, finished
/// by XXH3.
fn tuple_hash(tuple: &Bound<'_, PyTuple>, depth: usize) -> PyResult<u64> {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let depth = nested(depth)?;
    let mut hash = tuple.len() as u64;
    for item in tuple.iter() {
        hash = (hash ^ key_hash(&item, depth)?).wrapping_mul(K).rotate_left(29);
    }
    Ok(hash_u64(hash, seed::TUPLE))
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

/// A key of no built-in type: a `numbers.Number` (`Fraction`, `Decimal`, ...) is the int it
/// equals if `int(key) == key`, else hashed by its Python numeric hash; any other object by
/// Python's `hash` (stable within one process only).
fn other_canonical<'py>(key: &Bound<'py, PyAny>) -> PyResult<Canonical<'py>> {
    static NUMBER: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    if !key.is_instance(NUMBER.import(key.py(), "numbers", "Number")?)? {
        return Ok(Canonical::Hashed(hash_u64(key.hash()? as u64, seed::OBJECT)));
    }
    if key.ne(key)? {
        return Ok(nan());
    }
    let py = key.py();
    match py.get_type::<PyInt>().call1((key,)) {
        Ok(int) if int.eq(key)? => Ok(int_value(&int)),
        Ok(_) => numeric(key),
        Err(error) if not_an_int(py, &error) => numeric(key),
        Err(error) => Err(error),
    }
}

/// Whether `int(x)` failed because `x` has no int value (infinite, complex, ...).
fn not_an_int(py: Python<'_>, error: &PyErr) -> bool {
    error.is_instance_of::<PyTypeError>(py)
        || error.is_instance_of::<PyValueError>(py)
        || error.is_instance_of::<PyArithmeticError>(py)
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
