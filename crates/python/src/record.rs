//! Python records inside the engine.
//!
//! A `Record` is a reference to a Python object. Inside a process records move as
//! references: no copy and no serialization. Cloning one (when a stream feeds several
//! operators) takes a new reference, which needs the interpreter; the engine clones only
//! when a stream fans out.
//!
//! `KeyedPair` carries a record with its key; this module does not choose workers.
//!
//! How records cross processes is `wire`'s concern, not this module's.

use pyo3::prelude::*;

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

/// A record with its key (what a keyed aggregation exchanges, so that the key function runs
/// once per record).
#[derive(Clone)]
pub struct KeyedPair(pub Record, pub Record);

/// A failure of Python code reached from inside the engine (encoding records for another
/// process, say), carried up to the worker's caller by unwinding with this payload.
pub struct PythonFailure(pub PyErr);
