//! Keys: the one key of every keyed operator (`exchange`, `count_by_key`, `aggregate`, the
//! generic operators' `exchange=`, and Megaphone's `state_machine`, `keyed_unary` and
//! `keyed_binary`), what is accepted as one, its canonical form and the worker it goes to.
//!
//! Accepted keys (the users' list is in `docs/design.md`, "Keys"): None; numbers (bool, int,
//! float, complex, and any other `numbers.Number` such as `Fraction` and `Decimal`); str;
//! bytes; tuples and frozensets of keys. Anything else raises `TypeError` naming its type.
//! Keys that compare equal in Python have one canonical form, however their types differ
//! (`1`, `1.0`, `True`, `Fraction(1)`; `(1, "a")` and `(1.0, "a")`): `form` decides it. From
//! the form, without Python's salted `hash`, so that every process agrees:
//!
//! * `route_hash` chooses the worker of a key for the exchanging operators (ints `n` go to
//!   `n % peers`);
//! * `encode` writes the form as bytes, the `Key` that Megaphone keeps state under, puts in a
//!   bin by its hash, and moves between processes with the state; `decode` checks such bytes
//!   and turns them back into the Python key (the form's own value: `True` comes back as `1`,
//!   a namedtuple as a tuple, `Fraction(1, 2)` as `0.5`).
//!
//! This module decides what a key is and where it goes; it does not move records.

mod decode;
mod encode;
mod form;
mod route_hash;

pub use decode::KeyBytesError;
pub use route_hash::route;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use timely_engine::dataflow::{DecodeError, ExchangeData};

/// A key in canonical form: its canonical bytes (`encode`), equal exactly for keys that compare
/// equal. Made from a Python key (`Key::new`) or from bytes checked by `decode::validate`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Key(Vec<u8>);

impl Key {
    /// The key `key`, or a `TypeError` naming its type (`what` names the key).
    pub fn new(key: &Bound<'_, PyAny>, what: &str) -> PyResult<Key> {
        let mut bytes = Vec::new();
        encode::encode(key, 0, what, &mut bytes)?;
        Ok(Key(bytes))
    }

    /// The key whose canonical bytes are `bytes`, if they are such bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Key, KeyBytesError> {
        decode::validate(bytes)?;
        Ok(Key(bytes.to_vec()))
    }

    /// The canonical bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The Python key this key stands for (its canonical value).
    pub fn to_object<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        decode::to_object(py, &self.0)
    }
}

/// A batch of keys: the number of keys (`u32`), then each key's length (`u32`) and canonical
/// bytes, all integers little endian. Decoding checks every key (`Key::from_bytes`).
impl ExchangeData for Key {
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>) {
        put_u32(out, batch.len());
        batch.iter().for_each(|key| put_key(out, key));
    }

    fn decode_batch(mut bytes: &[u8]) -> Result<Vec<Self>, DecodeError> {
        let count = take_u32(&mut bytes)?;
        let mut keys = Vec::with_capacity(count.min(bytes.len() / 4));
        for _ in 0..count {
            keys.push(take_key(&mut bytes)?);
        }
        match bytes.is_empty() {
            true => Ok(keys),
            false => Err(DecodeError::Malformed {
                what: "a batch of keys",
                reason: format!("{} bytes after the last key", bytes.len()),
            }),
        }
    }
}

/// Appends `key` as its length (`u32`, little endian) and canonical bytes.
pub fn put_key(out: &mut Vec<u8>, key: &Key) {
    put_u32(out, key.0.len());
    out.extend_from_slice(&key.0);
}

/// Reads a key that `put_key` wrote from the front of `bytes`, checking it.
pub fn take_key(bytes: &mut &[u8]) -> Result<Key, DecodeError> {
    let len = take_u32(bytes)?;
    let key = bytes.get(..len).ok_or(DecodeError::Short { what: "a batch of keys", part: "last key" })?;
    let key = Key::from_bytes(key).map_err(|error| DecodeError::Format(Box::new(error)))?;
    *bytes = &bytes[len..];
    Ok(key)
}

/// Appends `n` as a little-endian `u32`.
pub fn put_u32(out: &mut Vec<u8>, n: usize) {
    let n = u32::try_from(n).expect("batches and keys are shorter than 2^32");
    out.extend_from_slice(&n.to_le_bytes());
}

/// Reads a little-endian `u32` from the front of `bytes`.
pub fn take_u32(bytes: &mut &[u8]) -> Result<usize, DecodeError> {
    let (head, rest) =
        bytes.split_at_checked(4).ok_or(DecodeError::Short { what: "a batch", part: "next length" })?;
    *bytes = rest;
    Ok(u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize)
}

/// The worker (of `peers`) that `exchange`, `count_by_key`, `aggregate` and the generic
/// operators' `exchange=` send a record with key `key` to. Keys that compare equal go to the
/// same worker in every process; ints (and numbers equal to ints) go to `key % peers`.
#[pyfunction]
pub fn route_key(key: &Bound<'_, PyAny>, peers: u64) -> PyResult<u64> {
    if peers == 0 || peers > i64::MAX as u64 {
        return Err(PyValueError::new_err(format!("peers must be in 1..2**63, not {peers}")));
    }
    route(key, peers, "route_key")
}

/// The canonical bytes of `key` (`encode`): equal exactly for keys that compare equal.
#[pyfunction]
pub fn key_canonical_bytes<'py>(key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(key.py(), Key::new(key, "key_canonical_bytes")?.as_bytes()))
}

/// The key whose canonical bytes are `data`; `ValueError` if they are not such bytes.
#[pyfunction]
pub fn key_from_canonical_bytes<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    decode::to_object(py, data)
}

/// Adds the key functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(route_key, m)?)?;
    m.add_function(wrap_pyfunction!(key_canonical_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(key_from_canonical_bytes, m)?)
}
