//! `Stream`: operators applied from Python.
//!
//! A Python `Stream` wraps an engine stream of Python records at any timestamp depth
//! behind `StreamObj`. Each operator runs its Python callbacks with the interpreter
//! attached once per operator run (a batch of messages), never per record by the engine
//! itself; routing and progress tracking run without it.

use crate::errors::{catch_panic, DataflowError, WorkerContext};
use crate::handles::PyProbeHandle;
use crate::key::route;
use crate::record::{Record, Routed, RoutedPair};
use crate::scope::{Nest, PyLoopHandle, PyScope, ScopeHandle};
use crate::time::{PyTime, T0};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::any::Any;
use std::collections::HashMap;
use std::rc::Rc;
use timely_engine::dataflow::operators::LoopHandle;
use timely_engine::dataflow::{Pipeline, Stream};

/// A stream of Python records at times `T`, with its worker's error context.
pub struct StreamHandle<T: PyTime> {
    pub stream: Stream<T, Record>,
    pub context: Rc<WorkerContext>,
}

impl<T: Nest> StreamHandle<T> {
    fn wrap(&self, stream: Stream<T, Record>) -> Box<dyn StreamObj> {
        Box::new(StreamHandle { stream, context: self.context.clone() })
    }

    /// Applies `logic(py, data, output)` to every batch, with the interpreter attached once
    /// per operator run; `output` collects the records to send at the batch's time.
    fn batch_operator<L>(&self, name: &'static str, mut logic: L) -> Box<dyn StreamObj>
    where
        L: FnMut(Python<'_>, &T, &mut Vec<Record>, &mut Vec<Record>) -> PyResult<()> + 'static,
    {
        let context = self.context.clone();
        let mut produced = Vec::new();
        let stream = self.stream.unary(Pipeline, name, move |_, _| {
            move |input, output| {
                context.run(name, |py| {
                    while let Some((time, data)) = input.next() {
                        logic(py, time.time(), data, &mut produced)?;
                        if !produced.is_empty() {
                            output.session(&time).give_vec(&mut produced);
                        }
                    }
                    Ok(())
                });
                // After a failure, drain and drop what arrives.
                while input.next().is_some() {}
            }
        });
        self.wrap(stream)
    }
}

/// A stream of any timestamp depth.
pub trait StreamObj {
    /// For downcasting to `StreamHandle<T>`.
    fn as_any(&self) -> &dyn Any;
    /// Number of loops around the stream's scope.
    fn depth(&self) -> usize;
    /// `f(x)` for every record.
    fn map(&self, f: Py<PyAny>) -> Box<dyn StreamObj>;
    /// The records of the iterable `f(x)` for every record.
    fn flat_map(&self, f: Py<PyAny>) -> Box<dyn StreamObj>;
    /// The records for which `predicate(x)` is true.
    fn filter(&self, predicate: Py<PyAny>) -> Box<dyn StreamObj>;
    /// Calls `f(x)` and passes records on.
    fn inspect(&self, f: Py<PyAny>) -> Box<dyn StreamObj>;
    /// Calls `f(time, x)` and passes records on.
    fn inspect_time(&self, f: Py<PyAny>) -> Box<dyn StreamObj>;
    /// Calls `f(time, records)` per batch and passes records on.
    fn inspect_batch(&self, f: Py<PyAny>) -> Box<dyn StreamObj>;
    /// Routes records to worker `route(key(x))` (see `key`).
    fn exchange(&self, key: Option<Py<PyAny>>) -> Box<dyn StreamObj>;
    /// Every record to every worker.
    fn broadcast(&self) -> Box<dyn StreamObj>;
    /// Merges with another stream of the same scope.
    fn concat(&self, other: &dyn StreamObj) -> PyResult<Box<dyn StreamObj>>;
    /// Splits into `parts` streams by `route(x)`.
    fn partition(&self, parts: u64, route: Py<PyAny>) -> Vec<Box<dyn StreamObj>>;
    /// Splits into (false, true) streams by `predicate(time, x)`.
    fn branch(&self, predicate: Py<PyAny>) -> (Box<dyn StreamObj>, Box<dyn StreamObj>);
    /// Moves each record to the later time `f(x, time)`.
    fn delay(&self, f: Py<PyAny>) -> Box<dyn StreamObj>;
    /// Probes the stream's frontier (root scopes only).
    fn probe_with(&self, handle: &PyProbeHandle) -> PyResult<Box<dyn StreamObj>>;
    /// Per time, `(key, count)` for every distinct `key(x)`.
    fn count_by_key(&self, key: Option<Py<PyAny>>) -> Box<dyn StreamObj>;
    /// Per time and key, folds records with `fold(acc, x)` from `init()`, emits `emit(key, acc)`.
    fn aggregate(
        &self,
        key: Py<PyAny>,
        fold: Py<PyAny>,
        init: Py<PyAny>,
        emit: Option<Py<PyAny>>,
    ) -> Box<dyn StreamObj>;
    /// Brings the stream into a scope nested in its own.
    fn enter(&self, scope: &dyn Any) -> PyResult<Box<dyn StreamObj>>;
    /// Takes the stream into the scope enclosing its own.
    fn leave(&self, scope: &dyn Any) -> PyResult<Box<dyn StreamObj>>;
    /// Connects the stream to a feedback edge.
    fn connect_loop(&self, handle: Box<dyn Any>) -> PyResult<()>;
    /// The generic operators (see `generic`).
    fn generic(&self) -> &dyn crate::generic::GenericStream;
}

fn record(object: Bound<'_, PyAny>) -> Record {
    Record(object.unbind())
}

impl<T: Nest> StreamObj for StreamHandle<T> {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn depth(&self) -> usize {
        T::LEN - 1
    }

    fn map(&self, f: Py<PyAny>) -> Box<dyn StreamObj> {
        self.batch_operator("Map", move |py, _time, data, out| {
            let f = f.bind(py);
            for x in data.drain(..) {
                out.push(record(f.call1((x.0,))?));
            }
            Ok(())
        })
    }

    fn flat_map(&self, f: Py<PyAny>) -> Box<dyn StreamObj> {
        self.batch_operator("FlatMap", move |py, _time, data, out| {
            let f = f.bind(py);
            for x in data.drain(..) {
                for item in f.call1((x.0,))?.try_iter()? {
                    out.push(record(item?));
                }
            }
            Ok(())
        })
    }

    fn filter(&self, predicate: Py<PyAny>) -> Box<dyn StreamObj> {
        self.batch_operator("Filter", move |py, _time, data, out| {
            let predicate = predicate.bind(py);
            for x in data.drain(..) {
                if predicate.call1((x.bind(py),))?.is_truthy()? {
                    out.push(x);
                }
            }
            Ok(())
        })
    }

    fn inspect(&self, f: Py<PyAny>) -> Box<dyn StreamObj> {
        self.batch_operator("Inspect", move |py, _time, data, out| {
            let f = f.bind(py);
            for x in data.iter() {
                f.call1((x.bind(py),))?;
            }
            std::mem::swap(data, out);
            Ok(())
        })
    }

    fn inspect_time(&self, f: Py<PyAny>) -> Box<dyn StreamObj> {
        self.batch_operator("InspectTime", move |py, time, data, out| {
            let f = f.bind(py);
            let time = time.to_py(py)?;
            for x in data.iter() {
                f.call1((&time, x.bind(py)))?;
            }
            std::mem::swap(data, out);
            Ok(())
        })
    }

    fn inspect_batch(&self, f: Py<PyAny>) -> Box<dyn StreamObj> {
        self.batch_operator("InspectBatch", move |py, time, data, out| {
            let list = PyList::new(py, data.iter().map(|x| x.bind(py)))?;
            f.bind(py).call1((time.to_py(py)?, list))?;
            std::mem::swap(data, out);
            Ok(())
        })
    }

    fn exchange(&self, key: Option<Py<PyAny>>) -> Box<dyn StreamObj> {
        let keyed = keyed_records(&self.stream, &self.context, "ExchangeKey".to_owned(), key);
        let routed = keyed.exchange(|Routed(hash, _): &Routed| *hash).map(|Routed(_, x)| x);
        self.wrap(routed)
    }

    fn broadcast(&self) -> Box<dyn StreamObj> {
        self.wrap(self.stream.broadcast())
    }

    fn concat(&self, other: &dyn StreamObj) -> PyResult<Box<dyn StreamObj>> {
        let other = same_scope::<T>(other)?;
        Ok(self.wrap(catch_panic(|| self.stream.concat(&other.stream))?))
    }

    fn partition(&self, parts: u64, route: Py<PyAny>) -> Vec<Box<dyn StreamObj>> {
        let context = self.context.clone();
        let routed = self.stream.unary(Pipeline, "PartitionRoute", move |_, _| {
            move |input, output| {
                context.run("Partition", |py| {
                    let route = route.bind(py);
                    while let Some((time, data)) = input.next() {
                        let mut session = output.session(&time);
                        for x in data.drain(..) {
                            let part = route.call1((x.bind(py),))?;
                            match part.extract::<u64>() {
                                Ok(part) if part < parts => session.give((part, x)),
                                _ => {
                                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                                        "partition: route returned {}, not an int in range({})",
                                        part.repr()?,
                                        parts
                                    )))
                                }
                            }
                        }
                    }
                    Ok(())
                });
                while input.next().is_some() {}
            }
        });
        routed.partition(parts, |(part, x)| (part, x)).into_iter().map(|s| self.wrap(s)).collect()
    }

    fn branch(&self, predicate: Py<PyAny>) -> (Box<dyn StreamObj>, Box<dyn StreamObj>) {
        let context = self.context.clone();
        let decided = self.stream.unary(Pipeline, "BranchDecide", move |_, _| {
            move |input, output| {
                context.run("Branch", |py| {
                    let predicate = predicate.bind(py);
                    while let Some((time, data)) = input.next() {
                        let py_time = time.time().to_py(py)?;
                        let mut session = output.session(&time);
                        for x in data.drain(..) {
                            let yes = predicate.call1((&py_time, x.bind(py)))?.is_truthy()?;
                            session.give((yes, x));
                        }
                    }
                    Ok(())
                });
                while input.next().is_some() {}
            }
        });
        let (no, yes) = decided.branch(|_time, (yes, _)| *yes);
        (self.wrap(no.map(|(_, x)| x)), self.wrap(yes.map(|(_, x)| x)))
    }

    fn delay(&self, f: Py<PyAny>) -> Box<dyn StreamObj> {
        let context = self.context.clone();
        let timed = self.stream.unary(Pipeline, "DelayTime", move |_, _| {
            move |input, output| {
                context.run("Delay", |py| {
                    let f = f.bind(py);
                    while let Some((time, data)) = input.next() {
                        let py_time = time.time().to_py(py)?;
                        let mut session = output.session(&time);
                        for x in data.drain(..) {
                            let new_time = T::from_py(&f.call1((x.bind(py), &py_time))?)?;
                            if !timely_engine::PartialOrder::less_equal(time.time(), &new_time) {
                                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                                    "delay: the new time {:?} is earlier than the record's time {:?}",
                                    new_time,
                                    time.time()
                                )));
                            }
                            session.give((new_time, x));
                        }
                    }
                    Ok(())
                });
                while input.next().is_some() {}
            }
        });
        let delayed = timed.delay(|(new_time, _), _time| new_time.clone()).map(|(_, x)| x);
        self.wrap(delayed)
    }

    fn probe_with(&self, handle: &PyProbeHandle) -> PyResult<Box<dyn StreamObj>> {
        let root = self.as_any().downcast_ref::<StreamHandle<T0>>().ok_or_else(|| {
            DataflowError::new_err("probes watch streams of a dataflow's root scope; leave() loops first")
        })?;
        // The probe watches a record-free copy of the stream: records that end at the probe
        // are released here, with the interpreter attached, not one by one while stepping.
        let context = root.context.clone();
        let frontier_only = root.stream.unary::<(), _, _, _>(Pipeline, "ProbeFeed", move |_, _| {
            move |input, _output| {
                let _ = context.run("Probe", |_py| {
                    while input.next().is_some() {}
                    Ok(())
                });
                while input.next().is_some() {}
            }
        });
        frontier_only.probe_with(handle.handle());
        Ok(root.wrap(root.stream.clone()))
    }

    fn count_by_key(&self, key: Option<Py<PyAny>>) -> Box<dyn StreamObj> {
        self.keyed_fold(
            "CountByKey",
            key,
            |py, count: Option<Bound<'_, PyAny>>, _x| match count {
                Some(count) => count.add(1),
                None => Ok(1u64.into_pyobject(py)?.into_any()),
            },
            None,
        )
    }

    fn aggregate(
        &self,
        key: Py<PyAny>,
        fold: Py<PyAny>,
        init: Py<PyAny>,
        emit: Option<Py<PyAny>>,
    ) -> Box<dyn StreamObj> {
        self.keyed_fold(
            "Aggregate",
            Some(key),
            move |py, acc: Option<Bound<'_, PyAny>>, x: &Bound<'_, PyAny>| {
                let acc = match acc {
                    Some(acc) => acc,
                    None => init.bind(py).call0()?,
                };
                fold.bind(py).call1((acc, x))
            },
            emit,
        )
    }

    fn enter(&self, scope: &dyn Any) -> PyResult<Box<dyn StreamObj>> {
        if let Some(region) = scope.downcast_ref::<ScopeHandle<T>>() {
            let entered = catch_panic(|| self.stream.enter(&region.scope))?;
            return Ok(region.stream(entered));
        }
        T::enter_loop(self, scope).unwrap_or_else(|| {
            Err(DataflowError::new_err("enter: the scope must be nested directly in the stream's scope"))
        })
    }

    fn leave(&self, scope: &dyn Any) -> PyResult<Box<dyn StreamObj>> {
        if let Some(parent) = scope.downcast_ref::<ScopeHandle<T>>() {
            let left = catch_panic(|| self.stream.leave(&parent.scope))?;
            return Ok(parent.stream(left));
        }
        T::leave_loop(self, scope).unwrap_or_else(|| {
            Err(DataflowError::new_err("leave: the scope must directly enclose the stream's scope"))
        })
    }

    fn connect_loop(&self, handle: Box<dyn Any>) -> PyResult<()> {
        let handle = handle.downcast::<LoopHandle<T, Record>>().map_err(|_| {
            DataflowError::new_err("connect_loop: the feedback handle belongs to another scope")
        })?;
        catch_panic(|| self.stream.connect_loop(*handle))
    }

    fn generic(&self) -> &dyn crate::generic::GenericStream {
        self
    }
}

