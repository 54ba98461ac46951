//! `concat`, `partition` and `branch`: operators that merge streams or split one.

use crate::args::callable;
use crate::errors::catch_panic;
use crate::stream::{PyStream, StreamHandle};
use crate::time::to_py;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use timely_engine::dataflow::Pipeline;

fn concat(stream: &StreamHandle, other: &PyStream) -> PyResult<StreamHandle> {
    let other = other.at(stream.depth, "concat")?;
    Ok(stream.wrap(stream.stream.concat(&other.stream)))
}

fn partition(stream: &StreamHandle, parts: u64, route: Py<PyAny>) -> Vec<PyStream> {
    let context = stream.context.clone();
    let routed = stream.stream.unary(Pipeline, "PartitionRoute", move |_, _| {
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
                                return Err(PyValueError::new_err(format!(
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
    routed.partition(parts, |(part, x)| (part, x)).into_iter().map(|s| stream.wrap(s).into()).collect()
}

fn branch(stream: &StreamHandle, predicate: Py<PyAny>) -> (PyStream, PyStream) {
    let (context, depth) = (stream.context.clone(), stream.depth);
    let decided = stream.stream.unary(Pipeline, "BranchDecide", move |_, _| {
        move |input, output| {
            context.run("Branch", |py| {
                let predicate = predicate.bind(py);
                while let Some((time, data)) = input.next() {
                    let py_time = to_py(py, time.time(), depth)?;
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
    (stream.wrap(no.map(|(_, x)| x)).into(), stream.wrap(yes.map(|(_, x)| x)).into())
}

#[pymethods]
impl PyStream {
    /// Merges `other` (a stream of the same scope) into this stream.
    fn concat(&self, other: &PyStream) -> PyResult<PyStream> {
        catch_panic(|| concat(&self.inner, other).map(PyStream::from))?
    }

    /// Splits the stream into `parts` streams: record `x` goes to stream `route(x)`, an int
    /// in `range(parts)`.
    fn partition(&self, py: Python<'_>, parts: u64, route: Py<PyAny>) -> PyResult<Vec<PyStream>> {
        if parts == 0 {
            return Err(PyValueError::new_err("partition needs at least one part"));
        }
        let route = callable(py, route, "partition: route")?;
        catch_panic(|| partition(&self.inner, parts, route))
    }

    /// Splits the stream in two by `predicate(time, x)`: returns `(false_stream, true_stream)`.
    fn branch(&self, py: Python<'_>, predicate: Py<PyAny>) -> PyResult<(PyStream, PyStream)> {
        let predicate = callable(py, predicate, "branch: predicate")?;
        catch_panic(|| branch(&self.inner, predicate))
    }
}
