//! A scope at run time: schedules its children and tracks their progress.
//!
//! `SubgraphBuilder` collects a scope's children and edges while a dataflow is described;
//! `Subgraph` is the built scope. Scheduling a subgraph (1) takes the parent's frontier
//! changes for the scope inputs, (2) counts records that entered the scope, (3) receives
//! exchanged progress batches, (4) propagates them through the reachability tracker and
//! hands each child its input-frontier changes, (5) runs the active children in index
//! order, collecting their progress statements, and (6) broadcasts the local statements.
//!
//! The subgraph presents itself to its parent as one operator (`Operate<TOuter>`): its
//! internal summary is the tracker's scope summary, its capabilities are the internal
//! pointstamps projected onto its outputs. Because its statements are derived from already
//! exchanged progress, it is not `local`: the parent applies them without re-broadcasting.
//! Records entering the scope are recorded in the scope's own batch as messages at the
//! targets they reach and a matching decrement at node 0; when that batch comes back from
//! the exchange the decrement is reported to the parent as consumed, so the parent's and
//! the scope's views change in the same atomic step on every worker.

use super::antichain::MutableAntichain;
use super::batch_check::ScopePorts;
use super::broadcast::Progcaster;
use super::change_batch::ChangeBatch;
use super::location::{Location, Port, Source, Target};
use super::operate::{Operate, SharedProgress};
use super::reachability::{GraphBuilder, Summary, Tracker};
use super::timestamp::{ByRefines, Nesting, Refines, Timestamp};
use crate::logging::{self, Event, Logger};
use crate::scheduling::{Activator, ActiveSet};
use crate::Antichain;
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::rc::Rc;

/// A child operator of a scope, with its progress bookkeeping.
struct Child<T: Timestamp> {
    name: String,
    index: usize,
    id: usize,
    local: bool,
    notify: bool,
    operator: Option<Box<dyn Operate<T>>>,
    edges: Vec<Vec<Target>>,
    shared: Rc<RefCell<SharedProgress<T>>>,
    inputs: usize,
    outputs: usize,
    summary: Summary<T>,
}

impl<T: Timestamp> Child<T> {
    fn new(index: usize, id: usize, mut operator: Box<dyn Operate<T>>) -> Self {
        let (summary, shared) = operator.initialize();
        let (inputs, outputs) = (operator.inputs(), operator.outputs());
        assert_eq!(summary.len(), inputs, "operator {}: summary rows must match inputs", operator.name());
        Child {
            name: operator.name().to_owned(),
            index,
            id,
            local: operator.local(),
            notify: operator.notify_me(),
            edges: vec![Vec::new(); outputs],
            operator: Some(operator),
            shared,
            inputs,
            outputs,
            summary,
        }
    }

    /// Runs the operator; returns whether it is still incomplete and, when tracing, whether
    /// the run was useful (without a logger: false).
    fn schedule(&mut self, logger: &Option<Logger>) -> (bool, bool) {
        let Some(operator) = self.operator.as_mut() else { return (false, false) };
        let Some(logger) = logger else { return (operator.schedule(), false) };
        let pushed = self.shared.borrow_mut().frontiers.iter_mut().any(|f| !f.is_empty());
        if pushed {
            logger.log(Event::PushProgress { id: self.id });
        }
        logger.log(Event::Schedule { id: self.id, start: true, useful: false });
        let incomplete = operator.schedule();
        let useful = pushed || self.shared.borrow_mut().reported_anything();
        logger.log(Event::Schedule { id: self.id, start: false, useful });
        (incomplete, useful)
    }

    /// Moves the operator's statements into pointstamp changes.
    fn extract_progress(&mut self, into: &mut ChangeBatch<(Location, T)>) {
        let shared = &mut *self.shared.borrow_mut();
        for (input, consumed) in shared.consumeds.iter_mut().enumerate() {
            for (time, delta) in consumed.drain() {
                into.update((Location::target(self.index, input), time), -delta);
            }
        }
        for (output, internal) in shared.internals.iter_mut().enumerate() {
            for (time, delta) in internal.drain() {
                into.update((Location::source(self.index, output), time), delta);
            }
        }
        for (output, produced) in shared.produceds.iter_mut().enumerate() {
            for (time, delta) in produced.drain() {
                for target in &self.edges[output] {
                    into.update((Location::from(*target), time.clone()), delta);
                }
            }
        }
    }
}

/// Collects a scope's children and edges while the dataflow is described.
pub struct SubgraphBuilder<T: Timestamp> {
    name: String,
    address: Vec<usize>,
    children: Vec<Option<Child<T>>>,
    /// Names of the children, including those reserved but not yet added.
    names: Vec<String>,
    edges: Vec<(Source, Target)>,
    input_messages: Vec<Rc<RefCell<ChangeBatch<T>>>>,
    outputs: usize,
    active: ActiveSet,
    activator: Activator,
    logger: Option<Logger>,
}

