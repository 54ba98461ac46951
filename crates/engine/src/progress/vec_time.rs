//! `VecTime`: one timestamp type for scopes nested any number of loops deep.
//!
//! A `VecTime` is a vector of `u64` coordinates, product ordered (`a <= b` when every
//! coordinate of `a` is at most that of `b`): a dataflow's root uses one coordinate, and
//! each loop around a scope adds one, as `Product` does with one type per depth. Absent
//! trailing coordinates are zero, and a time with trailing zeros is the same time without
//! them, so the least time (`minimum()`, all zeros) is the least time of every depth and
//! entering a loop (appending a zero coordinate) changes nothing. How many coordinates a scope's
//! times have is known to whoever built the scope, not to the times: `VecLoop` nests a loop
//! given the number of coordinates of its parent.
//!
//! The same type serves as the path summary: the amounts added to each coordinate.
//! This module owns the type, its order and summaries, and the loop nesting.

use super::timestamp::{Nesting, PathSummary, Timestamp};
use crate::order::PartialOrder;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use smallvec::SmallVec;
use std::fmt;

/// Coordinates held in place: a dataflow's root and three loops.
const INLINE: usize = 4;

/// A product-ordered vector of `u64` coordinates, absent ones zero (see the module doc).
///
/// The first `INLINE` coordinates are held in place, zeros included, so that times of up
/// to three loops copy, compare and hash as a small array; coordinates past them, if any
/// is non-zero, are in `more`, up to the last non-zero one. Every time therefore has one
/// representation, and the derived `Eq`, `Hash` and `Ord` (lexicographic, absent
/// coordinates as zeros: a linear extension of the product order) are those of the
/// coordinates.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VecTime {
    inline: [u64; INLINE],
    more: Option<Box<[u64]>>,
}

impl VecTime {
    /// The time with these coordinates (trailing zeros may be given or left out).
    pub fn new(coordinates: &[u64]) -> Self {
        let mut inline = [0; INLINE];
        let head = coordinates.len().min(INLINE);
        inline[..head].copy_from_slice(&coordinates[..head]);
        VecTime { inline, more: Self::rest(&coordinates[head..]) }
    }

    /// Coordinates from `INLINE` on, up to the last non-zero one (`None` if all are zero).
    fn rest(coordinates: &[u64]) -> Option<Box<[u64]>> {
        let used = coordinates.iter().rposition(|c| *c != 0)? + 1;
        Some(coordinates[..used].into())
    }

    /// The time at a dataflow's root with this one coordinate.
    pub fn root(epoch: u64) -> Self {
        let mut inline = [0; INLINE];
        inline[0] = epoch;
        VecTime { inline, more: None }
    }

    /// Number of coordinates up to the last non-zero one.
    pub fn len(&self) -> usize {
        match &self.more {
            Some(more) => INLINE + more.len(),
            None => self.inline.iter().rposition(|c| *c != 0).map_or(0, |last| last + 1),
        }
    }

    /// True for the least time (every coordinate zero).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Coordinate `index` (zero when absent).
    #[inline]
    pub fn get(&self, index: usize) -> u64 {
        match self.inline.get(index) {
            Some(c) => *c,
            None => self.more.as_ref().and_then(|more| more.get(index - INLINE).copied()).unwrap_or(0),
        }
    }

    /// The first `len` coordinates, zeros included, as a scope with `len` coordinates
    /// shows them.
    pub fn padded(&self, len: usize) -> impl ExactSizeIterator<Item = u64> + '_ {
        (0..len).map(|index| self.get(index))
    }

    /// The time with coordinates from `len` on dropped.
    pub fn truncated(&self, len: usize) -> Self {
        let mut time = self.clone();
        for c in time.inline.iter_mut().skip(len) {
            *c = 0;
        }
        time.more = match (&self.more, len.checked_sub(INLINE)) {
            (Some(more), Some(kept)) if kept > 0 => Self::rest(&more[..kept.min(more.len())]),
            _ => None,
        };
        time
    }

    /// Coordinate-wise `op`, or `None` if it fails for a coordinate.
    #[inline]
    fn zip_with(&self, other: &Self, op: impl Fn(u64, u64) -> Option<u64>) -> Option<Self> {
        let mut inline = [0; INLINE];
        for (index, c) in inline.iter_mut().enumerate() {
            *c = op(self.inline[index], other.inline[index])?;
        }
        let more = match (&self.more, &other.more) {
            (None, None) => None,
            _ => {
                let len = self.len().max(other.len()) - INLINE;
                let mut rest = SmallVec::<[u64; INLINE]>::with_capacity(len);
                for index in INLINE..INLINE + len {
                    rest.push(op(self.get(index), other.get(index))?);
                }
                Self::rest(&rest)
            }
        };
        Some(VecTime { inline, more })
    }
}

/// Encoded as the sequence of its coordinates.
impl Serialize for VecTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.padded(self.len()))
    }
}

