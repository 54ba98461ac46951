//! Running workers: `execute` and `execute_from_args`.
//!
//! Starts one thread per worker, runs the user's closure on each, and keeps stepping each
//! worker after the closure returns until its dataflows complete and every worker of the
//! process got that far (`ReturnedWorkers`). Returns each worker's result, or the first
//! failure.

use crate::returned_workers::ReturnedWorkers;
use crate::trace::{ProcessTrace, TraceSettings, TraceSettingsError};
use crate::worker::{ClusterFailure, StopSignal, StoppedByPeer, Worker};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use timely_communication::{initialize_from, Config, ConfigError, RuntimeArgs};

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecuteError {
    /// The configuration or arguments were invalid.
    Config(String),
    /// A worker panicked; the message names the worker and the panic.
    Worker(String),
}

impl std::fmt::Display for ExecuteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExecuteError::Config(message) => write!(f, "invalid configuration: {}", message),
            ExecuteError::Worker(message) => write!(f, "{}", message),
        }
    }
}

impl std::error::Error for ExecuteError {}

/// Runs `func` on every worker of `config`; returns the workers' results in index order.
///
/// If a worker panics, the others stop at their next step (or within 100 ms when parked)
/// and the error names the worker that failed first and its panic message.
pub fn execute<T, F>(config: Config, func: F) -> Result<Vec<T>, ExecuteError>
where
    T: Send + 'static,
    F: Fn(&mut Worker) -> T + Send + Sync + 'static,
{
    execute_traced(config, None, func)
}

/// Like `execute`, and with `trace` records every worker's events in a trace
/// (`docs/trace-format.md`). A trace that cannot be written is reported as a warning
/// (`timely_communication::warning!`), not as a failure of the run.
pub fn execute_traced<T, F>(
    mut config: Config,
    trace: Option<TraceSettings>,
    func: F,
) -> Result<Vec<T>, ExecuteError>
where
    T: Send + 'static,
    F: Fn(&mut Worker) -> T + Send + Sync + 'static,
{
    let trace = match trace {
        Some(settings) => Some(Arc::new(
            ProcessTrace::start(settings, &mut config)
                .map_err(|e| ExecuteError::Config(format!("trace: {e}")))?,
        )),
        None => None,
    };
    let builders = config.try_build().map_err(|error| ExecuteError::Config(error.to_string()))?;
    let signal = StopSignal::new();
    let first_failure: Arc<Mutex<Option<String>>> = Default::default();
    let failure = first_failure.clone();
    let worker_trace = trace.clone();
    let returned = ReturnedWorkers::new(builders.len());
    let guards = initialize_from(builders, move |allocator| {
        let mut worker = Worker::new(allocator);
        worker.set_stop_signal(signal.clone());
        if let Some(trace) = &worker_trace {
            trace.install(&mut worker);
        }
        let index = worker.index();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let result = func(&mut worker);
            worker.program_returned();
            while worker.step_or_park(None) {}
            worker.linger(&returned);
            result
        }));
        // (A failed worker counts as done: nobody waits for it.)
        returned.arrive();
        outcome.unwrap_or_else(|payload| {
            if let Some(ClusterFailure(reason)) = payload.downcast_ref::<ClusterFailure>() {
                let message = format!("worker {index} stopped: {reason}");
                failure.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(message);
            } else if !payload.is::<StoppedByPeer>() {
                let message = format!("worker {} panicked: {}", index, panic_message(payload.as_ref()));
                failure.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(message);
            }
            signal.raise();
            resume_unwind(payload)
        })
    })
    .map_err(|error| ExecuteError::Config(error.to_string()))?;
    let results = guards.join();
    let failure = first_failure.lock().unwrap_or_else(|e| e.into_inner()).take();
    let results: Result<Vec<T>, ExecuteError> = match failure {
        Some(message) => Err(ExecuteError::Worker(message)),
        None => {
            results.into_iter().map(|r| r.map_err(|panic| ExecuteError::Worker(panic.to_string()))).collect()
        }
    };
    if let Some(trace) = trace.and_then(Arc::into_inner) {
        if let Err(error) = trace.finish(results.is_ok()) {
            timely_communication::warning!("the trace is incomplete: {error}");
        }
    }
    results
}

/// The message of a panic payload.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    timely_communication::workers::panic_message(payload).to_owned()
}

/// Like `execute`, with the configuration read from command-line arguments (`-w N` threads,
/// `-n N` processes, `-p I` this process, `-h FILE` hostfile; see `Config::from_args`) and
/// tracing switched on by `--trace DIR` (see [`TraceSettings::from_args`]).
/// Unrecognized arguments are left for the program.
pub fn execute_from_args<I, T, F>(args: I, func: F) -> Result<Vec<T>, ExecuteError>
where
    I: IntoIterator<Item = String>,
    T: Send + 'static,
    F: Fn(&mut Worker) -> T + Send + Sync + 'static,
{
    let (config, trace, _rest) =
        runtime_from_args(args).map_err(|error| ExecuteError::Config(error.to_string()))?;
    execute_traced(config, trace, func)
}

/// Why the runtime's options on a command line do not make a run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeArgsError {
    /// The command line, or an option of the cluster, is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A trace option is wrong.
    #[error(transparent)]
    Trace(#[from] TraceSettingsError),
}

/// Reads the runtime's options out of `args`: the configuration, the trace settings, and
/// the arguments that are the program's own.
///
/// # Errors
///
/// A command line that cannot be read, or an option (or its environment variable) with a
/// bad value; the error names the option as written, or the variable, and the value.
pub fn runtime_from_args<I>(args: I) -> Result<(Config, Option<TraceSettings>, Vec<String>), RuntimeArgsError>
where
    I: IntoIterator<Item = String>,
{
    let args = RuntimeArgs::parse(args).map_err(ConfigError::from)?;
    let trace = TraceSettings::from_runtime_args(&args)?;
    let config = Config::from_runtime_args(&args)?;
    Ok((config, trace, args.rest))
}

/// Runs `func` on a single worker in this thread and returns its result.
pub fn example<T, F: FnOnce(&mut Worker) -> T>(func: F) -> T {
    let builder = Config::Thread.try_build().expect("a single worker").pop().expect("one builder");
    let mut worker = Worker::new(builder.build());
    let result = func(&mut worker);
    worker.program_returned();
    while worker.step_or_park(None) {}
    result
}
