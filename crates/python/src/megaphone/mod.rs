//! The Megaphone operators from Python: `Control`, `Stream.keyed_unary` and
//! `Stream.state_machine` over the `timely-megaphone` crate, and its planning functions
//! (`plan`).
//!
//! Python records are turned into what the crate's operators take in one pass per batch
//! (keys into canonical bytes, commands into `Command`s), so that routing and migration run
//! without the interpreter; the user's logic runs with the interpreter attached once per
//! record or notification, as the crate calls it. Keys, states and their wire formats are
//! `keys`'; the logic's context is `context`'s. This module does not route or migrate.

mod context;
mod keys;
mod plan;

use crate::args::{callable, optional_callable};
use crate::errors::{catch_panic, DataflowError, WorkerContext};
use crate::record::Record;
use crate::stream::{PyStream, StreamHandle, Streams};
use crate::time::{PyTime, T0};
use context::PyKeyContext;
use keys::{key_bytes, key_object, Keyed, State};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::rc::Rc;
use timely_engine::dataflow::{Data, Pipeline, Stream};
use timely_megaphone::{Bins, Command, Context, Control, KeyedOperators};

/// The control of keyed operators: a stream of commands, the number of bins and a name.
#[pyclass(name = "Control", module = "timely_py._core", unsendable)]
pub struct PyControl {
    control: Control,
}

#[pymethods]
impl PyControl {
    /// Commands from `commands`, a stream at a dataflow's root of `Move(bin, worker)` records
    /// or `(bin, worker)` pairs; `bins` a power of two (default 256).
    #[new]
    #[pyo3(signature = (commands, bins=256, name="Megaphone"))]
    fn new(commands: &PyStream, bins: usize, name: &str) -> PyResult<Self> {
        let bins = Bins::new(bins).map_err(|error| PyValueError::new_err(format!("Control: {error}")))?;
        let handle = root(commands, "Control: the command stream")?;
        let commands = catch_panic(|| to_commands(handle, bins, name))?;
        Ok(PyControl { control: Control::new(&commands).with_bins(bins).named(name) })
    }

    /// The number of bins.
    #[getter]
    fn bins(&self) -> usize {
        self.control.bins().count()
    }
}

/// The stream at a dataflow's root that `stream` must be.
fn root<'a>(stream: &'a PyStream, what: &str) -> PyResult<&'a StreamHandle<T0>> {
    T0::get::<Streams>(&stream.inner)
        .ok_or_else(|| DataflowError::new_err(format!("{what} must be at a dataflow's root, not in a loop")))
}

/// Applies `f` to every record, with the interpreter attached once per batch; an error ends
/// the run, reported as raised in operator `name`.
fn convert<O: Data>(
    stream: &Stream<T0, Record>,
    context: &Rc<WorkerContext>,
    name: String,
    mut f: impl FnMut(Python<'_>, Record, usize) -> PyResult<O> + 'static,
) -> Stream<T0, O> {
    let context = context.clone();
    let worker = stream.scope().worker().clone();
    stream.unary(Pipeline, &name.clone(), move |_, _| {
        move |input, output| {
            let peers = worker.peers();
            context.run(&name, |py| {
                while let Some((time, data)) = input.next() {
                    let mut session = output.session(&time);
                    for x in data.drain(..) {
                        session.give(f(py, x, peers)?);
                    }
                }
                Ok(())
            });
            while input.next().is_some() {}
        }
    })
}

/// `repr(x)` for an error message (empty if `repr` itself raises).
fn shown(x: &Bound<'_, PyAny>) -> String {
    x.repr().map(|r| r.to_string()).unwrap_or_default()
}

fn to_commands(handle: &StreamHandle<T0>, bins: Bins, name: &str) -> Stream<T0, Command> {
    convert(&handle.stream, &handle.context, format!("{name}.Commands"), move |py, x, peers| {
        let (bin, worker): (usize, usize) = x.bind(py).extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "a command must be Move(bin, worker) or a (bin, worker) pair, not {}",
                shown(x.bind(py))
            ))
        })?;
        bins.check(bin).map_err(|error| {
            PyValueError::new_err(format!("command Move(bin={bin}, worker={worker}): {error}"))
        })?;
        if worker >= peers {
            return Err(PyValueError::new_err(format!(
                "command Move(bin={bin}, worker={worker}): worker {worker} does not exist: there are {peers} workers"
            )));
        }
        Ok(Command::Move { bin, worker })
    })
}

/// The records of `handle` keyed by `key(x)` (`key` None: `x` is a `(key, value)` pair and
/// the value is kept).
fn keyed(handle: &StreamHandle<T0>, name: &'static str, key: Option<Py<PyAny>>) -> Stream<T0, Keyed> {
    let what = format!("{name}: key");
    convert(&handle.stream, &handle.context, format!("{name}.Key"), move |py, x, _| match &key {
        Some(key) => Ok(Keyed(key_bytes(py, &key.bind(py).call1((x.bind(py),))?, &what)?, x)),
        None => {
            let (k, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = x.bind(py).extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "{name}: records must be (key, value) pairs, not {}",
                    shown(x.bind(py))
                ))
            })?;
            Ok(Keyed(key_bytes(py, &k, &what)?, Record(value.unbind())))
        }
    })
}

