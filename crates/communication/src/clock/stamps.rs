//! Stamps: readings of the trace clock cheap enough to take for every trace event, and their
//! conversion to nanoseconds since the Unix epoch.
//!
//! On x86-64, when the kernel's clocksource is `tsc` (the kernel checked that the processor's
//! time-stamp counter ticks at a constant rate and agrees across cores), a stamp is the
//! counter itself, read with one instruction: about 10 ns on this project's machines, against
//! 25 ns for the monotonic clock behind [`now_ns`] (`cargo bench -p timely-benches
//! --bench trace_clock`). Elsewhere a stamp is [`now_ns`] itself and converting it
//! changes nothing.
//!
//! Counter stamps become nanoseconds through one process-wide map, piecewise linear between
//! knots that pair a counter reading with a [`now_ns`] reading taken together. A
//! conversion first adds a knot for "now", so that stamps taken before it are interpolated
//! between two measured knots; once the knots span [`BASELINE_NS`], at most one knot is added
//! per [`KNOT_SPACING_NS`], and a stamp past the last knot is extrapolated at the rate
//! measured over at least [`BASELINE_NS`] (a rate measured over a short span would carry the
//! knots' reading errors far: two knots 20 us apart, one read 0.2 us late, are 1 % off in rate).
//! The map never changes below the largest stamp it has converted (an extrapolated point
//! becomes a knot before a later one is added), so every conversion of a stamp gives the same
//! nanoseconds, and stamps in order stay in order.
//! Knots older than [`RECENT_KNOTS`] knots are thinned to one in [`THINNED_EVERY`] (their
//! stamps are converted long after they were taken, if ever; the rate between them is
//! constant to well within a microsecond per second). This module must not know what is
//! stamped, nor where stamps go.

use std::sync::{Mutex, OnceLock};

use super::nanos::now_ns;

/// The least time between two knots of the map, once its knots span [`BASELINE_NS`].
pub const KNOT_SPACING_NS: i64 = 1_000_000;
/// The least span over which the rate used past the last knot is measured.
pub const BASELINE_NS: i64 = 100_000_000;
/// How many of the newest knots are kept as measured.
const RECENT_KNOTS: usize = 8192;
/// Older knots are thinned to one in this many.
const THINNED_EVERY: usize = 16;
/// A knot's two counter readings may be at most this far apart (else the thread was
/// interrupted between them, and the pair is read again, up to [`PAIR_ATTEMPTS`] times).
const PAIR_SPREAD_TICKS: i64 = 2_000;
/// Readings of a pair before a conversion goes on without a new knot.
const PAIR_ATTEMPTS: usize = 8;

/// The process's map from counter stamps to nanoseconds (`None`: stamps are nanoseconds).
fn counter_map() -> &'static Option<Mutex<StampMap>> {
    static MAP: OnceLock<Option<Mutex<StampMap>>> = OnceLock::new();
    MAP.get_or_init(|| counter_is_usable().then(|| Mutex::new(StampMap::new(closest_pair()))))
}

/// Whether the time-stamp counter can stamp trace events here.
fn counter_is_usable() -> bool {
    cfg!(target_arch = "x86_64")
        && std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|source| source.trim() == "tsc")
}

/// A reading of the trace clock, for an event: a time-stamp counter value or nanoseconds
/// (see the module docs). Convert stamps with [`stamps_to_ns`] or [`stamp_to_ns`].
#[inline]
pub fn stamp() -> i64 {
    match counter_map() {
        Some(_) => counter(),
        None => now_ns(),
    }
}

/// Converts `stamps` (taken by [`stamp`] in this process) to nanoseconds since the Unix epoch,
/// in place.
pub fn stamps_to_ns(stamps: &mut [i64]) {
    if let Some(map) = counter_map() {
        let mut map = map.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(now) = counter_and_now() {
            map.refresh(now);
        }
        map.convert(stamps);
    }
}

