//! Building a generic operator from a `Spec` with the engine's `OperatorBuilder`: its
//! inputs (pipelined or exchanged by key), output, notificator, the Python objects handed
//! to its logic at every run, and its constructor call.

use crate::errors::{add_note, catch_panic, WorkerContext};
use crate::generic::capability::{Held, PyCapability};
use crate::generic::info::PyOperatorInfo;
use crate::generic::local::Attached;
use crate::generic::notificator::{NotifyCell, PyNotificator};
use crate::generic::ports::{InputCell, OutputCell, PyInputPort, PyOutputPort};
use crate::generic::state::{Kind, OpState, Spec};
use crate::operators::exchange::KeyPartition;
use crate::record::Record;
use crate::time::Time;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::cell::{Cell, OnceCell, RefCell};
use std::rc::Rc;
use timely_engine::dataflow::operators::{keyed_pact, Capability, OperatorBuilder, OperatorInfo};
use timely_engine::dataflow::{Pipeline, Scope, SharedMembership, Stream};
use timely_engine::MutableAntichain;

/// An operator input's stream: as is (pipeline), or settled for a keyed exchange by a key
/// function, with the membership table it is routed by.
enum Feed {
    Pipelined(Stream<Time, Record>),
    Keyed(Stream<Time, Record>, SharedMembership<Time>, KeyPartition),
}

/// The operator's engine parts, before its logic is installed.
struct Parts {
    info: OperatorInfo,
    op: Rc<OpState>,
    inputs: Vec<Rc<InputCell>>,
    output: Option<Rc<OutputCell>>,
    stream: Option<Stream<Time, Record>>,
    notify: Option<Rc<NotifyCell>>,
    builder: OperatorBuilder<Time>,
}

/// The feeds of `inputs`: exchanged inputs are keyed exchanges, so that state kept per time
/// and key stays on one worker while processes join.
fn feeds(
    context: &Rc<WorkerContext>,
    name: &str,
    inputs: Vec<&Stream<Time, Record>>,
    exchanges: Vec<Option<Py<PyAny>>>,
) -> Vec<Feed> {
    let single = inputs.len() == 1;
    let mut feeds = Vec::with_capacity(inputs.len());
    for (i, (stream, exchange)) in inputs.into_iter().zip(exchanges).enumerate() {
        feeds.push(match exchange {
            None => Feed::Pipelined(stream.clone()),
            Some(key) => {
                let step =
                    if single { format!("{}.exchange", name) } else { format!("{}.exchange{}", name, i + 1) };
                let (settled, membership) = stream.settle(&step);
                Feed::Keyed(settled, membership, KeyPartition::new(Some(key), context, &step))
            }
        });
    }
    feeds
}

/// Adds the operator's ports to a new `OperatorBuilder` in `scope`.
fn parts(scope: &Scope<Time>, depth: usize, name: &str, kind: Kind, feeds: Vec<Feed>, output: bool) -> Parts {
    let mut builder = OperatorBuilder::new(name, scope);
    if kind == Kind::Plain {
        builder.set_notify(false);
    }
    let info = builder.info().clone();
    // A source (no inputs) lets go of its capabilities when its worker leaves, as the
    // engine's own sources do.
    let leave = feeds.is_empty().then(|| builder.release_on_leave());
    let op = Rc::new(OpState {
        name: name.to_owned(),
        depth,
        live: Cell::new(false),
        generation: Cell::new(0),
        activator: info.activator.clone(),
        watch: kind != Kind::Plain,
        frontiers: RefCell::new(vec![MutableAntichain::new(); feeds.len()]),
        leave,
    });
    let inputs = feeds
        .into_iter()
        .enumerate()
        .map(|(i, feed)| {
            let port = match feed {
                Feed::Pipelined(stream) => builder.new_input(&stream, Pipeline),
                Feed::Keyed(stream, membership, partition) => {
                    builder.new_input(&stream, keyed_pact(&membership, partition))
                }
            };
            Rc::new(InputCell::new(port, i, &op))
        })
        .collect();
    let (output, stream) = if output {
        let (port, stream) = builder.new_output::<Record>();
        (Some(Rc::new(OutputCell::new(port, &op))), Some(stream))
    } else {
        (None, None)
    };
    let notify = (kind == Kind::Notify).then(|| Rc::new(NotifyCell::new(&op)));
    Parts { info, op, inputs, output, stream, notify, builder }
}

