//! Liveness of peers: how long a connection may stay silent before its peer counts as lost.
//!
//! This module owns the rule and its numbers: [`Liveness`] (the peer timeout, and the heartbeat
//! and check intervals derived from it), the parsing of a timeout given in seconds, and
//! [`Silences`], the record of when each peer was last heard. It must not touch sockets or
//! threads: the send thread writes heartbeats at [`Liveness::heartbeat_interval`], the receive
//! thread asks [`Silences::check`] whenever a read times out, and the transport's alarm asks
//! [`Silences::overdue`] which peer to blame when a connection ends.
//!
//! The rule: every send thread writes a heartbeat frame after [`Liveness::heartbeat_interval`]
//! (a quarter of the timeout) without writing anything else, so a live process is never silent
//! for long, however busy or paused its workers are (workers never write to sockets). A
//! connection on which no byte arrives for longer than the timeout means the process at the
//! other end is stopped, frozen or cut off, and it is reported like a dropped connection.
//! Receive threads wake every [`Liveness::check_interval`] (at most 1 s) to look, so a silent
//! peer is declared lost within the timeout plus that interval.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock};
use std::time::{Duration, Instant};

use super::seconds::{parse_seconds, SecondsError};

/// The peer timeout when none is given.
pub const DEFAULT_PEER_TIMEOUT: Duration = Duration::from_secs(10);

/// The shortest peer timeout accepted (shorter ones would mostly measure scheduling delays).
pub const MIN_PEER_TIMEOUT: Duration = Duration::from_millis(10);

/// The longest peer timeout accepted (a day).
pub const MAX_PEER_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest a receive thread sleeps in a read before it checks for silence.
const MAX_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// How long a peer may stay silent, and the intervals that follow from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Liveness {
    timeout: Duration,
}

impl Default for Liveness {
    fn default() -> Liveness {
        Liveness { timeout: DEFAULT_PEER_TIMEOUT }
    }
}

impl Liveness {
    /// Peers silent for longer than `timeout` are lost.
    ///
    /// # Errors
    ///
    /// A timeout outside [`MIN_PEER_TIMEOUT`] ..= [`MAX_PEER_TIMEOUT`].
    pub fn new(timeout: Duration) -> Result<Liveness, SecondsError> {
        if (MIN_PEER_TIMEOUT..=MAX_PEER_TIMEOUT).contains(&timeout) {
            Ok(Liveness { timeout })
        } else {
            Err(SecondsError::OutOfRange {
                setting: "peer timeout",
                given: timeout,
                min: MIN_PEER_TIMEOUT,
                max: MAX_PEER_TIMEOUT,
            })
        }
    }

    /// Parses a timeout written in seconds (`10`, `2.5`).
    ///
    /// # Errors
    ///
    /// Text that is not a number, or a number outside the accepted range (zero, negative,
    /// not finite, too small or too large); the message quotes the text.
    pub fn from_seconds(text: &str) -> Result<Liveness, SecondsError> {
        Liveness::new(parse_seconds(text)?)
    }

    /// How long a peer may stay silent.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How long a send thread waits without writing before it writes a heartbeat.
    pub fn heartbeat_interval(&self) -> Duration {
        self.timeout / 4
    }

    /// How long a receive thread waits in one read before it checks for silence.
    pub fn check_interval(&self) -> Duration {
        (self.timeout / 8).min(MAX_CHECK_INTERVAL)
    }
}

/// When each peer of this process was last heard from, shared by the receive threads (each
/// records its own peer) and the transport's alarm (which looks at all of them).
#[derive(Debug)]
pub(crate) struct Silences {
    liveness: Liveness,
    epoch: Instant,
    /// Per process, when a byte last arrived from it (nanoseconds since `epoch`); `None` for
    /// this process. Grows when a process joins (a write lock taken once per join; every other
    /// access reads).
    last_heard: RwLock<Vec<Option<AtomicU64>>>,
}

impl Silences {
    /// Starts counting from now for every process but `own` of `processes`.
    pub(crate) fn new(liveness: Liveness, processes: usize, own: usize) -> Silences {
        let last_heard = (0..processes).map(|process| (process != own).then(|| AtomicU64::new(0))).collect();
        Silences { liveness, epoch: Instant::now(), last_heard: RwLock::new(last_heard) }
    }

    /// Starts counting for a process that joined, as heard from now; returns its index.
    pub(crate) fn add(&self) -> usize {
        let mut last_heard = self.last_heard.write().unwrap_or_else(PoisonError::into_inner);
        last_heard.push(Some(AtomicU64::new(self.epoch.elapsed().as_nanos() as u64)));
        last_heard.len() - 1
    }

    /// Stops watching `process`, which left the cluster: it is never silent again.
    pub(crate) fn depart(&self, process: usize) {
        let mut last_heard = self.last_heard.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = last_heard.get_mut(process) {
            *slot = None;
        }
    }

