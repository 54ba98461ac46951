//! A key's canonical bytes: its form (`form`) written so that keys that compare equal give
//! equal bytes and keys that do not give different bytes. Megaphone keeps a key's state under
//! these bytes, puts the key in a bin by their hash and moves them with the state.
//!
//! Each value is a tag byte and its body; integers are little endian, lengths and counts
//! `u32`:
//!
//! | tag | value | body |
//! |---|---|---|
//! | 0 | None | - |
//! | 1 | int in 64 bits | `i64` |
//! | 2 | larger int | length, two's complement in the fewest bytes (more than 8) |
//! | 3 | float equal to no int (or an infinity) | `f64` bits |
//! | 4 | complex with an imaginary part | real and imaginary `f64` bits, no `-0.0` |
//! | 5 | rational equal to no float | numerator and denominator (> 1), each a value of tag 1 or 2, in lowest terms |
//! | 6 | NaN | - |
//! | 7 | str | length, UTF-8 (lone surrogates as by `surrogatepass`) |
//! | 8 | bytes | length, the bytes |
//! | 9 | tuple | count, the elements' values |
//! | 10 | frozenset | count, the elements' values in increasing byte order, no two equal |
//!
//! `decode` reads them back.

use super::form::{form, nested, str_bytes, Form};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyBytes, PyInt};

/// The tag bytes of the canonical encoding (module docs).
pub mod tag {
    pub const NONE: u8 = 0;
    pub const INT: u8 = 1;
    pub const BIG_INT: u8 = 2;
    pub const FLOAT: u8 = 3;
    pub const COMPLEX: u8 = 4;
    pub const RATIONAL: u8 = 5;
    pub const NAN: u8 = 6;
    pub const STR: u8 = 7;
    pub const BYTES: u8 = 8;
    pub const TUPLE: u8 = 9;
    pub const FROZENSET: u8 = 10;
}

/// Appends the canonical bytes of `key` (nested `depth` deep) to `out`; `what` names the key
/// in errors.
pub fn encode(key: &Bound<'_, PyAny>, depth: usize, what: &str, out: &mut Vec<u8>) -> PyResult<()> {
    match form(key, what)? {
        Form::None => out.push(tag::NONE),
        Form::Int(n) => put_int(out, n),
        Form::BigInt(n) => put_big_int(&n, out)?,
        Form::Float(value) => {
            out.push(tag::FLOAT);
            out.extend_from_slice(&value.to_bits().to_le_bytes());
        }
        Form::Complex(complex) => {
            let (real, imag) = (complex.real(), complex.imag());
            out.push(tag::COMPLEX);
            // `+ 0.0` turns -0.0 into 0.0, which it equals.
            out.extend_from_slice(&(real + 0.0).to_bits().to_le_bytes());
            out.extend_from_slice(&(imag + 0.0).to_bits().to_le_bytes());
        }
        Form::Rational(number) => put_rational(number, what, out)?,
        Form::NaN => out.push(tag::NAN),
        Form::Str(text) => {
            out.push(tag::STR);
            str_bytes(text, |utf8| put_bytes(out, utf8, what))??;
        }
        Form::Bytes(bytes) => {
            out.push(tag::BYTES);
            put_bytes(out, bytes.as_bytes(), what)?;
        }
        Form::Tuple(tuple) => {
            let depth = nested(depth, what)?;
            out.push(tag::TUPLE);
            put_len(out, tuple.len(), what)?;
            for item in tuple.iter() {
                encode(&item, depth, what, out)?;
            }
        }
        Form::FrozenSet(set) => {
            let depth = nested(depth, what)?;
            let mut items = Vec::with_capacity(set.len());
            for item in set.iter() {
                let mut bytes = Vec::new();
                encode(&item, depth, what, &mut bytes)?;
                items.push(bytes);
            }
            // Elements that are distinct objects but one key (two NaNs) are one element.
            items.sort_unstable();
            items.dedup();
            out.push(tag::FROZENSET);
            put_len(out, items.len(), what)?;
            items.iter().for_each(|item| out.extend_from_slice(item));
        }
    }
    Ok(())
}

fn put_int(out: &mut Vec<u8>, n: i64) {
    out.push(tag::INT);
    out.extend_from_slice(&n.to_le_bytes());
}

/// An int outside 64 bits: its two's complement in the fewest bytes.
fn put_big_int(n: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    let py = n.py();
    let bits: usize = n.call_method0(intern!(py, "bit_length"))?.extract()?;
    let len = (bits + 8) / 8;
    let signed = [(intern!(py, "signed"), true)].into_py_dict(py)?;
    let bytes = n.call_method(intern!(py, "to_bytes"), (len, intern!(py, "little")), Some(&signed))?;
    out.push(tag::BIG_INT);
    put_bytes(out, bytes.cast::<PyBytes>()?.as_bytes(), "an int key")
}

fn put_int_object(n: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    match n.extract::<i64>() {
        Ok(small) => {
            put_int(out, small);
            Ok(())
        }
        Err(_) => put_big_int(n, out),
    }
}

/// A real number equal to no float: `as_integer_ratio()` (in lowest terms, by its contract).
fn put_rational(number: &Bound<'_, PyAny>, what: &str, out: &mut Vec<u8>) -> PyResult<()> {
    let py = number.py();
    let (numerator, denominator): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
        number.call_method0(intern!(py, "as_integer_ratio"))?.extract()?;
    if !numerator.is_instance_of::<PyInt>() || !denominator.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("{what}: as_integer_ratio() of a key must give two ints")));
    }
    out.push(tag::RATIONAL);
    put_int_object(&numerator, out)?;
    put_int_object(&denominator, out)
}

fn put_len(out: &mut Vec<u8>, len: usize, what: &str) -> PyResult<()> {
    let len = u32::try_from(len)
        .map_err(|_| PyValueError::new_err(format!("{what}: a key of 2**32 parts or more")))?;
    out.extend_from_slice(&len.to_le_bytes());
    Ok(())
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8], what: &str) -> PyResult<()> {
    put_len(out, bytes.len(), what)?;
    out.extend_from_slice(bytes);
    Ok(())
}
