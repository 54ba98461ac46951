//! Messages a leaver received on a channel of a dataflow it never built, handed to one worker
//! that stays (`docs/rescaling.md`, "Dataflows the leaver never builds that others built
//! before its notice").
//!
//! Each exchanging edge says what becomes of such messages ([`Stranded`], from its
//! `Partition`): the records of a data exchange all went to the leaver under one routing, so
//! one stayer takes them as its own (every key and time stays together); broadcast copies (and
//! the keyed exchanges' announcements, and Megaphone's commands, which are broadcast copies
//! too) have their counterpart on every stayer already, so the stayer only retires them: its
//! input port counts them as received and its operator never sees them. Either way the
//! message's progress counts are retired exactly once, by that stayer, as the leaver's
//! receipt would have. Edges of other kinds keep the run's clear error.
//!
//! This module owns the puller that hands them out; their queue is `rescale::forward_inbox`'s,
//! the protocol that moves them `rescale::stranded`'s.

use super::channels::{ExchangeData, Message};
use crate::progress::Timestamp;
use crate::rescale::forward_inbox::{ForwardedInbox, Stranded, RETIRED_SENDER};
use std::rc::Rc;
use timely_communication::{Exchangeable, ProtocolViolations, Pull};

/// Hands out the channel's own messages and then its forwarded ones (decoded, checked against
/// the sender the leaver named; retired ones marked with [`RETIRED_SENDER`]).
pub(crate) struct ForwardingPuller<T, D> {
    inner: Box<dyn Pull<Message<T, D>>>,
    inbox: Rc<ForwardedInbox>,
    violations: ProtocolViolations,
    channel: usize,
    current: Option<Message<T, D>>,
}

impl<T, D> ForwardingPuller<T, D> {
    /// Wraps `inner`, the puller of `channel`; undecodable forwarded messages are reported as
    /// violations of the forwarding leaver's process.
    pub(crate) fn new(
        inner: Box<dyn Pull<Message<T, D>>>,
        inbox: Rc<ForwardedInbox>,
        violations: ProtocolViolations,
        channel: usize,
    ) -> Self {
        ForwardingPuller { inner, inbox, violations, channel, current: None }
    }
}

impl<T: Timestamp, D: ExchangeData> Pull<Message<T, D>> for ForwardingPuller<T, D> {
    fn pull(&mut self) -> &mut Option<Message<T, D>> {
        if let Some(message) = self.inner.recv() {
            self.current = Some(message);
            return &mut self.current;
        }
        loop {
            let next = self.inbox.pop();
            let Some((leaver, source, bytes)) = next else {
                self.current = None;
                return &mut self.current;
            };
            let decoded = Message::<T, D>::decode(&bytes)
                .and_then(|message| message.check_sender(source).map(|()| message));
            match decoded {
                Ok(mut message) => {
                    if self.inbox.kind() == Stranded::Retire {
                        message.from = RETIRED_SENDER;
                    }
                    self.current = Some(message);
                    return &mut self.current;
                }
                Err(error) => {
                    let reason = format!(
                        "worker {leaver} forwarded an invalid message of worker {source} on channel {}: {error}",
                        self.channel
                    );
                    self.violations.report(self.violations.process_of(leaver), &reason);
                }
            }
        }
    }

    fn recycle(&mut self, message: Message<T, D>) {
        self.inner.recycle(message);
    }
}