impl<T: Nest> StreamHandle<T> {
    /// Exchanges records by `key(x)` and folds them per time and key into a dict, emitting
    /// `emit(key, acc)` (default `(key, acc)`) for each key once the time is complete.
    fn keyed_fold<F>(
        &self,
        name: &'static str,
        key: Option<Py<PyAny>>,
        mut fold: F,
        emit: Option<Py<PyAny>>,
    ) -> Box<dyn StreamObj>
    where
        F: for<'py> FnMut(
                Python<'py>,
                Option<Bound<'py, PyAny>>,
                &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyAny>>
            + 'static,
    {
        let keyed = keyed_pairs(self, name, key);
        let routed = keyed.exchange(|RoutedPair(hash, _, _): &RoutedPair| *hash);
        let context = self.context.clone();
        let mut state: HashMap<T, Py<PyDict>> = HashMap::new();
        let folded = routed.unary_notify(Pipeline, name, move |input, output, notificator| {
            context.run(name, |py| {
                while let Some((time, data)) = input.next() {
                    let table = match state.get(time.time()) {
                        Some(table) => table.bind(py).clone(),
                        None => {
                            notificator.notify_at(time.retain());
                            let table = PyDict::new(py);
                            state.insert(time.time().clone(), table.clone().unbind());
                            table
                        }
                    };
                    for RoutedPair(_, k, x) in data.drain(..) {
                        let k = k.bind(py);
                        let acc = fold(py, table.get_item(k)?, x.bind(py))?;
                        table.set_item(k, acc)?;
                    }
                }
                for (capability, _count) in notificator.by_ref() {
                    if let Some(table) = state.remove(capability.time()) {
                        let mut session = output.session(&capability);
                        for (k, acc) in table.bind(py).iter() {
                            let result = match &emit {
                                Some(emit) => emit.bind(py).call1((k, acc))?,
                                None => PyTuple::new(py, [k, acc])?.into_any(),
                            };
                            session.give(record(result));
                        }
                    }
                }
                Ok(())
            });
            while input.next().is_some() {}
        });
        self.wrap(folded)
    }
}

