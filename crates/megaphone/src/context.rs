//! [`Context`]: what the user's logic of a keyed operator may do for the key it runs for.
//!
//! The logic runs for one key at one time. It may send outputs at that time, ask to be
//! notified for the same key at a later time (or the same time, while processing records),
//! and discard the key's state. This module owns only that handle; S applies what it
//! collected after the logic returns.

/// The handle of the user's logic for one key at one time.
pub struct Context<'a, O> {
    time: u64,
    /// The earliest time a notification may be requested for.
    earliest: u64,
    outputs: &'a mut Vec<O>,
    requests: &'a mut Vec<u64>,
    discard: bool,
}

impl<'a, O> Context<'a, O> {
    /// A context at `time` that accepts notifications from `earliest` on.
    pub(crate) fn new(time: u64, earliest: u64, outputs: &'a mut Vec<O>, requests: &'a mut Vec<u64>) -> Self {
        Context { time, earliest, outputs, requests, discard: false }
    }

    /// The time the logic runs at (of the records, or of the notification).
    pub fn time(&self) -> u64 {
        self.time
    }

    /// Sends `output` at the current time.
    pub fn give(&mut self, output: O) {
        self.outputs.push(output);
    }

    /// Asks for a notification of the current key at `time`, once no record at `time` or
    /// earlier can reach the operator. Requests for one key and time are merged. The
    /// notification moves with the key's bin if the bin migrates first.
    ///
    /// # Panics
    ///
    /// When `time` is earlier than the current time (or, inside a notification, not later
    /// than it): the operator could not deliver it.
    pub fn notify_at(&mut self, time: u64) {
        assert!(
            time >= self.earliest,
            "megaphone: notify_at({time}) at time {}: notifications must be at time {} or later",
            self.time,
            self.earliest
        );
        self.requests.push(time);
    }

    /// Drops the current key's state after the logic returns (the next record for the key
    /// starts from the state type's default).
    pub fn discard_state(&mut self) {
        self.discard = true;
    }

    /// True when the logic asked to discard the key's state.
    pub(crate) fn discarded(&self) -> bool {
        self.discard
    }
}
