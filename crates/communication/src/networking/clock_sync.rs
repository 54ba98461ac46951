//! Measuring this process's clock against process 0's over the cluster's own connection.
//!
//! This module owns the clock exchange's arithmetic and timing: when a send thread writes
//! probes ([`ProbeSchedule`]: a burst of [`PROBES_PER_BURST`] probes [`PROBE_SPACING`] apart,
//! at start and then every [`ClockSync::interval`]), how a reply becomes a measurement
//! ([`measure`]), which measurement of a burst is kept (the one with the smallest error,
//! [`BurstCollector`]), and where measurements go ([`OffsetLog`]: the transport's history and
//! the process-wide log of [`crate::clock`]). It must not touch sockets or threads: the send
//! thread writes the probes, the receive threads answer probes and hand replies in.
//!
//! The exchange: the prober stamps `t1` into a probe; the answering process stamps `t2` when it
//! reads the probe and sends a reply echoing `t1` with `t2`; the prober stamps `t4` when it
//! reads the reply. Process 0's clock read `t2` at some moment between `t1` and `t4` on the
//! prober's clock, so the prober's clock minus process 0's is `(t1 + t4) / 2 - t2`, within
//! `(t4 - t1) / 2`. Time the reply waits in the answering process's send queue is inside the
//! round trip, so the bound holds however long it waits.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::seconds::{parse_seconds, SecondsError};
use super::MessageHeader;
use crate::clock::{self, ClockOffset};

/// How often a process measures its clock by default.
pub const DEFAULT_CLOCK_INTERVAL: Duration = Duration::from_secs(10);

/// The shortest accepted clock interval (a burst must end before the next begins).
pub const MIN_CLOCK_INTERVAL: Duration = Duration::from_millis(50);

/// Probes per measurement; the one with the shortest round trip wins.
pub const PROBES_PER_BURST: u64 = 8;

/// The time between two probes of a burst.
pub const PROBE_SPACING: Duration = Duration::from_millis(1);

/// A reply whose round trip is longer than this is ignored (it cannot be one of ours).
const MAX_ROUND_TRIP_NS: i64 = 3_600 * 1_000_000_000;

/// How often the processes of a cluster measure their clocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockSync {
    interval: Duration,
}

impl Default for ClockSync {
    fn default() -> ClockSync {
        ClockSync { interval: DEFAULT_CLOCK_INTERVAL }
    }
}

impl ClockSync {
    /// Measurements every `interval`.
    ///
    /// # Errors
    ///
    /// An interval shorter than [`MIN_CLOCK_INTERVAL`].
    pub fn new(interval: Duration) -> Result<ClockSync, SecondsError> {
        if interval >= MIN_CLOCK_INTERVAL {
            Ok(ClockSync { interval })
        } else {
            Err(SecondsError::TooShort {
                setting: "clock interval",
                given: interval,
                min: MIN_CLOCK_INTERVAL,
            })
        }
    }

    /// Parses an interval written in seconds (`10`, `0.5`).
    ///
    /// # Errors
    ///
    /// Text that is not a positive number of seconds, or an interval shorter than
    /// [`MIN_CLOCK_INTERVAL`]; the message quotes the text.
    pub fn from_seconds(text: &str) -> Result<ClockSync, SecondsError> {
        ClockSync::new(parse_seconds(text)?)
    }

    /// The time between the starts of two measurements.
    pub fn interval(&self) -> Duration {
        self.interval
    }
}

/// When a send thread writes its next probe.
pub(crate) struct ProbeSchedule {
    interval: Duration,
    burst_start: Instant,
    /// Probes of the current burst written so far.
    written: u64,
    next: Instant,
}

impl ProbeSchedule {
    /// The first burst is due now.
    pub(crate) fn new(sync: ClockSync) -> ProbeSchedule {
        let now = Instant::now();
        ProbeSchedule { interval: sync.interval, burst_start: now, written: 0, next: now }
    }

    /// When the next probe is due.
    pub(crate) fn due(&self) -> Instant {
        self.next
    }

    /// The probe to write, stamped now, if one is due at `now`.
    pub(crate) fn poll(&mut self, now: Instant) -> Option<MessageHeader> {
        if now < self.next {
            return None;
        }
        if self.written == PROBES_PER_BURST {
            self.burst_start = self.next;
            self.written = 0;
        }
        let probe = MessageHeader::clock_probe(clock::now_ns(), self.written, PROBES_PER_BURST);
        self.written += 1;
        self.next = if self.written == PROBES_PER_BURST {
            self.burst_start + self.interval
        } else {
            now + PROBE_SPACING
        };
        Some(probe)
    }
}

/// The measurement a clock reply read at `received_ns` (this process's clock, `t4`) gives, or
/// `None` for a reply no probe of this process can have caused (its echoed send time after
/// `received_ns`, or a round trip beyond an hour).
pub fn measure(reply: &MessageHeader, received_ns: i64) -> Option<ClockOffset> {
    let (sent, answered) = (reply.seqno as i64, reply.source as i64);
    let round_trip = received_ns.checked_sub(sent).filter(|trip| (0..=MAX_ROUND_TRIP_NS).contains(trip))?;
    let midpoint = sent + round_trip / 2;
    Some(ClockOffset {
        offset_ns: midpoint.checked_sub(answered)?,
        error_ns: round_trip - round_trip / 2,
        measured_at_ns: midpoint,
    })
}

