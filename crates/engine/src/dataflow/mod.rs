//! Dataflows: scopes, streams, channels and operators.
//!
//! This module owns how dataflows are described: `Scope` (where operators live),
//! `Stream` (an operator output), the channels that carry records along edges (`plain`
//! holds the one audited use of abomonation for records crossing processes), and the
//! operators. Progress accounting for operators is done by their ports and reported
//! through `progress::Operate`; this module does not decide frontiers.

pub mod channels;
pub mod exchange;
pub mod forwarded;
pub mod membership;
pub mod operators;
pub mod plain;
pub mod scope;
pub mod stream;

pub use crate::rescale::forward_inbox::Stranded;
pub use channels::{Data, ExchangeData, Message, Pact, Pipeline};
pub use exchange::{
    copies_to_worker, to_worker, AllWorkers, ByHash, CopiesToWorker, Exchange, ExchangeWith, Members,
    NotGone, Partition, ToWorker,
};
pub use membership::{Change, Membership, SharedMembership};
pub use operators::{InputHandle, ProbeHandle};
pub use plain::Abomonated;
pub use scope::Scope;
pub use stream::Stream;
/// What decoding a batch of `ExchangeData` from another process returns on bad bytes.
pub use timely_communication::exchangeable::DecodeError;
