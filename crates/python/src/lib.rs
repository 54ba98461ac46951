//! `timely_py._core`: the engine, as Python sees it.
//!
//! The only crate that touches Python. It owns the Python classes (`Worker`, `Scope`,
//! `Stream`, `InputHandle`, `ProbeHandle`, ...), records as Python objects, timestamp
//! conversions, and the translation of user exceptions and engine misuse into Python
//! exceptions. It holds no dataflow logic of its own.
//!
//! Each module owns one concern, and dependencies between files point one way
//! (`scripts/check_crate_layout.py` checks it): `time` (timestamps of any depth, as Python
//! sees them), `key` (which worker a key routes to), `record`, `codec` and `wire`
//! (records, their encoding, and their
//! transfer between processes), `stream`, `scope` and `loops` (the Python stream and scope,
//! and nesting), `operators` (the built-in operators, one file per family), `generic` (the
//! operators with Python logic), `megaphone` (the keyed operators with migrating state of
//! the `timely-megaphone` crate), `handles`, `worker`, `tracing` (trace settings, callback
//! delivery, user activities), `trace_format` (the trace's columns and kinds, for Python's
//! readers), `errors` and `args` (argument checks), `runtime_options` (the command line's
//! runtime options, for the launcher), `kernels` (the critical-path analysis's native
//! kernels, `timely_analysis`) over `arrow_capsule` (Arrow tables to and from Python without
//! copying).

mod args;
mod arrow_capsule;
mod codec;
mod errors;
mod generic;
mod handles;
mod kernels;
mod key;
mod leave_signal;
mod loops;
mod megaphone;
mod operators;
mod record;
mod runtime_options;
mod scope;
mod stream;
mod time;
mod trace_format;
mod tracing;
mod wire;
mod worker;

use pyo3::prelude::*;
use std::path::PathBuf;
use timely_communication::networking::Liveness;
use timely_communication::Config;
use timely_engine::runtime_from_args;

/// Runs `main(worker)` on `workers` worker threads; returns their results in worker order.
/// `trace_dir` writes a trace of the run there (`docs/trace-format.md`), `trace_events` names
/// the event classes to record (comma-separated; default all), `trace_flush` how often, in
/// seconds, trace files are closed, and `trace_callback(worker, batch)` receives every batch
/// of events as a `pyarrow.RecordBatch`, on this thread.
#[pyfunction]
#[pyo3(signature = (main, workers=1, *, trace_dir=None, trace_events=None, trace_flush=None, trace_callback=None))]
fn execute(
    py: Python<'_>,
    main: Py<PyAny>,
    workers: usize,
    trace_dir: Option<PathBuf>,
    trace_events: Option<&str>,
    trace_flush: Option<f64>,
    trace_callback: Option<Py<PyAny>>,
) -> PyResult<Vec<Py<PyAny>>> {
    if workers == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err("workers must be at least 1"));
    }
    let config = if workers == 1 { Config::Thread } else { Config::Process(workers) };
    let trace = tracing::settings(trace_dir, trace_events, trace_flush, trace_callback.is_some())?;
    worker::run(py, config, trace, trace_callback, main)
}

