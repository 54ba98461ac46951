//! How much memory the messages a process received, and its workers have not taken yet, may
//! hold, and the spill files that take the rest.
//!
//! This module owns [`ReceiveBudget`] (the limit, the spill directory and the limit on each
//! worker's messages for channels it has not allocated yet, from [`crate::initialize`]'s
//! `--receive-budget` and `--early-bytes`, else `TIMELY_RECEIVE_BUDGET` and
//! `TIMELY_EARLY_BYTES`, and `TIMELY_SPILL_DIR`), the process-wide
//! count of the bytes its receive buffers hold ([`BudgetState`]: every receive thread
//! publishes what its buffers hold, messages not yet taken keep their buffer alive), and each
//! receive thread's [`Spiller`], which places a message: in its receive buffer while the
//! process's buffers hold no more than the budget, else appended to a spill file of the
//! connection (the buffer can then be reused). It must not read sockets nor decide what a
//! message means.
//!
//! What is counted is whole buffers, not payloads: a message kept in memory keeps its buffer
//! (1 MiB, or the message's size rounded up to a power of two) alive until its worker takes
//! it, and a thread's buffers are what the process really holds. Memory for received data
//! thus stays under the budget plus, per connection, the buffer being filled (at least the
//! message arriving) and what a worker is decoding.
//!
//! Why spilling, and not stopping the reads: a receive thread that stops reading makes TCP
//! stop the sender, whose send queue fills, whose workers then block on a send; two processes
//! that send to each other (an exchange in a loop) would then wait for each other forever, and
//! progress messages, which share the connection, would wait behind data. A receive thread
//! that spills keeps reading, so progress and liveness traffic are never held back, and a
//! cycle cannot deadlock on memory; what it costs is disk, and a copy out and back of what is
//! spilled.
//!
//! Spill files are created unlinked in the spill directory (nothing is left behind after a
//! crash) and filled up to [`SEGMENT_BYTES`]; the next message opens a new one. A file's space
//! is freed when the receive thread has moved on from it and the last message in it was taken.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use timely_bytes::Bytes;

use super::payload::Payload;
use super::spill_file::{SpillFile, SpilledRegion};

/// The default limit of a process's received bytes in memory (256 MiB).
pub const DEFAULT_RECEIVE_BUDGET_BYTES: usize = 256 << 20;

/// The default limit of the bytes one worker keeps for channels it has not allocated yet
/// (128 MiB; see [`ReceiveBudget::early_bytes`]).
pub const DEFAULT_EARLY_BYTES: usize = 128 << 20;

/// A spill file takes messages until it holds this many bytes (64 MiB).
pub const SEGMENT_BYTES: u64 = 64 << 20;

/// The limit on what a process's received, not yet taken messages hold in memory, and where
/// the messages beyond it wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiveBudget {
    /// The most payload bytes held in memory by messages not yet taken by a worker (0 spills
    /// every message).
    pub bytes: usize,
    /// The directory of the spill files.
    pub spill_dir: PathBuf,
    /// The most bytes (payloads plus a header's size per message) one worker keeps for
    /// channels it has not allocated yet ([`crate::allocator::inboxes`]); a message beyond it
    /// ends the run naming the process whose messages take up most of them. These are not
    /// spilled: a worker allocates a dataflow's channels when it builds the dataflow, and every
    /// worker builds the same dataflows in the same order, so what waits is only what faster
    /// workers sent while this one was still building; much more is taken for a peer sending
    /// on channels that no dataflow allocates.
    pub early_bytes: usize,
}

/// The environment variable holding the receive budget: a byte count, optionally with a
/// suffix `K`, `M` or `G` (powers of 1024), e.g. `512M`; `0` spills every message.
pub const RECEIVE_BUDGET_VARIABLE: &str = "TIMELY_RECEIVE_BUDGET";
/// The environment variable holding the spill directory (default: the system's temporary
/// directory).
pub const SPILL_DIR_VARIABLE: &str = "TIMELY_SPILL_DIR";
/// The environment variable holding [`ReceiveBudget::early_bytes`], a byte count in the syntax
/// of [`RECEIVE_BUDGET_VARIABLE`] (default [`DEFAULT_EARLY_BYTES`]).
pub const EARLY_BYTES_VARIABLE: &str = "TIMELY_EARLY_BYTES";

