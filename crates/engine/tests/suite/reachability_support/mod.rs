//! Shared by the reachability tests (`reachability_graph.rs`, `reachability_tracker.rs`,
//! `reachability_scopes.rs`): an independent reference for the tracker
//! (`progress::reachability`), graph specs from which both the tracker's graph and the reference
//! are derived, proptest strategies, and a harness that checks a tracker against the reference.
//!
//! The reference knows nothing of the tracker's path summaries. Given a graph spec and the
//! pointstamps with positive count, it explores `(port, time)` pairs: from an input (target)
//! of an operator other than node 0 to that operator's outputs, adding each internal step to
//! the time coordinate-wise; from an output (source) along each edge, time unchanged. Node 0,
//! the world outside the scope, has no internal connectivity. A pair is skipped only when a
//! time less than or equal to it was already visited at the same port: everything reachable
//! from it is then dominated by what is reachable from the earlier pair, because adding is
//! monotone. So the minimal visited times at a port are exactly the minimal times that can
//! ever reach it (its frontier), and the search ends because every antichain of `N x N` is
//! finite (Dickson's lemma). The summary from a port `a` to a port `b` is the frontier at `b`
//! when the only pointstamp is `(a, (0, 0))`, which is how scope summaries are checked.
//!
//! Timestamps are `Product<u64, u64>`; operator steps are small products such as `(0, 0)`,
//! `(1, 0)`, `(0, 1)`. Random "structured" graphs only allow an edge from an operator to one
//! with a lower or equal index when it lands on a feedback operator, whose steps all strictly
//! advance, so every cycle advances. A second generator allows any edge (`reachability_graph.rs`
//! checks that `build` rejects exactly the graphs with a cycle that can leave a timestamp
//! unchanged).

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use timely_engine::progress::reachability::{GraphBuilder, Summary, Tracker};
use timely_engine::progress::{Location, Port, Source, Target};
use timely_engine::{Antichain, ChangeBatch, Product};

pub type T = Product<u64, u64>;

pub fn p(outer: u64, inner: u64) -> T {
    Product::new(outer, inner)
}

// ---------------------------------------------------------------------------------------------
// The reference: written out without the crate's orders, summaries or antichains.

/// Coordinate-wise order.
fn le(a: &T, b: &T) -> bool {
    a.outer <= b.outer && a.inner <= b.inner
}

/// Coordinate-wise addition: a time following a step.
fn add(a: &T, b: &T) -> T {
    p(a.outer + b.outer, a.inner + b.inner)
}

/// The minimal elements of `times`, sorted and deduplicated.
fn minimal(times: &[T]) -> Vec<T> {
    let mut out: Vec<T> =
        times.iter().filter(|t| !times.iter().any(|u| le(u, t) && u != *t)).cloned().collect();
    out.sort();
    out.dedup();
    out
}

pub fn sorted(times: &[T]) -> Vec<T> {
    let mut out = times.to_vec();
    out.sort();
    out
}

/// Per port, the minimal times that can reach it from `seeds` (see the module doc).
pub fn reference(spec: &Spec, seeds: impl IntoIterator<Item = (Location, T)>) -> BTreeMap<Location, Vec<T>> {
    let mut visited: BTreeMap<Location, Vec<T>> = BTreeMap::new();
    let mut work: Vec<(Location, T)> = seeds.into_iter().collect();
    while let Some((location, time)) = work.pop() {
        let seen = visited.entry(location).or_default();
        if seen.iter().any(|s| le(s, &time)) {
            continue;
        }
        seen.push(time);
        for (next, step) in spec.steps_from(location) {
            work.push((next, add(&time, &step)));
        }
    }
    visited.into_iter().map(|(l, times)| (l, minimal(&times))).collect()
}

