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
//! This module owns the queue of forwarded messages of one channel and the puller that hands
//! them out; the protocol that moves them is `rescale::stranded`'s.

use super::channels::{ExchangeData, Message};
use crate::progress::Timestamp;
use crate::scheduling::Activator;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use timely_communication::{Exchangeable, ProtocolViolations, Pull};

/// What becomes of messages that a leaver received on an edge of a dataflow it never built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stranded {
    /// One stayer takes them as its own (records routed by key or hash).
    Forward,
    /// One stayer retires their counts and drops them (copies every stayer received too).
    Retire,
    /// They cannot be placed: the run stops with an error naming the dataflow.
    Fail,
}

/// The `from` of a forwarded message that its input port counts as received and skips.
pub(crate) const RETIRED_SENDER: usize = usize::MAX;

/// A message forwarded by a leaver: the leaver, the worker that sent it to the leaver, and
/// its bytes (as the sender encoded them).
pub(crate) type ForwardedMessage = (usize, usize, Vec<u8>);

/// The forwarded messages of one channel on this worker, shared by the worker's state (which
/// fills it) and the channel's puller (which empties it).
pub(crate) struct ForwardedInbox {
    kind: Stranded,
    queue: RefCell<VecDeque<ForwardedMessage>>,
    activator: Activator,
}

impl ForwardedInbox {
    /// An empty inbox for an edge of kind `kind` whose operator `activator` activates.
    pub(crate) fn new(kind: Stranded, activator: Activator) -> Rc<Self> {
        Rc::new(ForwardedInbox { kind, queue: RefCell::default(), activator })
    }

    /// What becomes of the channel's forwarded messages.
    pub(crate) fn kind(&self) -> Stranded {
        self.kind
    }

    /// Queues `message` for the channel's operator and activates it.
    pub(crate) fn push(&self, message: ForwardedMessage) {
        self.queue.borrow_mut().push_back(message);
        self.activator.activate();
    }
}

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
            let next = self.inbox.queue.borrow_mut().pop_front();
            let Some((leaver, source, bytes)) = next else {
                self.current = None;
                return &mut self.current;
            };
            let decoded = Message::<T, D>::decode(&bytes)
                .and_then(|message| message.check_sender(source).map(|()| message));
            match decoded {
                Ok(mut message) => {
                    if self.inbox.kind == Stranded::Retire {
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
