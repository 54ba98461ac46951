//! Tests of nested scopes in reachability tracking: a scope summarized as one operator of its
//! parent (its scope summary) loses no precision. On random nestings the parent's frontiers and
//! the scope's own equal those of the same graph flattened; a hand-written case checks that
//! independent paths through a scope stay apart.
//!
//! The reference, graph specs, strategies and harness are in `reachability_support`.

use crate::reachability_support::*;
use proptest::collection::vec;
use proptest::prelude::*;
use timely_engine::progress::reachability::Tracker;
use timely_engine::progress::{Location, Source, Target};

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
