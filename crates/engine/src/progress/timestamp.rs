//! Timestamps and path summaries.
//!
//! A `Timestamp` is the logical time records carry; a `PathSummary` is the least action a
//! path through the dataflow applies to a timestamp (`results_in`), and summaries compose
//! along paths (`followed_by`). `Refines` relates the timestamp of a nested scope to the
//! timestamp of its parent by their types, `Nesting` does it as a value (for timestamps
//! whose depth is data, `VecTime`). This module owns these traits and their implementations
//! for unsigned integers, `()` and `Product`; it knows nothing of graphs.

use crate::order::{PartialOrder, Product};
use serde::{de::DeserializeOwned, Serialize};
use std::fmt::Debug;
use std::hash::Hash;

/// A logical time: partially ordered, with a linear extension `Ord` and a least element.
pub trait Timestamp:
    Clone + Eq + Ord + Hash + Debug + PartialOrder + Send + Serialize + DeserializeOwned + 'static
{
    /// The summaries of paths between locations that carry this timestamp.
    type Summary: PathSummary<Self>;
    /// The least timestamp: every other timestamp is greater or equal.
    fn minimum() -> Self;
}

/// The action a path applies to timestamps.
///
/// `Default` is the identity summary. Summaries are partially ordered: `a.less_equal(b)`
/// means `a` advances every timestamp no further than `b` does.
pub trait PathSummary<T>: Clone + Eq + PartialOrder + Debug + Default + 'static {
    /// The timestamp a record at `src` has after following the path, or `None` if the
    /// result would not be a valid timestamp (the record can never arrive).
    fn results_in(&self, src: &T) -> Option<T>;
    /// The summary of following `self` and then `other`, or `None` if no timestamp survives.
    fn followed_by(&self, other: &Self) -> Option<Self>;
}

/// Relates a nested scope's timestamp `Self` to its parent's timestamp `T`.
pub trait Refines<T: Timestamp>: Timestamp {
    /// The inner timestamp of a record entering the nested scope at outer time `outer`.
    fn to_inner(outer: T) -> Self;
    /// The outer timestamp of a record leaving the nested scope.
    fn to_outer(self) -> T;
    /// The outer summary that a path inside the nested scope amounts to.
    fn summarize(path: <Self as Timestamp>::Summary) -> <T as Timestamp>::Summary;
}

/// How a nested scope's timestamps `TInner` relate to its parent's `TOuter`, as a value.
///
/// `Refines` says it with the types alone ([`ByRefines`]); a `Nesting` can also depend on
/// data, for timestamps whose depth is not part of their type: with `VecTime`, a loop adds
/// a coordinate ([`VecLoop`](super::VecLoop)) and a region does not, yet both scopes have
/// the parent's type. Scopes, `enter` and `leave` use `ByRefines` unless given another.
pub trait Nesting<TOuter: Timestamp, TInner: Timestamp>: 'static {
    /// The inner timestamp of a record entering the nested scope at outer time `outer`.
    fn to_inner(&self, outer: TOuter) -> TInner;
    /// The outer timestamp of a record leaving the nested scope.
    fn to_outer(&self, inner: TInner) -> TOuter;
    /// The outer summary that a path inside the nested scope amounts to.
    fn summarize(&self, path: TInner::Summary) -> TOuter::Summary;
}

/// The nesting that `TInner: Refines<TOuter>` defines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByRefines;

impl<TOuter: Timestamp, TInner: Refines<TOuter>> Nesting<TOuter, TInner> for ByRefines {
    #[inline]
    fn to_inner(&self, outer: TOuter) -> TInner {
        TInner::to_inner(outer)
    }
    #[inline]
    fn to_outer(&self, inner: TInner) -> TOuter {
        inner.to_outer()
    }
    #[inline]
    fn summarize(&self, path: TInner::Summary) -> TOuter::Summary {
        TInner::summarize(path)
    }
}

