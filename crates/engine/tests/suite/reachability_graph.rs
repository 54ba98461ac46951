//! Tests of building a scope's reachability graph (`GraphBuilder::build`): on random graphs with
//! arbitrary edges it fails exactly when a cycle can leave a timestamp unchanged (and the graphs
//! it accepts are tracked exactly); hand-written non-advancing cycles, edges to missing nodes or
//! ports, and missing or misshapen nodes are rejected with the matching `GraphError`.
//!
//! The reference, graph specs, strategies and harness are in `reachability_support`.

use crate::reachability_support::*;
use proptest::prelude::*;
use std::collections::BTreeSet;
use timely_engine::progress::reachability::{GraphBuilder, GraphError};
use timely_engine::progress::{Location, Source, Target};
use timely_engine::Antichain;

// ---------------------------------------------------------------------------------------------
// Cycles that can leave a time unchanged, found without the tracker.

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

impl Spec {
    /// True when some cycle can leave a time unchanged.
    fn has_zero_cycle(&self) -> bool {
        self.locations().into_iter().any(|l| zero_reach(self, l).contains(&l))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

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
}

// ---------------------------------------------------------------------------------------------
// Hand-written cases.

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
