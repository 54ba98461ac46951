//! `delay`: moves records to later times of Python's choosing.

use crate::args::callable;
use crate::errors::catch_panic;
use crate::stream::{PyStream, StreamHandle};
use crate::time::{from_py, show, to_py};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use timely_engine::dataflow::Pipeline;
use timely_engine::PartialOrder;

fn delay(stream: &StreamHandle, f: Py<PyAny>) -> StreamHandle {
    let (context, depth) = (stream.context.clone(), stream.depth);
    let timed = stream.stream.unary(Pipeline, "DelayTime", move |_, _| {
        move |input, output| {
            context.run("Delay", |py| {
                let f = f.bind(py);
                while let Some((time, data)) = input.next() {
                    let py_time = to_py(py, time.time(), depth)?;
                    let mut session = output.session(&time);
                    for x in data.drain(..) {
                        let new_time = from_py(&f.call1((x.bind(py), &py_time))?, depth)?;
                        if !time.time().less_equal(&new_time) {
                            return Err(PyValueError::new_err(format!(
                                "delay: the new time {} is earlier than the record's time {}",
                                show(&new_time, depth),
                                show(time.time(), depth)
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
    stream.wrap(timed.delay(|(new_time, _), _time| new_time.clone()).map(|(_, x)| x))
}

#[pymethods]
impl PyStream {
    /// Moves each record to the later time `f(x, time)`, released once that time completes.
    fn delay(&self, py: Python<'_>, f: Py<PyAny>) -> PyResult<PyStream> {
        let f = callable(py, f, "delay: f")?;
        catch_panic(|| delay(&self.inner, f).into())
    }
}
