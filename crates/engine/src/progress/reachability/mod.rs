//! Reachability: from pointstamp counts to a frontier at every operator input.
//!
//! A scope's graph is built with `GraphBuilder` (operators with their internal summaries,
//! edges from outputs to inputs) and compiled into a `Tracker`. The tracker keeps, for
//! every location, the counts of its pointstamps (messages at inputs, capabilities at
//! outputs) and its *implications*: the minimal times at which anything upstream could
//! still arrive, mapped through the path summaries. Port by port: every input has its own
//! frontier. It also projects internal pointstamps onto the scope's outputs, which is how a
//! nested scope reports capabilities to its parent as if it were one operator.
//!
//! Node 0 is the world outside the scope. Its summary is empty: paths through the parent are
//! accounted for by the parent, which hands the resulting frontier back as pointstamps at
//! node 0's outputs. Those pointstamps are not projected onto scope outputs.
//!
//! The graph itself, its checks and its path summaries are in `graph`; this module owns the
//! tracker's counts and frontiers. Neither knows about operators, channels or workers.

mod graph;

pub use graph::{GraphBuilder, GraphError, Summary};

use super::antichain::{Antichain, MutableAntichain};
use super::change_batch::ChangeBatch;
use super::location::{Location, Port, Source, Target};
use super::timestamp::{PathSummary, Timestamp};
use graph::{Graph, Port2};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

impl<T: Timestamp> GraphBuilder<T> {
    /// Compiles the graph into a tracker, and returns the summaries from each scope input to
    /// each scope output (`[input][output]`).
    pub fn build(self) -> Result<(Tracker<T>, Summary<T>), GraphError> {
        let (graph, per_location, scope_summary) = self.compile()?;
        Ok((Tracker::new(graph, per_location), scope_summary))
    }
}

/// Progress state of one port.
struct PortState<T: Timestamp> {
    /// Counts of pointstamps at this port.
    pointstamps: MutableAntichain<T>,
    /// The frontier of times that could still reach this port.
    implications: MutableAntichain<T>,
    /// Path summaries from this port to each scope output (empty for node 0).
    output_summaries: Vec<Antichain<T::Summary>>,
}

/// Maintains pointstamp counts and the frontier they imply at every port of a scope.
pub struct Tracker<T: Timestamp> {
    graph: Graph<T>,
    targets: Vec<PortState<T>>,
    sources: Vec<PortState<T>>,
    target_changes: ChangeBatch<(usize, T)>,
    source_changes: ChangeBatch<(usize, T)>,
    worklist: BinaryHeap<Reverse<(T, Port2, i64)>>,
    pushed: ChangeBatch<(Target, T)>,
    output_changes: Vec<ChangeBatch<T>>,
    /// Number of elements in all pointstamp frontiers: zero iff nothing is tracked.
    total: i64,
}

impl<T: Timestamp> Tracker<T> {
    fn new(graph: Graph<T>, mut per_location: Vec<Vec<Antichain<T::Summary>>>) -> Self {
        let mut state = |port: Port2| PortState {
            pointstamps: MutableAntichain::new(),
            implications: MutableAntichain::new(),
            output_summaries: std::mem::take(&mut per_location[graph.index(port)]),
        };
        let targets = (0..graph.layout.targets.len()).map(|t| state(Port2::T(t))).collect();
        let sources = (0..graph.layout.sources.len()).map(|s| state(Port2::S(s))).collect();
        let scope_outputs = graph.layout.inputs(0);
        Tracker {
            graph,
            targets,
            sources,
            target_changes: ChangeBatch::new(),
            source_changes: ChangeBatch::new(),
            worklist: BinaryHeap::new(),
            pushed: ChangeBatch::new(),
            output_changes: vec![ChangeBatch::new(); scope_outputs],
            total: 0,
        }
    }

    /// Records a change to the count of pointstamp `(location, time)`.
    #[inline]
    pub fn update(&mut self, location: Location, time: T, delta: i64) {
        match location.port {
            Port::Target(port) => self.update_target(Target::new(location.node, port), time, delta),
            Port::Source(port) => self.update_source(Source::new(location.node, port), time, delta),
        }
    }

    /// Records a change to the count of messages at an operator input.
    #[inline]
    pub fn update_target(&mut self, target: Target, time: T, delta: i64) {
        let id = self.graph.layout.target_id(target);
        self.target_changes.update((id, time), delta);
    }

    /// Records a change to the count of capabilities at an operator output.
    #[inline]
    pub fn update_source(&mut self, source: Source, time: T, delta: i64) {
        let id = self.graph.layout.source_id(source);
        self.source_changes.update((id, time), delta);
    }

