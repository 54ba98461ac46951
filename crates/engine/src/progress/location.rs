//! Locations in a scope's graph: operator inputs (`Target`) and outputs (`Source`).
//!
//! Node 0 of every scope stands for the world outside it: its outputs are the scope's
//! inputs and its inputs are the scope's outputs.

use serde::{Deserialize, Serialize};

/// An operator output (or, for node 0, a scope input): where capabilities live.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Source {
    /// The operator's index in its scope.
    pub node: usize,
    /// The output port.
    pub port: usize,
}

/// An operator input (or, for node 0, a scope output): where messages wait.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Target {
    /// The operator's index in its scope.
    pub node: usize,
    /// The input port.
    pub port: usize,
}

impl Source {
    /// The output `port` of operator `node`.
    pub fn new(node: usize, port: usize) -> Self {
        Source { node, port }
    }
}

impl Target {
    /// The input `port` of operator `node`.
    pub fn new(node: usize, port: usize) -> Self {
        Target { node, port }
    }
}

/// Either kind of port.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Port {
    /// An input port (messages).
    Target(usize),
    /// An output port (capabilities).
    Source(usize),
}

/// A port of an operator: the place a pointstamp `(location, time)` refers to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Location {
    /// The operator's index in its scope.
    pub node: usize,
    /// Which port of the operator.
    pub port: Port,
}

impl Location {
    /// The input `port` of `node`.
    pub fn target(node: usize, port: usize) -> Self {
        Location { node, port: Port::Target(port) }
    }
    /// The output `port` of `node`.
    pub fn source(node: usize, port: usize) -> Self {
        Location { node, port: Port::Source(port) }
    }
}

impl From<Source> for Location {
    fn from(s: Source) -> Self {
        Location::source(s.node, s.port)
    }
}

impl From<Target> for Location {
    fn from(t: Target) -> Self {
        Location::target(t.node, t.port)
    }
}
