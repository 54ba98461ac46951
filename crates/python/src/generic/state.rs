//! What a generic operator is (`Spec`, `Kind`) and the state its closure shares with its
//! Python wrappers (`OpState`): whether the logic is running, which run it is, the
//! activator, the snapshot of the input frontiers taken at the start of each run, and, for a
//! source, whether its worker's leave released it.

use crate::errors::LeavingError;
use crate::generic::frontier::PyFrontier;
use crate::time::{show, Time};
use pyo3::exceptions::{PyAttributeError, PyIndexError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::cell::{Cell, RefCell};
use timely_engine::dataflow::operators::LeaveRelease;
use timely_engine::scheduling::Activator;
use timely_engine::MutableAntichain;

/// What an operator's logic sees besides its ports.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// No frontiers; not scheduled for frontier changes alone.
    Plain,
    /// Input frontiers visible (`input.frontier`); scheduled when they change.
    Frontier,
    /// Like `Frontier`, with a notificator.
    Notify,
}

/// What to build.
pub struct Spec {
    /// The operator's name.
    pub name: String,
    /// Frontier visibility and notifications.
    pub kind: Kind,
    /// `constructor(capability, info) -> logic` if `constructed`, else the logic itself.
    pub callable: Py<PyAny>,
    /// Whether `callable` is a constructor.
    pub constructed: bool,
    /// Per input: None (pipeline) or a key function (exchange to the worker `route(key(x))`).
    pub exchanges: Vec<Option<Py<PyAny>>>,
    /// Whether the operator has an output.
    pub output: bool,
}

/// The state of one operator that its Python wrappers share.
pub struct OpState {
    pub name: String,
    /// Number of loops around the operator's scope: its times have `depth + 1` coordinates.
    pub depth: usize,
    /// True while the operator's logic runs.
    pub live: Cell<bool>,
    /// Number of completed runs; input capabilities are valid in their run only.
    pub generation: Cell<u64>,
    pub activator: Activator,
    /// Whether the logic may see its input frontiers.
    pub watch: bool,
    /// The input frontiers at the start of the current run (if `watch`).
    pub frontiers: RefCell<Vec<MutableAntichain<Time>>>,
    /// For a source: whether its worker's leave released its capabilities (the engine's
    /// `release_on_leave`; None with inputs, which are not released).
    pub leave: Option<LeaveRelease<Time>>,
}

impl OpState {
    /// An error unless the operator's logic runs now; `what` names the object used.
    pub fn ensure_live(&self, what: &str) -> PyResult<()> {
        if self.live.get() {
            Ok(())
        } else {
            Err(PyRuntimeError::new_err(format!(
                "{} of operator '{}' can only be used while the operator's logic runs",
                what, self.name
            )))
        }
    }

    /// A run starts, with the operator's current input frontiers.
    pub fn begin(&self, frontiers: &[MutableAntichain<Time>]) {
        if self.watch {
            let mut mine = self.frontiers.borrow_mut();
            for (mine, current) in mine.iter_mut().zip(frontiers) {
                mine.clone_from(current);
            }
        }
        self.live.set(true);
    }

    /// The run ended.
    pub fn end(&self) {
        self.live.set(false);
        self.generation.set(self.generation.get() + 1);
    }

    /// True if `error`, raised by the logic, ends its run quietly: a `LeavingError` from a
    /// source whose capabilities its worker's leave released (it used one).
    pub fn ends_quietly(&self, py: Python<'_>, error: &PyErr) -> bool {
        self.leave.as_ref().is_some_and(LeaveRelease::is_released) && error.is_instance_of::<LeavingError>(py)
    }

    /// A capability changed: outside the operator's run, schedule the operator so that
    /// the change reaches progress tracking.
    pub fn changed(&self) {
        if !self.live.get() {
            self.activator.activate();
        }
    }

    /// The frontier of input `input` as of the start of this run.
    pub fn frontier(&self, input: usize) -> PyResult<PyFrontier> {
        if !self.watch {
            return Err(PyAttributeError::new_err(format!(
                "operator '{}' does not watch its input frontiers: use the _frontier or _notify variant (or sink) to see them",
                self.name
            )));
        }
        self.ensure_live("the frontier")?;
        let frontiers = self.frontiers.borrow();
        let frontier = frontiers.get(input).ok_or_else(|| {
            PyIndexError::new_err(format!(
                "operator '{}' has {} input(s), not input {}",
                self.name,
                frontiers.len(),
                input
            ))
        })?;
        Ok(PyFrontier::new(frontier.frontier().to_vec(), self.depth))
    }

    /// The error for a capability of another operator.
    pub fn wrong_operator(&self) -> PyErr {
        PyValueError::new_err(format!("the capability belongs to another operator, not to '{}'", self.name))
    }

    /// The error for asking a capability for `requested`, earlier than its time `held`.
    pub fn not_later(&self, what: &str, held: &Time, requested: &Time) -> PyErr {
        PyValueError::new_err(format!(
            "{}: time {} is not at or after the capability's time {}",
            what,
            show(requested, self.depth),
            show(held, self.depth)
        ))
    }
}