/// The arguments of the logic: its input ports, output port and notificator.
fn logic_args(py: Python<'_>, parts: &Parts) -> PyResult<Py<PyTuple>> {
    let mut args: Vec<Py<PyAny>> = Vec::new();
    for input in parts.inputs.iter() {
        args.push(Py::new(py, PyInputPort::new(input.clone()))?.into_any());
    }
    if let Some(output) = &parts.output {
        args.push(Py::new(py, PyOutputPort::new(output.clone()))?.into_any());
    }
    if let Some(notify) = &parts.notify {
        args.push(Py::new(py, PyNotificator::new(notify.clone()))?.into_any());
    }
    Ok(PyTuple::new(py, args)?.unbind())
}

/// Installs the operator's closure, which calls the logic once set in `logic`; returns the
/// operator's initial capability.
fn install(
    parts: Parts,
    context: &Rc<WorkerContext>,
    logic: &Rc<OnceCell<Py<PyAny>>>,
    args: Py<PyTuple>,
) -> PyResult<Capability<Time>> {
    let Parts { op, inputs, notify, builder, .. } = parts;
    let python = Attached::new((logic.clone(), args));
    let context = context.clone();
    let mut initial = None;
    catch_panic(|| {
        builder.build(|capability| {
            initial = Some(capability);
            move |frontiers: &[MutableAntichain<Time>]| {
                let (logic, args) = python.get();
                let Some(logic) = logic.get() else {
                    // The constructor failed: the run is being stopped.
                    inputs.iter().for_each(|p| p.drain());
                    return false;
                };
                op.begin(frontiers);
                let ran = context.run(&op.name, |py| match logic.bind(py).call1(args.bind(py).clone()) {
                    Ok(_) => Ok(()),
                    // A source whose capabilities its worker's leave released used one.
                    Err(error) if op.ends_quietly(py, &error) => Ok(()),
                    Err(error) => Err(error),
                });
                op.end();
                match ran {
                    None => inputs.iter().for_each(|p| p.drain()),
                    Some(()) => {
                        // Notifications that became deliverable while the logic ran
                        // (or that it did not take) must not wait for another event.
                        if notify.as_ref().is_some_and(|n| n.deliverable()) {
                            op.activator.activate();
                        }
                    }
                }
                false
            }
        })
    })?;
    Ok(initial.expect("the builder hands out the initial capability"))
}

/// Calls `constructor(capability, info)`, which must return the operator's logic.
fn construct(
    py: Python<'_>,
    name: &str,
    constructor: Py<PyAny>,
    capability: PyCapability,
    info: PyOperatorInfo,
) -> PyResult<Py<PyAny>> {
    let constructed = match constructor.bind(py).call1((capability, info)) {
        Ok(logic) => logic,
        Err(error) => {
            add_note(py, &error, &format!("raised in the constructor of operator '{}'", name));
            return Err(error);
        }
    };
    if !constructed.is_callable() {
        return Err(PyTypeError::new_err(format!(
            "the constructor of operator '{}' must return the operator's logic (a callable), got {}",
            name,
            constructed.repr().map(|r| r.to_string()).unwrap_or_default()
        )));
    }
    Ok(constructed.unbind())
}

/// Builds the operator of `spec` reading `inputs` in `scope`, `depth` loops deep; returns
/// its output stream, if it has one.
pub fn build_operator(
    py: Python<'_>,
    (scope, depth): (&Scope<Time>, usize),
    context: &Rc<WorkerContext>,
    inputs: Vec<&Stream<Time, Record>>,
    spec: Spec,
) -> PyResult<Option<Stream<Time, Record>>> {
    let Spec { name, kind, callable, constructed, exchanges, output } = spec;
    let mut parts =
        catch_panic(|| parts(scope, depth, &name, kind, feeds(context, &name, inputs, exchanges), output))?;
    let args = logic_args(py, &parts)?;
    let (info, op) = (parts.info.clone(), parts.op.clone());
    let stream = parts.stream.take();
    let logic: Rc<OnceCell<Py<PyAny>>> = Rc::new(OnceCell::new());
    let capability = install(parts, context, &logic, args)?;
    if !constructed {
        drop(capability);
        let _ = logic.set(callable);
        return Ok(stream);
    }
    let capability = PyCapability::new(Held { capability, op });
    let constructed = construct(py, &name, callable, capability, PyOperatorInfo::new(&name, &info))?;
    let _ = logic.set(constructed);
    Ok(stream)
}
