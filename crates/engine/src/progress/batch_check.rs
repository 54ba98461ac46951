//! Checks of progress batches against the scope they are for.
//!
//! This module owns [`ScopePorts`], the number of input and output ports of every node of a
//! scope, and the check that every location a batch names is one of them; the check of what a
//! joining worker's server sends it ([`ScopePorts::check_bootstrap`]: the progress state and
//! ranges, whose locations must be ports too and whose deltas must add up without overflow,
//! [`MAX_BOOTSTRAP_MAGNITUDE`]); and [`OutOfSequence`], what the ledger ([`super::ledger`]) reports for a batch whose sequence
//! number does not follow on. Batches arrive from
//! other processes: an index past the scope's nodes or a node's ports would otherwise make the
//! tracker index out of bounds, allocate without limit, or (a port of the wrong node) change
//! another operator's frontier silently. It must not apply batches nor decide what a
//! violation does.

use super::location::{Location, Port};

/// Per node of a scope (node 0, the scope's boundary, first): its input and output ports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScopePorts {
    nodes: Vec<(usize, usize)>,
}

impl ScopePorts {
    /// The ports of a scope whose node `i` has `nodes[i]` (inputs, outputs).
    pub fn new(nodes: Vec<(usize, usize)>) -> ScopePorts {
        ScopePorts { nodes }
    }

    /// Checks that `location` is a port of this scope.
    ///
    /// # Errors
    ///
    /// What is out of range.
    pub fn check(&self, location: &Location) -> Result<(), PortError> {
        let node = location.node;
        let Some(&(inputs, outputs)) = self.nodes.get(node) else {
            return Err(PortError::NoNode { node, nodes: self.nodes.len() });
        };
        let (kind, port, ports) = match location.port {
            Port::Target(port) => ("input", port, inputs),
            Port::Source(port) => ("output", port, outputs),
        };
        if port < ports {
            Ok(())
        } else {
            Err(PortError::NoPort { kind, port, node, ports })
        }
    }

    /// Checks every location of `updates`.
    ///
    /// # Errors
    ///
    /// The first location out of range, described.
    pub fn check_all<'a, T: 'a>(
        &self,
        updates: impl IntoIterator<Item = &'a ((Location, T), i64)>,
    ) -> Result<(), PortError> {
        updates.into_iter().try_for_each(|((location, _), _)| self.check(location))
    }

    /// Checks the updates of a joining worker's progress state and ranges, all of them before
    /// any is applied: every location is a port of this scope, and the deltas' magnitudes add
    /// up to at most [`MAX_BOOTSTRAP_MAGNITUDE`], so that no sum of them, in the ledger or the
    /// tracker, can overflow.
    ///
    /// # Errors
    ///
    /// The first location out of range, or the bound exceeded, described.
    pub fn check_bootstrap<'a, T: 'a>(
        &self,
        updates: impl IntoIterator<Item = &'a ((Location, T), i64)>,
    ) -> Result<(), BootstrapError> {
        let mut magnitude: u64 = 0;
        for ((location, _), delta) in updates {
            self.check(location)?;
            magnitude = magnitude.saturating_add(delta.unsigned_abs());
            if magnitude > MAX_BOOTSTRAP_MAGNITUDE {
                return Err(BootstrapError::TooLarge { delta: *delta, node: location.node });
            }
        }
        Ok(())
    }
}

/// A location that is not a port of the scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    /// A node past the scope's.
    #[error("node {node} of a scope of {nodes} nodes")]
    NoNode {
        /// The node named.
        node: usize,
        /// The scope's nodes.
        nodes: usize,
    },
    /// A port past the node's.
    #[error("{kind} {port} of node {node}, which has {ports}")]
    NoPort {
        /// `input` or `output`.
        kind: &'static str,
        /// The port named.
        port: usize,
        /// Its node.
        node: usize,
        /// The node's ports of that kind.
        ports: usize,
    },
}

