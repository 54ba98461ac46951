//! `exchange` and `broadcast`: operators that move records between workers, and the keyed
//! routing step that the generic operators' `exchange` arguments share.

use crate::args::optional_callable;
use crate::errors::{catch_panic, WorkerContext};
use crate::key::route;
use crate::record::{Record, Routed};
use crate::stream::{PyStream, StreamHandle};
use crate::time::{dispatch, PyTime};
use pyo3::prelude::*;
use std::rc::Rc;
use timely_engine::dataflow::{Pipeline, Stream};

/// `(worker, x)` for every record, the worker chosen by `route(key(x))` (`key` None: the
/// record itself), computed with the interpreter attached once per run so that routing on
/// the worker index needs no interpreter.
pub fn keyed_records<T: PyTime>(
    stream: &Stream<T, Record>,
    context: &Rc<WorkerContext>,
    name: String,
    key: Option<Py<PyAny>>,
) -> Stream<T, Routed> {
    let context = context.clone();
    // Read at every run: workers that join a running cluster take their share of the keys.
    let worker_state = stream.scope().worker().clone();
    stream.unary(Pipeline, &name.clone(), move |_, _| {
        move |input, output| {
            let peers = worker_state.peers() as u64;
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

fn exchange<T: PyTime>(stream: &StreamHandle<T>, key: Option<Py<PyAny>>) -> StreamHandle<T> {
    let keyed = keyed_records(&stream.stream, &stream.context, "ExchangeKey".to_owned(), key);
    stream.wrap(keyed.exchange(|Routed(hash, _): &Routed| *hash).map(|Routed(_, x)| x))
}

#[pymethods]
impl PyStream {
    /// Sends each record to worker `key(x) % peers` for int keys (`key` None: the record
    /// itself), or to a worker chosen by a hash of the key that is stable across processes for
    /// str, bytes, floats and tuples (other objects use Python's `hash`).
    #[pyo3(signature = (key=None))]
    fn exchange(&self, py: Python<'_>, key: Option<Py<PyAny>>) -> PyResult<PyStream> {
        let key = optional_callable(py, key, "exchange: key")?;
        catch_panic(|| dispatch!(&self.inner, s => exchange(s, key).into()))
    }

    /// Sends every record to every worker.
    fn broadcast(&self) -> PyResult<PyStream> {
        catch_panic(|| dispatch!(&self.inner, s => s.wrap(s.stream.broadcast()).into()))
    }
}
