//! The messages of the bootstrap protocol, on the worker's bootstrap channel.
//!
//! This module owns their shape (serde, so they travel with the cluster's bincode codec) and
//! their [`Envelope`], which names the sending worker: the cluster allocator checks it against
//! the connection the message came on, and the message's own `from` against it, so that every
//! handler knows who sent what it handles and can name that process in a violation. What
//! workers do with them is in [`super::server`] and [`super::client`]. Timestamps and
//! progress states travel as bytes encoded by the scope that owns their type.

use serde::{Deserialize, Serialize};
use timely_communication::exchangeable::{bincode_decode, bincode_encode, DecodeError};
use timely_communication::Exchangeable;

/// The channel identifier of the bootstrap channel: below the transport's control channels,
/// far above the identifiers dataflows use.
pub const BOOTSTRAP_CHANNEL: usize = (timely_communication::networking::FIRST_CONTROL_CHANNEL - 1) as usize;

/// What the bootstrap server tells a joining worker before it builds its dataflows.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Welcome {
    /// The number of workers before the joining process (they send `Next` messages).
    pub existing: usize,
    /// Per dataflow the server built, the number of workers it was built for (its implicit
    /// initial capabilities), or `None` if it has completed on the server.
    pub dataflows: Vec<Option<u64>>,
    /// Per operator whose server instance holds capabilities: its address and the times
    /// (`Vec<T>`, encoded); the first was announced for the joining workers.
    pub operators: Vec<(Vec<usize>, Vec<u8>)>,
    /// Per scope: its progress channel, its progress state (encoded) and the sequence number of
    /// the server's batch that carries the capability announcement, if any.
    pub scopes: Vec<ScopeWelcome>,
    /// The workers that left the cluster before the join (they send nothing).
    pub departed: Vec<usize>,
}

/// The part of a [`Welcome`] about one scope.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScopeWelcome {
    /// The scope's progress channel.
    pub channel: usize,
    /// The scope's address.
    pub address: Vec<usize>,
    /// The server's progress state of the scope.
    pub state: Vec<u8>,
    /// The server's batch carrying the announcement of the joining worker's capabilities.
    pub announced: Option<u64>,
}

/// A message of the bootstrap protocol.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum BootstrapMessage {
    /// A joining worker asks its server for a welcome.
    Hello {
        /// The joining worker.
        from: usize,
    },
    /// The server's answer to `Hello`.
    Welcome(Welcome),
    /// An existing worker's first message to a joining worker: per progress channel, the
    /// sequence number of the first batch it sends the joining worker directly.
    Next {
        /// The existing worker.
        from: usize,
        /// `(channel, sequence number)` per scope.
        scopes: Vec<(usize, u64)>,
    },
    /// A joining worker asks for the batches `[start, end)` of `sender` on `channel`.
    Range {
        /// The joining worker.
        from: usize,
        /// The progress channel.
        channel: usize,
        /// The worker that sent the batches.
        sender: usize,
        /// The first batch wanted.
        start: u64,
        /// One past the last batch wanted.
        end: u64,
    },
    /// The server's answer to `Range`: the batches, encoded by the scope.
    Batches {
        /// The progress channel.
        channel: usize,
        /// The worker that sent the batches.
        sender: usize,
        /// The sequence number of the first batch.
        start: u64,
        /// The batches' updates.
        batches: Vec<u8>,
    },
    /// A joining worker has every range: the server may stop recording for it.
    Done {
        /// The joining worker.
        from: usize,
    },
    /// A worker of a process that leaves tells every other worker (the notice).
    Leaving {
        /// The leaving worker.
        from: usize,
    },
    /// A worker tells a leaving worker that it will send it no more data, after its last.
    Sealed {
        /// The worker that sealed.
        from: usize,
    },
    /// A leaving worker whose leave is complete tells every other worker not gone how many
    /// dataflows it built: it builds no more, so it holds no initial capability in any later
    /// one (`docs/rescaling.md`, "Dataflows built during a leave").
    Left {
        /// The worker that left.
        from: usize,
        /// The number of dataflows it built (their indices are `0..dataflows`).
        dataflows: usize,
    },
    /// A drained leaving worker tells every other worker not gone the channels on which it
    /// received messages that nothing of its own took (channels of dataflows it never built):
    /// those whose messages it forwarded (`Forwarded`, before this) and those whose messages it
    /// could not. A stayer that built such a dataflow stops the run if a data channel of it is
    /// among the latter, or among the former and its edge cannot place them; progress channels
    /// are harmless (`docs/rescaling.md`, "Dataflows the leaver never builds that others
    /// built before its notice").
    Stranded {
        /// The leaving worker.
        from: usize,
        /// The channels whose messages it forwarded.
        channels: Vec<usize>,
        /// The channels whose messages it could not forward.
        kept: Vec<usize>,
    },
    /// A drained leaving worker hands the lowest-index worker present a message that `source`
    /// sent it on `channel`, of a dataflow it never built: the receiver's instance of the
    /// channel takes it in the leaver's place.
    Forwarded {
        /// The leaving worker.
        from: usize,
        /// The channel.
        channel: usize,
        /// The worker that sent the message to the leaver.
        source: usize,
        /// The message, as `source` encoded it.
        bytes: Vec<u8>,
    },
    /// A drained leaving worker tells every other worker not gone to send it nothing more,
    /// not even the membership announcements that reach leavers until they go.
    Drained {
        /// The leaving worker.
        from: usize,
    },
    /// The answer to `Drained`: the worker sends the leaver nothing more, after its last
    /// message (so the leaver goes only once it took everything sent to it).
    Released {
        /// The worker that answers.
        from: usize,
    },
    /// A worker that handles the notice of another process's leave tells each of its leavers
    /// how many dataflows it had built then: it counts the leaver's initial capabilities in
    /// them, and one the leaver never built may wait for the leaver's `Left` before it lets the
    /// leaver go (`docs/rescaling.md`, "Leaving: the protocol (contract)").
    BuiltAtNotice {
        /// The worker that handled the notice.
        from: usize,
        /// The number of dataflows it had built (their indices are `0..dataflows`).
        dataflows: usize,
    },
    /// A server that welcomed joining worker `joiner` tells every other worker before the
    /// joiner's process: a joining process asks one server, so a worker that hears another
    /// worker of that process ask it too, or welcomed it itself, refuses the second hello.
    Serving {
        /// The server.
        from: usize,
        /// The joining worker it welcomed.
        joiner: usize,
    },
}

