//! Checks of progress batches against the scope they are for.
//!
//! This module owns [`ScopePorts`], the number of input and output ports of every node of a
//! scope, and the check that every location a batch names is one of them; and
//! [`OutOfSequence`], what the ledger ([`super::ledger`]) reports for a batch whose sequence
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
    pub fn check(&self, location: &Location) -> Result<(), String> {
        let Some(&(inputs, outputs)) = self.nodes.get(location.node) else {
            return Err(format!("node {} of a scope of {} nodes", location.node, self.nodes.len()));
        };
        let (kind, port, ports) = match location.port {
            Port::Target(port) => ("input", port, inputs),
            Port::Source(port) => ("output", port, outputs),
        };
        if port < ports {
            Ok(())
        } else {
            Err(format!("{kind} {port} of node {}, which has {ports}", location.node))
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
    ) -> Result<(), String> {
        updates.into_iter().try_for_each(|((location, _), _)| self.check(location))
    }
}

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
            let error = ports.check(&bad).expect_err(reason);
            assert!(error.contains(reason), "{error}");
        }
        let updates = [((Location::source(1, 0), 3u64), 1), ((Location::target(1, 5), 3), -1)];
        assert_eq!(ports.check_all(&updates), Err("input 5 of node 1, which has 2".into()));
    }
}
