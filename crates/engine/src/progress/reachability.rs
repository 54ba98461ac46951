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
//! This module owns the graph algorithms; it does not know about operators, channels or
//! workers.

use super::antichain::{Antichain, MutableAntichain};
use super::change_batch::ChangeBatch;
use super::location::{Location, Port, Source, Target};
use super::timestamp::{PathSummary, Timestamp};
use crate::order::PartialOrder;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;

/// `summary[input][output]`: the path summaries from an operator input to an operator output.
pub type Summary<T> = Vec<Vec<Antichain<<T as Timestamp>::Summary>>>;

/// Summaries from each port to each scope output (`[port][output]`).
type PortSummaries<S> = Vec<Vec<Antichain<S>>>;

/// Per source, the targets of its node that lead to it and their internal summaries.
type SummariesInto<'a, S> = Vec<Vec<(usize, &'a Antichain<S>)>>;

/// Why a graph cannot be tracked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GraphError {
    /// Node 0 (the outside world) was not added.
    MissingScopeNode,
    /// An edge or index names an operator that was not added.
    UnknownNode(usize),
    /// An edge names a port the operator does not have.
    UnknownPort(Location),
    /// An operator's summary does not match its number of inputs and outputs.
    SummaryShape(usize),
    /// A cycle through this location does not advance timestamps: it would never complete.
    NonAdvancingCycle(Location),
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::MissingScopeNode => write!(f, "the scope's node 0 (outside world) is missing"),
            GraphError::UnknownNode(n) => write!(f, "operator {} does not exist in this scope", n),
            GraphError::UnknownPort(l) => write!(f, "port {:?} does not exist", l),
            GraphError::SummaryShape(n) => {
                write!(f, "operator {}: summary shape does not match its inputs and outputs", n)
            }
            GraphError::NonAdvancingCycle(l) => write!(
                f,
                "a cycle through {:?} does not advance timestamps (a loop needs a feedback edge with a non-zero summary)",
                l
            ),
        }
    }
}

impl std::error::Error for GraphError {}

struct NodeShape<T: Timestamp> {
    inputs: usize,
    outputs: usize,
    summary: Summary<T>,
}

/// Collects the shape of a scope: operators, their summaries, and edges.
pub struct GraphBuilder<T: Timestamp> {
    nodes: Vec<Option<NodeShape<T>>>,
    edges: Vec<(Source, Target)>,
}

impl<T: Timestamp> Default for GraphBuilder<T> {
    fn default() -> Self {
        GraphBuilder { nodes: Vec::new(), edges: Vec::new() }
    }
}

impl<T: Timestamp> GraphBuilder<T> {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds operator `index` with its internal `summary[input][output]`.
    pub fn add_node(&mut self, index: usize, inputs: usize, outputs: usize, summary: Summary<T>) {
        if self.nodes.len() <= index {
            self.nodes.resize_with(index + 1, || None);
        }
        self.nodes[index] = Some(NodeShape { inputs, outputs, summary });
    }

    /// Connects an operator output to an operator input.
    pub fn add_edge(&mut self, source: Source, target: Target) {
        self.edges.push((source, target));
    }

    /// Compiles the graph into a tracker, and returns the summaries from each scope input to
    /// each scope output (`[input][output]`).
    pub fn build(self) -> Result<(Tracker<T>, Summary<T>), GraphError> {
        let layout = Layout::new(&self.nodes)?;
        let mut internal = vec![Vec::new(); layout.targets.len()];
        for (node, shape) in self.nodes.iter().enumerate() {
            let shape = shape.as_ref().expect("validated by Layout::new");
            for (input, row) in shape.summary.iter().enumerate() {
                for (output, summaries) in row.iter().enumerate() {
                    if !summaries.is_empty() && node != 0 {
                        let source = layout.source_id(Source::new(node, output));
                        internal[layout.target_id(Target::new(node, input))]
                            .push((source, summaries.clone()));
                    }
                }
            }
        }
        let mut edges = vec![Vec::new(); layout.sources.len()];
        for (source, target) in self.edges.iter() {
            let s = layout.checked_source(*source)?;
            let t = layout.checked_target(*target)?;
            if !edges[s].contains(&t) {
                edges[s].push(t);
            }
        }
        let graph = Graph { layout, internal, edges };
        graph.check_cycles()?;
        let (per_location, scope_summary) = graph.summarize_outputs();
        Ok((Tracker::new(graph, per_location), scope_summary))
    }
}

/// Dense numbering of the ports of a scope.
struct Layout {
    target_base: Vec<usize>,
    source_base: Vec<usize>,
    targets: Vec<Target>,
    sources: Vec<Source>,
}

