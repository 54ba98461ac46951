//! Running workers: `execute` and `execute_from_args`.
//!
//! Starts one thread per worker, runs the user's closure on each, and keeps stepping each
//! worker after the closure returns until its dataflows complete. Returns each worker's
//! result, or the first failure.

use crate::worker::Worker;
use timely_communication::{initialize_from, Config};

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
pub fn execute<T, F>(config: Config, func: F) -> Result<Vec<T>, ExecuteError>
where
    T: Send + 'static,
    F: Fn(&mut Worker) -> T + Send + Sync + 'static,
{
    let builders = config.try_build().map_err(ExecuteError::Config)?;
    let guards = initialize_from(builders, move |allocator| {
        let mut worker = Worker::new(allocator);
        let result = func(&mut worker);
        while worker.step_or_park(None) {}
        result
    })
    .map_err(ExecuteError::Config)?;
    guards.join().into_iter().map(|r| r.map_err(ExecuteError::Worker)).collect()
}

/// Like `execute`, with the configuration read from command-line arguments (`-w N`).
/// Unrecognized arguments are left for the program.
pub fn execute_from_args<I, T, F>(args: I, func: F) -> Result<Vec<T>, ExecuteError>
where
    I: IntoIterator<Item = String>,
    T: Send + 'static,
    F: Fn(&mut Worker) -> T + Send + Sync + 'static,
{
    let (config, _rest) = Config::from_args(args).map_err(ExecuteError::Config)?;
    execute(config, func)
}

/// Runs `func` on a single worker in this thread and returns its result.
pub fn example<T, F: FnOnce(&mut Worker) -> T>(func: F) -> T {
    let builder = Config::Thread.try_build().expect("a single worker").pop().expect("one builder");
    let mut worker = Worker::new(builder.build());
    let result = func(&mut worker);
    while worker.step_or_park(None) {}
    result
}
