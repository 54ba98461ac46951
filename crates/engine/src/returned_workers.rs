//! The workers of one process that are done with their programs.
//!
//! A worker whose program returned and whose dataflows completed still belongs to a process
//! that runs: if that process is asked to leave later, every worker of it takes part in the
//! leave (each seals the others' departure). So a finished worker does not end its thread at
//! once: it waits here, handling membership messages as they come, until every worker of its
//! process is done ([`Worker::linger`](crate::Worker::linger)). A worker whose program failed
//! counts as done too: the run is ending then, and nobody waits for it.

use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{Thread, ThreadId};

/// The workers of one process that are done, shared by its worker threads.
#[derive(Debug)]
pub struct ReturnedWorkers {
    /// How many workers the process runs.
    workers: usize,
    /// The threads of the workers done so far.
    done: Mutex<Vec<Thread>>,
}

impl ReturnedWorkers {
    /// For a process of `workers` worker threads.
    pub fn new(workers: usize) -> Arc<ReturnedWorkers> {
        Arc::new(ReturnedWorkers { workers, done: Mutex::new(Vec::new()) })
    }

    /// Notes that the calling thread's worker is done (again: no change); once every worker
    /// is, wakes those waiting.
    pub fn arrive(&self) {
        let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        let me: ThreadId = std::thread::current().id();
        if done.iter().any(|thread| thread.id() == me) {
            return;
        }
        done.push(std::thread::current());
        if done.len() >= self.workers {
            done.iter().for_each(Thread::unpark);
        }
    }

    /// True once every worker of the process is done.
    pub fn all_done(&self) -> bool {
        self.done.lock().unwrap_or_else(PoisonError::into_inner).len() >= self.workers
    }
}