/// Decoded from any sequence of coordinates: trailing zeros from a peer are dropped, so
/// equal times stay equal.
impl<'de> Deserialize<'de> for VecTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let coordinates = SmallVec::<[u64; 2 * INLINE]>::deserialize(deserializer)?;
        Ok(VecTime::new(&coordinates))
    }
}

/// Shown as a `Product` of the same coordinates would be, flat: `3`, `(3, 1)`.
impl fmt::Debug for VecTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.len() {
            0 | 1 => write!(f, "{}", self.get(0)),
            len => {
                let shown: Vec<String> = self.padded(len).map(|c| c.to_string()).collect();
                write!(f, "({})", shown.join(", "))
            }
        }
    }
}

impl PartialOrder for VecTime {
    #[inline]
    fn less_equal(&self, other: &Self) -> bool {
        self.inline.iter().zip(other.inline.iter()).all(|(a, b)| a <= b)
            && match (&self.more, &other.more) {
                (None, _) => true,
                // `self` has a non-zero coordinate where `other` has none.
                (Some(_), None) => false,
                (Some(mine), Some(theirs)) => {
                    mine.len() <= theirs.len() && mine.iter().zip(theirs.iter()).all(|(a, b)| a <= b)
                }
            }
    }
}

impl Timestamp for VecTime {
    type Summary = VecTime;
    fn minimum() -> Self {
        VecTime::default()
    }
}

/// A summary adds its coordinates; overflow means the record never arrives.
impl PathSummary<VecTime> for VecTime {
    #[inline]
    fn results_in(&self, src: &VecTime) -> Option<VecTime> {
        src.zip_with(self, u64::checked_add)
    }
    #[inline]
    fn followed_by(&self, other: &Self) -> Option<Self> {
        self.zip_with(other, u64::checked_add)
    }
}

/// A loop scope nested in a scope whose times have `outer` coordinates: its times add
/// coordinate `outer` (the iteration), which records enter at zero and leave without.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VecLoop {
    outer: usize,
}

impl VecLoop {
    /// A loop in a scope whose times have `outer` coordinates (1 at a dataflow's root).
    pub fn new(outer: usize) -> Self {
        VecLoop { outer }
    }
}

