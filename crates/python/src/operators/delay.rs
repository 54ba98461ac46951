//! `delay`: moves records to later times of Python's choosing.

use crate::args::callable;
use crate::errors::catch_panic;
use crate::stream::{PyStream, StreamHandle};
use crate::time::{dispatch, show, PyTime};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use timely_engine::dataflow::Pipeline;

fn delay<T: PyTime>(stream: &StreamHandle<T>, f: Py<PyAny>) -> StreamHandle<T> {
    let context = stream.context.clone();
    let timed = stream.stream.unary(Pipeline, "DelayTime", move |_, _| {
        move |input, output| {
            context.run("Delay", |py| {
                let f = f.bind(py);
                while let Some((time, data)) = input.next() {
                    let py_time = time.time().to_py(py)?;
                    let mut session = output.session(&time);
                    for x in data.drain(..) {
                        let new_time = T::from_py(&f.call1((x.bind(py), &py_time))?)?;
                        if !time.time().less_equal(&new_time) {
                            return Err(PyValueError::new_err(format!(
                                "delay: the new time {} is earlier than the record's time {}",
                                show(&new_time),
                                show(time.time())
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
        catch_panic(|| dispatch!(&self.inner, s => delay(s, f).into()))
    }
}
