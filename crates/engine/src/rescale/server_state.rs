//! `ServerState`: what the server side of the bootstrap protocol keeps between steps, in the
//! worker's `Rescaling` (`docs/rescaling.md`).
//!
//! This module owns the joining workers admitted, welcomed and done, the welcome and range
//! requests waiting, and which worker serves each joining process. The protocol that fills it
//! is in `server`.

use std::collections::{BTreeMap, HashSet};
use std::ops::Range;

/// What the server side keeps between steps.
#[derive(Default)]
pub(crate) struct ServerState {
    /// Joining workers that asked for a welcome.
    pub(crate) hellos: Vec<usize>,
    /// Range requests not yet answered: `(from, channel, sender, start, end)`.
    pub(crate) ranges: Vec<(usize, usize, usize, u64, u64)>,
    /// The workers of every process admitted so far.
    pub(super) joined: Vec<Range<usize>>,
    /// Joining workers welcomed and not yet done (on their server).
    pub(super) active: HashSet<usize>,
    /// Joined workers admitted and not yet done: this worker does not end its run before.
    pub(super) admitted: HashSet<usize>,
    /// Joined workers that said they are done (a `Done` can arrive before this worker learns
    /// of the join from its network: the two travel separately).
    pub(super) finished: HashSet<usize>,
    /// Every range request taken, `(from, channel, sender)`: a joiner asks once for each.
    pub(super) requested: HashSet<(usize, usize, usize)>,
    /// Per joining process, the worker that welcomes its workers (this one, or another that
    /// said so with `Serving`).
    pub(super) servers: BTreeMap<usize, usize>,
}

impl ServerState {
    /// True if worker `worker` of a cluster of `peers` workers is one this worker admitted,
    /// or may be one whose join it has not yet learned of (`worker >= peers`): a worker below
    /// `peers` outside every admitted process was there from the start, or is this worker's
    /// own, and never joined.
    pub(super) fn may_have_joined(&self, worker: usize, peers: usize) -> bool {
        worker >= peers || self.joined.iter().any(|workers| workers.contains(&worker))
    }

    /// The joined workers this worker admitted that have not finished their bootstrap.
    pub(crate) fn joining(&self) -> impl Iterator<Item = usize> + '_ {
        self.admitted.iter().copied()
    }

    /// True while a joined worker this worker admitted has not finished its bootstrap.
    pub(super) fn is_busy(&self) -> bool {
        !self.admitted.is_empty()
    }
}