impl Nesting<VecTime, VecTime> for VecLoop {
    #[inline]
    fn to_inner(&self, outer: VecTime) -> VecTime {
        outer
    }
    #[inline]
    fn to_outer(&self, inner: VecTime) -> VecTime {
        inner.truncated(self.outer)
    }
    #[inline]
    fn summarize(&self, path: VecTime) -> VecTime {
        path.truncated(self.outer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::Product;

    fn t(coordinates: &[u64]) -> VecTime {
        VecTime::new(coordinates)
    }

    #[test]
    fn trailing_zeros_do_not_count() {
        assert_eq!(t(&[3, 0, 0]), t(&[3]));
        assert_eq!(t(&[0, 0]), VecTime::minimum());
        assert_eq!(t(&[3, 0, 2]).len(), 3);
        assert_eq!(t(&[1, 2, 3, 4, 5, 0, 0]), t(&[1, 2, 3, 4, 5]));
        assert_eq!(t(&[1, 2, 3, 4, 0, 0]), t(&[1, 2, 3, 4]));
        assert_eq!(t(&[1, 2, 3, 4, 0, 6]).len(), 6);
        assert_eq!(t(&[1, 2, 3, 4, 5, 6]).truncated(5), t(&[1, 2, 3, 4, 5]));
        assert_eq!(t(&[1, 2, 3, 4, 0, 6]).truncated(5), t(&[1, 2, 3, 4]));
        assert_eq!(t(&[1, 2, 3, 4, 5, 6]).truncated(3), t(&[1, 2, 3]));
        assert_eq!(t(&[3]).padded(3).collect::<Vec<_>>(), vec![3, 0, 0]);
        assert_eq!(t(&[3, 1, 2]).truncated(2), t(&[3, 1]));
        assert_eq!(t(&[3, 0, 2]).truncated(2), t(&[3]));
    }

    #[test]
    fn order_is_the_product_order_of_any_depth() {
        let cases: &[&[u64]] =
            &[&[0, 0, 0], &[1, 0, 0], &[0, 1, 0], &[0, 0, 1], &[1, 2, 0], &[2, 1, 3], &[1, 1, 1]];
        for a in cases {
            for b in cases {
                let product = a.iter().zip(b.iter()).all(|(x, y)| x <= y);
                assert_eq!(t(a).less_equal(&t(b)), product, "{:?} <= {:?}", a, b);
                // Ord is lexicographic over all three coordinates, a linear extension.
                assert_eq!(t(a).cmp(&t(b)), a.cmp(b), "{:?} cmp {:?}", a, b);
                if product {
                    assert!(t(a) <= t(b));
                }
            }
        }
        assert!(VecTime::minimum().less_equal(&t(&[0, 0, 7])));
    }

    #[test]
    fn order_past_the_inline_coordinates() {
        // Six coordinates, two of them past those held in place, every value 0 to 2.
        let mut vectors = Vec::new();
        for seed in 0..3u64.pow(6) {
            let mut v = [0u64; 6];
            let mut rest = seed;
            for c in v.iter_mut() {
                *c = rest % 3;
                rest /= 3;
            }
            if seed % 7 == 0 || v[4] + v[5] > 0 && seed % 5 == 0 {
                vectors.push(v);
            }
        }
        for a in &vectors {
            for b in &vectors {
                let product = a.iter().zip(b.iter()).all(|(x, y)| x <= y);
                assert_eq!(t(a).less_equal(&t(b)), product, "{:?} <= {:?}", a, b);
                assert_eq!(t(a).cmp(&t(b)), a.cmp(b), "{:?} cmp {:?}", a, b);
                assert_eq!(t(a) == t(b), a == b);
                let sum: Vec<u64> = a.iter().zip(b.iter()).map(|(x, y)| x + y).collect();
                assert_eq!(t(a).results_in(&t(b)), Some(t(&sum)));
            }
        }
    }

    #[test]
    fn agrees_with_nested_products() {
        // Two loops deep: Product<Product<u64, u64>, u64> against three coordinates.
        let product = |c: [u64; 3]| Product::new(Product::new(c[0], c[1]), c[2]);
        let times = [[0, 0, 0], [1, 0, 2], [1, 3, 0], [2, 1, 1], [0, 5, 5], [4, 4, 4]];
        for a in times {
            for b in times {
                assert_eq!(t(&a).less_equal(&t(&b)), product(a).less_equal(&product(b)));
                assert_eq!(t(&a).cmp(&t(&b)), product(a).cmp(&product(b)));
                let summed =
                    product(b).results_in(&product(a)).map(|p| [p.outer.outer, p.outer.inner, p.inner]);
                assert_eq!(t(&b).results_in(&t(&a)), summed.map(|c| t(&c)));
            }
        }
    }

    #[test]
    fn summaries_add_and_detect_overflow() {
        assert_eq!(t(&[0, 1]).results_in(&t(&[5, 2])), Some(t(&[5, 3])));
        assert_eq!(t(&[0, 1]).results_in(&t(&[5])), Some(t(&[5, 1])));
        assert_eq!(VecTime::default().results_in(&t(&[5, 2])), Some(t(&[5, 2])));
        assert_eq!(t(&[0, 1]).followed_by(&t(&[0, 0, 1])), Some(t(&[0, 1, 1])));
        assert_eq!(t(&[0, u64::MAX]).results_in(&t(&[1, 1])), None);
        assert!(VecTime::default().less_than(&t(&[0, 1])));
    }

    #[test]
    fn a_loop_adds_a_coordinate_and_leaving_drops_it() {
        let inner = VecLoop::new(2);
        assert_eq!(inner.to_inner(t(&[3, 1])), t(&[3, 1, 0]));
        assert_eq!(inner.to_outer(t(&[3, 1, 9])), t(&[3, 1]));
        assert_eq!(inner.to_outer(t(&[3, 0, 9])), t(&[3]));
        assert_eq!(inner.summarize(t(&[0, 0, 1])), VecTime::default());
        assert_eq!(inner.summarize(t(&[1, 2, 1])), t(&[1, 2]));
        // Deep loops: seven coordinates, six loops.
        let deep = VecLoop::new(6);
        let time = t(&[1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(deep.to_outer(time.clone()), t(&[1, 2, 3, 4, 5, 6]));
        assert_eq!(t(&[0, 0, 0, 0, 0, 0, 1]).results_in(&time), Some(t(&[1, 2, 3, 4, 5, 6, 8])));
    }

    #[test]
    fn shown_as_products_are() {
        assert_eq!(format!("{:?}", t(&[3])), "3");
        assert_eq!(format!("{:?}", VecTime::minimum()), "0");
        assert_eq!(format!("{:?}", t(&[3, 1])), format!("{:?}", Product::new(3u64, 1u64)));
    }

    #[test]
    fn round_trips_through_the_progress_encoding() {
        use timely_communication::exchangeable::{bincode_decode, bincode_encode};
        for time in [VecTime::minimum(), t(&[7]), t(&[1, 2, 3, 4, 5, 6])] {
            let mut bytes = Vec::new();
            bincode_encode(&time, &mut bytes);
            assert_eq!(bincode_decode::<VecTime>(&bytes).expect("decodes"), time);
        }
        // Trailing zeros a peer sends are dropped.
        let mut bytes = Vec::new();
        bincode_encode(&vec![4u64, 0, 0], &mut bytes);
        assert_eq!(bincode_decode::<VecTime>(&bytes).expect("decodes"), t(&[4]));
    }
}
