//! Liveness of peers: how long a connection may stay silent before its peer counts as lost.
//!
//! This module owns the rule and its numbers: [`Liveness`] (the peer timeout, and the heartbeat
//! and check intervals derived from it), the parsing of a timeout given in seconds, and
//! [`Silence`], the receive thread's record of when its peer was last heard. It must not touch
//! sockets or threads: the send thread writes heartbeats at [`Liveness::heartbeat_interval`]
//! and the receive thread asks [`Silence::check`] whenever a read times out.
//!
//! The rule: every send thread writes a heartbeat frame after [`Liveness::heartbeat_interval`]
//! (a quarter of the timeout) without writing anything else, so a live process is never silent
//! for long, however busy or paused its workers are (workers never write to sockets). A
//! connection on which no byte arrives for longer than the timeout means the process at the
//! other end is stopped, frozen or cut off, and it is reported like a dropped connection.
//! Receive threads wake every [`Liveness::check_interval`] (at most 1 s) to look, so a silent
//! peer is declared lost within the timeout plus that interval.

use std::time::{Duration, Instant};

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
    pub fn new(timeout: Duration) -> Result<Liveness, String> {
        if (MIN_PEER_TIMEOUT..=MAX_PEER_TIMEOUT).contains(&timeout) {
            Ok(Liveness { timeout })
        } else {
            Err(format!(
                "a peer timeout of {} s is outside the accepted range, {} to {} s",
                timeout.as_secs_f64(),
                MIN_PEER_TIMEOUT.as_secs_f64(),
                MAX_PEER_TIMEOUT.as_secs_f64()
            ))
        }
    }

    /// Parses a timeout written in seconds (`10`, `2.5`).
    ///
    /// # Errors
    ///
    /// Text that is not a number, or a number outside the accepted range (zero, negative,
    /// not finite, too small or too large); the message quotes the text.
    pub fn from_seconds(text: &str) -> Result<Liveness, String> {
        let seconds = text
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|seconds| seconds.is_finite() && *seconds > 0.0)
            .ok_or_else(|| format!("expected a positive number of seconds, found {text:?}"))?;
        let timeout = Duration::try_from_secs_f64(seconds).map_err(|error| format!("{text:?}: {error}"))?;
        Liveness::new(timeout)
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

/// When the peer of one connection was last heard from.
#[derive(Debug)]
pub(crate) struct Silence {
    liveness: Liveness,
    last_heard: Instant,
}

impl Silence {
    /// Starts counting from now.
    pub(crate) fn new(liveness: Liveness) -> Silence {
        Silence { liveness, last_heard: Instant::now() }
    }

    /// Records that bytes arrived.
    pub(crate) fn heard(&mut self) {
        self.last_heard = Instant::now();
    }

    /// Whether the peer is still within its timeout.
    ///
    /// # Errors
    ///
    /// The reason the peer counts as lost: how long it has been silent, and the timeout.
    pub(crate) fn check(&self) -> Result<(), String> {
        let silent = self.last_heard.elapsed();
        if silent <= self.liveness.timeout {
            return Ok(());
        }
        Err(format!(
            "it sent nothing for {:.1} s, longer than the peer timeout of {} s (is it stopped, \
             frozen, or cut off by the network?)",
            silent.as_secs_f64(),
            self.liveness.timeout.as_secs_f64()
        ))
    }
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
            assert!(error.contains("positive number of seconds"), "{text}: {error}");
        }
        for text in ["0.001", "1e9"] {
            let error = Liveness::from_seconds(text).expect_err(text);
            assert!(error.contains("outside the accepted range"), "{text}: {error}");
        }
    }

    #[test]
    fn silence_longer_than_the_timeout_names_both_durations() {
        let liveness = Liveness::new(Duration::from_millis(20)).expect("a valid timeout");
        let mut silence = Silence::new(liveness);
        assert_eq!(silence.check(), Ok(()));
        std::thread::sleep(Duration::from_millis(30));
        let reason = silence.check().expect_err("silent for longer than the timeout");
        assert!(
            reason.contains("sent nothing for ") && reason.contains("peer timeout of 0.02 s"),
            "{reason}"
        );
        silence.heard();
        assert_eq!(silence.check(), Ok(()));
    }
}
