//! Partial orders and the product order used by nested loop timestamps.
//!
//! This module owns the ordering vocabulary of the engine (`PartialOrder`, `TotalOrder`,
//! `Product`). It knows nothing of progress tracking; `progress::timestamp` builds on it.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A partial order: `less_equal` is reflexive, antisymmetric and transitive.
///
/// Types that also implement `Ord` must make `Ord` a linear extension of this order
/// (if `a.less_equal(b)` then `a <= b`); progress tracking relies on that to process
/// updates in an order that never revisits a time.
pub trait PartialOrder: Eq {
    /// True when `self` is less than or equal to `other` in the partial order.
    fn less_equal(&self, other: &Self) -> bool;
    /// True when `self` is strictly less than `other`.
    fn less_than(&self, other: &Self) -> bool {
        self != other && self.less_equal(other)
    }
}

/// Marker for partial orders in which every two elements are comparable.
pub trait TotalOrder: PartialOrder {}

macro_rules! total_order {
    ($($t:ty),*) => {$(
        impl PartialOrder for $t {
            #[inline] fn less_equal(&self, other: &Self) -> bool { self <= other }
            #[inline] fn less_than(&self, other: &Self) -> bool { self < other }
        }
        impl TotalOrder for $t {}
    )*};
}
total_order!((), u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);

/// A pair ordered coordinate-wise: `(a, b) <= (c, d)` iff `a <= c` and `b <= d`.
///
/// Loop timestamps are products `(outer, iteration)`. `Ord` is lexicographic, which is a
/// linear extension of the product order.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Product<TOuter, TInner> {
    /// The coordinate of the enclosing scope.
    pub outer: TOuter,
    /// The coordinate added by the nested scope (for loops, the iteration).
    pub inner: TInner,
}

impl<TOuter, TInner> Product<TOuter, TInner> {
    /// Pairs an outer and an inner coordinate.
    pub fn new(outer: TOuter, inner: TInner) -> Self {
        Product { outer, inner }
    }
}

impl<TOuter: fmt::Debug, TInner: fmt::Debug> fmt::Debug for Product<TOuter, TInner> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({:?}, {:?})", self.outer, self.inner)
    }
}

impl<TOuter: PartialOrder, TInner: PartialOrder> PartialOrder for Product<TOuter, TInner> {
    #[inline]
    fn less_equal(&self, other: &Self) -> bool {
        self.outer.less_equal(&other.outer) && self.inner.less_equal(&other.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_totally_ordered() {
        assert!(3u64.less_equal(&3));
        assert!(!3u64.less_than(&3));
        assert!(2u32.less_than(&3));
        assert!(!4usize.less_equal(&3));
    }

    #[test]
    fn product_order_is_coordinate_wise() {
        let a = Product::new(1u64, 5u64);
        let b = Product::new(2u64, 3u64);
        assert!(!a.less_equal(&b) && !b.less_equal(&a), "incomparable");
        assert!(a.less_equal(&Product::new(1, 5)));
        assert!(a.less_than(&Product::new(1, 6)));
        assert!(a.less_than(&Product::new(3, 7)));
        // Ord is a linear extension of the product order.
        assert!(a < b);
        assert!(format!("{:?}", a) == "(1, 5)");
    }
}