/// `(worker, x)` for every record, the worker chosen by `route(key(x))` (`key` None: the
/// record itself), computed with the interpreter attached once per run so that routing on
/// the worker index needs no interpreter.
pub(crate) fn keyed_records<T: Nest>(
    stream: &Stream<T, Record>,
    context: &Rc<WorkerContext>,
    name: String,
    key: Option<Py<PyAny>>,
) -> Stream<T, Routed> {
    let context = context.clone();
    stream.unary(Pipeline, &name.clone(), move |_, info| {
        let peers = info.peers as u64;
        move |input, output| {
            context.run(&name, |py| {
                while let Some((time, data)) = input.next() {
                    let mut session = output.session(&time);
                    for x in data.drain(..) {
                        let worker = match &key {
                            Some(key) => route(&key.bind(py).call1((x.bind(py),))?, peers)?,
                            None => route(x.bind(py), peers)?,
                        };
                        session.give(Routed(worker, x));
                    }
                }
                Ok(())
            });
            while input.next().is_some() {}
        }
    })
}

/// `(worker, k, x)` with `k = key(x)` for every record (`key` None: the record itself),
/// the worker chosen by `route(k)`.
fn keyed_pairs<T: Nest>(
    stream: &StreamHandle<T>,
    name: &'static str,
    key: Option<Py<PyAny>>,
) -> Stream<T, RoutedPair> {
    let context = stream.context.clone();
    stream.stream.unary(Pipeline, name, move |_, info| {
        let peers = info.peers as u64;
        move |input, output| {
            context.run(name, |py| {
                while let Some((time, data)) = input.next() {
                    let mut session = output.session(&time);
                    for x in data.drain(..) {
                        let k = match &key {
                            Some(key) => key.bind(py).call1((x.bind(py),))?,
                            None => x.bind(py).clone(),
                        };
                        session.give(RoutedPair(route(&k, peers)?, record(k), x));
                    }
                }
                Ok(())
            });
            while input.next().is_some() {}
        }
    })
}