/// The user's logic for one key: `call(key, state)` returns the new state; `context` (if
/// any) is handed over afterwards.
fn run_logic<'py>(
    py: Python<'py>,
    key: &[u8],
    state: &mut State,
    context: Option<(Bound<'py, PyKeyContext>, &mut Context<'_, Record>)>,
    call: impl FnOnce(Bound<'py, PyAny>, Py<PyAny>) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<()> {
    let key = key_object(py, key)?;
    let previous = state.take(py);
    *state = State::from_object(call(key, previous)?);
    if let Some((python, rust)) = context {
        python.borrow_mut().hand_over(rust);
    }
    Ok(())
}

fn keyed_unary(
    handle: &StreamHandle<T0>,
    control: &Control,
    key: Py<PyAny>,
    on_record: Py<PyAny>,
    on_notify: Option<Py<PyAny>>,
) -> StreamHandle<T0> {
    let records = keyed(handle, "keyed_unary", Some(key));
    let (context, notify_context) = (handle.context.clone(), handle.context.clone());
    let output = records.keyed_unary(
        control,
        |Keyed(key, _): &Keyed| key.clone(),
        move |key: &Vec<u8>, Keyed(_, x), state: &mut State, rust: &mut Context<'_, Record>| {
            context.run("keyed_unary", |py| {
                let python = Bound::new(py, PyKeyContext::new(rust.time(), rust.time()))?;
                let call = |k, s| on_record.bind(py).call1((k, x.0, s, python.clone()));
                run_logic(py, key, state, Some((python.clone(), rust)), call)
            });
        },
        move |key: &Vec<u8>, state: &mut State, rust: &mut Context<'_, Record>| {
            notify_context.run("keyed_unary.on_notify", |py| {
                let Some(on_notify) = &on_notify else { return Ok(()) };
                let python = Bound::new(py, PyKeyContext::new(rust.time(), rust.time() + 1))?;
                let call = |k, s| on_notify.bind(py).call1((k, s, python.clone()));
                run_logic(py, key, state, Some((python.clone(), rust)), call)
            });
        },
    );
    handle.wrap(output)
}

fn state_machine(handle: &StreamHandle<T0>, control: &Control, fold: Py<PyAny>) -> StreamHandle<T0> {
    let records = keyed(handle, "state_machine", None);
    let context = handle.context.clone();
    let output = records.keyed_unary(
        control,
        |Keyed(key, _): &Keyed| key.clone(),
        move |key: &Vec<u8>, Keyed(_, value), state: &mut State, rust: &mut Context<'_, Record>| {
            context.run("state_machine", |py| {
                let mut outputs = None;
                run_logic(py, key, state, None, |k, s| {
                    let result = fold.bind(py).call1((k, value.0, s))?;
                    let (new_state, produced): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
                        result.extract().map_err(|_| {
                            PyTypeError::new_err("state_machine: fold must return a (state, outputs) pair")
                        })?;
                    outputs = Some(produced);
                    Ok(new_state)
                })?;
                for output in outputs.expect("set by the fold").try_iter()? {
                    rust.give(Record(output?.unbind()));
                }
                Ok(())
            });
        },
        |_key: &Vec<u8>, _state: &mut State, _rust: &mut Context<'_, Record>| {},
    );
    handle.wrap(output)
}

#[pymethods]
impl PyStream {
    /// A keyed operator with per-key state that `control` can move between workers.
    #[pyo3(signature = (control, *, key, on_record, on_notify=None))]
    fn keyed_unary(
        &self,
        py: Python<'_>,
        control: &PyControl,
        key: Py<PyAny>,
        on_record: Py<PyAny>,
        on_notify: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        let key = callable(py, key, "keyed_unary: key")?;
        let on_record = callable(py, on_record, "keyed_unary: on_record")?;
        let on_notify = optional_callable(py, on_notify, "keyed_unary: on_notify")?;
        let handle = root(self, "keyed_unary: the stream")?;
        catch_panic(|| keyed_unary(handle, &control.control, key, on_record, on_notify).into())
    }

    /// A state machine per key on a stream of `(key, value)` pairs.
    fn state_machine(&self, py: Python<'_>, control: &PyControl, fold: Py<PyAny>) -> PyResult<PyStream> {
        let fold = callable(py, fold, "state_machine: fold")?;
        let handle = root(self, "state_machine: the stream")?;
        catch_panic(|| state_machine(handle, &control.control, fold).into())
    }
}

/// Adds the Megaphone classes and functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyControl>()?;
    m.add_class::<PyKeyContext>()?;
    plan::register(m)
}
