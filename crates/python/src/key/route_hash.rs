//! The worker of a key: `route` sends a key of canonical form int `n` to worker
//! `n % peers` (Python's modulo, so never negative), which users rely on
//! (`exchange(lambda x: x)` puts int `x` on worker `x % peers`), and any other key to
//! `key_hash(key) % peers`, `key_hash` being XXH3-64 over the form, one seed per kind so that
//! kinds do not collide by design:
//!
//! * an int in 64 bits (inside tuples and frozensets): the int itself, mixed by the
//!   container's XXH3; a larger int: XXH3 of Python's numeric hash;
//! * another number: Python's numeric hash, which is equal for equal numbers of every
//!   built-in numeric type and, unlike str hashing, not salted per process (computed here for
//!   floats); every NaN has one fixed hash;
//! * str: its UTF-8 bytes (lone surrogates as `surrogatepass` writes them); bytes: its bytes (`b"a" != "a"`, and they hash apart);
//! * None: a fixed hash; tuples: the element hashes in order; frozensets: an
//!   order-independent sum of the element hashes.
//!
//! These hashes are pinned by the tests (a change re-routes keys between versions).

use super::form::{decompose, form, nested, str_bytes, Form};
use pyo3::prelude::*;
use pyo3::types::{PyFrozenSet, PyTuple};
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
}

/// The worker (of `peers`, in `1..2^63`) that receives records with key `key` (module docs);
/// `what` names the key in errors.
#[inline]
pub fn route(key: &Bound<'_, PyAny>, peers: u64, what: &str) -> PyResult<u64> {
    match form(key, what)? {
        Form::Int(n) => Ok(n.rem_euclid(peers as i64) as u64),
        Form::BigInt(n) => n.rem(peers)?.extract::<u64>(),
        other => Ok(form_hash(other, 0, what)? % peers),
    }
}

/// The stable 64-bit hash of `key`'s form; `depth` is its nesting in tuples and frozensets.
fn key_hash(key: &Bound<'_, PyAny>, depth: usize, what: &str) -> PyResult<u64> {
    form_hash(form(key, what)?, depth, what)
}

#[inline(always)]
fn form_hash(form: Form<'_, '_>, depth: usize, what: &str) -> PyResult<u64> {
    Ok(match form {
        Form::Int(n) => n as u64,
        Form::BigInt(n) => hash_u64(n.hash()? as u64, seed::BIG_INT),
        Form::Float(value) => number_hash(float_numeric_hash(value)),
        Form::Complex(complex) => number_hash(complex.hash()? as i64),
        Form::Rational(number) => number_hash(number.hash()? as i64),
        Form::NaN => hash_u64(0, seed::NAN),
        Form::Str(text) => str_bytes(text, |utf8| xxh3_64_with_seed(utf8, seed::STR))?,
        Form::Bytes(bytes) => xxh3_64_with_seed(bytes.as_bytes(), seed::BYTES),
        Form::None => hash_u64(0, seed::NONE),
        Form::Tuple(tuple) => tuple_hash(tuple, depth, what)?,
        Form::FrozenSet(set) => frozenset_hash(set, depth, what)?,
    })
}

fn hash_u64(value: u64, seed: u64) -> u64 {
    xxh3_64_with_seed(&value.to_le_bytes(), seed)
}

/// The canonical hash of a number with Python numeric hash `hash`.
fn number_hash(hash: i64) -> u64 {
    hash_u64(hash as u64, seed::NUMBER)
}

/// Python's numeric hash of a float that is not NaN (`hash(value)`, as the Python docs'
/// "Hashing of numeric types" define it on 64-bit builds): the value modulo 2^61 - 1 with the
/// value's sign, -2 instead of -1, and +-314159 for the infinities. Computed here because a
/// call into the interpreter for it would make float keys slower to route.
fn float_numeric_hash(value: f64) -> i64 {
    const MODULUS: u64 = (1 << 61) - 1;
    if value.is_infinite() {
        return if value > 0.0 { 314_159 } else { -314_159 };
    }
    let (mantissa, exponent) = decompose(value);
    // 2^61 = 1 (mod MODULUS), so multiplying by 2^e is a rotation of the low 61 bits
    // (mantissa < 2^53 < MODULUS); exponent >= -1074 > -61 * 18.
    let shift = ((exponent + 61 * 18) % 61) as u32;
    let rotated = ((mantissa << shift) & MODULUS) | (mantissa >> (61 - shift));
    let hash = if value < 0.0 { -(rotated as i64) } else { rotated as i64 };
    if hash == -1 {
        -2
    } else {
        hash
    }
}

/// The element hashes folded in order (each step `h -> (h ^ element) * K` rotated, a
/// bijection of `h`, so tuples differing in one element differ), from the length, finished
/// by XXH3.
fn tuple_hash(tuple: &Bound<'_, PyTuple>, depth: usize, what: &str) -> PyResult<u64> {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let depth = nested(depth, what)?;
    let mut hash = tuple.len() as u64;
    for item in tuple.iter() {
        hash = (hash ^ key_hash(&item, depth, what)?).wrapping_mul(K).rotate_left(29);
    }
    Ok(hash_u64(hash, seed::TUPLE))
}

/// The sum of the mixed element hashes (independent of iteration order), with the length.
fn frozenset_hash(set: &Bound<'_, PyFrozenSet>, depth: usize, what: &str) -> PyResult<u64> {
    let depth = nested(depth, what)?;
    let mut sum = 0u64;
    for item in set.iter() {
        sum = sum.wrapping_add(hash_u64(key_hash(&item, depth, what)?, seed::FROZENSET));
    }
    Ok(hash_u64(sum, hash_u64(set.len() as u64, seed::FROZENSET)))
}
