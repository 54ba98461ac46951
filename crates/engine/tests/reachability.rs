//! Tests of the reachability tracker (`progress::reachability`) against an independent reference.
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
//! advance, so every cycle advances. A second generator allows any edge and checks that
//! `build` rejects exactly the graphs with a cycle that can leave a timestamp unchanged.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;
use timely_engine::progress::reachability::{GraphBuilder, GraphError, Summary, Tracker};
use timely_engine::progress::{Location, Port, Source, Target};
use timely_engine::{Antichain, ChangeBatch, Product};

type T = Product<u64, u64>;

fn p(outer: u64, inner: u64) -> T {
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

fn sorted(times: &[T]) -> Vec<T> {
    let mut out = times.to_vec();
    out.sort();
    out
}

/// Per port, the minimal times that can reach it from `seeds` (see the module doc).
fn reference(spec: &Spec, seeds: impl IntoIterator<Item = (Location, T)>) -> BTreeMap<Location, Vec<T>> {
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

/// Locations that `from` reaches in one or more steps that can leave a time unchanged.
fn zero_reach(spec: &Spec, from: Location) -> BTreeSet<Location> {
    let mut reached = BTreeSet::new();
    let mut work = vec![from];
    while let Some(location) = work.pop() {
        for (next, step) in spec.steps_from(location) {
            if step == p(0, 0) && reached.insert(next) {
                work.push(next);
            }
        }
    }
    reached
}

// ---------------------------------------------------------------------------------------------
// Graph specs, from which both the tracker's graph and the reference are derived.

#[derive(Clone, Debug)]
struct Op {
    inputs: usize,
    outputs: usize,
    /// Edges may enter it from any operator: all its steps strictly advance.
    feedback: bool,
    /// `steps[input][output]`: the steps of that internal connection (not necessarily minimal).
    steps: Vec<Vec<Vec<T>>>,
}

#[derive(Clone, Debug)]
struct Spec {
    scope_inputs: usize,
    scope_outputs: usize,
    /// Operator `n` is `ops[n - 1]`.
    ops: Vec<Op>,
    /// Possibly with duplicates.
    edges: Vec<(Source, Target)>,
}

impl Spec {
    /// A spec whose edges are `picks` (indices into sources and targets, modulo their
    /// numbers), keeping only structured edges unless `any_edge`.
    fn new(
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

    fn node_count(&self) -> usize {
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

    fn targets(&self) -> Vec<Target> {
        (0..self.node_count()).flat_map(|n| (0..self.inputs(n)).map(move |p| Target::new(n, p))).collect()
    }

    fn sources(&self) -> Vec<Source> {
        (0..self.node_count()).flat_map(|n| (0..self.outputs(n)).map(move |p| Source::new(n, p))).collect()
    }

    fn locations(&self) -> Vec<Location> {
        let targets = self.targets().into_iter().map(Location::from);
        targets.chain(self.sources().into_iter().map(Location::from)).collect()
    }

    /// One step of the reference search: internal connections of operators other than node 0,
    /// and edges (with the identity step).
    fn steps_from(&self, location: Location) -> Vec<(Location, T)> {
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

    fn builder(&self) -> GraphBuilder<T> {
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

    fn build(&self) -> (Tracker<T>, Summary<T>) {
        self.builder().build().unwrap_or_else(|e| panic!("{:?} for {:?}", e, self))
    }

    /// True when some cycle can leave a time unchanged.
    fn has_zero_cycle(&self) -> bool {
        self.locations().into_iter().any(|l| zero_reach(self, l).contains(&l))
    }
}

fn op(inputs: usize, outputs: usize, steps: Vec<Vec<Vec<T>>>) -> Op {
    Op { inputs, outputs, feedback: false, steps }
}

/// One input, one output, connected by `step`.
fn pipe(step: T) -> Op {
    op(1, 1, vec![vec![vec![step]]])
}

fn feedback(step: T) -> Op {
    Op { feedback: true, ..pipe(step) }
}

fn edge((a, i): (usize, usize), (b, j): (usize, usize)) -> (Source, Target) {
    (Source::new(a, i), Target::new(b, j))
}

/// The scope summary as lists of steps (the summary of an operator standing for the scope).
fn summary_steps(summary: &Summary<T>) -> Vec<Vec<Vec<T>>> {
    summary.iter().map(|row| row.iter().map(|a| sorted(a.elements())).collect()).collect()
}

/// `summary[i][j]` must be the minimal steps from scope input `i` to scope output `j`.
fn check_scope_summary(spec: &Spec, summary: &Summary<T>) -> Result<(), TestCaseError> {
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

fn arb_op() -> impl Strategy<Value = Op> {
    let advancing = select(vec![vec![p(0, 1)], vec![p(1, 0)], vec![p(1, 0), p(0, 1)], vec![p(1, 1)]]);
    let feedback = advancing.prop_map(|steps| Op { feedback: true, ..op(1, 1, vec![vec![steps]]) });
    let regular = (0..=3usize, 0..=3usize)
        .prop_flat_map(|(i, o)| vec(vec(arb_steps(), o), i).prop_map(move |steps| op(i, o, steps)));
    prop_oneof![1 => feedback, 3 => regular]
}

fn arb_picks() -> impl Strategy<Value = Vec<(usize, usize)>> {
    vec((any::<usize>(), any::<usize>()), 0..=24)
}

fn arb_spec(
    scope_ports: RangeInclusive<usize>,
    ops: RangeInclusive<usize>,
    any_edge: bool,
) -> impl Strategy<Value = Spec> {
    (scope_ports.clone(), scope_ports, vec(arb_op(), ops), arb_picks())
        .prop_map(move |(inputs, outputs, ops, picks)| Spec::new(inputs, outputs, ops, &picks, any_edge))
}

/// A change to the pointstamps, resolved against the live ones by `resolve`.
#[derive(Clone, Debug)]
enum Action {
    /// Adds `count` pointstamps at candidate location `at` (modulo the number of candidates).
    Add { at: usize, time: (u64, u64), count: i64 },
    /// Removes live pointstamps number `which` (modulo the number live), if any.
    Remove { which: usize },
}

/// Batches of actions; `propagate_all` runs after each batch.
fn arb_batches() -> impl Strategy<Value = Vec<Vec<Action>>> {
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
fn resolve(batches: &[Vec<Action>], candidates: usize) -> Vec<Vec<(usize, T, i64)>> {
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
struct Harness {
    spec: Spec,
    tracker: Tracker<T>,
    counts: BTreeMap<(Location, T), i64>,
    pushed: ChangeBatch<(Target, T)>,
    pushed_output: Vec<ChangeBatch<T>>,
}

impl Harness {
    fn new(spec: Spec) -> Self {
        let (tracker, _) = spec.build();
        let pushed_output = vec![ChangeBatch::new(); spec.scope_outputs];
        Harness { spec, tracker, counts: BTreeMap::new(), pushed: ChangeBatch::new(), pushed_output }
    }

    fn update(&mut self, location: Location, time: T, delta: i64) {
        self.tracker.update(location, time, delta);
        *self.counts.entry((location, time)).or_default() += delta;
    }

    fn propagate(&mut self) {
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
    fn check(&mut self) -> Result<(), TestCaseError> {
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
fn run(spec: Spec, batches: &[Vec<Action>], order: Option<&[u64]>) -> Result<(), TestCaseError> {
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
// Nested scopes: a scope summarized as one operator of its parent, and the same graph flattened.

/// Outer operator `x` is the scope whose graph is `inner`.
struct Nesting {
    outer: Spec,
    inner: Spec,
    x: usize,
}

impl Nesting {
    /// Where a location of an inner operator lives in the flattened graph.
    fn lift(&self, location: Location) -> Location {
        Location { node: self.outer.node_count() - 1 + location.node, ..location }
    }

    /// The outer graph with `x` emptied (kept as a node without ports, so outer indices stay)
    /// and the inner operators appended; edges through the scope's ports are composed.
    fn flatten(&self) -> Spec {
        let mut ops = self.outer.ops.clone();
        ops[self.x - 1] = op(0, 0, Vec::new());
        ops.extend(self.inner.ops.iter().cloned());
        let outer = &self.outer.edges;
        assert!(!outer.iter().any(|(s, t)| s.node == self.x && t.node == self.x), "an edge from x to x");
        let mut edges: Vec<_> =
            outer.iter().filter(|(s, t)| s.node != self.x && t.node != self.x).cloned().collect();
        let lift_source = |s: Source| Source::new(self.lift(s.into()).node, s.port);
        let lift_target = |t: Target| Target::new(self.lift(t.into()).node, t.port);
        for (s, t) in &self.inner.edges {
            let from: Vec<Source> = match s.node {
                0 => {
                    outer.iter().filter(|(_, o)| *o == Target::new(self.x, s.port)).map(|(o, _)| *o).collect()
                }
                _ => vec![lift_source(*s)],
            };
            let to: Vec<Target> = match t.node {
                0 => {
                    outer.iter().filter(|(o, _)| *o == Source::new(self.x, t.port)).map(|(_, o)| *o).collect()
                }
                _ => vec![lift_target(*t)],
            };
            edges.extend(from.iter().flat_map(|f| to.iter().map(move |t| (*f, *t))));
        }
        Spec { ops, edges, ..self.outer.clone() }
    }

    /// Pointstamp candidates: (in the inner scope?, location there, location when flattened).
    fn candidates(&self) -> Vec<(bool, Location, Location)> {
        let outer = self.outer.locations().into_iter().filter(|l| l.node != self.x).map(|l| (false, l, l));
        let inner =
            self.inner.locations().into_iter().filter(|l| l.node != 0).map(|l| (true, l, self.lift(l)));
        outer.chain(inner).collect()
    }
}

/// One round of the protocol between a scope presented as operator `x` and its parent:
/// internal capabilities go up as `x`'s output capabilities, the parent's frontier at `x`'s
/// inputs comes down as capabilities of the scope's node 0.
fn exchange(outer: &mut Tracker<T>, inner: &mut Tracker<T>, x: usize) -> Result<(), TestCaseError> {
    inner.propagate_all();
    inner.pushed().clear();
    for (output, changes) in inner.pushed_output().iter_mut().enumerate() {
        for (time, delta) in changes.drain() {
            outer.update_source(Source::new(x, output), time, delta);
        }
    }
    outer.propagate_all();
    for ((target, time), delta) in outer.pushed().drain() {
        if target.node == x {
            inner.update_source(Source::new(0, target.port), time, delta);
        }
    }
    inner.propagate_all();
    inner.pushed().clear();
    let leaked = inner.pushed_output().iter_mut().any(|c| !c.is_empty());
    prop_assert!(!leaked, "pointstamps at the scope's inputs were projected on its outputs");
    Ok(())
}

fn same_frontier(a: &Tracker<T>, at_a: Target, b: &Tracker<T>, at_b: Target) -> Result<(), TestCaseError> {
    let (fa, fb) = (sorted(a.frontier(at_a).frontier()), sorted(b.frontier(at_b).frontier()));
    prop_assert_eq!(fa, fb, "frontier at {:?} (nested) and {:?} (flattened)", at_a, at_b);
    Ok(())
}

/// Runs the nested trackers and the flattened one side by side, comparing every frontier.
fn run_nested(nesting: &Nesting, batches: &[Vec<Action>]) -> Result<(), TestCaseError> {
    let (mut outer, _) = nesting.outer.build();
    let (mut inner, _) = nesting.inner.build();
    let mut flat = Harness::new(nesting.flatten());
    let candidates = nesting.candidates();
    for batch in resolve(batches, candidates.len()) {
        for (at, time, delta) in batch {
            let (in_inner, location, flat_location) = candidates[at];
            let tracker = if in_inner { &mut inner } else { &mut outer };
            tracker.update(location, time, delta);
            flat.update(flat_location, time, delta);
        }
        exchange(&mut outer, &mut inner, nesting.x)?;
        flat.propagate();
        flat.check()?;
        for target in nesting.outer.targets().into_iter().filter(|t| t.node != nesting.x) {
            same_frontier(&outer, target, &flat.tracker, target)?;
        }
        for target in nesting.inner.targets().into_iter().filter(|t| t.node != 0) {
            let lifted = Target::new(nesting.lift(target.into()).node, target.port);
            same_frontier(&inner, target, &flat.tracker, lifted)?;
        }
    }
    prop_assert!(!outer.tracking_anything() && !inner.tracking_anything());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// (1) Frontiers, pushed changes, output projections, scope summaries and idleness on
    /// random graphs whose cycles all advance.
    #[test]
    fn tracker_matches_reference_on_random_graphs(spec in arb_spec(0..=2, 1..=8, false), batches in arb_batches()) {
        let (_, summary) = spec.build();
        check_scope_summary(&spec, &summary)?;
        run(spec, &batches, None)?;
    }

    /// Batches applied out of order (negative counts in between) still give exact frontiers.
    #[test]
    fn tracker_tolerates_batches_in_any_order(
        spec in arb_spec(0..=2, 1..=8, false),
        batches in arb_batches(),
        keys in vec(any::<u64>(), 9),
    ) {
        run(spec, &batches, Some(&keys))?;
    }

    /// (4) With arbitrary edges, `build` fails exactly when a cycle can leave a time unchanged,
    /// naming a location on such a cycle; accepted graphs are tracked like the others.
    #[test]
    fn build_rejects_exactly_the_non_advancing_cycles(spec in arb_spec(0..=2, 1..=6, true), batches in arb_batches()) {
        match spec.builder().build() {
            Err(GraphError::NonAdvancingCycle(location)) => {
                prop_assert!(zero_reach(&spec, location).contains(&location), "{:?} is on no non-advancing cycle", location);
            }
            Err(other) => prop_assert!(false, "unexpected {:?}", other),
            Ok((_, summary)) => {
                prop_assert!(!spec.has_zero_cycle(), "a non-advancing cycle was accepted");
                check_scope_summary(&spec, &summary)?;
                run(spec, &batches, None)?;
            }
        }
    }

    /// (2) A scope summarized as one operator loses no precision: the parent's frontiers and the
    /// scope's own (fed with the parent's frontier at its inputs) equal the flattened graph's.
    #[test]
    fn nested_scope_equals_flattened_graph(
        inner in arb_spec(1..=2, 1..=4, false),
        outer_ports in (0..=2usize, 0..=2usize),
        outer_ops in vec(arb_op(), 1..=5),
        x in any::<usize>(),
        picks in arb_picks(),
        batches in arb_batches(),
    ) {
        let (_, summary) = inner.build();
        let x = 1 + x % outer_ops.len();
        let mut ops = outer_ops;
        ops[x - 1] = op(inner.scope_inputs, inner.scope_outputs, summary_steps(&summary));
        let outer = Spec::new(outer_ports.0, outer_ports.1, ops, &picks, false);
        run_nested(&Nesting { outer, inner, x }, &batches)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Hand-written cases.

/// A tracker for `spec` after applying `updates` and propagating.
fn tracked(spec: &Spec, updates: &[(Location, T, i64)]) -> Tracker<T> {
    let (mut tracker, _) = spec.build();
    for (location, time, delta) in updates {
        tracker.update(*location, *time, *delta);
    }
    tracker.propagate_all();
    tracker
}

fn frontier(tracker: &Tracker<T>, node: usize, port: usize) -> Vec<T> {
    sorted(tracker.frontier(Target::new(node, port)).frontier())
}

/// Two independent identity pipelines: scope input `i` feeds only scope output `i`.
fn two_pipelines() -> Spec {
    let edges = vec![edge((0, 0), (1, 0)), edge((1, 0), (0, 0)), edge((0, 1), (2, 0)), edge((2, 0), (0, 1))];
    Spec { scope_inputs: 2, scope_outputs: 2, ops: vec![pipe(p(0, 0)), pipe(p(0, 0))], edges }
}

/// (3) The seed's precision case: a capability feeding the scope's input 0 does not hold back
/// what its output 1 feeds, because input 0 does not reach output 1.
#[test]
fn scope_summary_keeps_independent_paths_apart() {
    let inner = two_pipelines();
    let (mut inner_tracker, summary) = inner.build();
    assert_eq!(summary_steps(&summary), vec![vec![vec![p(0, 0)], vec![]], vec![vec![], vec![p(0, 0)]]]);

    // Outer: 1 holds capabilities on two outputs, 2 is the scope, 3 and 4 consume its outputs.
    let outer_with = |scope: Op| Spec {
        scope_inputs: 0,
        scope_outputs: 0,
        ops: vec![op(0, 2, Vec::new()), scope, op(1, 0, vec![vec![]]), op(1, 0, vec![vec![]])],
        edges: vec![edge((1, 0), (2, 0)), edge((1, 1), (2, 1)), edge((2, 0), (3, 0)), edge((2, 1), (4, 0))],
    };
    let caps = [(Location::source(1, 0), p(0, 0), 1), (Location::source(1, 1), p(5, 0), 1)];
    let outer = outer_with(op(2, 2, summary_steps(&summary)));
    let mut tracker = tracked(&outer, &caps);
    assert_eq!(frontier(&tracker, 3, 0), vec![p(0, 0)]);
    assert_eq!(frontier(&tracker, 4, 0), vec![p(5, 0)], "input 0's capability holds back output 1");

    // The scope itself learns the frontier at each of its inputs separately.
    exchange(&mut tracker, &mut inner_tracker, 2).unwrap();
    assert_eq!(frontier(&inner_tracker, 1, 0), vec![p(0, 0)]);
    assert_eq!(frontier(&inner_tracker, 2, 0), vec![p(5, 0)]);

    // Releasing the capability feeding input 1 empties output 1's frontier only.
    tracker.update(caps[1].0, caps[1].1, -1);
    tracker.propagate_all();
    assert_eq!(frontier(&tracker, 3, 0), vec![p(0, 0)]);
    assert_eq!(frontier(&tracker, 4, 0), Vec::<T>::new());

    // For contrast: a summary connecting everything to everything would hold output 1 back.
    let lossy = outer_with(op(2, 2, vec![vec![vec![p(0, 0)]; 2]; 2]));
    assert_eq!(frontier(&tracked(&lossy, &caps), 4, 0), vec![p(0, 0)]);
}

/// An operator (1) whose output loops back to its input through feedback (2) advancing `step`.
fn feedback_loop(step: T) -> Spec {
    let edges = vec![edge((1, 0), (2, 0)), edge((2, 0), (1, 0))];
    Spec { scope_inputs: 0, scope_outputs: 0, ops: vec![pipe(p(0, 0)), feedback(step)], edges }
}

/// (4) A capability at (0,0) does not hold back its own operator's input at (0,0).
#[test]
fn feedback_lets_an_operator_be_notified_of_its_own_capability() {
    let spec = feedback_loop(p(0, 1));
    let mut tracker = tracked(&spec, &[(Location::source(1, 0), p(0, 0), 1)]);
    assert_eq!(frontier(&tracker, 1, 0), vec![p(0, 1)]);
    assert_eq!(frontier(&tracker, 2, 0), vec![p(0, 0)]);

    // A message at (0,0) waiting at the input holds it back until consumed.
    tracker.update(Location::target(1, 0), p(0, 0), 1);
    tracker.propagate_all();
    assert_eq!(frontier(&tracker, 1, 0), vec![p(0, 0)]);
    tracker.update(Location::target(1, 0), p(0, 0), -1);
    tracker.propagate_all();
    assert_eq!(frontier(&tracker, 1, 0), vec![p(0, 1)]);
}

#[test]
fn feedback_with_integer_timestamps() {
    let mut builder = GraphBuilder::<u64>::new();
    builder.add_node(0, 0, 0, Vec::new());
    builder.add_node(1, 1, 1, vec![vec![Antichain::from_elem(0)]]);
    builder.add_node(2, 1, 1, vec![vec![Antichain::from_elem(1)]]);
    builder.add_edge(Source::new(1, 0), Target::new(2, 0));
    builder.add_edge(Source::new(2, 0), Target::new(1, 0));
    let (mut tracker, _) = builder.build().expect("the loop advances");
    tracker.update_source(Source::new(1, 0), 3, 1);
    tracker.propagate_all();
    assert_eq!(tracker.frontier(Target::new(1, 0)).frontier(), &[4]);
    assert_eq!(tracker.frontier(Target::new(2, 0)).frontier(), &[3]);
}

fn build_error(spec: &Spec) -> Option<GraphError> {
    spec.builder().build().err()
}

fn assert_non_advancing(spec: &Spec, nodes: &[usize]) {
    match build_error(spec) {
        Some(GraphError::NonAdvancingCycle(location)) => {
            assert!(nodes.contains(&location.node), "{:?}", location)
        }
        other => panic!("expected a non-advancing cycle, got {:?}", other),
    }
}

#[test]
fn cycles_that_do_not_advance_are_rejected() {
    assert_non_advancing(&feedback_loop(p(0, 0)), &[1, 2]);
    let self_loop = Spec {
        scope_inputs: 0,
        scope_outputs: 0,
        ops: vec![pipe(p(0, 0))],
        edges: vec![edge((1, 0), (1, 0))],
    };
    assert_non_advancing(&self_loop, &[1]);
    // An advancing path around the loop does not excuse a parallel identity path.
    let mut parallel = feedback_loop(p(0, 1));
    parallel.ops.push(pipe(p(0, 0)));
    parallel.edges.extend([edge((1, 0), (3, 0)), edge((3, 0), (1, 0))]);
    assert_non_advancing(&parallel, &[1, 3]);
    // An internal summary advancing on one path only ((0,0) among its steps) is no feedback.
    let mut mixed = feedback_loop(p(0, 1));
    mixed.ops[1] = Op { feedback: true, ..op(1, 1, vec![vec![vec![p(0, 1), p(0, 0)]]]) };
    assert_non_advancing(&mixed, &[1, 2]);
}

#[test]
fn edges_to_missing_nodes_and_ports_are_rejected() {
    let with_edge = |e: (Source, Target)| Spec { edges: vec![e], ..feedback_loop(p(0, 1)) };
    let cases = [
        (edge((1, 0), (5, 0)), GraphError::UnknownNode(5)),
        (edge((9, 0), (1, 0)), GraphError::UnknownNode(9)),
        (edge((1, 0), (2, 1)), GraphError::UnknownPort(Location::target(2, 1))),
        (edge((1, 3), (2, 0)), GraphError::UnknownPort(Location::source(1, 3))),
        (edge((1, 0), (0, 0)), GraphError::UnknownPort(Location::target(0, 0))),
        (edge((0, 0), (1, 0)), GraphError::UnknownPort(Location::source(0, 0))),
    ];
    for (e, expected) in cases {
        assert_eq!(build_error(&with_edge(e)), Some(expected), "edge {:?}", e);
    }
}

#[test]
fn missing_and_misshapen_nodes_are_rejected() {
    let mut no_scope = GraphBuilder::<T>::new();
    no_scope.add_node(1, 0, 0, Vec::new());
    assert_eq!(no_scope.build().err(), Some(GraphError::MissingScopeNode));

    let mut gap = GraphBuilder::<T>::new();
    gap.add_node(0, 0, 0, Vec::new());
    gap.add_node(2, 0, 0, Vec::new());
    assert_eq!(gap.build().err(), Some(GraphError::UnknownNode(1)));

    let mut misshapen = GraphBuilder::<T>::new();
    misshapen.add_node(0, 0, 0, Vec::new());
    misshapen.add_node(1, 2, 1, vec![vec![Antichain::new()]]);
    assert_eq!(misshapen.build().err(), Some(GraphError::SummaryShape(1)));
}

/// (5) `tracking_anything` and `node_is_idle` follow the counts, not the number of updates.
#[test]
fn idleness_follows_the_counts() {
    // 1 -> 2, identity.
    let spec = Spec {
        scope_inputs: 0,
        scope_outputs: 0,
        ops: vec![op(0, 1, Vec::new()), op(1, 0, vec![vec![]])],
        edges: vec![edge((1, 0), (2, 0))],
    };
    let (mut tracker, _) = spec.build();
    let cap = Source::new(1, 0);
    assert!(!tracker.tracking_anything() && tracker.node_is_idle(1) && tracker.node_is_idle(2));

    tracker.update_source(cap, p(1, 0), 1);
    assert!(tracker.tracking_anything(), "unapplied changes count");
    tracker.propagate_all();
    tracker.update_source(cap, p(1, 0), 1);
    tracker.update_source(cap, p(2, 0), 1);
    tracker.propagate_all();
    let busy = |t: &mut Tracker<T>| t.tracking_anything() && !t.node_is_idle(1) && !t.node_is_idle(2);
    for (time, expect_busy) in [(p(1, 0), true), (p(2, 0), true), (p(1, 0), false)] {
        assert!(busy(&mut tracker));
        tracker.update_source(cap, time, -1);
        tracker.propagate_all();
        assert_eq!(busy(&mut tracker), expect_busy, "after removing {:?}", time);
    }
    assert!(!tracker.tracking_anything() && tracker.node_is_idle(1) && tracker.node_is_idle(2));

    // Changes that cancel before propagation leave nothing to track.
    tracker.update_source(cap, p(3, 0), 1);
    tracker.update_source(cap, p(3, 0), -1);
    assert!(!tracker.tracking_anything());

    // A message waiting at 2's input keeps 2 busy and leaves 1 idle.
    tracker.update_target(Target::new(2, 0), p(0, 0), 1);
    tracker.propagate_all();
    assert!(tracker.tracking_anything() && tracker.node_is_idle(1) && !tracker.node_is_idle(2));
}
