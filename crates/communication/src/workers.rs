//! Worker threads: [`initialize_from`] spawns one named thread per worker and hands it its
//! [`Allocator`]; [`WorkerGuards`] collects each worker's result or panic ([`SpawnError`],
//! [`WorkerPanicked`]).

use std::any::Any;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::{Allocator, AllocatorBuilder};

/// Spawns one thread per builder (named `timely:worker-{i}` after the builder's worker index),
/// builds the allocator there and runs `func(allocator)` on it.
///
/// # Errors
///
/// A thread that could not be spawned. Workers already started are then left running detached,
/// since they may wait for the worker that is missing.
pub fn initialize_from<T: Send + 'static, F>(
    builders: Vec<AllocatorBuilder>,
    func: F,
) -> Result<WorkerGuards<T>, SpawnError>
where
    F: Fn(Allocator) -> T + Send + Sync + 'static,
{
    let func = Arc::new(func);
    let mut handles = Vec::with_capacity(builders.len());
    for builder in builders {
        let index = builder.index();
        let func = Arc::clone(&func);
        let handle = std::thread::Builder::new()
            .name(format!("timely:worker-{index}"))
            .spawn(move || func(builder.build()))
            .map_err(|error| SpawnError { index, error })?;
        handles.push((index, handle));
    }
    Ok(WorkerGuards { handles })
}

/// A worker thread that could not be spawned.
#[derive(Debug, thiserror::Error)]
#[error("failed to spawn worker {index}: {error}")]
pub struct SpawnError {
    /// The worker's index.
    pub index: usize,
    /// Why.
    pub error: std::io::Error,
}

/// A worker that panicked, and the panic's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("worker {index} panicked: {message}")]
pub struct WorkerPanicked {
    /// The worker's index.
    pub index: usize,
    /// The panic's message.
    pub message: String,
}

/// The running workers; joins them on [`WorkerGuards::join`] or when dropped.
pub struct WorkerGuards<T> {
    /// Each worker's index and thread, in index order; emptied by `join`.
    handles: Vec<(usize, JoinHandle<T>)>,
}

impl<T> WorkerGuards<T> {
    /// Waits for every worker; returns each worker's result in index order, or `Err` with the
    /// panic message of a worker that panicked.
    pub fn join(mut self) -> Vec<Result<T, WorkerPanicked>> {
        self.join_all()
    }

    fn join_all(&mut self) -> Vec<Result<T, WorkerPanicked>> {
        self.handles
            .drain(..)
            .map(|(index, handle)| {
                handle.join().map_err(|payload| WorkerPanicked {
                    index,
                    message: panic_message(&*payload).to_string(),
                })
            })
            .collect()
    }
}

impl<T> Drop for WorkerGuards<T> {
    /// Joins the workers if [`WorkerGuards::join`] was not called, and re-raises their panics
    /// (unless this thread is already panicking), so that no failure goes unnoticed.
    fn drop(&mut self) {
        let failures: Vec<String> =
            self.join_all().into_iter().filter_map(Result::err).map(|panic| panic.to_string()).collect();
        if !failures.is_empty() && !std::thread::panicking() {
            panic!("{}", failures.join("; "));
        }
    }
}

/// The message of a panic payload (`panic!` gives a `&str` or a `String`).
pub fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(a panic payload that is not a string)")
}
