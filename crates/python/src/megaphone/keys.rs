//! Keyed records and per-key state of the Megaphone operators, and how they cross processes.
//!
//! A record's key is a `Key` (`crate::key`, the one key of every keyed operator): its
//! canonical bytes, equal exactly for keys that compare equal. The Megaphone crate keeps a
//! key's state under it, puts it in a bin by the engine's stable hash of it and moves it with
//! the state (checked again when it arrives). A `Keyed` record carries its key next to the
//! Python value, so that routing never needs the interpreter; `State` is a key's state (None
//! when the key has none). This module owns these types and their wire formats; it does not
//! run user logic.

use crate::codec;
use crate::key::{put_key, put_u32, take_key, take_u32, Key};
use crate::record::{PythonFailure, Record};
use crate::wire::{encode_or_unwind, python_error};
use pyo3::prelude::*;
use timely_engine::dataflow::{DecodeError, ExchangeData};

/// A record with its key.
#[derive(Clone)]
pub struct Keyed(pub Key, pub Record);

/// A batch of keyed records: the number of keys (`u32`), each key (`key::put_key`), then the
/// values through the codec. All integers little endian.
impl ExchangeData for Keyed {
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>) {
        put_u32(out, batch.len());
        batch.iter().for_each(|Keyed(key, _)| put_key(out, key));
        Python::attach(|py| {
            let values: Vec<Record> = batch.iter().map(|Keyed(_, x)| Record(x.0.clone_ref(py))).collect();
            encode_or_unwind(py, &values, out);
        });
    }

    fn decode_batch(mut bytes: &[u8]) -> Result<Vec<Self>, DecodeError> {
        let count = take_u32(&mut bytes)?;
        let mut keys = Vec::with_capacity(count.min(bytes.len() / 4));
        for _ in 0..count {
            keys.push(take_key(&mut bytes)?);
        }
        let mut values = Vec::with_capacity(count);
        Python::attach(|py| codec::decode_records(py, bytes, &mut values, true)).map_err(python_error)?;
        if values.len() != count {
            let reason = format!("{count} keys and {} values", values.len());
            return Err(DecodeError::Malformed { what: "a batch of keyed records", reason });
        }
        Ok(keys.into_iter().zip(values).map(|(key, value)| Keyed(key, value)).collect())
    }
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

    fn decode_batch(bytes: &[u8]) -> Result<Vec<Self>, DecodeError> {
        Python::attach(|py| {
            let mut states = Vec::new();
            codec::decode_records(py, bytes, &mut states, true).map_err(python_error)?;
            Ok(states.into_iter().map(|Record(state)| State::from_object(state.into_bound(py))).collect())
        })
    }
}