/// A value of a receive budget's setting that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    /// A budget (`--receive-budget`, `--early-bytes` or their variables) that is not a byte
    /// count; `setting` is the option as written or the variable.
    #[error("{setting}: {error}")]
    NotAByteCount {
        /// The option as written (`--early-bytes`) or the environment variable.
        setting: String,
        /// What is wrong with the value.
        error: ByteCountError,
    },
    /// `TIMELY_SPILL_DIR` is not a directory.
    #[error("{SPILL_DIR_VARIABLE}: {0} is not a directory")]
    NotADirectory(PathBuf),
}

/// A text that is not a byte count ([`parse_bytes`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ByteCountError {
    /// Not digits with an optional `K`, `M` or `G`.
    #[error("expected a byte count such as 1048576, 64K, 512M or 2G, found {0:?}")]
    Malformed(String),
    /// More than a `usize` holds.
    #[error("{0:?} is more bytes than this machine can count")]
    TooLarge(String),
}

impl ReceiveBudget {
    /// The budget the environment says (`TIMELY_RECEIVE_BUDGET`, `TIMELY_SPILL_DIR`,
    /// `TIMELY_EARLY_BYTES`), the default where unset.
    ///
    /// # Errors
    ///
    /// As [`ReceiveBudget::from_options`].
    pub fn from_environment() -> Result<ReceiveBudget, BudgetError> {
        ReceiveBudget::from_options(None, None)
    }

    /// The budget the command line's `--receive-budget` and `--early-bytes` say (each given as
    /// `(option as written, value)`), else their environment variables
    /// (`TIMELY_RECEIVE_BUDGET`, `TIMELY_EARLY_BYTES`), else the default; the spill directory
    /// from `TIMELY_SPILL_DIR`.
    ///
    /// # Errors
    ///
    /// A budget or early limit that is not a byte count, naming the option or variable and
    /// the value, or a spill directory that is not a directory.
    pub fn from_options(
        receive_budget: Option<(&str, &str)>,
        early_bytes: Option<(&str, &str)>,
    ) -> Result<ReceiveBudget, BudgetError> {
        let mut budget = ReceiveBudget::default();
        if let Some(bytes) = setting(receive_budget, RECEIVE_BUDGET_VARIABLE)? {
            budget.bytes = bytes;
        }
        if let Some(bytes) = setting(early_bytes, EARLY_BYTES_VARIABLE)? {
            budget.early_bytes = bytes;
        }
        if let Some(dir) = std::env::var_os(SPILL_DIR_VARIABLE).filter(|dir| !dir.is_empty()) {
            budget.spill_dir = PathBuf::from(dir);
            if !budget.spill_dir.is_dir() {
                return Err(BudgetError::NotADirectory(budget.spill_dir));
            }
        }
        Ok(budget)
    }
}

/// The byte count of an option given as `(option as written, value)`, else of the
/// environment variable `variable`, else `None`.
fn setting(given: Option<(&str, &str)>, variable: &str) -> Result<Option<usize>, BudgetError> {
    let (setting, value) = match given {
        Some((option, value)) => (format!("option {option}"), value.to_owned()),
        None => match std::env::var(variable) {
            Ok(value) => (variable.to_owned(), value),
            Err(_) => return Ok(None),
        },
    };
    parse_bytes(&value).map(Some).map_err(|error| BudgetError::NotAByteCount { setting, error })
}

/// A byte count such as `1048576`, `64K`, `512M` or `2G` (powers of 1024).
///
/// # Errors
///
/// Anything else, or a count beyond `usize`.
pub fn parse_bytes(text: &str) -> Result<usize, ByteCountError> {
    let text = text.trim();
    let (digits, shift) = match text.char_indices().last() {
        Some((at, 'k' | 'K')) => (&text[..at], 10),
        Some((at, 'm' | 'M')) => (&text[..at], 20),
        Some((at, 'g' | 'G')) => (&text[..at], 30),
        _ => (text, 0),
    };
    let count: usize = digits.parse().map_err(|_| ByteCountError::Malformed(text.to_owned()))?;
    count.checked_mul(1 << shift).ok_or_else(|| ByteCountError::TooLarge(text.to_owned()))
}