/// Like `execute`, configured from command-line arguments: `-w N` worker threads per process,
/// `-n N` processes, `-p I` this process's index, `-h FILE` a hostfile (one `host:port` per
/// process; default `localhost:2101+i`), `--peer-timeout SECONDS`, `--insecure`,
/// `--receive-budget BYTES` and `--early-bytes BYTES` (what received messages may hold in
/// memory; `docs/networking.md`), `--trace DIR` (with `--trace-events LIST` and
/// `--trace-flush SECONDS`) a trace of the run. A cluster's
/// processes find each other at those addresses, authenticated by the environment variables
/// `TIMELY_CLUSTER_ID` and `TIMELY_CLUSTER_SECRET`. Other arguments are ignored.
///
/// `peer_timeout` (seconds) is the program's choice of how long another process may stay
/// silent before it counts as lost: it overrides `TIMELY_PEER_TIMEOUT`, and `--peer-timeout`
/// on the command line overrides it (whoever runs the program knows the network best).
/// `trace_callback(worker, batch)` receives every batch of this process's events, as with
/// `execute`; without `--trace DIR` it traces the run for the callback alone (no files), with
/// the event classes and flush interval of `TIMELY_TRACE_EVENTS` and `TIMELY_TRACE_FLUSH`.
#[pyfunction]
#[pyo3(signature = (argv, main, peer_timeout=None, *, trace_callback=None))]
fn execute_from_args(
    py: Python<'_>,
    argv: Vec<String>,
    main: Py<PyAny>,
    peer_timeout: Option<f64>,
    trace_callback: Option<Py<PyAny>>,
) -> PyResult<Vec<Py<PyAny>>> {
    let mut args = Vec::with_capacity(argv.len() + 1);
    if let Some(seconds) = peer_timeout {
        Liveness::from_seconds(&seconds.to_string())
            .map_err(|error| pyo3::exceptions::PyValueError::new_err(format!("peer_timeout: {error}")))?;
        // First, so that a --peer-timeout in argv (the last occurrence wins) overrides it.
        args.push(format!("--peer-timeout={seconds}"));
    }
    args.extend(argv);
    let (config, trace, _rest) = runtime_from_args(args)
        .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string()))?;
    let trace = match trace {
        None if trace_callback.is_some() => tracing::callback_settings_from_env()?,
        trace => trace,
    };
    worker::run(py, config, trace, trace_callback, main)
}

/// The arguments of `argv` that are the program's own: everything except the runtime's
/// options (`-w`, `-n`, `-p`, `-h`, `--peer-timeout`, `--insecure`, `--receive-budget`,
/// `--early-bytes`, `--trace...` and their spellings) that `execute_from_args` reads.
#[pyfunction]
fn program_args(argv: Vec<String>) -> PyResult<Vec<String>> {
    let (_config, _trace, rest) = runtime_from_args(argv)
        .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string()))?;
    Ok(rest)
}

/// Hands the runtime's warnings (`timely_communication::warning!`) to Python's `logging`, under
/// the logger named after the Rust module that warns (`timely_communication.networking.connect`
/// and so on), so that programs can silence or redirect them. Levels are read at every record
/// (warnings are rare), so `logging` configured after the import is respected. If another
/// extension already installed a Rust logger, warnings go to that one.
fn route_warnings_to_python_logging(py: Python<'_>) {
    if let Ok(logger) = pyo3_log::Logger::new(py, pyo3_log::Caching::Nothing) {
        let _ = logger.filter(log::LevelFilter::Info).install();
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::install_panic_hook();
    route_warnings_to_python_logging(m.py());
    m.add_function(wrap_pyfunction!(execute, m)?)?;
    m.add_function(wrap_pyfunction!(execute_from_args, m)?)?;
    m.add_function(wrap_pyfunction!(program_args, m)?)?;
    m.add_function(wrap_pyfunction!(runtime_options::runtime_options, m)?)?;
    m.add_function(wrap_pyfunction!(runtime_options::runtime_args, m)?)?;
    key::register(m)?;
    m.add_function(wrap_pyfunction!(kernels::worker_activities, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::slice_critical_path, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::worker_pieces, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::write_perfetto_trace, m)?)?;
    m.add_function(wrap_pyfunction!(trace_format::trace_format, m)?)?;
    m.add_class::<worker::PyWorker>()?;
    m.add_class::<tracing::PyActivity>()?;
    m.add_class::<scope::PyScope>()?;
    m.add_class::<loops::PyLoopHandle>()?;
    m.add_class::<stream::PyStream>()?;
    m.add_class::<handles::PyInputHandle>()?;
    m.add_class::<handles::PyProbeHandle>()?;
    generic::register(m)?;
    codec::register(m)?;
    megaphone::register(m)?;
    let py = m.py();
    m.add("EPOCH_SCOPE_PREFIX", megaphone::epochs::SCOPE_PREFIX)?;
    m.add("TimelyError", py.get_type::<errors::TimelyError>())?;
    m.add("DataflowError", py.get_type::<errors::DataflowError>())?;
    m.add("WorkerCancelled", py.get_type::<errors::WorkerCancelled>())?;
    m.add("ClusterError", py.get_type::<errors::ClusterError>())?;
    m.add("LeavingError", py.get_type::<errors::LeavingError>())?;
    Ok(())
}
