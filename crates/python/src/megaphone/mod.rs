//! The Megaphone operators from Python: `Control`, `Stream.keyed_unary`,
//! `Stream.keyed_binary` and `Stream.state_machine` over the `timely-megaphone` crate, and its
//! planning functions (`plan`).
//!
//! Python records are turned into what the crate's operators take in one pass per batch
//! (keys into `Key`s, commands into `Command`s), so that routing and migration run
//! without the interpreter; the user's logic runs with the interpreter attached once per
//! record or notification, as the crate calls it. Keys, states and their wire formats are
//! `keys`'; the closures that run the logic are `logic`'s, its context is `context`'s. This
//! module does not route or migrate. The crate's operators run on `u64` times, each in a
//! scope of its own nested in the dataflow's root (`epochs`).

mod context;
pub(crate) mod epochs;
mod keys;
mod logic;
mod plan;

use crate::args::{callable, optional_callable};
use crate::errors::{catch_panic, DataflowError, WorkerContext};
use crate::key::Key;
use crate::record::Record;
use crate::stream::{PyStream, StreamHandle};
use crate::time::Time;
use context::PyKeyContext;
use epochs::{enter, in_epoch_scope};
use keys::{Keyed, State};
use logic::{per_notification, per_record, run_logic};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::rc::Rc;
use timely_engine::dataflow::{Data, Pipeline, Scope, Stream};
use timely_megaphone::{Bins, Command, Context, Control, KeyedOperators};

/// The control of keyed operators: a stream of commands, the number of bins and a name.
#[pyclass(name = "Control", module = "timely_py._core", unsendable)]
pub struct PyControl {
    commands: Stream<Time, Command>,
    bins: Bins,
    name: String,
}

impl PyControl {
    /// The control of an operator built in the epoch scope `inner`.
    fn control_in(&self, inner: &Scope<u64>) -> Control {
        Control::new(&enter(&self.commands, inner)).with_bins(self.bins).named(&self.name)
    }
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
        Ok(PyControl { commands, bins, name: name.to_owned() })
    }

    /// The number of bins.
    #[getter]
    fn bins(&self) -> usize {
        self.bins.count()
    }
}

/// The stream at a dataflow's root that `stream` must be.
fn root<'a>(stream: &'a PyStream, what: &str) -> PyResult<&'a StreamHandle> {
    if stream.inner.depth != 0 {
        return Err(DataflowError::new_err(format!("{what} must be at a dataflow's root, not in a loop")));
    }
    Ok(&stream.inner)
}

/// Applies `f` to every record, with the interpreter attached once per batch; an error ends
/// the run, reported as raised in operator `name`.
fn convert<O: Data>(
    stream: &Stream<Time, Record>,
    context: &Rc<WorkerContext>,
    name: String,
    mut f: impl FnMut(Python<'_>, Record, usize) -> PyResult<O> + 'static,
) -> Stream<Time, O> {
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

fn to_commands(handle: &StreamHandle, bins: Bins, name: &str) -> Stream<Time, Command> {
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
/// the value is kept); `what` names the key (function) in errors.
fn keyed(
    handle: &StreamHandle,
    operator: &'static str,
    what: &'static str,
    key: Option<Py<PyAny>>,
) -> Stream<Time, Keyed> {
    let label = format!("{operator}: {what}");
    convert(&handle.stream, &handle.context, format!("{operator}.{what}"), move |py, x, _| match &key {
        Some(key) => Ok(Keyed(Key::new(&key.bind(py).call1((x.bind(py),))?, &label)?, x)),
        None => {
            let (k, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = x.bind(py).extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "{operator}: records must be (key, value) pairs, not {}",
                    shown(x.bind(py))
                ))
            })?;
            Ok(Keyed(Key::new(&k, &label)?, Record(value.unbind())))
        }
    })
}

/// The key of a keyed record, as the crate's operators take it.
fn key_of(Keyed(key, _): &Keyed) -> Key {
    key.clone()
}