fn at(frontiers: &BTreeMap<Location, Vec<T>>, location: impl Into<Location>) -> Vec<T> {
    frontiers.get(&location.into()).cloned().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Graph specs, from which both the tracker's graph and the reference are derived.

#[derive(Clone, Debug)]
pub struct Op {
    pub inputs: usize,
    pub outputs: usize,
    /// Edges may enter it from any operator: all its steps strictly advance.
    pub feedback: bool,
    /// `steps[input][output]`: the steps of that internal connection (not necessarily minimal).
    pub steps: Vec<Vec<Vec<T>>>,
}

#[derive(Clone, Debug)]
pub struct Spec {
    pub scope_inputs: usize,
    pub scope_outputs: usize,
    /// Operator `n` is `ops[n - 1]`.
    pub ops: Vec<Op>,
    /// Possibly with duplicates.
    pub edges: Vec<(Source, Target)>,
}

impl Spec {
    /// A spec whose edges are `picks` (indices into sources and targets, modulo their
    /// numbers), keeping only structured edges unless `any_edge`.
    pub fn new(
        scope_inputs: usize,
        scope_outputs: usize,
        ops: Vec<Op>,
        picks: &[(usize, usize)],
        any_edge: bool,
    ) -> Spec {
        let mut spec = Spec { scope_inputs, scope_outputs, ops, edges: Vec::new() };
        let (sources, targets) = (spec.sources(), spec.targets());
        if sources.is_empty() || targets.is_empty() {
            return spec;
        }
        for (a, b) in picks {
            let (s, t) = (sources[a % sources.len()], targets[b % targets.len()]);
            if any_edge || t.node == 0 || s.node < t.node || spec.ops[t.node - 1].feedback {
                spec.edges.push((s, t));
            }
        }
        spec
    }

    pub fn node_count(&self) -> usize {
        self.ops.len() + 1
    }

    fn inputs(&self, node: usize) -> usize {
        if node == 0 {
            self.scope_outputs
        } else {
            self.ops[node - 1].inputs
        }
    }

    fn outputs(&self, node: usize) -> usize {
        if node == 0 {
            self.scope_inputs
        } else {
            self.ops[node - 1].outputs
        }
    }

    pub fn targets(&self) -> Vec<Target> {
        (0..self.node_count()).flat_map(|n| (0..self.inputs(n)).map(move |p| Target::new(n, p))).collect()
    }

    fn sources(&self) -> Vec<Source> {
        (0..self.node_count()).flat_map(|n| (0..self.outputs(n)).map(move |p| Source::new(n, p))).collect()
    }

    pub fn locations(&self) -> Vec<Location> {
        let targets = self.targets().into_iter().map(Location::from);
        targets.chain(self.sources().into_iter().map(Location::from)).collect()
    }

    /// One step of the reference search: internal connections of operators other than node 0,
    /// and edges (with the identity step).
    pub fn steps_from(&self, location: Location) -> Vec<(Location, T)> {
        match location.port {
            Port::Target(_) if location.node == 0 => Vec::new(),
            Port::Target(input) => {
                let op = &self.ops[location.node - 1];
                let rows = op.steps[input].iter().enumerate();
                rows.flat_map(|(output, steps)| {
                    steps.iter().map(move |s| (Location::source(location.node, output), *s))
                })
                .collect()
            }
            Port::Source(output) => {
                let source = Source::new(location.node, output);
                self.edges.iter().filter(|(s, _)| *s == source).map(|(_, t)| ((*t).into(), p(0, 0))).collect()
            }
        }
    }

    pub fn builder(&self) -> GraphBuilder<T> {
        let mut builder = GraphBuilder::new();
        let outside = vec![vec![Antichain::new(); self.scope_inputs]; self.scope_outputs];
        builder.add_node(0, self.scope_outputs, self.scope_inputs, outside);
        for (index, op) in self.ops.iter().enumerate() {
            let summary = op
                .steps
                .iter()
                .map(|row| row.iter().map(|s| s.iter().cloned().collect()).collect())
                .collect();
            builder.add_node(index + 1, op.inputs, op.outputs, summary);
        }
        for (source, target) in &self.edges {
            builder.add_edge(*source, *target);
        }
        builder
    }

    pub fn build(&self) -> (Tracker<T>, Summary<T>) {
        self.builder().build().unwrap_or_else(|e| panic!("{:?} for {:?}", e, self))
    }
}

pub fn op(inputs: usize, outputs: usize, steps: Vec<Vec<Vec<T>>>) -> Op {
    Op { inputs, outputs, feedback: false, steps }
}

/// One input, one output, connected by `step`.
pub fn pipe(step: T) -> Op {
    op(1, 1, vec![vec![vec![step]]])
}

pub fn feedback(step: T) -> Op {
    Op { feedback: true, ..pipe(step) }
}

pub fn edge((a, i): (usize, usize), (b, j): (usize, usize)) -> (Source, Target) {
    (Source::new(a, i), Target::new(b, j))
}

/// The scope summary as lists of steps (the summary of an operator standing for the scope).
pub fn summary_steps(summary: &Summary<T>) -> Vec<Vec<Vec<T>>> {
    summary.iter().map(|row| row.iter().map(|a| sorted(a.elements())).collect()).collect()
}

/// `summary[i][j]` must be the minimal steps from scope input `i` to scope output `j`.
pub fn check_scope_summary(spec: &Spec, summary: &Summary<T>) -> Result<(), TestCaseError> {
    prop_assert_eq!(summary.len(), spec.scope_inputs);
    for (input, row) in summary_steps(summary).into_iter().enumerate() {
        let reached = reference(spec, [(Location::source(0, input), p(0, 0))]);
        prop_assert_eq!(row.len(), spec.scope_outputs);
        for (output, steps) in row.into_iter().enumerate() {
            prop_assert_eq!(
                steps,
                at(&reached, Target::new(0, output)),
                "scope summary [{}][{}]",
                input,
                output
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Strategies.

fn arb_steps() -> impl Strategy<Value = Vec<T>> {
    let step = select(vec![(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (0, 2)]).prop_map(|(a, b)| p(a, b));
    prop_oneof![1 => Just(Vec::new()), 2 => vec(step, 1..=2)]
}

pub fn arb_op() -> impl Strategy<Value = Op> {
    let advancing = select(vec![vec![p(0, 1)], vec![p(1, 0)], vec![p(1, 0), p(0, 1)], vec![p(1, 1)]]);
    let feedback = advancing.prop_map(|steps| Op { feedback: true, ..op(1, 1, vec![vec![steps]]) });
    let regular = (0..=3usize, 0..=3usize)
        .prop_flat_map(|(i, o)| vec(vec(arb_steps(), o), i).prop_map(move |steps| op(i, o, steps)));
    prop_oneof![1 => feedback, 3 => regular]
}

pub fn arb_picks() -> impl Strategy<Value = Vec<(usize, usize)>> {
    vec((any::<usize>(), any::<usize>()), 0..=24)
}

pub fn arb_spec(
    scope_ports: RangeInclusive<usize>,
    ops: RangeInclusive<usize>,
    any_edge: bool,
) -> impl Strategy<Value = Spec> {
    (scope_ports.clone(), scope_ports, vec(arb_op(), ops), arb_picks())
        .prop_map(move |(inputs, outputs, ops, picks)| Spec::new(inputs, outputs, ops, &picks, any_edge))
}

/// A change to the pointstamps, resolved against the live ones by `resolve`.
#[derive(Clone, Debug)]
pub enum Action {
    /// Adds `count` pointstamps at candidate location `at` (modulo the number of candidates).
    Add { at: usize, time: (u64, u64), count: i64 },
    /// Removes live pointstamps number `which` (modulo the number live), if any.
    Remove { which: usize },
}

/// Batches of actions; `propagate_all` runs after each batch.
pub fn arb_batches() -> impl Strategy<Value = Vec<Vec<Action>>> {
    let add = (any::<usize>(), 0..4u64, 0..4u64, 1..=2i64).prop_map(|(at, a, b, count)| Action::Add {
        at,
        time: (a, b),
        count,
    });
    let remove = any::<usize>().prop_map(|which| Action::Remove { which });
    vec(vec(prop_oneof![3 => add, 2 => remove], 1..=4), 1..=8)
}

/// The updates `(candidate, time, delta)` each batch amounts to, given `candidates` locations,
/// followed by a batch removing everything left. Removals only retract live pointstamps, so
/// counts never go negative.
pub fn resolve(batches: &[Vec<Action>], candidates: usize) -> Vec<Vec<(usize, T, i64)>> {
    let mut live: Vec<(usize, T, i64)> = Vec::new();
    let mut resolved: Vec<Vec<_>> = batches
        .iter()
        .map(|batch| {
            let step = |action: &Action| match *action {
                Action::Add { at, time: (a, b), count } if candidates > 0 => {
                    live.push((at % candidates, p(a, b), count));
                    live.last().cloned()
                }
                Action::Remove { which } if !live.is_empty() => {
                    let (at, time, count) = live.swap_remove(which % live.len());
                    Some((at, time, -count))
                }
                _ => None,
            };
            batch.iter().filter_map(step).collect()
        })
        .collect();
    resolved.push(live.into_iter().map(|(at, time, count)| (at, time, -count)).collect());
    resolved
}

// ---------------------------------------------------------------------------------------------
// A tracker beside its expected state.

/// A tracker, the pointstamp counts it was given, and the accumulation of what it pushed.
pub struct Harness {
    spec: Spec,
    pub tracker: Tracker<T>,
    counts: BTreeMap<(Location, T), i64>,
    pushed: ChangeBatch<(Target, T)>,
    pushed_output: Vec<ChangeBatch<T>>,
}

impl Harness {
    pub fn new(spec: Spec) -> Self {
        let (tracker, _) = spec.build();
        let pushed_output = vec![ChangeBatch::new(); spec.scope_outputs];
        Harness { spec, tracker, counts: BTreeMap::new(), pushed: ChangeBatch::new(), pushed_output }
    }

    pub fn update(&mut self, location: Location, time: T, delta: i64) {
        self.tracker.update(location, time, delta);
        *self.counts.entry((location, time)).or_default() += delta;
    }

    pub fn propagate(&mut self) {
        self.tracker.propagate_all();
        self.pushed.extend(self.tracker.pushed().drain());
        for (acc, changes) in self.pushed_output.iter_mut().zip(self.tracker.pushed_output()) {
            acc.extend(changes.drain());
        }
    }

    fn positive(&self) -> Vec<(Location, T)> {
        self.counts.iter().filter(|(_, c)| **c > 0).map(|(k, _)| *k).collect()
    }

    /// Checks every frontier, the accumulated pushes, idleness, against the reference.
    pub fn check(&mut self) -> Result<(), TestCaseError> {
        let positive = self.positive();
        let all = reference(&self.spec, positive.iter().cloned());
        let internal = reference(&self.spec, positive.iter().cloned().filter(|(l, _)| l.node != 0));

        // (a) Inputs: the maintained frontier, and the accumulation of `pushed()`.
        let mut pushed: BTreeMap<Target, Vec<T>> = BTreeMap::new();
        for ((target, time), count) in self.pushed.iter() {
            prop_assert_eq!(*count, 1, "pushed() accumulates to {} for {:?} at {:?}", count, time, target);
            pushed.entry(*target).or_default().push(*time);
        }
        for target in self.spec.targets() {
            let expected = at(&all, target);
            prop_assert_eq!(
                sorted(self.tracker.frontier(target).frontier()),
                expected.clone(),
                "frontier at {:?}",
                target
            );
            let accumulated = pushed.remove(&target).unwrap_or_default();
            prop_assert_eq!(accumulated, expected, "accumulated pushed() at {:?}", target);
        }
        for source in self.spec.sources() {
            let frontier = sorted(self.tracker.source_frontier(source).frontier());
            prop_assert_eq!(frontier, at(&all, source), "frontier at {:?}", source);
        }

        // (b) Scope outputs: internal pointstamps projected on them.
        for (output, changes) in self.pushed_output.iter_mut().enumerate() {
            let changes: Vec<(T, i64)> = changes.iter().cloned().collect();
            prop_assert!(
                changes.iter().all(|(_, c)| *c > 0),
                "negative projection {:?} at output {}",
                changes,
                output
            );
            let times: Vec<T> = changes.iter().map(|(t, _)| *t).collect();
            prop_assert_eq!(
                minimal(&times),
                at(&internal, Target::new(0, output)),
                "pushed_output()[{}]",
                output
            );
        }

        // Idleness.
        prop_assert_eq!(self.tracker.tracking_anything(), !positive.is_empty());
        for node in 0..self.spec.node_count() {
            let inputs_empty = (0..self.spec.inputs(node)).all(|i| at(&all, Target::new(node, i)).is_empty());
            let holds = positive.iter().any(|(l, _)| l.node == node && matches!(l.port, Port::Source(_)));
            prop_assert_eq!(
                self.tracker.node_is_idle(node),
                inputs_empty && !holds,
                "node_is_idle({})",
                node
            );
        }
        Ok(())
    }
}

/// Applies the batches (then removes everything), checking after each `propagate_all`.
///
/// With `order`, the batches (removal included) are applied sorted by these keys instead:
/// as batches from other workers may be, so counts may go negative in between. Frontiers
/// must then reflect the pointstamps with positive count, which is what the reference sees.
pub fn run(spec: Spec, batches: &[Vec<Action>], order: Option<&[u64]>) -> Result<(), TestCaseError> {
    let locations = spec.locations();
    let mut harness = Harness::new(spec);
    let mut resolved: Vec<_> = resolve(batches, locations.len()).into_iter().enumerate().collect();
    if let Some(keys) = order {
        resolved.sort_by_key(|(index, _)| keys[index % keys.len()]);
    }
    for (_, batch) in resolved {
        for (at, time, delta) in batch {
            harness.update(locations[at], time, delta);
        }
        harness.propagate();
        harness.check()?;
    }
    prop_assert!(!harness.tracker.tracking_anything());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Helpers of the hand-written cases.

/// A tracker for `spec` after applying `updates` and propagating.
pub fn tracked(spec: &Spec, updates: &[(Location, T, i64)]) -> Tracker<T> {
    let (mut tracker, _) = spec.build();
    for (location, time, delta) in updates {
        tracker.update(*location, *time, *delta);
    }
    tracker.propagate_all();
    tracker
}

pub fn frontier(tracker: &Tracker<T>, node: usize, port: usize) -> Vec<T> {
    sorted(tracker.frontier(Target::new(node, port)).frontier())
}

/// An operator (1) whose output loops back to its input through feedback (2) advancing `step`.
pub fn feedback_loop(step: T) -> Spec {
    let edges = vec![edge((1, 0), (2, 0)), edge((2, 0), (1, 0))];
    Spec { scope_inputs: 0, scope_outputs: 0, ops: vec![pipe(p(0, 0)), feedback(step)], edges }
}