impl Default for ReceiveBudget {
    /// [`DEFAULT_RECEIVE_BUDGET_BYTES`], spilling to the system's temporary directory, and
    /// [`DEFAULT_EARLY_BYTES`].
    fn default() -> ReceiveBudget {
        ReceiveBudget {
            bytes: DEFAULT_RECEIVE_BUDGET_BYTES,
            spill_dir: std::env::temp_dir(),
            early_bytes: DEFAULT_EARLY_BYTES,
        }
    }
}

/// What a process's receive budget holds and has spilled, from
/// [`super::Transport::budget_stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BudgetStats {
    /// The budget's limit in bytes.
    pub limit: usize,
    /// Bytes of the receive buffers now.
    pub held_bytes: usize,
    /// The most bytes the receive buffers held at once.
    pub peak_held_bytes: usize,
    /// Messages written to spill files.
    pub spilled_messages: u64,
    /// Their payload bytes.
    pub spilled_bytes: u64,
    /// Messages kept in memory beyond the limit because a spill file could not be written
    /// (a full or missing spill directory; reported once per connection in the log).
    pub spill_failures: u64,
}

/// The budget of one process, shared by its receive threads.
#[derive(Debug)]
pub struct BudgetState {
    budget: ReceiveBudget,
    held: AtomicUsize,
    peak: AtomicUsize,
    spilled_messages: AtomicU64,
    spilled_bytes: AtomicU64,
    spill_failures: AtomicU64,
}

impl BudgetState {
    /// A budget that holds nothing yet.
    pub fn new(budget: ReceiveBudget) -> Arc<BudgetState> {
        Arc::new(BudgetState {
            budget,
            held: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            spilled_messages: AtomicU64::new(0),
            spilled_bytes: AtomicU64::new(0),
            spill_failures: AtomicU64::new(0),
        })
    }

    /// What the budget holds and has spilled.
    pub fn stats(&self) -> BudgetStats {
        BudgetStats {
            limit: self.budget.bytes,
            held_bytes: self.held.load(Ordering::Relaxed),
            peak_held_bytes: self.peak.load(Ordering::Relaxed),
            spilled_messages: self.spilled_messages.load(Ordering::Relaxed),
            spilled_bytes: self.spilled_bytes.load(Ordering::Relaxed),
            spill_failures: self.spill_failures.load(Ordering::Relaxed),
        }
    }

    /// Whether the receive buffers hold more than the budget.
    fn over(&self) -> bool {
        self.held.load(Ordering::Relaxed) > self.budget.bytes
    }
}

/// Places the messages of one connection: in its receive buffer while the process's buffers
/// hold no more than the budget, else in the connection's current spill file.
pub struct Spiller {
    state: Arc<BudgetState>,
    /// What this connection's buffers hold, as last published.
    published: usize,
    /// The file being filled, and how much it holds.
    current: Option<(Arc<SpillFile>, u64)>,
    /// Whether a failed spill was already logged.
    warned: bool,
}

impl Spiller {
    /// A spiller against `state`, with no file yet.
    pub fn new(state: Arc<BudgetState>) -> Spiller {
        Spiller { state, published: 0, current: None, warned: false }
    }

    /// Publishes that this connection's receive buffers hold `bytes`; returns whether the
    /// process's buffers hold more than the budget (the caller should then free the buffers
    /// it keeps for reuse, and publish again).
    pub fn buffers_hold(&mut self, bytes: usize) -> bool {
        if bytes >= self.published {
            let after =
                self.state.held.fetch_add(bytes - self.published, Ordering::AcqRel) + bytes - self.published;
            self.state.peak.fetch_max(after, Ordering::Relaxed);
        } else {
            self.state.held.fetch_sub(self.published - bytes, Ordering::AcqRel);
        }
        self.published = bytes;
        self.state.over()
    }

    /// `bytes` as a payload: as it is while the process's buffers hold no more than the
    /// budget, else in a spill file; as it is, beyond the budget, if the spill file cannot be
    /// written (never lost).
    pub fn place(&mut self, bytes: Bytes) -> Payload {
        if !self.state.over() {
            return Payload::Owned(bytes);
        }
        match self.spill(&bytes) {
            Ok(region) => {
                self.state.spilled_messages.fetch_add(1, Ordering::Relaxed);
                self.state.spilled_bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                Payload::Spilled(Arc::new(region))
            }
            Err(error) => {
                self.state.spill_failures.fetch_add(1, Ordering::Relaxed);
                if !std::mem::replace(&mut self.warned, true) {
                    log::warn!(
                        "cannot spill received messages to {}: {error}; keeping them in memory beyond \
                         the receive budget of {} bytes",
                        self.state.budget.spill_dir.display(),
                        self.state.budget.bytes
                    );
                }
                Payload::Owned(bytes)
            }
        }
    }

