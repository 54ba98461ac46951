//! The messages of the bootstrap protocol, on the worker's bootstrap channel.
//!
//! This module owns their shape (serde, so they travel with the cluster's bincode codec);
//! what workers do with them is in [`super::server`] and [`super::client`]. Timestamps and
//! progress states travel as bytes encoded by the scope that owns their type.

use serde::{Deserialize, Serialize};

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
}
