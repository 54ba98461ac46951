//! `exchange` and `broadcast`: operators that move records between workers, and
//! `KeyPartition`, the choice of a worker by a Python key that every exchanging edge of the
//! package uses (`exchange`, the keyed aggregations, the generic operators' `exchange=`).

use crate::args::optional_callable;
use crate::errors::{catch_panic, WorkerContext};
use crate::key::route;
use crate::record::{KeyedPair, Record};
use crate::stream::{PyStream, StreamHandle};
use pyo3::prelude::*;
use std::rc::Rc;
use timely_engine::dataflow::{AllWorkers, ExchangeWith, Partition, Stranded};

/// What a record is routed by.
pub trait RoutingKey {
    /// The key of this record: `key(record)`, or the record itself when `key` is None.
    fn routing_key<'py>(&self, py: Python<'py>, key: Option<&Py<PyAny>>) -> PyResult<Bound<'py, PyAny>>;
}

impl RoutingKey for Record {
    #[inline]
    fn routing_key<'py>(&self, py: Python<'py>, key: Option<&Py<PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        match key {
            Some(key) => key.bind(py).call1((self.bind(py),)),
            None => Ok(self.bind(py).clone()),
        }
    }
}

impl RoutingKey for KeyedPair {
    /// The pair's key, computed before.
    #[inline]
    fn routing_key<'py>(&self, py: Python<'py>, _key: Option<&Py<PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.0.bind(py).clone())
    }
}

/// Chooses each record's worker by `key::route` of its key, with the interpreter attached
/// once per batch. An exception in the key function fails the run (the records not routed
/// yet go to the first candidate, so that nothing is dropped while the run stops).
pub struct KeyPartition {
    key: Option<Py<PyAny>>,
    context: Rc<WorkerContext>,
    /// The operator named in an exception's note.
    name: String,
    /// The key named in a refused key's error.
    what: String,
}

impl KeyPartition {
    /// Routes by `key` (None: the record itself), reporting failures as `name`'s.
    pub fn new(key: Option<Py<PyAny>>, context: &Rc<WorkerContext>, name: &str) -> Self {
        KeyPartition { key, context: context.clone(), name: name.to_owned(), what: format!("{name}: key") }
    }
}

impl<D: RoutingKey + 'static> Partition<D> for KeyPartition {
    /// Records that went to a leaver went there by one key: one stayer takes them all.
    const STRANDED: Stranded = Stranded::Forward;

    fn partition(&mut self, data: &mut Vec<D>, members: &[usize], targets: &mut [Vec<D>]) {
        let count = members.len() as u64;
        let key = self.key.as_ref();
        self.context.run(&self.name, |py| {
            let mut records = data.drain(..);
            while let Some(record) = records.next() {
                match record.routing_key(py, key).and_then(|k| route(&k, count, &self.what)) {
                    Ok(chosen) => targets[members[chosen as usize]].push(record),
                    Err(error) => {
                        targets[members[0]].push(record);
                        targets[members[0]].extend(records);
                        return Err(error);
                    }
                }
            }
            Ok(())
        });
        // Left when the run had failed before: nothing is routed any more.
        targets[members[0]].append(data);
    }
}

fn exchange(stream: &StreamHandle, key: Option<Py<PyAny>>) -> StreamHandle {
    let partition = KeyPartition::new(key, &stream.context, "Exchange");
    let pact = ExchangeWith::new(AllWorkers::default(), partition);
    stream.wrap(stream.stream.unary(pact, "Exchange", |_, _| {
        |input, output| input.for_each(|time, data| output.session(&time).give_vec(data))
    }))
}

#[pymethods]
impl PyStream {
    /// Sends each record to worker `key(x) % peers` for int keys (`key` None: the record
    /// itself), or to a worker chosen by a stable hash of the key's canonical form (`key`):
    /// keys that compare equal meet on one worker in every process.
    #[pyo3(signature = (key=None))]
    fn exchange(&self, py: Python<'_>, key: Option<Py<PyAny>>) -> PyResult<PyStream> {
        let key = optional_callable(py, key, "exchange: key")?;
        catch_panic(|| exchange(&self.inner, key).into())
    }

    /// Sends every record to every worker.
    fn broadcast(&self) -> PyResult<PyStream> {
        catch_panic(|| self.inner.wrap(self.inner.stream.broadcast()).into())
    }
}