impl<T: Timestamp> SubgraphBuilder<T> {
    /// A builder for the scope at `address`, activated by `activator`.
    pub fn new(name: &str, address: Vec<usize>, activator: Activator, logger: Option<Logger>) -> Self {
        SubgraphBuilder {
            name: name.to_owned(),
            address,
            children: vec![None],
            names: vec!["Outside".to_owned()],
            edges: Vec::new(),
            input_messages: Vec::new(),
            outputs: 0,
            active: Default::default(),
            activator,
            logger,
        }
    }

    /// The scope's address: the indices of the enclosing scopes and its own.
    pub fn address(&self) -> &[usize] {
        &self.address
    }

    /// Reserves the index of a child named `name` that will be added later.
    pub fn allocate_child_index(&mut self, name: &str) -> usize {
        self.children.push(None);
        self.names.push(name.to_owned());
        self.children.len() - 1
    }

    /// An activator for child `index`.
    pub fn child_activator(&self, index: usize) -> Activator {
        self.activator.child(&self.active, index)
    }

    /// Adds `operator` as child `index` (reserved with `allocate_child_index`), with a
    /// worker-unique identifier `id`.
    pub fn add_child(&mut self, index: usize, id: usize, operator: Box<dyn Operate<T>>) {
        let child = Child::new(index, id, operator);
        let mut address = self.address.clone();
        address.push(index);
        logging::log(&self.logger, || Event::Operates { id, address, name: child.name.clone() });
        assert!(self.children[index].is_none(), "child {} of scope {:?} added twice", index, self.address);
        self.children[index] = Some(child);
        self.active.borrow_mut().push(index);
    }

    /// Connects an output of one child (or a scope input, node 0) to an input of another
    /// (or a scope output, node 0).
    pub fn connect(&mut self, source: Source, target: Target) {
        self.edges.push((source, target));
    }

    /// Adds a scope input whose entering records are counted in `counts`; returns its index.
    pub fn new_input(&mut self, counts: Rc<RefCell<ChangeBatch<T>>>) -> usize {
        self.input_messages.push(counts);
        self.input_messages.len() - 1
    }

    /// Adds a scope output; returns its index.
    pub fn new_output(&mut self) -> usize {
        self.outputs += 1;
        self.outputs - 1
    }

    /// Builds the scope, to be presented to a parent with timestamp `TOuter`.
    ///
    /// Panics with a description if the graph is malformed (a missing child, an edge to a
    /// missing port, or a cycle that does not advance timestamps).
    pub fn build<TOuter: Timestamp>(self, progcaster: Progcaster<T>) -> Subgraph<TOuter, T>
    where
        T: Refines<TOuter>,
    {
        self.build_nested(progcaster, ByRefines)
    }

    /// Builds the scope, to be presented to a parent with timestamp `TOuter` related to the
    /// scope's by `nesting`. Panics as `build` does.
    pub fn build_nested<TOuter: Timestamp, N: Nesting<TOuter, T>>(
        self,
        mut progcaster: Progcaster<T>,
        nesting: N,
    ) -> Subgraph<TOuter, T, N> {
        let inputs = self.input_messages.len();
        let outputs = self.outputs;
        let mut children: Vec<Child<T>> = Vec::with_capacity(self.children.len());
        for (index, child) in self.children.into_iter().enumerate() {
            match child {
                Some(child) => children.push(child),
                None if index == 0 => children.push(Child {
                    name: "Outside".to_owned(),
                    index: 0,
                    id: usize::MAX,
                    local: false,
                    notify: false,
                    operator: None,
                    edges: vec![Vec::new(); inputs],
                    shared: Rc::new(RefCell::new(SharedProgress::new(outputs, inputs))),
                    inputs: outputs,
                    outputs: inputs,
                    summary: vec![vec![Antichain::new(); inputs]; outputs],
                }),
                None => panic!(
                    "scope {:?} ({}): operator {} ({}) was started but never built{}",
                    self.address,
                    self.name,
                    index,
                    self.names[index],
                    if self.names[index] == "Feedback" {
                        " (a feedback handle must be passed to connect_loop)"
                    } else {
                        ""
                    }
                ),
            }
        }
        let mut graph = GraphBuilder::new();
        for child in children.iter() {
            graph.add_node(child.index, child.inputs, child.outputs, child.summary.clone());
        }
        for (source, target) in self.edges.iter() {
            graph.add_edge(*source, *target);
            if let Some(child) = children.get_mut(source.node) {
                if let Some(edges) = child.edges.get_mut(source.port) {
                    edges.push(*target);
                }
            }
        }
        let (tracker, scope_summary) = match graph.build() {
            Ok(built) => built,
            Err(error) => panic!("scope {:?} ({}): {}", self.address, self.name, error),
        };
        progcaster
            .set_ports(ScopePorts::new(children.iter().map(|child| (child.inputs, child.outputs)).collect()));
        let count = children.len();
        Subgraph {
            name: self.name,
            address: self.address,
            inputs,
            outputs,
            children,
            incomplete: vec![true; count],
            incomplete_count: count - 1,
            active: self.active,
            activator: self.activator,
            heap: BinaryHeap::new(),
            deferred: Vec::new(),
            input_messages: self.input_messages,
            output_capabilities: (0..outputs).map(|_| MutableAntichain::new()).collect(),
            local_batch: ChangeBatch::new(),
            final_batch: ChangeBatch::new(),
            nested: ChangeBatch::new(),
            tracker,
            progcaster,
            shared: Rc::new(RefCell::new(SharedProgress::new(inputs, outputs))),
            scope_summary,
            logger: self.logger,
            worked: false,
            nesting,
        }
    }
}

