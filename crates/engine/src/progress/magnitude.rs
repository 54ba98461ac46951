//! A bound on what the deltas of received progress batches can add up to.
//!
//! This module owns [`ReceivedMagnitude`], a worker's running total of the magnitudes
//! (`|delta|`) of every progress update it received in batches, across all its scopes, per
//! sender and in all, and [`MagnitudeExceeded`], the error when that total passes
//! [`MAX_RECEIVED_MAGNITUDE`]. Counts in the ledgers, trackers and antichains are `i64` sums
//! that wrap silently in a release build: a peer that sends `i64::MAX` twice at one place, or
//! `2^60` a few times, would turn a capability into a negative count and release a frontier
//! early. Every count a received batch can build is a sum of deltas received (a nested
//! scope's boundary statements become its parent's counts, so they are charged once, when
//! they arrive, against the worker's one total), plus this worker's own updates and a joiner's
//! bootstrap state ([`super::batch_check::MAX_BOOTSTRAP_MAGNITUDE`], `2^62`); so with the
//! received deltas bounded by `2^61`, no count can overflow. An honest run reaches the bound
//! only after `2^61` units of progress (records sent and received, capabilities changed):
//! 73 years at a billion a second. It must not apply updates nor decide what a violation does.

use std::cell::RefCell;
use std::rc::Rc;

use super::location::Location;

/// The most the magnitudes of the deltas a worker receives in progress batches may add up to
/// over a run (`2^61`).
pub const MAX_RECEIVED_MAGNITUDE: u64 = 1 << 61;

/// Received progress updates whose deltas add up to more than the bound: `sender` is the
/// worker whose updates take up most of it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "progress updates whose deltas add up to more than {limit} in magnitude on worker {receiver} \
     (worker {sender} sent {share} of it, the most of any worker): counts that large would \
     overflow, and no honest run comes near"
)]
pub struct MagnitudeExceeded {
    /// The worker that received the updates.
    pub receiver: usize,
    /// The worker whose updates take up most of the total.
    pub sender: usize,
    /// The magnitude of its updates.
    pub share: u64,
    /// The bound passed.
    pub limit: u64,
}

/// A worker's running total of the magnitudes of the progress deltas it received, per sender;
/// shared by the progcasters of all its scopes.
#[derive(Clone, Debug)]
pub struct ReceivedMagnitude {
    inner: Rc<RefCell<Totals>>,
}

#[derive(Debug)]
struct Totals {
    receiver: usize,
    limit: u64,
    total: u64,
    /// Per sender (indices validated against the connection before batches get here).
    per_sender: Vec<u64>,
}

impl ReceivedMagnitude {
    /// Nothing received yet by worker `receiver`, bounded by [`MAX_RECEIVED_MAGNITUDE`].
    pub fn new(receiver: usize) -> ReceivedMagnitude {
        ReceivedMagnitude::with_limit(receiver, MAX_RECEIVED_MAGNITUDE)
    }

    /// Nothing received yet, bounded by `limit` (tests use small ones).
    pub fn with_limit(receiver: usize, limit: u64) -> ReceivedMagnitude {
        let totals = Totals { receiver, limit, total: 0, per_sender: Vec::new() };
        ReceivedMagnitude { inner: Rc::new(RefCell::new(totals)) }
    }

    /// Adds the magnitudes of `updates`, a batch of `sender`, before any of them is applied.
    ///
    /// # Errors
    ///
    /// The total passes the bound: names the sender whose updates take up most of it (the
    /// batch is charged first, so a single oversized batch names its own sender).
    pub fn charge<'a, T: 'a>(
        &self,
        sender: usize,
        updates: impl IntoIterator<Item = &'a ((Location, T), i64)>,
    ) -> Result<(), MagnitudeExceeded> {
        let batch =
            updates.into_iter().fold(0u64, |sum, (_, delta)| sum.saturating_add(delta.unsigned_abs()));
        let mut totals = self.inner.borrow_mut();
        if totals.per_sender.len() <= sender {
            totals.per_sender.resize(sender + 1, 0);
        }
        totals.per_sender[sender] = totals.per_sender[sender].saturating_add(batch);
        totals.total = totals.total.saturating_add(batch);
        if totals.total <= totals.limit {
            return Ok(());
        }
        let (most, share) = (totals.per_sender.iter().enumerate())
            .max_by_key(|&(worker, share)| (*share, worker == sender))
            .map_or((sender, batch), |(worker, share)| (worker, *share));
        Err(MagnitudeExceeded { receiver: totals.receiver, sender: most, share, limit: totals.limit })
    }

    /// The magnitude received so far, in all.
    pub fn total(&self) -> u64 {
        self.inner.borrow().total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(delta: i64) -> ((Location, u64), i64) {
        ((Location::source(1, 0), 0), delta)
    }

    #[test]
    fn deltas_are_charged_until_the_bound_and_the_largest_sender_is_named() {
        let magnitude = ReceivedMagnitude::with_limit(5, 100);
        magnitude.charge(0, &[at(30), at(-30)]).expect("60 of 100");
        magnitude.charge(3, &[at(-20)]).expect("80 of 100");
        magnitude.charge(0, &[at(20)]).expect("exactly 100");
        assert_eq!(magnitude.total(), 100);
        let error = magnitude.charge(3, &[at(1)]).expect_err("101 of 100");
        assert_eq!(error, MagnitudeExceeded { receiver: 5, sender: 0, share: 80, limit: 100 });
        assert!(error.to_string().contains("worker 0 sent 80 of it"), "{error}");
    }

    #[test]
    fn a_single_huge_batch_names_its_sender_and_nothing_wraps() {
        for batch in [vec![at(i64::MAX), at(i64::MAX)], vec![at(i64::MIN)], vec![at(1 << 61)]] {
            let magnitude = ReceivedMagnitude::new(0);
            magnitude.charge(1, &[at(5)]).expect("small");
            let error = magnitude.charge(2, &batch).expect_err("beyond 2^61");
            assert_eq!((error.sender, error.limit), (2, MAX_RECEIVED_MAGNITUDE), "{error}");
            assert!(magnitude.total() > MAX_RECEIVED_MAGNITUDE, "saturated, not wrapped");
        }
    }
}