/// What a joining worker's server sent that it cannot apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BootstrapError {
    /// An update at a location that is not a port of the scope.
    #[error("a progress update at {0}")]
    Port(#[from] PortError),
    /// Deltas whose magnitudes add up past [`MAX_BOOTSTRAP_MAGNITUDE`].
    #[error(
        "progress updates whose deltas add up to more than {MAX_BOOTSTRAP_MAGNITUDE} in magnitude (the \
         last, {delta} at node {node}): counts that large would overflow"
    )]
    TooLarge {
        /// The delta that took the sum past the bound.
        delta: i64,
        /// Its node.
        node: usize,
    },
}

/// The most the magnitudes of the deltas in a joining worker's progress state and ranges may
/// add up to (2^62): far beyond any real count of capabilities or messages, and half of what
/// an `i64` holds, so that adding them to the other counts of a scope (the deltas of batches
/// received, at most [`super::magnitude::MAX_RECEIVED_MAGNITUDE`] = 2^61, and this worker's
/// own, far smaller) cannot overflow.
pub const MAX_BOOTSTRAP_MAGNITUDE: u64 = 1 << 62;

/// A batch whose sequence number is not the next of its sender: one was lost, repeated or
/// forged, and progress can no longer be tracked exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfSequence {
    /// The worker that sent the batch.
    pub source: usize,
    /// The sequence number its next batch must carry.
    pub expected: u64,
    /// The sequence number the batch carried.
    pub received: u64,
}

impl std::fmt::Display for OutOfSequence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let OutOfSequence { source, expected, received } = self;
        write!(f, "progress protocol error: expected batch {expected} from worker {source} but received batch {received}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ports_of_the_scope_pass() {
        // Node 0: the boundary of a scope with one input and no output; node 1: 2 in, 1 out.
        let ports = ScopePorts::new(vec![(0, 1), (2, 1)]);
        for good in [Location::source(0, 0), Location::target(1, 1), Location::source(1, 0)] {
            assert_eq!(ports.check(&good), Ok(()), "{good:?}");
        }
        let cases = [
            (Location::target(2, 0), "node 2 of a scope of 2 nodes"),
            (Location::target(usize::MAX, 0), "of a scope of 2 nodes"),
            (Location::target(0, 0), "input 0 of node 0, which has 0"),
            (Location::target(1, 2), "input 2 of node 1, which has 2"),
            (Location::source(1, usize::MAX), "which has 1"),
        ];
        for (bad, reason) in cases {
            let error = ports.check(&bad).expect_err(reason).to_string();
            assert!(error.contains(reason), "{error}");
        }
        let updates = [((Location::source(1, 0), 3u64), 1), ((Location::target(1, 5), 3), -1)];
        let error = PortError::NoPort { kind: "input", port: 5, node: 1, ports: 2 };
        assert_eq!(ports.check_all(&updates), Err(error));
        assert_eq!(error.to_string(), "input 5 of node 1, which has 2");
    }

    #[test]
    fn bootstrap_updates_name_ports_and_add_up_without_overflow() {
        let ports = ScopePorts::new(vec![(0, 1), (2, 1)]);
        let at = |delta: i64| ((Location::source(1, 0), 0u64), delta);
        let bound = MAX_BOOTSTRAP_MAGNITUDE as i64;
        assert_eq!(ports.check_bootstrap(&[at(bound / 2), at(-bound / 2)]), Ok(()));
        let stranger = [at(1), ((Location::target(3, 0), 0), 1)];
        let error = ports.check_bootstrap(&stranger).expect_err("node 3").to_string();
        assert!(error.contains("a progress update at node 3 of a scope of 2 nodes"), "{error}");
        for too_much in [vec![at(i64::MAX), at(i64::MAX)], vec![at(i64::MIN)], vec![at(bound), at(-1)]] {
            let error = ports.check_bootstrap(&too_much).expect_err("too large").to_string();
            assert!(error.contains("add up to more than 4611686018427387904"), "{error}");
        }
    }
}
