//! How a bootstrap message breaks the join or leave protocol: [`ProtocolViolation`].
//!
//! Every handler of a message on the bootstrap channel (`server`, `client`, `leave`,
//! `stranded`) returns one of these when the message is not one its sender may send now;
//! `dispatch` ends the run with it, naming the sender's process ("worker W " followed by the
//! text). The texts say what the sender did, in the words of `docs/rescaling.md`.

use crate::progress::ledger::JoinDataError;

/// What the sender of a bootstrap message did that the protocol does not allow.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProtocolViolation {
    // The server side of a join.
    #[error("asked for a welcome but did not join the cluster")]
    HelloWithoutJoin,
    #[error("asked for a welcome twice")]
    HelloTwice,
    #[error(
        "asked worker {asked} for a welcome, but worker {server} serves its process ({process}): a \
         joining process asks only its server, once per worker"
    )]
    SecondServer { asked: usize, server: usize, process: usize },
    #[error("asked workers {first} and {second} for a welcome: a joining process asks only its server")]
    TwoServers { first: usize, second: usize },
    #[error("said it welcomed worker {joiner}, which did not join after it")]
    ServingNoJoiner { joiner: usize },
    #[error("asked for progress batches, but this worker is not its bootstrap server now")]
    RangeNotServing,
    #[error("asked for the progress batches of worker {sender} of {peers}")]
    RangeUnknownSender { sender: usize, peers: usize },
    #[error("asked for the reversed range [{start}, {end}) of worker {sender}")]
    RangeReversed { sender: usize, start: u64, end: u64 },
    #[error("asked for progress channel {channel}, which this worker does not have")]
    RangeUnknownChannel { channel: usize },
    #[error("asked twice for the batches of worker {sender} on progress channel {channel}")]
    RangeTwice { sender: usize, channel: usize },
    #[error("said it finished its bootstrap but did not join the cluster")]
    DoneWithoutJoin,
    #[error("said twice that it finished its bootstrap")]
    DoneTwice,

    // The joining side.
    #[error("sent a {kind} message to worker {worker}, which is not joining")]
    NotJoining { kind: &'static str, worker: usize },
    #[error("sent a {kind} message to a joining worker")]
    UnexpectedForJoiner { kind: &'static str },
    #[error("sent {what}, but the server of this worker is worker {server}")]
    NotTheServer { what: &'static str, server: usize },
    #[error("sent a second welcome")]
    WelcomeTwice,
    #[error(
        "sent a welcome for a cluster of {existing} workers before the join, but the joining workers \
         start at {first}"
    )]
    WelcomeExisting { existing: usize, first: usize },
    #[error("sent a welcome with a dataflow built for {peers} workers")]
    WelcomeTooManyPeers { peers: u64 },
    #[error("sent a welcome naming worker {worker} of {first} as departed")]
    WelcomeDepartedJoiner { worker: usize, first: usize },
    #[error("sent a welcome naming progress channel {channel} twice")]
    WelcomeChannelTwice { channel: usize },
    #[error("sent a welcome with the progress state of scope {address:?}, which is in no dataflow it runs")]
    WelcomeScopeNotRun { address: Vec<usize> },
    #[error(
        "sent a welcome without the scope {address:?} (progress channel {channel}) this worker built; \
         every worker must build the same dataflows in the same order"
    )]
    WelcomeScopeMissing { address: Vec<usize>, channel: usize },
    #[error("sent a progress state of scope {address:?} that does not fit: {error}")]
    StateDoesNotFit { address: Vec<usize>, error: JoinDataError },
    #[error("sent a welcome, but worker {next}, which joined too, sent a Next message")]
    WelcomeAfterNext { next: usize },
    #[error("sent a second Next message")]
    NextTwice,
    #[error("sent a Next message, but only the {existing} workers before the join do")]
    NextFromJoiner { existing: usize },
    #[error("sent progress batches of worker {sender} on channel {channel} that were not asked for")]
    BatchesNotAsked { sender: usize, channel: usize },
    #[error("sent batches for progress channel {channel}, which is not being bootstrapped")]
    BatchesUnknownChannel { channel: usize },
    #[error("sent progress batches of channel {channel} that do not fit: {error}")]
    BatchesDoNotFit { channel: usize, error: JoinDataError },

    // Leaves.
    #[error("announced the leave of its process, which has left already")]
    NoticeAfterDeparture,
    #[error("sealed worker {worker} twice")]
    SealedTwice { worker: usize },
    #[error("told worker {worker} twice how many dataflows it had built at its notice")]
    BuiltAtNoticeTwice { worker: usize },
    #[error("said twice that its leave is complete")]
    LeftTwice,
    #[error("said it is drained, but it is not leaving")]
    DrainedNotLeaving,
    #[error("said twice that it is drained")]
    DrainedTwice,
    #[error("released worker {worker}, which had not said it is drained")]
    ReleasedNotDrained { worker: usize },
    #[error("released worker {worker} twice")]
    ReleasedTwice { worker: usize },
    #[error("forwarded a message of a dataflow it never built, but it is not leaving")]
    ForwardedNotLeaving,
    #[error("forwarded a message of worker {source_worker}, which does not exist")]
    ForwardedUnknownSource { source_worker: usize },
    #[error("listed channels of dataflows it never built, but it is not leaving")]
    StrandedNotLeaving,
}