/// A scope with the same timestamp as its parent (a region).
impl<T: Timestamp> Refines<T> for T {
    fn to_inner(outer: T) -> T {
        outer
    }
    fn to_outer(self) -> T {
        self
    }
    fn summarize(path: T::Summary) -> T::Summary {
        path
    }
}

macro_rules! integer_timestamp {
    ($($t:ty),*) => {$(
        impl Timestamp for $t {
            type Summary = $t;
            #[inline] fn minimum() -> Self { <$t>::MIN }
        }
        /// An integer summary adds itself; overflow means the record never arrives.
        impl PathSummary<$t> for $t {
            #[inline] fn results_in(&self, src: &$t) -> Option<$t> { src.checked_add(*self) }
            #[inline] fn followed_by(&self, other: &$t) -> Option<$t> { self.checked_add(*other) }
        }
    )*};
}
integer_timestamp!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);

impl Timestamp for () {
    type Summary = ();
    fn minimum() -> Self {}
}

impl PathSummary<()> for () {
    fn results_in(&self, _src: &()) -> Option<()> {
        Some(())
    }
    fn followed_by(&self, _other: &()) -> Option<()> {
        Some(())
    }
}

impl<TOuter: Timestamp, TInner: Timestamp> Timestamp for Product<TOuter, TInner> {
    type Summary = Product<TOuter::Summary, TInner::Summary>;
    fn minimum() -> Self {
        Product::new(TOuter::minimum(), TInner::minimum())
    }
}

/// Product summaries act coordinate-wise.
impl<TOuter: Timestamp, TInner: Timestamp> PathSummary<Product<TOuter, TInner>>
    for Product<TOuter::Summary, TInner::Summary>
{
    #[inline]
    fn results_in(&self, src: &Product<TOuter, TInner>) -> Option<Product<TOuter, TInner>> {
        let outer = self.outer.results_in(&src.outer)?;
        let inner = self.inner.results_in(&src.inner)?;
        Some(Product::new(outer, inner))
    }
    #[inline]
    fn followed_by(&self, other: &Self) -> Option<Self> {
        let outer = self.outer.followed_by(&other.outer)?;
        let inner = self.inner.followed_by(&other.inner)?;
        Some(Product::new(outer, inner))
    }
}

/// A loop scope: records enter at iteration `minimum()` and leave with their outer time.
impl<TOuter: Timestamp, TInner: Timestamp> Refines<TOuter> for Product<TOuter, TInner> {
    fn to_inner(outer: TOuter) -> Self {
        Product::new(outer, TInner::minimum())
    }
    fn to_outer(self) -> TOuter {
        self.outer
    }
    fn summarize(path: Self::Summary) -> TOuter::Summary {
        path.outer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_summaries_add_and_detect_overflow() {
        assert_eq!(3u64.results_in(&4), Some(7));
        assert_eq!(1u8.results_in(&255), None);
        assert_eq!(2u32.followed_by(&5), Some(7));
        assert_eq!(u64::MAX.followed_by(&1), None);
        assert_eq!(u64::minimum(), 0);
    }

    #[test]
    fn product_summaries_act_coordinate_wise() {
        let step = Product::new(0u64, 1u64);
        let t = Product::new(5u64, 2u64);
        assert_eq!(step.results_in(&t), Some(Product::new(5, 3)));
        assert_eq!(PathSummary::<Product<u64, u64>>::followed_by(&step, &step), Some(Product::new(0, 2)));
        let overflow = Product::new(0u64, u64::MAX);
        assert_eq!(overflow.results_in(&t), None);
        assert!(Product::<u64, u64>::default().less_than(&step));
    }

    #[test]
    fn refinement_enters_and_leaves() {
        let inner: Product<u64, u32> = Refines::to_inner(7u64);
        assert_eq!(inner, Product::new(7, 0));
        assert_eq!(<Product<u64, u32> as Refines<u64>>::to_outer(Product::new(7, 9)), 7);
        assert_eq!(<Product<u64, u32> as Refines<u64>>::summarize(Product::new(2, 5)), 2);
        assert_eq!(<u64 as Refines<u64>>::to_inner(3), 3);
    }
}
