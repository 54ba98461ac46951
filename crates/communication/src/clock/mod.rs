//! The process's trace clock: nanoseconds since the Unix epoch, read from a monotonic clock.
//!
//! The wall clock is read once per process, when the clock is first used; later readings add
//! the monotonic time elapsed since. Every thread of a process (workers, network threads)
//! stamps trace events with this one clock, so their events order correctly against each
//! other, and a wall-clock step (NTP adjusting the system time) never makes time go back.
//!
//! Trace events are stamped with [`stamp`], a cheaper reading of the same clock that
//! [`stamps_to_ns`] turns into these nanoseconds later, off the hot path ([`stamps`]);
//! [`now_ns`] reads the clock itself (`nanos`).
//!
//! Offsets between processes are measured by the transport
//! ([`crate::networking::clock_sync`]); this module only keeps what it measured, process-wide
//! ([`record_offset`], [`offsets_since`]), for readers such as the engine's trace, which must
//! not know about connections. A process belongs to one cluster at a time, so the log holds one
//! run's offsets after another's; a reader remembers where it started ([`offset_count`]).

mod nanos;
pub mod stamps;

use std::sync::Mutex;

pub use nanos::now_ns;
pub use stamps::{stamp, stamp_to_ns, stamps_to_ns};

/// One measurement of this process's clock against process 0's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockOffset {
    /// This process's clock minus process 0's, in nanoseconds.
    pub offset_ns: i64,
    /// The offset is within `error_ns` of the true one (half the probe's round trip).
    pub error_ns: i64,
    /// When the measurement was made, on this process's clock.
    pub measured_at_ns: i64,
}

fn offsets() -> &'static Mutex<Vec<ClockOffset>> {
    static OFFSETS: Mutex<Vec<ClockOffset>> = Mutex::new(Vec::new());
    &OFFSETS
}

/// Appends a measurement to the process's log of clock offsets.
pub fn record_offset(offset: ClockOffset) {
    offsets().lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(offset);
}

/// How many measurements the process's log holds.
pub fn offset_count() -> usize {
    offsets().lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
}

/// The measurements after the first `start`, oldest first.
pub fn offsets_since(start: usize) -> Vec<ClockOffset> {
    let log = offsets().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    log.get(start..).map_or_else(Vec::new, <[ClockOffset]>::to_vec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn never_goes_back_and_is_near_the_wall_clock() {
        let mut last = now_ns();
        for _ in 0..10_000 {
            let next = now_ns();
            assert!(next >= last);
            last = next;
        }
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64;
        assert!((wall - now_ns()).abs() < 1_000_000_000);
    }

    #[test]
    fn offsets_are_read_from_where_a_reader_started() {
        let start = offset_count();
        let sample = ClockOffset { offset_ns: -3, error_ns: 5, measured_at_ns: now_ns() };
        record_offset(sample);
        assert!(offsets_since(start).contains(&sample));
        assert!(offsets_since(usize::MAX).is_empty());
    }
}
