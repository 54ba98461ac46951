//! Tests of the reachability tracker's counts and frontiers (`progress::reachability::Tracker`)
//! against an independent reference: on random graphs whose cycles all advance, every frontier,
//! pushed change, output projection, scope summary and idleness after each batch, also with
//! batches applied out of order; and hand-written cases of feedback loops and idleness.
//!
//! The reference, graph specs, strategies and harness are in `reachability_support`.

use crate::reachability_support::*;
use proptest::collection::vec;
use proptest::prelude::*;
use timely_engine::progress::reachability::{GraphBuilder, Tracker};
use timely_engine::progress::{Location, Source, Target};
use timely_engine::Antichain;

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
}

// ---------------------------------------------------------------------------------------------
// Hand-written cases.

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
