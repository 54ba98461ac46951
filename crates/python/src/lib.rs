//! `timely_py._core`: the engine, as Python sees it.
//!
//! The only crate that touches Python. It owns the Python classes (`Worker`, `Scope`,
//! `Stream`, `InputHandle`, `ProbeHandle`, ...), records as Python objects, timestamp
//! conversions, and the translation of user exceptions and engine misuse into Python
//! exceptions. It holds no dataflow logic of its own.

mod codec;
mod errors;
mod generic;
mod handles;
mod key;
mod record;
mod scope;
mod stream;
mod time;
mod worker;

use pyo3::prelude::*;
use timely_communication::Config;

/// Runs `main(worker)` on `workers` worker threads; returns their results in worker order.
#[pyfunction]
#[pyo3(signature = (main, workers=1))]
fn execute(py: Python<'_>, main: Py<PyAny>, workers: usize) -> PyResult<Vec<Py<PyAny>>> {
    if workers == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err("workers must be at least 1"));
    }
    let config = if workers == 1 { Config::Thread } else { Config::Process(workers) };
    worker::run(py, config, main)
}

/// Like `execute`, configured from command-line arguments: `-w N` worker threads per process,
/// `-n N` processes, `-p I` this process's index, `-h FILE` a hostfile (one `host:port` per
/// process; default `localhost:2101+i`). A cluster's processes find each other at those
/// addresses, authenticated by the environment variables `TIMELY_CLUSTER_ID` and
/// `TIMELY_CLUSTER_SECRET`. Other arguments are ignored.
#[pyfunction]
fn execute_from_args(py: Python<'_>, argv: Vec<String>, main: Py<PyAny>) -> PyResult<Vec<Py<PyAny>>> {
    let (config, _rest) = Config::from_args(argv).map_err(pyo3::exceptions::PyValueError::new_err)?;
    worker::run(py, config, main)
}

/// The arguments of `argv` that are the program's own: everything except the runtime's
/// options (`-w`, `-n`, `-p`, `-h` and their spellings) that `execute_from_args` reads.
#[pyfunction]
fn program_args(argv: Vec<String>) -> PyResult<Vec<String>> {
    let (_config, rest) = Config::from_args(argv).map_err(pyo3::exceptions::PyValueError::new_err)?;
    Ok(rest)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::install_panic_hook();
    m.add_function(wrap_pyfunction!(execute, m)?)?;
    m.add_function(wrap_pyfunction!(execute_from_args, m)?)?;
    m.add_function(wrap_pyfunction!(program_args, m)?)?;
    m.add_function(wrap_pyfunction!(key::route_key, m)?)?;
    m.add_class::<worker::PyWorker>()?;
    m.add_class::<scope::PyScope>()?;
    m.add_class::<scope::PyLoopHandle>()?;
    m.add_class::<stream::PyStream>()?;
    m.add_class::<handles::PyInputHandle>()?;
    m.add_class::<handles::PyProbeHandle>()?;
    generic::register(m)?;
    codec::register(m)?;
    let py = m.py();
    m.add("TimelyError", py.get_type::<errors::TimelyError>())?;
    m.add("DataflowError", py.get_type::<errors::DataflowError>())?;
    m.add("WorkerCancelled", py.get_type::<errors::WorkerCancelled>())?;
    m.add("ClusterError", py.get_type::<errors::ClusterError>())?;
    Ok(())
}
