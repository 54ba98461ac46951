//! The user's Python logic of the keyed operators, as the closures the Megaphone crate calls:
//! one per-record closure for each input (`on_record` of `keyed_unary`, `on_first` and
//! `on_second` of `keyed_binary`) and one per-notification closure, all made by the same two
//! functions so that the unary and binary operators run their logic identically.
//!
//! Each call attaches the interpreter, turns the `Key` back into the Python key (its canonical value), passes
//! the key's state (None when it has none) and a fresh `KeyContext`, stores the returned object
//! as the new state (None drops it) and hands the context's requests to the crate. A raised
//! exception ends the run, reported as raised in the operator named. This module does not key,
//! route or migrate records.

use super::context::PyKeyContext;
use super::keys::{Keyed, State};
use crate::errors::WorkerContext;
use crate::key::Key;
use crate::record::Record;
use pyo3::prelude::*;
use std::rc::Rc;
use timely_megaphone::Context;

/// The closure that runs `logic(key, record, state, context)` for each record; the context
/// accepts notifications at the record's time or later.
pub fn per_record(
    context: &Rc<WorkerContext>,
    name: &'static str,
    logic: Py<PyAny>,
) -> impl FnMut(&Key, Keyed, &mut State, &mut Context<'_, Record>) + 'static {
    let context = context.clone();
    move |key, Keyed(_, record), state, rust| {
        context.run(name, |py| {
            let python = Bound::new(py, PyKeyContext::new(rust.time(), rust.time()))?;
            let call = |k, s| logic.bind(py).call1((k, record.0, s, python.clone()));
            run_logic(py, key, state, Some((python.clone(), rust)), call)
        });
    }
}

/// The closure that runs `logic(key, state, context)` for each notification (nothing when
/// `logic` is None); the context accepts notifications strictly after the current time.
pub fn per_notification(
    context: &Rc<WorkerContext>,
    name: &'static str,
    logic: Option<Py<PyAny>>,
) -> impl FnMut(&Key, &mut State, &mut Context<'_, Record>) + 'static {
    let context = context.clone();
    move |key, state, rust| {
        let Some(logic) = &logic else { return };
        context.run(name, |py| {
            let python = Bound::new(py, PyKeyContext::new(rust.time(), rust.time() + 1))?;
            let call = |k, s| logic.bind(py).call1((k, s, python.clone()));
            run_logic(py, key, state, Some((python.clone(), rust)), call)
        });
    }
}

/// The user's logic for one key: `call(key, state)` returns the new state; `context` (if
/// any) is handed over afterwards.
pub fn run_logic<'py>(
    py: Python<'py>,
    key: &Key,
    state: &mut State,
    context: Option<(Bound<'py, PyKeyContext>, &mut Context<'_, Record>)>,
    call: impl FnOnce(Bound<'py, PyAny>, Py<PyAny>) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<()> {
    let key = key.to_object(py)?;
    let previous = state.take(py);
    *state = State::from_object(call(key, previous)?);
    if let Some((python, rust)) = context {
        python.borrow_mut().hand_over(rust);
    }
    Ok(())
}
