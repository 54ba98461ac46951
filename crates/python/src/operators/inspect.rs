//! `inspect`, `inspect_time` and `inspect_batch`: operators that call Python on what passes
//! and pass the records on unchanged.

use crate::args::callable;
use crate::errors::catch_panic;
use crate::operators::batch::batch_operator;
use crate::stream::{PyStream, StreamHandle};
use crate::time::to_py;
use pyo3::prelude::*;
use pyo3::types::PyList;

fn inspect(stream: &StreamHandle, f: Py<PyAny>) -> StreamHandle {
    batch_operator(stream, "Inspect", move |py, _time, data, out| {
        let f = f.bind(py);
        for x in data.iter() {
            f.call1((x.bind(py),))?;
        }
        std::mem::swap(data, out);
        Ok(())
    })
}

fn inspect_time(stream: &StreamHandle, f: Py<PyAny>) -> StreamHandle {
    let depth = stream.depth;
    batch_operator(stream, "InspectTime", move |py, time, data, out| {
        let f = f.bind(py);
        let time = to_py(py, time, depth)?;
        for x in data.iter() {
            f.call1((&time, x.bind(py)))?;
        }
        std::mem::swap(data, out);
        Ok(())
    })
}

fn inspect_batch(stream: &StreamHandle, f: Py<PyAny>) -> StreamHandle {
    let depth = stream.depth;
    batch_operator(stream, "InspectBatch", move |py, time, data, out| {
        let list = PyList::new(py, data.iter().map(|x| x.bind(py)))?;
        f.bind(py).call1((to_py(py, time, depth)?, list))?;
        std::mem::swap(data, out);
        Ok(())
    })
}

#[pymethods]
impl PyStream {
    /// Calls `f(x)` for every record and passes the records on.
    fn inspect(&self, py: Python<'_>, f: Py<PyAny>) -> PyResult<PyStream> {
        let f = callable(py, f, "inspect: f")?;
        catch_panic(|| inspect(&self.inner, f).into())
    }

    /// Calls `f(time, x)` for every record and passes the records on.
    fn inspect_time(&self, py: Python<'_>, f: Py<PyAny>) -> PyResult<PyStream> {
        let f = callable(py, f, "inspect_time: f")?;
        catch_panic(|| inspect_time(&self.inner, f).into())
    }

    /// Calls `f(time, records)` for every batch (a list) and passes the records on.
    fn inspect_batch(&self, py: Python<'_>, f: Py<PyAny>) -> PyResult<PyStream> {
        let f = callable(py, f, "inspect_batch: f")?;
        catch_panic(|| inspect_batch(&self.inner, f).into())
    }
}
