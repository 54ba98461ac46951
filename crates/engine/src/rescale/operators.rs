//! What the rescaling protocol and operators tell each other: the times at which an operator
//! instance holds capabilities ([`HeldTimes`], which a server hands over to a joining worker,
//! and which name the operators holding a leave up, [`HeldReport`]), and the initial
//! capabilities of an operator being built ([`Initial`], which differ on a joining worker).

use std::collections::BTreeMap;
use std::time::Instant;

use crate::logging::Activity;

/// On a leaver: per operator address holding its leave up, since when, and the trace activity
/// once it was named (`held_report`).
#[derive(Default)]
pub(crate) struct HeldReport {
    pub(super) holders: BTreeMap<Vec<usize>, (Instant, Option<Activity>)>,
    /// Since when this leaver has been drained while its program had not returned, and
    /// whether that was named.
    pub(super) unreturned: Option<(Instant, bool)>,
}

/// The times at which an operator instance holds capabilities, encoded as `Vec<T>` (its
/// minimal times first).
pub trait HeldTimes {
    /// The encoded times, or `None` when it holds none.
    fn encoded(&self) -> Option<Vec<u8>>;

    /// The operator's name and the times it holds, for a message, or `None` when it holds
    /// none (`held_report`).
    fn holding(&self) -> Option<String>;
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
