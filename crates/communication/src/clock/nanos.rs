//! Reading the process's trace clock in nanoseconds since the Unix epoch: the wall clock
//! read once, plus the monotonic time elapsed since. This module must not know about stamps
//! or offsets between processes.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The monotonic clock and the wall clock, read once, together.
fn anchor() -> &'static (i64, i64) {
    static ANCHOR: OnceLock<(i64, i64)> = OnceLock::new();
    ANCHOR.get_or_init(|| {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64);
        (monotonic_ns(), wall)
    })
}

/// Nanoseconds since the Unix epoch on this process's trace clock.
#[inline]
pub fn now_ns() -> i64 {
    let (monotonic, wall) = anchor();
    wall + (monotonic_ns() - monotonic)
}

/// The monotonic clock (the one `std::time::Instant` reads), in nanoseconds since an
/// unspecified start. Read directly: through `Instant::elapsed` a reading costs about three
/// times the instructions (a `Duration` and 128-bit nanoseconds), and workers read it for
/// every trace event.
#[cfg(unix)]
#[inline]
// `time_t` and `c_long` are 32 bits wide on some targets: the conversions widen them there.
#[allow(clippy::useless_conversion)]
fn monotonic_ns() -> i64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec for the call to write; CLOCK_MONOTONIC exists on
    // every unix Rust supports, so the call does not fail (std's `Instant` relies on it too).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    i64::from(now.tv_sec) * 1_000_000_000 + i64::from(now.tv_nsec)
}

#[cfg(not(unix))]
fn monotonic_ns() -> i64 {
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_nanos() as i64
}
