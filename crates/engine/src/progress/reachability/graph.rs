//! A scope's graph: `GraphBuilder` collects operators with their internal summaries and the
//! edges between their ports, checks them, and compiles them into a `Graph` with a dense
//! numbering of ports, the path summaries from every port to every scope output, and those
//! from every scope input to every scope output. Cycles that do not advance timestamps are
//! rejected here.
//!
//! This module owns the graph's shape and its path algorithms; it must not hold pointstamps
//! or frontiers (that is the `Tracker` of the parent module).

use crate::order::PartialOrder;
use crate::progress::antichain::Antichain;
use crate::progress::location::{Location, Source, Target};
use crate::progress::timestamp::{PathSummary, Timestamp};
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

    /// Checks and compiles the graph: the compiled graph, the summaries from each port to each
    /// scope output (`[port index][output]`), and those from each scope input to each scope
    /// output (`[input][output]`).
    pub(super) fn compile(self) -> Result<Compiled<T>, GraphError> {
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
        Ok((graph, per_location, scope_summary))
    }
}

/// What `GraphBuilder::compile` returns: the graph, the summaries from each port to each scope
/// output, and those from each scope input to each scope output.
pub(super) type Compiled<T> = (Graph<T>, PortSummaries<<T as Timestamp>::Summary>, Summary<T>);

/// Dense numbering of the ports of a scope.
pub(super) struct Layout {
    target_base: Vec<usize>,
    source_base: Vec<usize>,
    /// Every operator input, by target id.
    pub(super) targets: Vec<Target>,
    /// Every operator output, by source id.
    pub(super) sources: Vec<Source>,
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
    pub(super) fn source_id(&self, s: Source) -> usize {
        debug_assert!(s.port < self.outputs(s.node), "no port {:?}", s);
        self.source_base[s.node] + s.port
    }

    #[inline]
    pub(super) fn target_id(&self, t: Target) -> usize {
        debug_assert!(t.port < self.inputs(t.node), "no port {:?}", t);
        self.target_base[t.node] + t.port
    }

    pub(super) fn inputs(&self, node: usize) -> usize {
        self.ports(node, &self.target_base, self.targets.len())
    }

    pub(super) fn outputs(&self, node: usize) -> usize {
        self.ports(node, &self.source_base, self.sources.len())
    }
}

/// A port id in the combined numbering used by searches: targets even, sources odd.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Port2 {
    T(usize),
    S(usize),
}

/// The compiled graph: internal connections per input, edges per output.
pub(super) struct Graph<T: Timestamp> {
    pub(super) layout: Layout,
    /// Per target id: the outputs of its operator it reaches, with path summaries.
    pub(super) internal: Vec<Vec<(usize, Antichain<T::Summary>)>>,
    /// Per source id: the target ids it feeds.
    pub(super) edges: Vec<Vec<usize>>,
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

    pub(super) fn index(&self, port: Port2) -> usize {
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
