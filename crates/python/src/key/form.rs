//! What a key is: the one list of accepted keys (`ACCEPTED`) and the canonical value each key
//! stands for (`Form`), so that keys comparing equal in Python have one form whatever their
//! types. Hashing a form (`route_hash`) and writing it as bytes (`encode`) both start here.
//!
//! * A number equal to an int *is* that int: bools, integral floats of any magnitude,
//!   `complex(n, 0)`, and any `numbers.Number` with `int(x) == x` (`Fraction(4, 2)`,
//!   `Decimal(2)`, numpy ints).
//! * Another real number equal to a float is that float (`Fraction(1, 2)` is `0.5`); a real
//!   number equal to no float is a rational (`Fraction(1, 3)`, `Decimal("0.1")`); a complex
//!   number with an imaginary part is a complex; every NaN is one key.
//! * str, bytes, None; tuples (namedtuples too) and frozensets of keys. Subclasses of int,
//!   str, bytes, float, complex and tuple (`IntEnum`, `StrEnum`, namedtuples) are their
//!   built-in value, which they compare equal to.
//! * Nothing else: another object raises `TypeError` naming its type, since no hash of it is
//!   both equal for equal objects and the same in every process.

use pyo3::exceptions::{PyArithmeticError, PyRecursionError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::type_object::PyTypeCheck;
use pyo3::types::{PyBytes, PyComplex, PyFloat, PyFrozenSet, PyInt, PyString, PyTuple, PyType};

/// What keys are, for error messages (and, in more words, for users in `docs/design.md`).
pub const ACCEPTED: &str = "keys are None, bool, int, float, complex, other numbers.Number \
    (Fraction, Decimal), str, bytes, and tuples and frozensets of keys";

/// Tuples and frozensets nested deeper than this are refused rather than overflow the stack.
pub const MAX_DEPTH: usize = 1000;

/// 2^63 as a float: integral floats in `[-2^63, 2^63)` convert to `i64` exactly.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// The canonical value of a key (module docs); borrowed from the key where it can be.
pub enum Form<'a, 'py> {
    None,
    /// An int (or a number equal to one) that fits in 64 bits.
    Int(i64),
    /// A larger int, as a Python int.
    BigInt(Bound<'py, PyAny>),
    /// A finite float that equals no int, or an infinity; never NaN.
    Float(f64),
    /// A complex number with a non-zero imaginary part and no NaN part.
    Complex(&'a Bound<'py, PyComplex>),
    /// A real number that equals no int and no float (it has `as_integer_ratio`).
    Rational(&'a Bound<'py, PyAny>),
    /// Any NaN (float, complex or Decimal).
    NaN,
    Str(&'a Bound<'py, PyString>),
    Bytes(&'a Bound<'py, PyBytes>),
    Tuple(&'a Bound<'py, PyTuple>),
    FrozenSet(&'a Bound<'py, PyFrozenSet>),
}

/// The canonical form of `key`, or a `TypeError` naming its type and saying what keys are
/// (`what` names the key in it). Exact built-in types are recognised first (the common, fast
/// case), then their subclasses, then other numbers. (A `Form` fits in two registers, so
/// returning one costs no more than returning a hash.)
#[inline(always)]
pub fn form<'a, 'py>(key: &'a Bound<'py, PyAny>, what: &str) -> PyResult<Form<'a, 'py>> {
    if key.is_exact_instance_of::<PyInt>() {
        return Ok(int_form(key));
    }
    if let Some(text) = as_a::<PyString>(key) {
        return Ok(Form::Str(text));
    }
    if let Some(float) = as_a::<PyFloat>(key) {
        return float_form(key, float.value());
    }
    if let Some(tuple) = as_a::<PyTuple>(key) {
        return Ok(Form::Tuple(tuple));
    }
    if key.is_instance_of::<PyInt>() {
        return Ok(int_form(key));
    }
    if let Some(bytes) = as_a::<PyBytes>(key) {
        return Ok(Form::Bytes(bytes));
    }
    if key.is_none() {
        return Ok(Form::None);
    }
    if let Some(complex) = as_a::<PyComplex>(key) {
        return complex_form(key, complex);
    }
    if let Some(set) = as_a::<PyFrozenSet>(key) {
        return Ok(Form::FrozenSet(set));
    }
    other_form(key, what)
}

/// The bytes of a str key: its UTF-8, with lone surrogates (which a Python str may hold) as
/// `surrogatepass` writes them, so that every str has its own bytes.
#[inline]
pub fn str_bytes<F: FnOnce(&[u8]) -> R, R>(text: &Bound<'_, PyString>, f: F) -> PyResult<R> {
    match text.to_str() {
        Ok(utf8) => Ok(f(utf8.as_bytes())),
        Err(_) => {
            let py = text.py();
            let passed = text.call_method1(intern!(py, "encode"), ("utf-8", "surrogatepass"))?;
            Ok(f(passed.cast::<PyBytes>()?.as_bytes()))
        }
    }
}

/// `depth + 1` for the elements of a tuple or frozenset at `depth`, or a `RecursionError`.
pub fn nested(depth: usize, what: &str) -> PyResult<usize> {
    if depth >= MAX_DEPTH {
        return Err(PyRecursionError::new_err(format!(
            "{what}: tuples or frozensets nested more than {MAX_DEPTH} deep"
        )));
    }
    Ok(depth + 1)
}

/// `key` as a `T` if it is one: a type flag check, without the error object a failed `cast`
/// builds (a key is tried against several types).
#[inline]
fn as_a<'a, 'py, T: PyTypeCheck>(key: &'a Bound<'py, PyAny>) -> Option<&'a Bound<'py, T>> {
    if key.is_instance_of::<T>() {
        key.cast::<T>().ok()
    } else {
        None
    }
}

fn int_form<'a, 'py>(int: &Bound<'py, PyAny>) -> Form<'a, 'py> {
    match int.extract::<i64>() {
        Ok(n) => Form::Int(n),
        Err(_) => Form::BigInt(int.clone()),
    }
}

/// A float (or a complex with this real part and no imaginary part): the int it equals, or
/// itself. Decided on the bits, with no rounding calls: this is the path of every float key.
fn float_form<'a, 'py>(key: &Bound<'py, PyAny>, value: f64) -> PyResult<Form<'a, 'py>> {
    if value.is_nan() {
        return Ok(Form::NaN);
    }
    if value.is_infinite() {
        return Ok(Form::Float(value));
    }
    let (mantissa, exponent) = decompose(value);
    let integral = exponent >= 0
        || mantissa == 0
        || (exponent > -64 && i64::from(mantissa.trailing_zeros()) >= -exponent);
    if !integral {
        return Ok(Form::Float(value));
    }
    if (-TWO_POW_63..TWO_POW_63).contains(&value) {
        return Ok(Form::Int(value as i64));
    }
    Ok(Form::BigInt(key.py().get_type::<PyInt>().call1((value,))?))
}

/// `|value| = mantissa * 2^exponent` exactly, for a finite float (`mantissa < 2^53`).
pub fn decompose(value: f64) -> (u64, i64) {
    let bits = value.to_bits();
    let (exponent_bits, fraction) = ((bits >> 52) & 0x7ff, bits & ((1 << 52) - 1));
    match exponent_bits {
        0 => (fraction, -1074),
        _ => (fraction | 1 << 52, exponent_bits as i64 - 1075),
    }
}

fn complex_form<'a, 'py>(
    key: &Bound<'py, PyAny>,
    complex: &'a Bound<'py, PyComplex>,
) -> PyResult<Form<'a, 'py>> {
    let (real, imag) = (complex.real(), complex.imag());
    if real.is_nan() || imag.is_nan() {
        return Ok(Form::NaN);
    }
    if imag == 0.0 {
        return float_form(key, real);
    }
    Ok(Form::Complex(complex))
}

/// A key of no built-in type: a `numbers.Number` is the int it equals if `int(key) == key`,
/// else the float it equals, else a rational; anything else is refused.
fn other_form<'a, 'py>(key: &'a Bound<'py, PyAny>, what: &str) -> PyResult<Form<'a, 'py>> {
    static NUMBER: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let py = key.py();
    if !key.is_instance(NUMBER.import(py, "numbers", "Number")?)? {
        return Err(refused(key, what));
    }
    if key.ne(key)? {
        return Ok(Form::NaN);
    }
    match py.get_type::<PyInt>().call1((key,)) {
        Ok(int) if int.eq(key)? => return Ok(int_form(&int)),
        Ok(_) => {}
        Err(error) if has_no_value(py, &error) => {}
        Err(error) => return Err(error),
    }
    match py.get_type::<PyFloat>().call1((key,)) {
        Ok(float) if float.eq(key)? => return float_form(key, float.extract()?),
        Ok(_) => {}
        Err(error) if error.is_instance_of::<PyArithmeticError>(py) => {}
        Err(_) => return Err(refused(key, what)),
    }
    if !key.hasattr(intern!(py, "as_integer_ratio"))? {
        return Err(refused(key, what));
    }
    Ok(Form::Rational(key))
}

/// Whether `int(x)` or `float(x)` failed because `x` has no such value (infinite, complex,
/// too large).
fn has_no_value(py: Python<'_>, error: &PyErr) -> bool {
    error.is_instance_of::<PyTypeError>(py)
        || error.is_instance_of::<PyValueError>(py)
        || error.is_instance_of::<PyArithmeticError>(py)
}

/// The `TypeError` for `key`, which is not a key: its type (unhashable or not) and what keys
/// are.
fn refused(key: &Bound<'_, PyAny>, what: &str) -> PyErr {
    let name = key.get_type().name().map(|name| name.to_string()).unwrap_or_else(|_| "?".into());
    let reason = match key.hash() {
        Err(_) => format!("unhashable type: '{name}'"),
        Ok(_) => format!("type '{name}' is not a key type (key by a tuple of its fields)"),
    };
    PyTypeError::new_err(format!("{what}: {} is not a key: {reason}; {ACCEPTED}", shown(key)))
}

/// `repr(key)`, cut to 80 characters.
fn shown(key: &Bound<'_, PyAny>) -> String {
    let text = key.repr().map(|r| r.to_string()).unwrap_or_else(|_| "<key>".into());
    match text.char_indices().nth(80) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text,
    }
}