/// `stamp` (taken by [`stamp`] in this process) in nanoseconds since the Unix epoch.
pub fn stamp_to_ns(stamp: i64) -> i64 {
    let mut stamps = [stamp];
    stamps_to_ns(&mut stamps);
    stamps[0]
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn counter() -> i64 {
    // SAFETY: every x86-64 processor has `rdtsc`, and reading it has no preconditions.
    unsafe { core::arch::x86_64::_rdtsc() as i64 }
}

#[cfg(not(target_arch = "x86_64"))]
fn counter() -> i64 {
    unreachable!("the time-stamp counter is used only on x86-64")
}

/// A counter reading and a [`now_ns`] reading taken together: the nanoseconds between
/// two counter readings at most [`PAIR_SPREAD_TICKS`] apart, paired with their midpoint; none
/// if [`PAIR_ATTEMPTS`] attempts were all interrupted (a loaded machine).
fn counter_and_now() -> Option<(i64, i64)> {
    (0..PAIR_ATTEMPTS)
        .map(|_| read_pair())
        .find(|(spread, _)| *spread <= PAIR_SPREAD_TICKS)
        .map(|(_, pair)| pair)
}

/// The closest of [`PAIR_ATTEMPTS`] pairs of readings (for the first knot, which cannot wait).
fn closest_pair() -> (i64, i64) {
    (0..PAIR_ATTEMPTS).map(|_| read_pair()).min().expect("at least one attempt").1
}

/// Two counter readings around a [`now_ns`] reading: their spread, and their midpoint
/// paired with the nanoseconds.
fn read_pair() -> (i64, (i64, i64)) {
    let before = counter();
    let now = now_ns();
    let after = counter();
    (after - before, (before + (after - before) / 2, now))
}

/// A piecewise linear map from stamps to nanoseconds (see the module docs).
#[derive(Debug)]
struct StampMap {
    /// `(stamp, ns)`, both strictly increasing.
    knots: Vec<(i64, i64)>,
    /// The largest stamp converted: the map does not change up to it.
    converted: i64,
}

impl StampMap {
    fn new(first: (i64, i64)) -> Self {
        StampMap { knots: vec![first], converted: i64::MIN }
    }

    /// Adds the knot `now` (a pair of readings), unless the knots span [`BASELINE_NS`] and
    /// the last is less than [`KNOT_SPACING_NS`] older; first fixes where the map stood at
    /// the largest stamp converted, if that is past the last knot.
    fn refresh(&mut self, now: (i64, i64)) {
        let last = *self.knots.last().expect("the map has a knot");
        let spans_baseline = last.1 - self.knots[0].1 >= BASELINE_NS;
        let too_soon = spans_baseline && now.1 - last.1 < KNOT_SPACING_NS;
        if too_soon || now.0 <= last.0 || now.1 <= last.1 {
            return;
        }
        if self.converted > last.0 {
            let reached = (self.converted, self.segment(self.knots.len() - 1).at(self.converted));
            if reached.0 >= now.0 || reached.1 >= now.1 {
                return;
            }
            self.knots.push(reached);
        }
        self.knots.push(now);
        if self.knots.len() > RECENT_KNOTS * 2 {
            self.thin();
        }
    }

    /// Keeps one in [`THINNED_EVERY`] of the knots older than the newest [`RECENT_KNOTS`].
    fn thin(&mut self) {
        let old = self.knots.len() - RECENT_KNOTS;
        let mut index = 0;
        self.knots.retain(|_| {
            index += 1;
            index > old || (index - 1) % THINNED_EVERY == 0
        });
    }

    /// The linear piece that converts stamps from knot `index` on: up to the next knot, the
    /// line between the two; past the last, the last knot's time at the rate since the
    /// latest knot at least [`BASELINE_NS`] older (or the first); the first knot alone maps
    /// a tick to a nanosecond.
    fn segment(&self, index: usize) -> Segment {
        let n = self.knots.len();
        let last = self.knots[n - 1];
        let (from, to) = match n {
            1 => return Segment { stamp: last.0, ns: last.1, per_tick: 1 << SCALE },
            _ if index + 1 >= n => {
                let older = self.knots.partition_point(|knot| knot.1 <= last.1 - BASELINE_NS);
                (self.knots[older.saturating_sub(1).min(n - 2)], last)
            }
            _ => (self.knots[index], self.knots[index + 1]),
        };
        let ticks = (to.0 - from.0) as i128;
        let per_tick = ((((to.1 - from.1) as i128) << SCALE) + ticks / 2) / ticks;
        let origin = if index + 1 >= n { last } else { from };
        Segment { stamp: origin.0, ns: origin.1, per_tick }
    }

    /// Converts `stamps` in place: one search for the first, then forward along the knots
    /// (stamps mostly come in order).
    fn convert(&mut self, stamps: &mut [i64]) {
        let mut bounds = (i64::MAX, i64::MIN);
        let mut segment = Segment { stamp: 0, ns: 0, per_tick: 0 };
        for stamp in stamps.iter_mut() {
            if *stamp < bounds.0 || *stamp >= bounds.1 {
                let index = self.knots.partition_point(|knot| knot.0 <= *stamp).saturating_sub(1);
                segment = self.segment(index);
                let next = self.knots.get(index + 1).map_or(i64::MAX, |knot| knot.0);
                bounds = (if index == 0 { i64::MIN } else { self.knots[index].0 }, next);
            }
            self.converted = self.converted.max(*stamp);
            *stamp = segment.at(*stamp);
        }
    }
}

/// The binary digits of a segment's nanoseconds per tick after the point.
const SCALE: u32 = 40;

/// One linear piece of the map: `ns + (stamp' - stamp) * per_tick / 2^SCALE`, rounded.
#[derive(Clone, Copy, Debug)]
struct Segment {
    stamp: i64,
    ns: i64,
    per_tick: i128,
}

impl Segment {
    #[inline]
    fn at(self, stamp: i64) -> i64 {
        self.ns + (((stamp - self.stamp) as i128 * self.per_tick + (1 << (SCALE - 1))) >> SCALE) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A counter of 2.5 ticks per nanosecond, started 1 s before the epoch's `1_000_000_000`.
    fn pair(ns: i64) -> (i64, i64) {
        (ns * 5 / 2, 1_000_000_000 + ns)
    }

    #[test]
    fn stamps_between_knots_are_interpolated_and_knots_are_exact() {
        let mut map = StampMap::new(pair(0));
        map.refresh(pair(40_000_000));
        let mut stamps = [pair(0).0, pair(10_000_000).0, pair(40_000_000).0, pair(123).0];
        map.convert(&mut stamps);
        assert_eq!(stamps, [1_000_000_000, 1_010_000_000, 1_040_000_000, 1_000_000_123]);
    }

    #[test]
    fn a_converted_stamp_keeps_its_nanoseconds_and_order_is_kept() {
        let mut map = StampMap::new(pair(0));
        map.refresh(pair(20_000_000));
        // Past the last knot: extrapolated along the last segment.
        let mut early = [pair(25_000_000).0];
        map.convert(&mut early);
        // A knot whose readings disagree with that segment (the rate changed), then another.
        map.refresh((pair(50_000_000).0, 1_050_000_400));
        map.refresh((pair(80_000_000).0, 1_080_000_900));
        let mut again = [pair(25_000_000).0];
        map.convert(&mut again);
        assert_eq!(again, early);
        let mut stamps: Vec<i64> = (0..100_000_000).step_by(97_003).map(|ns| pair(ns).0).collect();
        map.convert(&mut stamps);
        assert!(stamps.windows(2).all(|pair| pair[0] <= pair[1]), "converted stamps go back");
        assert!(map.knots.windows(2).all(|k| k[0].0 < k[1].0 && k[0].1 < k[1].1));
    }

    #[test]
    fn a_rate_measured_over_a_short_span_is_not_carried_far() {
        // Two knots 20 us apart, the second read 200 ns late: the rate between them is 1 % off.
        let mut map = StampMap::new(pair(0));
        map.refresh((pair(20_000).0, pair(20_000).1 + 200));
        // Stamps taken up to 1 ms later are converted after a knot at 1 ms: interpolated.
        map.refresh(pair(1_000_000));
        let mut stamps = [pair(900_000).0];
        map.convert(&mut stamps);
        assert!((stamps[0] - pair(900_000).1).abs() < 300, "{} ns off", stamps[0] - pair(900_000).1);
        // Past the last knot, the rate comes from the longest span: the first knot on.
        map.refresh((pair(200_000_000).0, pair(200_000_000).1 + 300));
        let mut late = [pair(200_900_000).0];
        map.convert(&mut late);
        assert!((late[0] - pair(200_900_000).1).abs() < 400, "{} ns off", late[0] - pair(200_900_000).1);
    }

    #[test]
    fn knots_come_at_most_every_spacing_and_old_ones_are_thinned() {
        let mut map = StampMap::new(pair(0));
        map.refresh(pair(1));
        map.refresh(pair(2));
        assert_eq!(map.knots.len(), 3, "knots come at every refresh while they span little time");
        map.refresh(pair(BASELINE_NS));
        map.refresh(pair(BASELINE_NS + 1));
        assert_eq!(map.knots.len(), 4, "then at most one per spacing");
        for step in 1..=(RECENT_KNOTS as i64 * 2) {
            map.refresh(pair(BASELINE_NS + step * KNOT_SPACING_NS));
        }
        assert!(map.knots.len() <= RECENT_KNOTS * 2);
        let newest = map.knots[map.knots.len() - RECENT_KNOTS..].to_vec();
        assert!(newest.windows(2).all(|k| k[1].1 - k[0].1 == KNOT_SPACING_NS), "the newest knots stay");
        let mut stamps = [pair(BASELINE_NS + 3 * KNOT_SPACING_NS + 7).0];
        map.convert(&mut stamps);
        let expected = 1_000_000_000 + BASELINE_NS + 3 * KNOT_SPACING_NS + 7;
        assert_eq!(stamps[0], expected, "a constant rate survives thinning");
    }

    #[test]
    fn stamps_become_the_time_they_were_taken() {
        let before = now_ns();
        let taken: Vec<i64> = (0..1000).map(|_| stamp()).collect();
        let after = now_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut converted = taken.clone();
        stamps_to_ns(&mut converted);
        assert!(converted.windows(2).all(|pair| pair[0] <= pair[1]));
        let slack = 100_000;
        assert!(
            before - slack <= converted[0] && converted[999] <= after + slack,
            "{before} {converted:?} {after}"
        );
        assert_eq!(stamp_to_ns(taken[500]), converted[500]);
    }
}