/// A built scope: schedules its children and tracks their progress. `N` relates its
/// timestamps to its parent's.
pub struct Subgraph<TOuter: Timestamp, TInner: Timestamp, N = ByRefines> {
    name: String,
    address: Vec<usize>,
    inputs: usize,
    outputs: usize,
    children: Vec<Child<TInner>>,
    incomplete: Vec<bool>,
    incomplete_count: usize,
    active: ActiveSet,
    activator: Activator,
    heap: BinaryHeap<Reverse<usize>>,
    deferred: Vec<usize>,
    input_messages: Vec<Rc<RefCell<ChangeBatch<TInner>>>>,
    output_capabilities: Vec<MutableAntichain<TOuter>>,
    /// Statements made by this worker's children, to broadcast.
    local_batch: ChangeBatch<(Location, TInner)>,
    /// Statements already exchanged (received, or from non-local children), to apply.
    final_batch: ChangeBatch<(Location, TInner)>,
    /// Statements of a nested scope (a non-local child), on their way to `final_batch`.
    nested: ChangeBatch<(Location, TInner)>,
    tracker: Tracker<TInner>,
    progcaster: Progcaster<TInner>,
    shared: Rc<RefCell<SharedProgress<TOuter>>>,
    scope_summary: Summary<TInner>,
    logger: Option<Logger>,
    /// Whether a child's run in the latest run of this scope was useful (known only when tracing).
    worked: bool,
    nesting: N,
}

impl<TOuter: Timestamp, TInner: Timestamp, N: Nesting<TOuter, TInner>> Subgraph<TOuter, TInner, N> {
    /// The scope's address.
    pub fn address(&self) -> &[usize] {
        &self.address
    }

    /// Whether a child's run in the scope's latest run was useful (always false when the
    /// scope is not traced: usefulness is only worked out for the trace).
    pub fn worked(&self) -> bool {
        self.worked
    }

    /// The progress channel's identifier (data on it must activate this scope).
    pub fn progress_channel(&self) -> usize {
        self.progcaster.channel()
    }

    /// The progcaster, for bootstrapping joining workers.
    pub fn progcaster(&mut self) -> &mut Progcaster<TInner> {
        &mut self.progcaster
    }

    /// Takes the parent's frontier changes at the scope inputs.
    fn accept_frontier(&mut self) {
        let mut shared = self.shared.borrow_mut();
        for (input, changes) in shared.frontiers.iter_mut().enumerate() {
            for (time, delta) in changes.drain() {
                self.tracker.update_source(Source::new(0, input), self.nesting.to_inner(time), delta);
            }
        }
    }

    /// Records records that entered the scope: messages at the targets they reach, and a
    /// decrement at node 0 that becomes a consumed report once exchanged.
    fn harvest_inputs(&mut self) {
        for (input, counts) in self.input_messages.iter().enumerate() {
            for (time, delta) in counts.borrow_mut().drain() {
                for target in &self.children[0].edges[input] {
                    self.local_batch.update((Location::from(*target), time.clone()), delta);
                }
                self.local_batch.update((Location::source(0, input), time), -delta);
            }
        }
    }

