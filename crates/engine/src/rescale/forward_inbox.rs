//! What a worker keeps of the messages that leavers forward to it (`docs/rescaling.md`,
//! "Dataflows the leaver never builds that others built before its notice"): per exchanging
//! channel, what becomes of them ([`Stranded`]) and the queue its puller empties
//! (`crate::dataflow::forwarded`). It knows nothing of records: messages stay bytes here.

use crate::scheduling::Activator;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

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

    /// The oldest message not yet handed out.
    pub(crate) fn pop(&self) -> Option<ForwardedMessage> {
        self.queue.borrow_mut().pop_front()
    }
}