fn same_scope<T: Nest>(other: &dyn StreamObj) -> PyResult<&StreamHandle<T>> {
    other
        .as_any()
        .downcast_ref::<StreamHandle<T>>()
        .ok_or_else(|| DataflowError::new_err("both streams must belong to the same scope"))
}

/// A stream of records in a dataflow: apply operators to build the dataflow.
#[pyclass(name = "Stream", module = "timely_py._core", unsendable)]
pub struct PyStream {
    pub(crate) inner: Box<dyn StreamObj>,
}

fn wrap(inner: Box<dyn StreamObj>) -> PyStream {
    PyStream { inner }
}

/// Adds an operator, turning engine panics (such as a finished scope) into `DataflowError`.
fn build(
    inner: &Box<dyn StreamObj>,
    add: impl FnOnce(&dyn StreamObj) -> Box<dyn StreamObj>,
) -> PyResult<PyStream> {
    catch_panic(|| add(&**inner)).map(wrap)
}

#[pymethods]
impl PyStream {
    /// Number of loops around the stream's scope.
    #[getter]
    fn depth(&self) -> usize {
        self.inner.depth()
    }

    /// `f(x)` for every record `x`.
    fn map(&self, f: Py<PyAny>) -> PyResult<PyStream> {
        build(&self.inner, |s| s.map(f))
    }

