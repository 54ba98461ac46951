//! `count_by_key` and `aggregate`: operators that exchange records by key and fold them per
//! time and key, emitting each key's result once its time is complete. The exchange is keyed
//! (`timely_engine::dataflow::operators::keyed`): a key's records of one time meet on one
//! worker even while processes join.

use crate::args::{callable, optional_callable};
use crate::errors::catch_panic;
use crate::operators::exchange::KeyPartition;
use crate::record::{KeyedPair, Record};
use crate::stream::{PyStream, StreamHandle};
use crate::time::Time;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::collections::HashMap;
use timely_engine::dataflow::operators::keyed_pact;
use timely_engine::dataflow::{Pipeline, Stream};

/// `(k, x)` with `k = key(x)` for every record (`key` None: the record itself).
fn keyed_pairs(stream: &StreamHandle, name: &'static str, key: Option<Py<PyAny>>) -> Stream<Time, KeyedPair> {
    let context = stream.context.clone();
    stream.stream.unary(Pipeline, name, move |_, _| {
        move |input, output| {
            context.run(name, |py| {
                while let Some((time, data)) = input.next() {
                    let mut session = output.session(&time);
                    for x in data.drain(..) {
                        let k = match &key {
                            Some(key) => key.bind(py).call1((x.bind(py),))?,
                            None => x.bind(py).clone(),
                        };
                        session.give(KeyedPair(Record(k.unbind()), x));
                    }
                }
                Ok(())
            });
            while input.next().is_some() {}
        }
    })
}

/// Exchanges records by `key(x)` and folds them per time and key into a dict, emitting
/// `emit(key, acc)` (default `(key, acc)`) for each key once the time is complete.
fn keyed_fold<F>(
    stream: &StreamHandle,
    name: &'static str,
    key: Option<Py<PyAny>>,
    mut fold: F,
    emit: Option<Py<PyAny>>,
) -> StreamHandle
where
    F: for<'py> FnMut(
            Python<'py>,
            Option<Bound<'py, PyAny>>,
            &Bound<'py, PyAny>,
        ) -> PyResult<Bound<'py, PyAny>>
        + 'static,
{
    let (keyed, membership) = keyed_pairs(stream, name, key).settle(name);
    let pact = keyed_pact(&membership, KeyPartition::new(None, &stream.context, name));
    let context = stream.context.clone();
    let mut state: HashMap<Time, Py<PyDict>> = HashMap::new();
    let folded = keyed.unary_notify(pact, name, move |input, output, notificator| {
        let ran = context.run(name, |py| {
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
                for KeyedPair(k, x) in data.drain(..) {
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
                        session.give(Record(result.unbind()));
                    }
                }
            }
            Ok(())
        });
        if ran.is_none() {
            // The run failed: drop what arrived. Only then, since workers of this process
            // keep pushing into an exchanged input while this operator runs.
            while input.next().is_some() {}
        }
    });
    stream.wrap(folded)
}

fn count_by_key(stream: &StreamHandle, key: Option<Py<PyAny>>) -> StreamHandle {
    keyed_fold(
        stream,
        "CountByKey",
        key,
        |py, count: Option<Bound<'_, PyAny>>, _x| match count {
            Some(count) => count.add(1),
            None => Ok(1u64.into_pyobject(py)?.into_any()),
        },
        None,
    )
}

/// The callables of `aggregate`.
struct Aggregation {
    key: Py<PyAny>,
    fold: Py<PyAny>,
    init: Py<PyAny>,
    emit: Option<Py<PyAny>>,
}

fn aggregate(stream: &StreamHandle, aggregation: Aggregation) -> StreamHandle {
    let Aggregation { key, fold, init, emit } = aggregation;
    keyed_fold(
        stream,
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

#[pymethods]
impl PyStream {
    /// For each time, `(k, n)`: how many records had key `k = key(x)` (`key` None: the
    /// record itself), emitted once the time is complete.
    #[pyo3(signature = (key=None))]
    fn count_by_key(&self, py: Python<'_>, key: Option<Py<PyAny>>) -> PyResult<PyStream> {
        let key = optional_callable(py, key, "count_by_key: key")?;
        catch_panic(|| count_by_key(&self.inner, key).into())
    }

    /// For each time and key `k = key(x)`: `acc = fold(acc, x)` starting from `init()`,
    /// emitting `emit(k, acc)` (default `(k, acc)`) once the time is complete.
    #[pyo3(signature = (key, fold, init, emit=None))]
    fn aggregate(
        &self,
        py: Python<'_>,
        key: Py<PyAny>,
        fold: Py<PyAny>,
        init: Py<PyAny>,
        emit: Option<Py<PyAny>>,
    ) -> PyResult<PyStream> {
        let aggregation = Aggregation {
            key: callable(py, key, "aggregate: key")?,
            fold: callable(py, fold, "aggregate: fold")?,
            init: callable(py, init, "aggregate: init")?,
            emit: optional_callable(py, emit, "aggregate: emit")?,
        };
        catch_panic(|| aggregate(&self.inner, aggregation).into())
    }
}
