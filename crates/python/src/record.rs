//! Python records inside the engine, and stable routing hashes.
//!
//! A `Record` is a reference to a Python object. Inside a process records move as
//! references: no copy and no serialization. Cloning one (when a stream feeds several
//! operators) takes a new reference, which needs the interpreter; the engine clones only
//! when a stream fans out.
//!
//! `route` turns an exchange key into the worker that receives the record: `key % peers`
//! (Python's modulo) for ints, and a hash of the contents for other built-in types that is
//! stable across processes, unlike Python's `hash`, which is salted per process for strings.
//!
//! How records cross processes is `wire`'s concern, not this module's.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyString, PyTuple};

/// A Python object carried as a record.
pub struct Record(pub Py<PyAny>);

impl Clone for Record {
    fn clone(&self) -> Self {
        Python::attach(|py| Record(self.0.clone_ref(py)))
    }
}

impl Record {
    /// The record as a bound object.
    #[inline]
    pub fn bind<'py>(&self, py: Python<'py>) -> &Bound<'py, PyAny> {
        self.0.bind(py)
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv1a(bytes: &[u8], seed: u64) -> u64 {
    bytes.iter().fold(seed, |hash, b| (hash ^ u64::from(*b)).wrapping_mul(FNV_PRIME))
}

/// Mixes a value so that structured keys spread over workers.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x
}

/// The worker (of `peers`) that receives records with exchange key `key`: Python's
/// `key % peers` for ints (and bools), otherwise `route_hash(key) % peers`.
pub fn route(key: &Bound<'_, PyAny>, peers: u64) -> PyResult<u64> {
    if key.is_instance_of::<PyInt>() {
        return key.rem(peers)?.extract::<u64>();
    }
    Ok(route_hash(key)? % peers)
}

/// The routing hash of an exchange key: the value itself for ints and bools, a fixed hash of
/// the contents for str, bytes, floats and tuples of these, and Python's `hash` for anything
/// else (stable within one process only).
pub fn route_hash(key: &Bound<'_, PyAny>) -> PyResult<u64> {
    if key.is_instance_of::<PyBool>() {
        return Ok(u64::from(key.is_truthy()?));
    }
    if key.is_instance_of::<PyInt>() {
        if let Ok(value) = key.extract::<i64>() {
            return Ok(value as u64);
        }
        return Ok(fnv1a(key.str()?.to_cow()?.as_bytes(), FNV_OFFSET));
    }
    if let Ok(text) = key.cast::<PyString>() {
        return Ok(fnv1a(text.to_cow()?.as_bytes(), FNV_OFFSET));
    }
    if let Ok(bytes) = key.cast::<PyBytes>() {
        return Ok(fnv1a(bytes.as_bytes(), FNV_OFFSET ^ 1));
    }
    if let Ok(float) = key.cast::<PyFloat>() {
        let value = float.value();
        if value.fract() == 0.0 && value.abs() < 9.0e18 {
            return Ok(value as i64 as u64);
        }
        return Ok(mix(value.to_bits()));
    }
    if let Ok(tuple) = key.cast::<PyTuple>() {
        let mut hash = FNV_OFFSET ^ 2;
        for item in tuple.iter() {
            hash = mix(hash ^ route_hash(&item)?);
        }
        return Ok(hash);
    }
    if key.is_none() {
        return Ok(0);
    }
    Ok(key.hash()? as u64)
}

/// A record with the hash that routes it to a worker (what an exchange by key carries).
#[derive(Clone)]
pub struct Routed(pub u64, pub Record);

/// A record with its key and the key's routing hash (what a keyed aggregation exchanges).
#[derive(Clone)]
pub struct RoutedPair(pub u64, pub Record, pub Record);

/// A failure of Python code reached from inside the engine (encoding records for another
/// process, say), carried up to the worker's caller by unwinding with this payload.
pub struct PythonFailure(pub PyErr);