/// Keeps the best measurement of the burst under way and logs it when the burst ends: at its
/// last probe's reply, or at the first reply of a later burst (when the last reply was lost).
#[derive(Default)]
pub(crate) struct BurstCollector {
    /// The best measurement so far and the index of the latest probe answered.
    current: Option<(ClockOffset, u64)>,
}

impl BurstCollector {
    /// Takes in a clock reply read at `received_ns`; logs a finished burst's best into `log`.
    pub(crate) fn collect(&mut self, reply: &MessageHeader, received_ns: i64, log: &OffsetLog) {
        let Some(sample) = measure(reply, received_ns) else { return };
        let index = reply.target_lower;
        let current = match self.current.take() {
            Some((best, latest)) if index <= latest => {
                log.record(best);
                sample
            }
            Some((best, _)) if best.error_ns <= sample.error_ns => best,
            _ => sample,
        };
        if index + 1 >= reply.target_upper {
            log.record(current);
        } else {
            self.current = Some((current, index));
        }
    }
}

/// The measurements of one transport, oldest first, shared by its receive threads and readers.
#[derive(Default)]
pub(crate) struct OffsetLog {
    samples: Mutex<Vec<ClockOffset>>,
}

impl OffsetLog {
    /// Keeps `sample` and publishes it process-wide.
    fn record(&self, sample: ClockOffset) {
        self.samples.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(sample);
        clock::record_offset(sample);
    }

    /// Every measurement so far, oldest first.
    pub(crate) fn history(&self) -> Vec<ClockOffset> {
        self.samples.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(sent: i64, answered: i64, index: u64) -> MessageHeader {
        MessageHeader::clock_reply(&MessageHeader::clock_probe(sent, index, PROBES_PER_BURST), answered)
    }

    #[test]
    fn the_offset_is_the_midpoint_minus_the_answer_within_half_the_round_trip() {
        // Process 0's clock is 1000 ns behind: it read 1500 at our 2500, the midpoint of 2000..3000.
        let sample = measure(&reply(2_000, 1_500, 0), 3_000).expect("a valid reply");
        assert_eq!(sample, ClockOffset { offset_ns: 1_000, error_ns: 500, measured_at_ns: 2_500 });
        let odd = measure(&reply(2_000, 2_000, 0), 2_001).expect("a valid reply");
        assert!(odd.offset_ns.abs() <= odd.error_ns && odd.error_ns == 1);
    }

    #[test]
    fn replies_no_probe_caused_are_ignored() {
        assert_eq!(measure(&reply(3_000, 0, 0), 2_000), None);
        assert_eq!(measure(&reply(0, 0, 0), MAX_ROUND_TRIP_NS + 1), None);
        assert_eq!(measure(&reply(-1, 0, 0), i64::MAX), None);
        assert_eq!(measure(&reply(10, i64::MIN, 0), 20), None);
    }

    #[test]
    fn a_burst_logs_its_smallest_error_once_even_when_its_last_reply_is_lost() {
        let log = OffsetLog::default();
        let mut collector = BurstCollector::default();
        for (index, trip) in [(0, 400), (1, 100), (2, 300)] {
            collector.collect(&reply(1_000, 1_000, index), 1_000 + trip, &log);
        }
        assert!(log.history().is_empty(), "the burst is not over");
        // The next burst begins: the first burst's best (round trip 100) is logged.
        collector.collect(&reply(9_000, 9_000, 0), 9_050, &log);
        assert_eq!(log.history().iter().map(|s| s.error_ns).collect::<Vec<_>>(), vec![50]);
        for index in 1..PROBES_PER_BURST {
            collector.collect(&reply(9_000, 9_000, index), 9_200, &log);
        }
        let errors: Vec<i64> = log.history().iter().map(|s| s.error_ns).collect();
        assert_eq!(errors, vec![50, 25], "the last reply ends the burst");
    }

    #[test]
    fn probes_come_in_bursts_a_spacing_apart_and_bursts_an_interval_apart() {
        let sync = ClockSync::new(Duration::from_millis(100)).expect("a valid interval");
        let mut schedule = ProbeSchedule::new(sync);
        let start = schedule.due();
        let mut indices = Vec::new();
        for _ in 0..PROBES_PER_BURST {
            let due = schedule.due();
            assert_eq!(schedule.poll(due - Duration::from_nanos(1)).map(|p| p.target_lower), None);
            indices.push(schedule.poll(due).expect("a probe is due").target_lower);
        }
        assert_eq!(indices, (0..PROBES_PER_BURST).collect::<Vec<_>>());
        assert_eq!(schedule.due(), start + Duration::from_millis(100));
        let next = schedule.poll(schedule.due()).expect("the next burst starts");
        assert!(next.is_clock_probe() && next.target_lower == 0);
        assert!(ClockSync::new(Duration::from_millis(1)).is_err());
    }

    #[test]
    fn intervals_parse_from_seconds_and_bad_ones_are_clear_errors() {
        assert_eq!(
            ClockSync::from_seconds(" 0.25 ").map(|sync| sync.interval()),
            Ok(Duration::from_millis(250))
        );
        for (text, expected) in
            [("soon", "found \"soon\""), ("-1", "positive"), ("NaN", "positive"), ("0.01", "minimum")]
        {
            let error = ClockSync::from_seconds(text).expect_err(text);
            assert!(error.to_string().contains(expected), "{text}: {error}");
        }
    }
}
