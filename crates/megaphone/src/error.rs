//! The errors of this crate: invalid bin counts, commands and migration plans.
//!
//! This module owns only the error type and its messages; it decides nothing.

use std::fmt;

/// Something the caller asked for that cannot be done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MegaphoneError {
    /// A bin count that is zero, not a power of two, or above the largest allowed.
    BinCount {
        /// The count asked for.
        count: usize,
        /// The largest count allowed.
        max: usize,
    },
    /// A command or table names bin `bin`, but there are only `bins`.
    NoSuchBin {
        /// The bin named.
        bin: usize,
        /// The number of bins.
        bins: usize,
    },
    /// A command or table names worker `worker`, but there are only `peers`.
    NoSuchWorker {
        /// The worker named.
        worker: usize,
        /// The number of workers.
        peers: usize,
    },
    /// Two commands at one time move one bin to different workers.
    ConflictingMoves {
        /// The commands' time.
        time: u64,
        /// The bin.
        bin: usize,
        /// The two workers it was sent to.
        workers: (usize, usize),
    },
    /// Two routing tables of different sizes were compared.
    TableSizes {
        /// The size of the current table.
        current: usize,
        /// The size of the target table.
        target: usize,
    },
    /// A batched migration that allows no move per worker and step.
    EmptyBatches,
    /// No workers to spread bins over.
    NoWorkers,
}

impl fmt::Display for MegaphoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MegaphoneError::BinCount { count, max } => {
                write!(f, "{count} bins: the number of bins must be a power of two from 1 to {max}")
            }
            MegaphoneError::NoSuchBin { bin, bins } => {
                write!(f, "bin {bin} does not exist: there are {bins} bins")
            }
            MegaphoneError::NoSuchWorker { worker, peers } => {
                write!(f, "worker {worker} does not exist: there are {peers} workers")
            }
            MegaphoneError::ConflictingMoves { time, bin, workers: (a, b) } => {
                write!(f, "two commands at time {time} move bin {bin} to different workers ({a} and {b})")
            }
            MegaphoneError::TableSizes { current, target } => {
                write!(f, "the target table has {target} bins but the current one has {current}")
            }
            MegaphoneError::EmptyBatches => {
                write!(f, "a batched migration must allow at least one move per worker and step")
            }
            MegaphoneError::NoWorkers => write!(f, "there are no workers to own the bins"),
        }
    }
}

impl std::error::Error for MegaphoneError {}