    /// Appends `bytes` to the current spill file, opening a new one when there is none or it
    /// is full.
    fn spill(&mut self, bytes: &[u8]) -> std::io::Result<SpilledRegion> {
        let (file, offset) = match self.current.take() {
            Some((file, used)) if used < SEGMENT_BYTES => (file, used),
            _ => (SpillFile::create_in(&self.state.budget.spill_dir)?, 0),
        };
        let region = SpillFile::write_region(&file, bytes, offset)?;
        self.current = Some((file, offset + bytes.len() as u64));
        Ok(region)
    }
}

impl Drop for Spiller {
    /// The connection's buffers are gone with its receive thread.
    fn drop(&mut self) {
        self.buffers_hold(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(bytes: usize) -> Arc<BudgetState> {
        BudgetState::new(ReceiveBudget { bytes, ..ReceiveBudget::default() })
    }

    #[test]
    fn byte_counts_take_binary_suffixes_and_refuse_the_rest() {
        assert_eq!(parse_bytes("0"), Ok(0));
        assert_eq!(parse_bytes(" 64K "), Ok(64 << 10));
        assert_eq!(parse_bytes("512m"), Ok(512 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        for bad in ["", "M", "1.5G", "-1", "12T", "99999999999999999999G"] {
            assert!(parse_bytes(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn messages_spill_while_the_buffers_hold_more_than_the_budget() {
        let state = state(100);
        let mut spiller = Spiller::new(Arc::clone(&state));
        assert!(!spiller.buffers_hold(100), "at the budget is not over it");
        let first = spiller.place(Bytes::from(vec![1u8; 60]));
        assert!(matches!(first, Payload::Owned(_)), "{first:?}");
        let mut other = Spiller::new(Arc::clone(&state));
        assert!(other.buffers_hold(1), "two connections' buffers add up");
        let second = spiller.place(Bytes::from(vec![2u8; 60]));
        assert!(matches!(second, Payload::Spilled(_)), "{second:?}");
        let stats = state.stats();
        assert_eq!(
            (stats.held_bytes, stats.peak_held_bytes, stats.spilled_messages, stats.spilled_bytes),
            (101, 101, 1, 60)
        );
        let mut scratch = Vec::new();
        assert_eq!(second.read(&mut scratch).expect("read back"), &[2u8; 60][..]);
        drop(other);
        assert_eq!(state.stats().held_bytes, 100, "a connection's buffers go with it");
        assert!(matches!(spiller.place(Bytes::from(vec![3u8; 60])), Payload::Owned(_)), "room again");
        assert!(!spiller.buffers_hold(10));
        assert_eq!(state.stats().held_bytes, 10, "freed buffers are published");
    }

    #[test]
    fn spilled_messages_read_back_in_any_order_across_files() {
        let mut spiller = Spiller::new(state(0));
        spiller.buffers_hold(1);
        let big = (SEGMENT_BYTES as usize) / 2 + 1;
        let payloads: Vec<Payload> = (0..5u8).map(|i| spiller.place(Bytes::from(vec![i; big]))).collect();
        let mut scratch = Vec::new();
        for (i, payload) in payloads.iter().enumerate().rev() {
            let bytes = payload.read(&mut scratch).expect("read back");
            assert_eq!(bytes.len(), big);
            assert!(bytes.iter().all(|&b| usize::from(b) == i), "payload {i} came back changed");
        }
    }

    #[test]
    fn a_spill_directory_that_cannot_be_written_keeps_messages_in_memory() {
        let state = BudgetState::new(ReceiveBudget {
            bytes: 0,
            spill_dir: PathBuf::from("/nonexistent/spill"),
            ..ReceiveBudget::default()
        });
        let mut spiller = Spiller::new(Arc::clone(&state));
        spiller.buffers_hold(1);
        let payload = spiller.place(Bytes::from(vec![7u8; 10]));
        assert_eq!(payload.in_memory(), Some(&[7u8; 10][..]));
        assert_eq!(state.stats().spill_failures, 1);
    }
}