impl BootstrapMessage {
    /// The worker the message says it comes from, for the variants that name one.
    pub fn claimed_sender(&self) -> Option<usize> {
        match self {
            BootstrapMessage::Hello { from }
            | BootstrapMessage::Next { from, .. }
            | BootstrapMessage::Range { from, .. }
            | BootstrapMessage::Done { from }
            | BootstrapMessage::Leaving { from }
            | BootstrapMessage::Sealed { from }
            | BootstrapMessage::Left { from, .. }
            | BootstrapMessage::Stranded { from, .. }
            | BootstrapMessage::Forwarded { from, .. }
            | BootstrapMessage::Drained { from }
            | BootstrapMessage::Released { from }
            | BootstrapMessage::BuiltAtNotice { from, .. }
            | BootstrapMessage::Serving { from, .. } => Some(*from),
            BootstrapMessage::Welcome(_) | BootstrapMessage::Batches { .. } => None,
        }
    }

    /// The variant's name, for error messages (never the contents: they may be large).
    pub fn kind(&self) -> &'static str {
        match self {
            BootstrapMessage::Hello { .. } => "Hello",
            BootstrapMessage::Welcome(_) => "Welcome",
            BootstrapMessage::Next { .. } => "Next",
            BootstrapMessage::Range { .. } => "Range",
            BootstrapMessage::Batches { .. } => "Batches",
            BootstrapMessage::Done { .. } => "Done",
            BootstrapMessage::Leaving { .. } => "Leaving",
            BootstrapMessage::Sealed { .. } => "Sealed",
            BootstrapMessage::Left { .. } => "Left",
            BootstrapMessage::Stranded { .. } => "Stranded",
            BootstrapMessage::Forwarded { .. } => "Forwarded",
            BootstrapMessage::Drained { .. } => "Drained",
            BootstrapMessage::Released { .. } => "Released",
            BootstrapMessage::BuiltAtNotice { .. } => "BuiltAtNotice",
            BootstrapMessage::Serving { .. } => "Serving",
        }
    }
}

/// What travels on the bootstrap channel: a message and the worker that sent it.
///
/// Not a serde type, so that it can check its sender ([`Exchangeable::check_sender`]): a
/// message from another process whose envelope names a worker of another process, or whose
/// `from` differs from its envelope's, is a protocol violation of the sending process.
#[derive(Clone, Debug)]
pub struct Envelope {
    /// The sending worker.
    pub from: usize,
    /// The message.
    pub message: BootstrapMessage,
}

impl Exchangeable for Envelope {
    fn encode(&self, out: &mut Vec<u8>) {
        bincode_encode(&(self.from as u64, &self.message), out);
    }

    fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let (from, message): (u64, BootstrapMessage) = bincode_decode(bytes)?;
        let from = usize::try_from(from)
            .map_err(|_| DecodeError::WorkerIndex { what: "a bootstrap message", index: from })?;
        Ok(Envelope { from, message })
    }

    /// The envelope names the sender, and so do some messages (a bootstrap `kind()` then says
    /// which one claimed another).
    fn check_sender(&self, worker: usize) -> Result<(), DecodeError> {
        if self.from != worker {
            return Err(DecodeError::WrongSender { what: "a bootstrap message", claimed: self.from });
        }
        match self.message.claimed_sender() {
            Some(claimed) if claimed != worker => {
                Err(DecodeError::WrongSender { what: self.message.kind(), claimed })
            }
            _ => Ok(()),
        }
    }
}
