//! `probe` and `probe_with`: watching a root stream's frontier from the worker's program.

use crate::errors::{catch_panic, DataflowError};
use crate::handles::PyProbeHandle;
use crate::stream::PyStream;
use pyo3::prelude::*;
use timely_engine::dataflow::Pipeline;

impl PyStream {
    /// Watches the stream (of a root scope) with `handle`; returns the stream to pass on.
    fn watch(&self, handle: &PyProbeHandle) -> PyResult<PyStream> {
        let root = &self.inner;
        if root.depth != 0 {
            return Err(DataflowError::new_err(
                "probes watch streams of a dataflow's root scope; leave() loops first",
            ));
        }
        catch_panic(|| {
            // The probe watches a record-free copy of the stream: records that end at the
            // probe are released here, with the interpreter attached, not one by one while
            // stepping.
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
            root.wrap(root.stream.clone()).into()
        })
    }
}

#[pymethods]
impl PyStream {
    /// Watches the stream's frontier with `handle` and passes the records on.
    fn probe_with(&self, handle: &PyProbeHandle) -> PyResult<PyStream> {
        self.watch(handle)
    }

    /// Watches the stream's frontier with a new `ProbeHandle`, which is returned.
    fn probe(&self, py: Python<'_>) -> PyResult<Py<PyProbeHandle>> {
        let handle = PyProbeHandle::default();
        self.watch(&handle)?;
        Py::new(py, handle)
    }
}
