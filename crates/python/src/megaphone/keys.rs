//! Keys, keyed records and per-key state of the Megaphone operators, and how they cross
//! processes.
//!
//! A Python key is kept as its canonical bytes: the codec's encoding of the key alone
//! (`codec`), allowed only for exact `str`, `int`, `bytes` and tuples of those, whose encoding
//! is canonical (equal keys give equal bytes in every process). The Megaphone crate puts a
//! key in a bin by the engine's stable hash of these bytes. A `Keyed` record carries the key's
//! bytes next to the Python value, so that routing never needs the interpreter; `State` is a
//! key's state (None when the key has none). This module owns these types and their wire
//! formats; it does not run user logic.

use crate::codec;
use crate::record::{PythonFailure, Record};
use crate::wire::encode_or_unwind;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyString, PyTuple};
use timely_engine::dataflow::ExchangeData;

/// Key tuples nested deeper than this are refused (the codec encodes deeper ones by pickle).
const MAX_KEY_DEPTH: usize = 32;

/// The canonical bytes of `key`, or a `TypeError` naming the allowed key types.
pub fn key_bytes(py: Python<'_>, key: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    check_key(key, 0, what)?;
    let mut out = Vec::new();
    codec::encode_records(py, &[Record(key.clone().unbind())], &mut out)?;
    Ok(out)
}

fn check_key(key: &Bound<'_, PyAny>, depth: usize, what: &str) -> PyResult<()> {
    if key.is_exact_instance_of::<PyInt>() || key.is_exact_instance_of::<PyBytes>() {
        return Ok(());
    }
    if let Ok(text) = key.cast_exact::<PyString>() {
        // The codec pickles a str with lone surrogates, which would not be canonical.
        return text.to_str().map(|_| ()).map_err(|_| {
            PyValueError::new_err(format!("{what}: a str key must be valid Unicode (no lone surrogates)"))
        });
    }
    if let Ok(tuple) = key.cast_exact::<PyTuple>() {
        if depth >= MAX_KEY_DEPTH {
            return Err(PyValueError::new_err(format!(
                "{what}: key tuples nest at most {MAX_KEY_DEPTH} deep"
            )));
        }
        return tuple.iter().try_for_each(|item| check_key(&item, depth + 1, what));
    }
    Err(PyTypeError::new_err(format!(
        "{what}: a key must be a str, int, bytes or a tuple of those, not {} ({})",
        key.get_type().name()?,
        key.repr()?
    )))
}

/// The Python key whose canonical bytes are `bytes`.
pub fn key_object<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let mut records = Vec::with_capacity(1);
    codec::decode_records(py, bytes, &mut records, false)?;
    match (records.pop(), records.is_empty()) {
        (Some(Record(key)), true) => Ok(key.into_bound(py)),
        _ => Err(PyValueError::new_err("megaphone: a key's bytes do not hold one key")),
    }
}

/// A record with its key's canonical bytes.
#[derive(Clone)]
pub struct Keyed(pub Vec<u8>, pub Record);

/// A batch of keyed records: the number of keys (`u32`), each key's length (`u32`) and bytes,
/// then the values through the codec. All integers little endian.
impl ExchangeData for Keyed {
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>) {
        put_u32(out, batch.len());
        for Keyed(key, _) in batch {
            put_u32(out, key.len());
            out.extend_from_slice(key);
        }
        Python::attach(|py| {
            let values: Vec<Record> = batch.iter().map(|Keyed(_, x)| Record(x.0.clone_ref(py))).collect();
            encode_or_unwind(py, &values, out);
        });
    }

    fn decode_batch(mut bytes: &[u8]) -> Result<Vec<Self>, String> {
        let count = take_u32(&mut bytes)?;
        let mut keys = Vec::with_capacity(count.min(bytes.len() / 4));
        for _ in 0..count {
            let len = take_u32(&mut bytes)?;
            let key = bytes.get(..len).ok_or("a keyed batch shorter than its keys")?;
            keys.push(key.to_vec());
            bytes = &bytes[len..];
        }
        let mut values = Vec::with_capacity(count);
        Python::attach(|py| codec::decode_records(py, bytes, &mut values, true))
            .map_err(|e| e.to_string())?;
        if values.len() != count {
            return Err(format!("a keyed batch with {count} keys and {} values", values.len()));
        }
        Ok(keys.into_iter().zip(values).map(|(key, value)| Keyed(key, value)).collect())
    }
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    let n = u32::try_from(n).expect("keyed batches and keys are shorter than 2^32");
    out.extend_from_slice(&n.to_le_bytes());
}

fn take_u32(bytes: &mut &[u8]) -> Result<usize, String> {
    let (head, rest) = bytes.split_at_checked(4).ok_or("a keyed batch cut inside a length")?;
    *bytes = rest;
    Ok(u32::from_le_bytes(head.try_into().expect("four bytes")) as usize)
}

/// A key's state: a Python object, or None when the key has none.
#[derive(Default)]
pub struct State(pub Option<Py<PyAny>>);

impl Clone for State {
    fn clone(&self) -> Self {
        match &self.0 {
            None => State(None),
            Some(state) => Python::attach(|py| State(Some(state.clone_ref(py)))),
        }
    }
}

impl State {
    /// The state as a Python object (None for no state), leaving no state behind.
    pub fn take(&mut self, py: Python<'_>) -> Py<PyAny> {
        self.0.take().unwrap_or_else(|| py.None())
    }

    /// The state `object` (Python's None means no state).
    pub fn from_object(object: Bound<'_, PyAny>) -> Self {
        State((!object.is_none()).then(|| object.unbind()))
    }
}

/// States cross processes through the codec (pickle for what it does not encode natively);
/// a state that cannot be encoded ends the run with the pickling error and a note saying
/// that a key's state had to move.
impl ExchangeData for State {
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>) {
        Python::attach(|py| {
            let states: Vec<Record> = batch.iter().map(|state| Record(state.clone().take(py))).collect();
            if let Err(error) = codec::encode_records(py, &states, out) {
                let note = "megaphone: a key's state could not be encoded to move its bin to another \
                            process; states must be picklable";
                crate::errors::add_note(py, &error, note);
                std::panic::resume_unwind(Box::new(PythonFailure(error)));
            }
        })
    }

    fn decode_batch(bytes: &[u8]) -> Result<Vec<Self>, String> {
        Python::attach(|py| {
            let mut states = Vec::new();
            codec::decode_records(py, bytes, &mut states, true).map_err(|e| e.to_string())?;
            Ok(states.into_iter().map(|Record(state)| State::from_object(state.into_bound(py))).collect())
        })
    }
}