impl Layout {
    fn new<T: Timestamp>(nodes: &[Option<NodeShape<T>>]) -> Result<Self, GraphError> {
        let mut layout = Layout {
            target_base: Vec::new(),
            source_base: Vec::new(),
            targets: Vec::new(),
            sources: Vec::new(),
        };
        if nodes.first().is_none_or(|n| n.is_none()) {
            return Err(GraphError::MissingScopeNode);
        }
        for (node, shape) in nodes.iter().enumerate() {
            let shape = shape.as_ref().ok_or(GraphError::UnknownNode(node))?;
            let shaped = shape.summary.len() == shape.inputs
                && shape.summary.iter().all(|row| row.len() == shape.outputs);
            if !shaped {
                return Err(GraphError::SummaryShape(node));
            }
            layout.target_base.push(layout.targets.len());
            layout.source_base.push(layout.sources.len());
            layout.targets.extend((0..shape.inputs).map(|port| Target::new(node, port)));
            layout.sources.extend((0..shape.outputs).map(|port| Source::new(node, port)));
        }
        Ok(layout)
    }

    fn ports(&self, node: usize, base: &[usize], total: usize) -> usize {
        base.get(node + 1).copied().unwrap_or(total) - base[node]
    }

    fn checked_source(&self, s: Source) -> Result<usize, GraphError> {
        if s.node >= self.source_base.len() {
            return Err(GraphError::UnknownNode(s.node));
        }
        if s.port >= self.ports(s.node, &self.source_base, self.sources.len()) {
            return Err(GraphError::UnknownPort(s.into()));
        }
        Ok(self.source_id(s))
    }

    fn checked_target(&self, t: Target) -> Result<usize, GraphError> {
        if t.node >= self.target_base.len() {
            return Err(GraphError::UnknownNode(t.node));
        }
        if t.port >= self.ports(t.node, &self.target_base, self.targets.len()) {
            return Err(GraphError::UnknownPort(t.into()));
        }
        Ok(self.target_id(t))
    }

    #[inline]
    fn source_id(&self, s: Source) -> usize {
        debug_assert!(s.port < self.outputs(s.node), "no port {:?}", s);
        self.source_base[s.node] + s.port
    }

    #[inline]
    fn target_id(&self, t: Target) -> usize {
        debug_assert!(t.port < self.inputs(t.node), "no port {:?}", t);
        self.target_base[t.node] + t.port
    }

    fn inputs(&self, node: usize) -> usize {
        self.ports(node, &self.target_base, self.targets.len())
    }

    fn outputs(&self, node: usize) -> usize {
        self.ports(node, &self.source_base, self.sources.len())
    }
}

/// A port id in the combined numbering used by searches: targets even, sources odd.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Port2 {
    T(usize),
    S(usize),
}

/// The compiled graph: internal connections per input, edges per output.
struct Graph<T: Timestamp> {
    layout: Layout,
    /// Per target id: the outputs of its operator it reaches, with path summaries.
    internal: Vec<Vec<(usize, Antichain<T::Summary>)>>,
    /// Per source id: the target ids it feeds.
    edges: Vec<Vec<usize>>,
}

impl<T: Timestamp> Graph<T> {
    /// Successors of a port with the summary of the step.
    fn successors(&self, port: Port2, mut visit: impl FnMut(Port2, &T::Summary)) {
        let identity = T::Summary::default();
        match port {
            Port2::T(t) => {
                for (s, summaries) in &self.internal[t] {
                    for summary in summaries.elements() {
                        visit(Port2::S(*s), summary);
                    }
                }
            }
            Port2::S(s) => {
                for t in &self.edges[s] {
                    visit(Port2::T(*t), &identity);
                }
            }
        }
    }

    fn location(&self, port: Port2) -> Location {
        match port {
            Port2::T(t) => self.layout.targets[t].into(),
            Port2::S(s) => self.layout.sources[s].into(),
        }
    }

    fn index(&self, port: Port2) -> usize {
        match port {
            Port2::T(t) => 2 * t,
            Port2::S(s) => 2 * s + 1,
        }
    }

    fn port(&self, index: usize) -> Port2 {
        if index.is_multiple_of(2) {
            Port2::T(index / 2)
        } else {
            Port2::S(index / 2)
        }
    }

    /// Rejects graphs with a cycle whose summary does not strictly advance timestamps.
    ///
    /// Only ports in non-trivial strongly connected components are searched, and each
    /// search stays inside its component.
    fn check_cycles(&self) -> Result<(), GraphError> {
        let count = 2 * self.layout.targets.len().max(self.layout.sources.len());
        let component = self.strongly_connected(count);
        let identity = T::Summary::default();
        for start in 0..count {
            let Some(c) = component[start] else { continue };
            let start_port = self.port(start);
            // Minimal summaries from `start` to ports of its component (only those reached).
            let mut reached: std::collections::HashMap<usize, Antichain<T::Summary>> = Default::default();
            let mut work = vec![(start_port, identity.clone())];
            while let Some((port, summary)) = work.pop() {
                self.successors(port, |next, step| {
                    let i = self.index(next);
                    if component[i] != Some(c) {
                        return;
                    }
                    if let Some(total) = summary.followed_by(step) {
                        if reached.entry(i).or_default().insert(total.clone()) {
                            work.push((next, total));
                        }
                    }
                });
                if reached.get(&start).is_some_and(|a| a.elements().iter().any(|s| s.less_equal(&identity))) {
                    return Err(GraphError::NonAdvancingCycle(self.location(start_port)));
                }
            }
        }
        Ok(())
    }

