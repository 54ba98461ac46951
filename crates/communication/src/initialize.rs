//! Starting workers: configuration from command-line arguments, worker threads, and their results.
//!
//! This module owns [`Config`] (how many workers, parsed from `-w`/`--workers`/`--threads`),
//! [`initialize`] and [`initialize_from`], which spawn one named thread per worker and hand it
//! its [`Allocator`], and [`WorkerGuards`], which collects each worker's result or panic.
//! It must not know what workers compute.

use std::any::Any;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::allocator::process::ProcessBuilder;
use crate::allocator::thread::ThreadBuilder;
use crate::{Allocator, AllocatorBuilder};

/// How many workers to run, and how they communicate.
#[derive(Clone, Debug)]
pub enum Config {
    /// One worker.
    Thread,
    /// The given number of worker threads in this process.
    Process(usize),
}

impl Config {
    /// Parses `-w N` / `--workers N` / `--threads N` (also `-wN`, `--workers=N`, `--threads=N`)
    /// from `args`, ignoring unrelated args.
    ///
    /// Returns the config (`Thread` for one worker or when no option is given, `Process(N)`
    /// otherwise) and the remaining, unconsumed args in order. The last occurrence of an option
    /// wins. Arguments after `--` are not parsed; `--` and everything after it are returned.
    ///
    /// # Errors
    ///
    /// A missing value, a value that is not a number, or zero.
    pub fn from_args<I: IntoIterator<Item = String>>(
        args: I,
    ) -> Result<(Config, Vec<String>), String> {
        let mut workers = 1;
        let mut remaining = Vec::new();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let value = match arg.as_str() {
                "--" => {
                    remaining.push(arg);
                    remaining.extend(args.by_ref());
                    break;
                }
                "-w" | "--workers" | "--threads" => args
                    .next()
                    .ok_or_else(|| format!("option {arg} requires a number of workers"))?,
                _ => match worker_option_value(&arg) {
                    Some(value) => value.to_string(),
                    None => {
                        remaining.push(arg);
                        continue;
                    }
                },
            };
            workers = match value.parse::<usize>() {
                Ok(0) => {
                    return Err(format!(
                        "option {arg}: the number of workers must be at least 1"
                    ))
                }
                Ok(workers) => workers,
                Err(_) => {
                    return Err(format!(
                        "option {arg}: expected a number of workers, found {value:?}"
                    ))
                }
            };
        }
        let config = if workers == 1 {
            Config::Thread
        } else {
            Config::Process(workers)
        };
        Ok((config, remaining))
    }

    /// One allocator builder per worker, in index order.
    ///
    /// # Errors
    ///
    /// `Process(0)`: there must be at least one worker.
    pub fn try_build(self) -> Result<Vec<AllocatorBuilder>, String> {
        match self {
            Config::Thread => Ok(vec![AllocatorBuilder::Thread(ThreadBuilder)]),
            Config::Process(0) => {
                Err("Config::Process(0): the number of workers must be at least 1".into())
            }
            Config::Process(peers) => Ok(ProcessBuilder::new_vector(peers)
                .into_iter()
                .map(AllocatorBuilder::Process)
                .collect()),
        }
    }
}

/// The value attached to a worker option in one argument (`-wN`, `--workers=N`, `--threads=N`).
fn worker_option_value(arg: &str) -> Option<&str> {
    arg.strip_prefix("--workers=")
        .or_else(|| arg.strip_prefix("--threads="))
        .or_else(|| arg.strip_prefix("-w").filter(|value| !value.is_empty()))
}

/// Spawns one thread per worker of `config` (named `timely:worker-{i}`) and runs `func(allocator)` on each.
///
/// # Errors
///
/// An invalid `config`, or a thread that could not be spawned.
pub fn initialize<T: Send + 'static, F>(config: Config, func: F) -> Result<WorkerGuards<T>, String>
where
    F: Fn(Allocator) -> T + Send + Sync + 'static,
{
    initialize_from(config.try_build()?, func)
}

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
) -> Result<WorkerGuards<T>, String>
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
            .map_err(|error| format!("failed to spawn worker {index}: {error}"))?;
        handles.push((index, handle));
    }
    Ok(WorkerGuards { handles })
}

/// The running workers; joins them on [`WorkerGuards::join`] or when dropped.
pub struct WorkerGuards<T> {
    /// Each worker's index and thread, in index order; emptied by `join`.
    handles: Vec<(usize, JoinHandle<T>)>,
}

impl<T> WorkerGuards<T> {
    /// Waits for every worker; returns each worker's result in index order, or `Err` with the
    /// panic message of a worker that panicked.
    pub fn join(mut self) -> Vec<Result<T, String>> {
        self.join_all()
    }

    fn join_all(&mut self) -> Vec<Result<T, String>> {
        self.handles
            .drain(..)
            .map(|(index, handle)| {
                handle.join().map_err(|payload| {
                    format!("worker {index} panicked: {}", panic_message(&*payload))
                })
            })
            .collect()
    }
}

impl<T> Drop for WorkerGuards<T> {
    /// Joins the workers if [`WorkerGuards::join`] was not called, and re-raises their panics
    /// (unless this thread is already panicking), so that no failure goes unnoticed.
    fn drop(&mut self) {
        let failures: Vec<String> = self
            .join_all()
            .into_iter()
            .filter_map(Result::err)
            .collect();
        if !failures.is_empty() && !std::thread::panicking() {
            panic!("{}", failures.join("; "));
        }
    }
}

/// The message of a panic payload (`panic!` gives a `&str` or a `String`).
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(a panic payload that is not a string)")
}