fn keyed_unary(
    handle: &StreamHandle,
    control: &PyControl,
    key: Py<PyAny>,
    on_record: Py<PyAny>,
    on_notify: Option<Py<PyAny>>,
) -> StreamHandle {
    let context = &handle.context;
    let records = keyed(handle, "keyed_unary", "key", Some(key));
    let output = in_epoch_scope(handle.stream.scope(), "KeyedUnary", |inner| {
        enter(&records, inner).keyed_unary(
            &control.control_in(inner),
            key_of,
            per_record(context, "keyed_unary", on_record),
            per_notification(context, "keyed_unary.on_notify", on_notify),
        )
    });
    handle.wrap(output)
}

fn keyed_binary(
    (first, second): (&StreamHandle, &StreamHandle),
    control: &PyControl,
    (key1, key2): (Py<PyAny>, Py<PyAny>),
    (on_first, on_second): (Py<PyAny>, Py<PyAny>),
    on_notify: Option<Py<PyAny>>,
) -> StreamHandle {
    let context = &first.context;
    let records1 = keyed(first, "keyed_binary", "key1", Some(key1));
    let records2 = keyed(second, "keyed_binary", "key2", Some(key2));
    let output = in_epoch_scope(first.stream.scope(), "KeyedBinary", |inner| {
        enter(&records1, inner).keyed_binary(
            &enter(&records2, inner),
            &control.control_in(inner),
            key_of,
            key_of,
            per_record(context, "keyed_binary.on_first", on_first),
            per_record(context, "keyed_binary.on_second", on_second),
            per_notification(context, "keyed_binary.on_notify", on_notify),
        )
    });
    first.wrap(output)
}

fn state_machine(handle: &StreamHandle, control: &PyControl, fold: Py<PyAny>) -> StreamHandle {
    let records = keyed(handle, "state_machine", "key", None);
    let context = handle.context.clone();
    let output = in_epoch_scope(handle.stream.scope(), "StateMachine", |inner| {
        enter(&records, inner).keyed_unary(
            &control.control_in(inner),
            key_of,
            move |key: &Key, Keyed(_, value), state: &mut State, rust: &mut Context<'_, Record>| {
                context.run("state_machine", |py| {
                    let mut outputs = None;
                    run_logic(py, key, state, None, |k, s| {
                        let result = fold.bind(py).call1((k, value.0, s))?;
                        let (new_state, produced): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
                            result.extract().map_err(|_| {
                                PyTypeError::new_err(
                                    "state_machine: fold must return a (state, outputs) pair",
                                )
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
            |_key: &Key, _state: &mut State, _rust: &mut Context<'_, Record>| {},
        )
    });
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
        catch_panic(|| keyed_unary(handle, control, key, on_record, on_notify).into())
    }

    /// A keyed operator over this stream and `other`: records of both with equal keys
    /// (`key1(x)`, `key2(y)`) share one state, moved between workers by `control`.
    #[pyo3(signature = (other, control, *, key1, key2, on_first, on_second, on_notify=None))]
    #[allow(clippy::too_many_arguments)]
    fn keyed_binary(
        &self,
        py: Python<'_>,
        other: &PyStream,
        control: &PyControl,
        key1: Py<PyAny>,
        key2: Py<PyAny>,
        on_first: Py<PyAny>,
        on_second: Py<PyAny>,
        on_notify: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        let keys = (callable(py, key1, "keyed_binary: key1")?, callable(py, key2, "keyed_binary: key2")?);
        let logic = (
            callable(py, on_first, "keyed_binary: on_first")?,
            callable(py, on_second, "keyed_binary: on_second")?,
        );
        let on_notify = optional_callable(py, on_notify, "keyed_binary: on_notify")?;
        let streams = (root(self, "keyed_binary: the stream")?, root(other, "keyed_binary: other")?);
        catch_panic(|| keyed_binary(streams, control, keys, logic, on_notify).into())
    }

    /// A state machine per key on a stream of `(key, value)` pairs.
    fn state_machine(&self, py: Python<'_>, control: &PyControl, fold: Py<PyAny>) -> PyResult<PyStream> {
        let fold = callable(py, fold, "state_machine: fold")?;
        let handle = root(self, "state_machine: the stream")?;
        catch_panic(|| state_machine(handle, control, fold).into())
    }
}

/// Adds the Megaphone classes and functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyControl>()?;
    m.add_class::<PyKeyContext>()?;
    plan::register(m)
}
