//! Progress tracking: timestamps, frontiers, reachability and the progress protocol.
//!
//! This module owns everything needed to decide which times may still arrive at which
//! operator input: the timestamp traits (and `VecTime`, timestamps of any depth), antichains and change batches, the per-scope
//! reachability `Tracker`, the `Operate` interface through which operators describe their
//! shape and report progress, the `Subgraph` that schedules a scope, the `Progcaster`
//! that exchanges progress batches between workers, and the checks of received batches
//! (`batch_check`, `magnitude`). It does not know about streams, data channels or the Python layer.

pub mod antichain;
pub mod change_batch;
pub mod location;
pub mod reachability;
pub mod timestamp;
pub mod vec_time;

pub use antichain::{Antichain, MutableAntichain};
pub use change_batch::ChangeBatch;
pub use location::{Location, Port, Source, Target};
pub use timestamp::{ByRefines, Nesting, PathSummary, Refines, Timestamp};
pub use vec_time::{VecLoop, VecTime};
pub mod batch_check;
pub mod broadcast;
pub mod ledger;
pub mod magnitude;
pub mod operate;
pub mod subgraph;

pub use broadcast::{Progcaster, ProgressBatch};
pub use ledger::{JoinDataError, Ledger, ScopeLedger};
pub use magnitude::ReceivedMagnitude;
pub use operate::{Operate, SharedProgress};
pub use subgraph::{Subgraph, SubgraphBuilder};
