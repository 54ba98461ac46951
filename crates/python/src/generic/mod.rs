//! Generic operators from Python: `source`, `sink`, `unary`, `unary_frontier`,
//! `unary_notify`, `binary`, `binary_frontier`, `binary_notify`, with capabilities,
//! input and output ports, frontiers and notificators exposed as Python objects.
//!
//! Every operator is built with the engine's `OperatorBuilder` (`builder`). The engine's
//! ports, notificator and the snapshot of the input frontiers (`state`) live in
//! reference-counted cells shared by the operator's closure and the Python wrappers
//! (`ports`, `notificator`, `frontier`). The wrappers are created once per operator and
//! handed to the logic at every run; they work only while the operator's logic runs and
//! raise `RuntimeError` otherwise, so a wrapper kept past its call fails clearly instead of
//! touching the engine at the wrong moment. Capabilities are `capability`'s; a source's
//! capabilities are released when its worker's process leaves the cluster (the engine's
//! `OperatorBuilder::release_on_leave`; using one then raises `LeavingError`).
//!
//! The wrappers' engine state stays on its worker's thread (`local`): the Python objects
//! themselves are sendable shells, which raise when used on another thread and, when an
//! exception carries them to the caller of `execute`, can be dropped there harmlessly.
//! Every wrapper is one concrete type over the one timestamp type, `time::Time`; the
//! operator's depth, in its state, says how its times look in Python.

mod builder;
mod capability;
mod frontier;
mod info;
mod local;
mod notificator;
mod operators;
mod ports;
mod state;

use pyo3::prelude::*;

/// Adds this module's classes to `timely_py._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<capability::PyCapability>()?;
    m.add_class::<capability::PyInputCapability>()?;
    m.add_class::<ports::PyInputPort>()?;
    m.add_class::<ports::PyOutputPort>()?;
    m.add_class::<ports::PyOutputSession>()?;
    m.add_class::<notificator::PyNotificator>()?;
    m.add_class::<notificator::PyNotificationItems>()?;
    m.add_class::<frontier::PyFrontier>()?;
    m.add_class::<info::PyOperatorInfo>()?;
    Ok(())
}