    /// Applies recorded changes and circulates their implications to every port.
    ///
    /// Afterwards `pushed()` holds the frontier changes at operator inputs and
    /// `pushed_output()` the changes of internal pointstamps projected onto scope outputs.
    pub fn propagate_all(&mut self) {
        for ((id, time), delta) in self.target_changes.drain() {
            let port = &mut self.targets[id];
            Self::apply_pointstamp(
                port,
                Port2::T(id),
                time,
                delta,
                &mut self.total,
                &mut self.output_changes,
                &mut self.worklist,
            );
        }
        for ((id, time), delta) in self.source_changes.drain() {
            let port = &mut self.sources[id];
            Self::apply_pointstamp(
                port,
                Port2::S(id),
                time,
                delta,
                &mut self.total,
                &mut self.output_changes,
                &mut self.worklist,
            );
        }
        // Process in increasing time so that a time's net change is final when it is first popped.
        while let Some(Reverse((time, port, mut delta))) = self.worklist.pop() {
            while let Some(Reverse((t, p, d))) = self.worklist.peek() {
                if *t == time && *p == port {
                    delta += *d;
                    self.worklist.pop();
                } else {
                    break;
                }
            }
            if delta == 0 {
                continue;
            }
            match port {
                Port2::T(id) => {
                    let target = self.graph.layout.targets[id];
                    for (time, delta) in self.targets[id].implications.update_iter(Some((time, delta))) {
                        for (source, summaries) in &self.graph.internal[id] {
                            for summary in summaries.elements() {
                                if let Some(next) = summary.results_in(&time) {
                                    self.worklist.push(Reverse((next, Port2::S(*source), delta)));
                                }
                            }
                        }
                        self.pushed.update((target, time), delta);
                    }
                }
                Port2::S(id) => {
                    for (time, delta) in self.sources[id].implications.update_iter(Some((time, delta))) {
                        for target in &self.graph.edges[id] {
                            self.worklist.push(Reverse((time.clone(), Port2::T(*target), delta)));
                        }
                    }
                }
            }
        }
    }

    fn apply_pointstamp(
        port: &mut PortState<T>,
        id: Port2,
        time: T,
        delta: i64,
        total: &mut i64,
        output_changes: &mut [ChangeBatch<T>],
        worklist: &mut BinaryHeap<Reverse<(T, Port2, i64)>>,
    ) {
        for (time, delta) in port.pointstamps.update_iter(Some((time, delta))) {
            *total += delta;
            for (output, summaries) in port.output_summaries.iter().enumerate() {
                for summary in summaries.elements() {
                    if let Some(out) = summary.results_in(&time) {
                        output_changes[output].update(out, delta);
                    }
                }
            }
            worklist.push(Reverse((time, id, delta)));
        }
    }

    /// Frontier changes at operator inputs produced by `propagate_all`.
    pub fn pushed(&mut self) -> &mut ChangeBatch<(Target, T)> {
        &mut self.pushed
    }

    /// Per scope output: changes of internal pointstamps projected onto it.
    pub fn pushed_output(&mut self) -> &mut [ChangeBatch<T>] {
        &mut self.output_changes
    }

    /// True while any pointstamp has positive count or changes are unapplied.
    pub fn tracking_anything(&mut self) -> bool {
        self.total > 0 || !self.target_changes.is_empty() || !self.source_changes.is_empty()
    }

    /// The frontier at an operator input (or scope output).
    pub fn frontier(&self, target: Target) -> &MutableAntichain<T> {
        &self.targets[self.graph.layout.target_id(target)].implications
    }

    /// The frontier of times that could still appear at an operator output.
    pub fn source_frontier(&self, source: Source) -> &MutableAntichain<T> {
        &self.sources[self.graph.layout.source_id(source)].implications
    }

    /// True when operator `node` holds no capabilities and no input can receive anything.
    pub fn node_is_idle(&self, node: usize) -> bool {
        let layout = &self.graph.layout;
        let inputs = (0..layout.inputs(node)).all(|p| self.frontier(Target::new(node, p)).is_empty());
        let outputs = (0..layout.outputs(node))
            .all(|p| self.sources[layout.source_id(Source::new(node, p))].pointstamps.is_empty());
        inputs && outputs
    }

    /// True when removing the pointstamp `(location, time)` could change a frontier: no
    /// other pointstamp at the location is less or equal.
    pub fn is_global(&mut self, location: Location, time: &T) -> bool {
        let port = match location.port {
            Port::Target(p) => &mut self.targets[self.graph.layout.target_id(Target::new(location.node, p))],
            Port::Source(p) => &mut self.sources[self.graph.layout.source_id(Source::new(location.node, p))],
        };
        let dominated = port.implications.frontier().iter().any(|t| t.less_than(time));
        !dominated && port.implications.count_for(time) <= 1
    }
}
