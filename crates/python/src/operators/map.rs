//! `map`, `flat_map` and `filter`: operators that turn each record into zero or more.

use crate::args::callable;
use crate::errors::catch_panic;
use crate::operators::batch::batch_operator;
use crate::record::Record;
use crate::stream::{PyStream, StreamHandle};
use pyo3::prelude::*;

fn map(stream: &StreamHandle, f: Py<PyAny>) -> StreamHandle {
    batch_operator(stream, "Map", move |py, _time, data, out| {
        let f = f.bind(py);
        for x in data.drain(..) {
            out.push(Record(f.call1((x.0,))?.unbind()));
        }
        Ok(())
    })
}

fn flat_map(stream: &StreamHandle, f: Py<PyAny>) -> StreamHandle {
    batch_operator(stream, "FlatMap", move |py, _time, data, out| {
        let f = f.bind(py);
        for x in data.drain(..) {
            for item in f.call1((x.0,))?.try_iter()? {
                out.push(Record(item?.unbind()));
            }
        }
        Ok(())
    })
}

fn filter(stream: &StreamHandle, predicate: Py<PyAny>) -> StreamHandle {
    batch_operator(stream, "Filter", move |py, _time, data, out| {
        let predicate = predicate.bind(py);
        for x in data.drain(..) {
            if predicate.call1((x.bind(py),))?.is_truthy()? {
                out.push(x);
            }
        }
        Ok(())
    })
}

#[pymethods]
impl PyStream {
    /// `f(x)` for every record `x`.
    fn map(&self, py: Python<'_>, f: Py<PyAny>) -> PyResult<PyStream> {
        let f = callable(py, f, "map: f")?;
        catch_panic(|| map(&self.inner, f).into())
    }

    /// Every item of the iterable `f(x)`, for every record `x`.
    fn flat_map(&self, py: Python<'_>, f: Py<PyAny>) -> PyResult<PyStream> {
        let f = callable(py, f, "flat_map: f")?;
        catch_panic(|| flat_map(&self.inner, f).into())
    }

    /// The records `x` for which `predicate(x)` is true.
    fn filter(&self, py: Python<'_>, predicate: Py<PyAny>) -> PyResult<PyStream> {
        let predicate = callable(py, predicate, "filter: predicate")?;
        catch_panic(|| filter(&self.inner, predicate).into())
    }
}
