//! `OperatorInfo`: the facts about a generic operator that its constructor receives.

use crate::generic::local::Local;
use pyo3::prelude::*;
use timely_engine::dataflow::operators::OperatorInfo;
use timely_engine::scheduling::Activator;

/// Facts about an operator, handed to its constructor.
#[pyclass(name = "OperatorInfo", module = "timely_py._core")]
pub struct PyOperatorInfo {
    name: String,
    index: usize,
    address: Vec<usize>,
    worker: usize,
    peers: usize,
    activator: Local<Activator>,
}

impl PyOperatorInfo {
    /// The facts of the operator `name` described by `info`.
    pub fn new(name: &str, info: &OperatorInfo) -> Self {
        PyOperatorInfo {
            name: name.to_owned(),
            index: info.index,
            address: info.address.clone(),
            worker: info.worker,
            peers: info.peers,
            activator: Local::new("this OperatorInfo", info.activator.clone()),
        }
    }
}

#[pymethods]
impl PyOperatorInfo {
    /// The operator's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The operator's index in its scope.
    #[getter]
    fn index(&self) -> usize {
        self.index
    }

    /// The operator's address: the indices of its enclosing scopes and its own.
    #[getter]
    fn address(&self) -> Vec<usize> {
        self.address.clone()
    }

    /// This worker's index.
    #[getter]
    fn worker(&self) -> usize {
        self.worker
    }

    /// The number of workers.
    #[getter]
    fn peers(&self) -> usize {
        self.peers
    }

    /// Schedules the operator at the worker's next step (a source's logic runs only at
    /// start and when activated).
    fn activate(&self) -> PyResult<()> {
        self.activator.get()?.activate();
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!(
            "OperatorInfo(name='{}', index={}, address={:?}, worker={}, peers={})",
            self.name, self.index, self.address, self.worker, self.peers
        )
    }
}