    /// Every item of the iterable `f(x)`, for every record `x`.
    fn flat_map(&self, f: Py<PyAny>) -> PyResult<PyStream> {
        build(&self.inner, |s| s.flat_map(f))
    }

    /// The records `x` for which `predicate(x)` is true.
    fn filter(&self, predicate: Py<PyAny>) -> PyResult<PyStream> {
        build(&self.inner, |s| s.filter(predicate))
    }

    /// Calls `f(x)` for every record and passes the records on.
    fn inspect(&self, f: Py<PyAny>) -> PyResult<PyStream> {
        build(&self.inner, |s| s.inspect(f))
    }

    /// Calls `f(time, x)` for every record and passes the records on.
    fn inspect_time(&self, f: Py<PyAny>) -> PyResult<PyStream> {
        build(&self.inner, |s| s.inspect_time(f))
    }

    /// Calls `f(time, records)` for every batch (a list) and passes the records on.
    fn inspect_batch(&self, f: Py<PyAny>) -> PyResult<PyStream> {
        build(&self.inner, |s| s.inspect_batch(f))
    }

    /// Sends each record to worker `route_key(key(x), peers)` (`key` None: the record
    /// itself): `key(x) % peers` for ints and numbers equal to ints, else a stable hash of
    /// the key, so that keys that compare equal meet on one worker in every process.
    #[pyo3(signature = (key=None))]
    fn exchange(&self, key: Option<Py<PyAny>>) -> PyResult<PyStream> {
        build(&self.inner, |s| s.exchange(key))
    }

