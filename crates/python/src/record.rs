//! Python records inside the engine.
//!
//! A `Record` is a reference to a Python object. Inside a process records move as
//! references: no copy and no serialization. Cloning one (when a stream feeds several
//! operators) takes a new reference, which needs the interpreter; the engine clones only
//! when a stream fans out.
//!
//! `Routed` and `RoutedPair` carry a record with the worker chosen for its key by
//! `key::route`; this module does not choose workers.
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

/// A record with the worker that its key routes it to (what an exchange by key carries).
#[derive(Clone)]
pub struct Routed(pub u64, pub Record);

/// A record with its key and the key's worker (what a keyed aggregation exchanges).
#[derive(Clone)]
pub struct RoutedPair(pub u64, pub Record, pub Record);

/// A failure of Python code reached from inside the engine (encoding records for another
/// process, say), carried up to the worker's caller by unwinding with this payload.
pub struct PythonFailure(pub PyErr);
