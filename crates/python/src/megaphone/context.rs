//! `KeyContext`: what the Python logic of `keyed_unary` and `keyed_binary` may do for the key
//! it runs for.
//!
//! A fresh context is made for each call of the logic; it collects outputs, notification
//! requests and a request to discard the key's state, which `hand_over` passes to the
//! Megaphone crate's `Context` after the logic returns. It checks notification times itself
//! so that a past time raises `ValueError` in the logic rather than ending the run.

use crate::record::Record;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use timely_megaphone::Context;

/// The handle of a keyed operator's logic for one key at one time.
#[pyclass(name = "KeyContext", module = "timely_py._core")]
pub struct PyKeyContext {
    time: u64,
    earliest: u64,
    outputs: Vec<Py<PyAny>>,
    requests: Vec<u64>,
    discard: bool,
    open: bool,
}

impl PyKeyContext {
    /// A context at `time` accepting notifications from `earliest` on.
    pub fn new(time: u64, earliest: u64) -> Self {
        PyKeyContext { time, earliest, outputs: Vec::new(), requests: Vec::new(), discard: false, open: true }
    }

    /// Passes what the logic asked for to `context`, and closes this one.
    pub fn hand_over(&mut self, context: &mut Context<'_, Record>) {
        self.open = false;
        self.outputs.drain(..).for_each(|output| context.give(Record(output)));
        self.requests.drain(..).for_each(|time| context.notify_at(time));
        if self.discard {
            context.discard_state();
        }
    }

    fn check_open(&self, what: &str) -> PyResult<()> {
        if self.open {
            Ok(())
        } else {
            Err(PyRuntimeError::new_err(format!(
                "KeyContext.{what}: the context is used after its logic returned"
            )))
        }
    }
}

#[pymethods]
impl PyKeyContext {
    /// The time the logic runs at (of the record, or of the notification).
    #[getter]
    fn time(&self) -> u64 {
        self.time
    }

    /// Sends `output` at the current time.
    fn give(&mut self, output: Py<PyAny>) -> PyResult<()> {
        self.check_open("give")?;
        self.outputs.push(output);
        Ok(())
    }

    /// Asks for a notification of the current key at `time`: at the current time or later
    /// for a record, strictly later inside a notification. It moves with the key's bin.
    fn notify_at(&mut self, time: u64) -> PyResult<()> {
        self.check_open("notify_at")?;
        if time < self.earliest {
            return Err(PyValueError::new_err(format!(
                "notify_at({time}) at time {}: notifications must be at time {} or later",
                self.time, self.earliest
            )));
        }
        self.requests.push(time);
        Ok(())
    }

    /// Drops the current key's state after the logic returns, whatever it returned.
    fn discard_state(&mut self) -> PyResult<()> {
        self.check_open("discard_state")?;
        self.discard = true;
        Ok(())
    }
}