    /// Applies exchanged statements, propagates them, hands frontier changes to children
    /// and reports the scope's own progress to the parent.
    fn propagate(&mut self) {
        {
            let mut shared = self.shared.borrow_mut();
            for ((location, time), delta) in self.final_batch.drain() {
                match (location.node, location.port) {
                    (0, Port::Source(input)) => {
                        shared.consumeds[input].update(self.nesting.to_outer(time), -delta)
                    }
                    (0, Port::Target(output)) => {
                        shared.produceds[output].update(self.nesting.to_outer(time), delta)
                    }
                    _ => self.tracker.update(location, time, delta),
                }
            }
        }
        self.tracker.propagate_all();
        for ((target, time), delta) in self.tracker.pushed().drain() {
            let child = &mut self.children[target.node];
            if target.node != 0 && child.operator.is_some() {
                child.shared.borrow_mut().frontiers[target.port].update(time, delta);
                if child.notify {
                    self.active.borrow_mut().push(target.node);
                }
            }
        }
        let mut shared = self.shared.borrow_mut();
        for (output, changes) in self.tracker.pushed_output().iter_mut().enumerate() {
            let nesting = &self.nesting;
            let outer = changes.drain().map(|(time, delta)| (nesting.to_outer(time), delta));
            for (time, delta) in self.output_capabilities[output].update_iter(outer) {
                shared.internals[output].update(time, delta);
            }
        }
    }

    /// Runs every active child once, in increasing index order. Children activated during
    /// the pass run in the same pass if their index is larger, and in the next otherwise.
    fn schedule_children(&mut self) {
        let mut previous: Option<usize> = None;
        loop {
            self.heap.extend(self.active.borrow_mut().drain(..).map(Reverse));
            let Some(Reverse(index)) = self.heap.pop() else { break };
            while self.heap.peek() == Some(&Reverse(index)) {
                self.heap.pop();
            }
            if previous.is_some_and(|p| index <= p) {
                self.deferred.push(index);
                continue;
            }
            previous = Some(index);
            if index != 0 {
                self.schedule_child(index);
            }
        }
        if !self.deferred.is_empty() {
            self.active.borrow_mut().append(&mut self.deferred);
            self.activator.activate();
        }
    }

    fn schedule_child(&mut self, index: usize) {
        let child = &mut self.children[index];
        let (incomplete, useful) = child.schedule(&self.logger);
        self.worked |= useful;
        if incomplete != self.incomplete[index] {
            self.incomplete[index] = incomplete;
            if incomplete {
                self.incomplete_count += 1;
            } else {
                self.incomplete_count -= 1;
            }
        }
        if child.local {
            child.extract_progress(&mut self.local_batch);
        } else {
            // A nested scope: the records it consumed and produced (message counts, at
            // targets) come from its exchanged batches, whose ledger leaves them out; this
            // scope's ledger keeps them. Its capabilities follow from its own state.
            child.extract_progress(&mut self.nested);
            let messages =
                self.nested.iter().filter(|((location, _), _)| matches!(location.port, Port::Target(_)));
            self.progcaster.ledger().borrow_mut().absorb(messages);
            self.nested.drain_into(&mut self.final_batch);
        }
        if !incomplete && child.operator.is_some() && self.tracker.node_is_idle(index) {
            logging::log(&self.logger, || Event::Shutdown { id: child.id });
            child.operator = None;
        }
    }
}

impl<TOuter: Timestamp, TInner: Timestamp, N: Nesting<TOuter, TInner>> Operate<TOuter>
    for Subgraph<TOuter, TInner, N>
{
    fn name(&self) -> &str {
        &self.name
    }

    fn inputs(&self) -> usize {
        self.inputs
    }

    fn outputs(&self) -> usize {
        self.outputs
    }

    fn local(&self) -> bool {
        false
    }

    fn initialize(&mut self) -> (Summary<TOuter>, Rc<RefCell<SharedProgress<TOuter>>>) {
        let summary = self
            .scope_summary
            .iter()
            .map(|row| {
                row.iter()
                    .map(|a| a.elements().iter().map(|path| self.nesting.summarize(path.clone())).collect())
                    .collect()
            })
            .collect();
        // Initial capabilities are the same on every worker: apply them without exchange.
        for child in self.children.iter_mut() {
            child.extract_progress(&mut self.final_batch);
        }
        self.propagate();
        (summary, self.shared.clone())
    }

    fn schedule(&mut self) -> bool {
        self.worked = false;
        self.accept_frontier();
        self.harvest_inputs();
        self.progcaster.recv(&mut self.final_batch);
        if !self.progcaster.ready() {
            // A joining worker whose progress state is not complete yet runs nothing.
            return true;
        }
        self.propagate();
        self.schedule_children();
        self.progcaster.send(&mut self.local_batch);
        if !self.final_batch.is_empty() {
            self.activator.activate();
        }
        self.incomplete_count > 0 || self.tracker.tracking_anything()
    }
}