    /// Records that bytes arrived from `process`.
    pub(crate) fn heard(&self, process: usize) {
        if let Some(Some(clock)) = self.clocks().get(process) {
            clock.store(self.epoch.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
    }

    /// The number of processes of the cluster.
    pub(crate) fn processes(&self) -> usize {
        self.clocks().len()
    }

    fn clocks(&self) -> std::sync::RwLockReadGuard<'_, Vec<Option<AtomicU64>>> {
        self.last_heard.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// How long `process` has been silent (zero for this process).
    fn silence(&self, process: usize) -> Duration {
        match self.clocks().get(process) {
            Some(Some(clock)) => {
                self.epoch.elapsed().saturating_sub(Duration::from_nanos(clock.load(Ordering::Relaxed)))
            }
            _ => Duration::ZERO,
        }
    }

    /// Whether `process` is still within its timeout.
    ///
    /// # Errors
    ///
    /// The reason it counts as lost: how long it has been silent, and the timeout.
    pub(crate) fn check(&self, process: usize) -> Result<(), SilentPeer> {
        let silent = self.silence(process);
        if silent <= self.liveness.timeout {
            return Ok(());
        }
        Err(SilentPeer { silent, timeout: self.liveness.timeout })
    }

    /// The process other than `ended` that has been silent the longest, if that is within one
    /// check interval of its timeout, with the reason to report it lost.
    ///
    /// When the connection to `ended` fails while another peer is that silent, `ended` most
    /// likely ended because it lost that peer (its receive thread checked a moment earlier):
    /// the silent peer is the root cause, and naming it is what the user needs. A live peer
    /// is never that silent, since it writes a heartbeat every quarter of the timeout.
    pub(crate) fn overdue(&self, ended: usize) -> Option<(usize, String)> {
        let threshold = self.liveness.timeout.saturating_sub(self.liveness.check_interval());
        let (process, silent) = (0..self.processes())
            .filter(|&process| process != ended)
            .map(|process| (process, self.silence(process)))
            .max_by_key(|&(_, silent)| silent)?;
        (silent >= threshold).then(|| {
            let reason = format!(
                "it sent nothing for {:.1} s (peer timeout {} s), and process {ended} ended \
                 meanwhile, most likely because it lost it too (is it stopped, frozen, or cut off \
                 by the network?)",
                silent.as_secs_f64(),
                self.liveness.timeout.as_secs_f64()
            );
            (process, reason)
        })
    }
}

/// A peer silent for longer than its timeout: the reason it counts as lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "it sent nothing for {:.1} s, longer than the peer timeout of {} s (is it stopped, frozen, or \
     cut off by the network?)",
    .silent.as_secs_f64(),
    .timeout.as_secs_f64()
)]
pub struct SilentPeer {
    /// How long it has been silent.
    pub silent: Duration,
    /// The peer timeout.
    pub timeout: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_seconds_and_derives_the_intervals() {
        let liveness = Liveness::from_seconds(" 2.5 ").expect("a valid timeout");
        assert_eq!(liveness.timeout(), Duration::from_millis(2500));
        assert_eq!(liveness.heartbeat_interval(), Duration::from_millis(625));
        assert_eq!(liveness.check_interval(), Duration::from_millis(312) + Duration::from_micros(500));
        let long = Liveness::from_seconds("60").expect("a valid timeout");
        assert_eq!(long.check_interval(), MAX_CHECK_INTERVAL);
        assert_eq!(Liveness::default().timeout(), DEFAULT_PEER_TIMEOUT);
    }

    #[test]
    fn rejects_what_is_not_a_usable_number_of_seconds() {
        for text in ["", "ten", "0", "-3", "NaN", "inf", "1e400"] {
            let error = Liveness::from_seconds(text).expect_err(text);
            assert!(error.to_string().contains("positive number of seconds"), "{text}: {error}");
        }
        for text in ["0.001", "1e9"] {
            let error = Liveness::from_seconds(text).expect_err(text);
            assert!(error.to_string().contains("outside the accepted range"), "{text}: {error}");
        }
    }

    #[test]
    fn silence_longer_than_the_timeout_names_both_durations() {
        // Every assertion holds however late this thread runs, except that each group right
        // after a `heard` must run within 350 ms of it (the timeout less a check interval).
        let silences = Silences::new(Liveness::new(Duration::from_millis(400)).expect("valid"), 3, 0);
        assert_eq!(silences.overdue(1), None);
        std::thread::sleep(Duration::from_millis(450));
        silences.heard(2);
        let reason = silences.check(1).expect_err("silent for longer than the timeout").to_string();
        assert!(reason.contains("sent nothing for ") && reason.contains("peer timeout of 0.4 s"), "{reason}");
        assert_eq!(silences.check(2), Ok(()));
        // Process 2 ends: process 1, silent past its timeout, is blamed; process 2 is not
        // overdue when process 1 ends.
        let (blamed, reason) = silences.overdue(2).expect("process 1 is overdue");
        assert!(blamed == 1 && reason.contains("process 2 ended meanwhile"), "{reason}");
        assert_eq!(silences.overdue(1), None);
        silences.heard(1);
        assert_eq!(silences.check(1), Ok(()));
        assert_eq!(silences.overdue(2), None);
        // A process that joins is counted from when it joined.
        assert_eq!((silences.add(), silences.processes()), (3, 4));
        assert_eq!(silences.check(3), Ok(()));
        std::thread::sleep(Duration::from_millis(450));
        assert!(silences.check(3).is_err());
    }
}