    /// Tarjan's algorithm (iterative); ports in trivial components (no cycle) get `None`.
    fn strongly_connected(&self, count: usize) -> Vec<Option<usize>> {
        let mut index = vec![usize::MAX; count];
        let mut low = vec![0; count];
        let mut on_stack = vec![false; count];
        let mut stack = Vec::new();
        let mut component = vec![None; count];
        let mut next_index = 0;
        let mut next_component = 0;
        let exists = |i: usize| match self.port(i) {
            Port2::T(t) => t < self.layout.targets.len(),
            Port2::S(s) => s < self.layout.sources.len(),
        };
        for root in (0..count).filter(|&i| exists(i)) {
            if index[root] != usize::MAX {
                continue;
            }
            // (port, successors, position among successors)
            let mut call: Vec<(usize, Vec<usize>, usize)> = Vec::new();
            let succ = |i: usize| {
                let mut out = Vec::new();
                self.successors(self.port(i), |p, _| out.push(self.index(p)));
                out
            };
            index[root] = next_index;
            low[root] = next_index;
            next_index += 1;
            stack.push(root);
            on_stack[root] = true;
            call.push((root, succ(root), 0));
            while let Some((v, succs, pos)) = call.last_mut() {
                let v = *v;
                if *pos < succs.len() {
                    let w = succs[*pos];
                    *pos += 1;
                    if index[w] == usize::MAX {
                        index[w] = next_index;
                        low[w] = next_index;
                        next_index += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        call.push((w, succ(w), 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                } else {
                    call.pop();
                    if let Some((parent, _, _)) = call.last() {
                        low[*parent] = low[*parent].min(low[v]);
                    }
                    if low[v] == index[v] {
                        let mut members = Vec::new();
                        loop {
                            let w = stack.pop().expect("tarjan stack");
                            on_stack[w] = false;
                            members.push(w);
                            if w == v {
                                break;
                            }
                        }
                        let self_loop = {
                            let mut found = false;
                            self.successors(self.port(v), |p, _| found |= self.index(p) == v);
                            found
                        };
                        if members.len() > 1 || self_loop {
                            for w in members {
                                component[w] = Some(next_component);
                            }
                            next_component += 1;
                        }
                    }
                }
            }
        }
        component
    }

    /// Summaries from every port to every scope output, walking edges backwards from the
    /// scope outputs. Returns per-port summaries (`[port][output]`, only for ports of
    /// nodes other than 0) and the scope summary (`[scope input][scope output]`).
    fn summarize_outputs(&self) -> (PortSummaries<T::Summary>, Summary<T>) {
        let layout = &self.layout;
        let scope_outputs = layout.inputs(0);
        let scope_inputs = layout.outputs(0);
        // Reverse adjacency.
        let mut into_target: Vec<Vec<usize>> = vec![Vec::new(); layout.targets.len()];
        for (s, targets) in self.edges.iter().enumerate() {
            for t in targets {
                into_target[*t].push(s);
            }
        }
        let mut into_source: SummariesInto<T::Summary> = vec![Vec::new(); layout.sources.len()];
        for (t, outs) in self.internal.iter().enumerate() {
            for (s, summaries) in outs {
                into_source[*s].push((t, summaries));
            }
        }
        let slots = 2 * layout.targets.len().max(layout.sources.len());
        let mut reach: PortSummaries<T::Summary> = vec![vec![Antichain::new(); scope_outputs]; slots];
        let mut work: Vec<(Port2, usize, T::Summary)> = Vec::new();
        let scope_output_targets = (0..scope_outputs).map(|output| layout.target_id(Target::new(0, output)));
        for (output, t) in scope_output_targets.enumerate() {
            reach[self.index(Port2::T(t))][output].insert(Default::default());
            work.push((Port2::T(t), output, Default::default()));
        }
        while let Some((port, output, summary)) = work.pop() {
            match port {
                Port2::T(t) => {
                    for s in &into_target[t] {
                        if reach[self.index(Port2::S(*s))][output].insert(summary.clone()) {
                            work.push((Port2::S(*s), output, summary.clone()));
                        }
                    }
                }
                Port2::S(s) if layout.sources[s].node != 0 => {
                    for (t, summaries) in &into_source[s] {
                        for step in summaries.elements() {
                            if let Some(total) = step.followed_by(&summary) {
                                if reach[self.index(Port2::T(*t))][output].insert(total.clone()) {
                                    work.push((Port2::T(*t), output, total));
                                }
                            }
                        }
                    }
                }
                Port2::S(_) => {} // a scope input: the path leaves through the parent.
            }
        }
        let scope_summary = (0..scope_inputs)
            .map(|input| reach[self.index(Port2::S(layout.source_id(Source::new(0, input))))].clone())
            .collect();
        for (i, summaries) in reach.iter_mut().enumerate() {
            let node = match self.port(i) {
                Port2::T(t) => layout.targets.get(t).map(|t| t.node),
                Port2::S(s) => layout.sources.get(s).map(|s| s.node),
            };
            if node == Some(0) {
                summaries.iter_mut().for_each(|a| a.clear());
            }
        }
        (reach, scope_summary)
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