    /// Sends every record to every worker.
    fn broadcast(&self) -> PyResult<PyStream> {
        build(&self.inner, |s| s.broadcast())
    }

    /// Merges `other` (a stream of the same scope) into this stream.
    fn concat(&self, other: &PyStream) -> PyResult<PyStream> {
        Ok(wrap(self.inner.concat(&*other.inner)?))
    }

    /// Splits the stream into `parts` streams: record `x` goes to stream `route(x)`, an int
    /// in `range(parts)`.
    fn partition(&self, parts: u64, route: Py<PyAny>) -> PyResult<Vec<PyStream>> {
        if parts == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err("partition needs at least one part"));
        }
        let parts = catch_panic(|| self.inner.partition(parts, route))?;
        Ok(parts.into_iter().map(wrap).collect())
    }

    /// Splits the stream in two by `predicate(time, x)`: returns `(false_stream, true_stream)`.
    fn branch(&self, predicate: Py<PyAny>) -> PyResult<(PyStream, PyStream)> {
        let (no, yes) = catch_panic(|| self.inner.branch(predicate))?;
        Ok((wrap(no), wrap(yes)))
    }

    /// Moves each record to the later time `f(x, time)`, released once that time completes.
    fn delay(&self, f: Py<PyAny>) -> PyResult<PyStream> {
        build(&self.inner, |s| s.delay(f))
    }

    /// Watches the stream's frontier with `handle` and passes the records on.
    fn probe_with(&self, handle: &PyProbeHandle) -> PyResult<PyStream> {
        Ok(wrap(catch_panic(|| self.inner.probe_with(handle))??))
    }

    /// Watches the stream's frontier with a new `ProbeHandle`, which is returned.
    fn probe(&self, py: Python<'_>) -> PyResult<Py<PyProbeHandle>> {
        let handle = PyProbeHandle::default();
        catch_panic(|| self.inner.probe_with(&handle))??;
        Py::new(py, handle)
    }

    /// For each time, `(k, n)`: how many records had key `k = key(x)` (`key` None: the
    /// record itself), emitted once the time is complete. Equal keys are counted together
    /// whatever their types (`1`, `1.0`, `True`), on worker `route_key(k, peers)`.
    #[pyo3(signature = (key=None))]
    fn count_by_key(&self, key: Option<Py<PyAny>>) -> PyResult<PyStream> {
        build(&self.inner, |s| s.count_by_key(key))
    }

    /// For each time and key `k = key(x)`: `acc = fold(acc, x)` starting from `init()`,
    /// emitting `emit(k, acc)` (default `(k, acc)`) once the time is complete. Equal keys
    /// share one `acc`, on worker `route_key(k, peers)`.
    #[pyo3(signature = (key, fold, init, emit=None))]
    fn aggregate(
        &self,
        key: Py<PyAny>,
        fold: Py<PyAny>,
        init: Py<PyAny>,
        emit: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        build(&self.inner, |s| s.aggregate(key, fold, init, emit))
    }

    /// Brings the stream into `scope`, nested directly in the stream's scope.
    fn enter(&self, scope: &PyScope) -> PyResult<PyStream> {
        Ok(wrap(self.inner.enter(scope.inner.as_any())?))
    }

    /// Takes the stream out to `scope`, the scope enclosing the stream's scope.
    fn leave(&self, scope: &PyScope) -> PyResult<PyStream> {
        Ok(wrap(self.inner.leave(scope.inner.as_any())?))
    }

    /// Feeds the stream into the feedback edge of `handle` (from `scope.feedback`).
    fn connect_loop(&self, handle: &mut PyLoopHandle) -> PyResult<()> {
        let inner = handle
            .inner
            .take()
            .ok_or_else(|| DataflowError::new_err("connect_loop: this loop handle is already connected"))?;
        self.inner.connect_loop(inner)
    }
}
