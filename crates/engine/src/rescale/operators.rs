//! What the rescaling protocol and operators tell each other: the times at which an operator
//! instance holds capabilities ([`HeldTimes`], which a server hands over to a joining worker),
//! and the initial capabilities of an operator being built ([`Initial`], which differ on a
//! joining worker).

/// The times at which an operator instance holds capabilities, encoded as `Vec<T>` (its
/// minimal times first).
pub trait HeldTimes {
    /// The encoded times, or `None` when it holds none.
    fn encoded(&self) -> Option<Vec<u8>>;
}

/// The initial capabilities of an operator being built.
pub enum Initial {
    /// Every worker holds one at the minimal time (the ordinary case).
    Ordinary,
    /// On a joining worker, in a dataflow built before the join: `counted` workers hold the
    /// implicit initial capabilities, and this worker's instance starts with a capability at
    /// the first of `times` (encoded `Vec<T>`), or without one when `times` is `None`.
    Joining {
        /// The workers the dataflow was built for.
        counted: usize,
        /// The times announced for this operator.
        times: Option<Vec<u8>>,
    },
}
