//! The process's trace clock: nanoseconds since the Unix epoch, read from a monotonic clock.
//!
//! The wall clock is read once per process, when the clock is first used; later readings add
//! the monotonic time elapsed since. Every thread of a process (workers, network threads)
//! stamps trace events with this one clock, so their events order correctly against each
//! other, and a wall-clock step (NTP adjusting the system time) never makes time go back.
//! Offsets between processes are measured separately; this module only reads the clock.

use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

fn anchor() -> &'static (Instant, i64) {
    static ANCHOR: OnceLock<(Instant, i64)> = OnceLock::new();
    ANCHOR.get_or_init(|| {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64);
        (Instant::now(), wall)
    })
}

/// Nanoseconds since the Unix epoch on this process's trace clock.
#[inline]
pub fn now_ns() -> i64 {
    let (instant, wall) = anchor();
    wall + instant.elapsed().as_nanos() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
