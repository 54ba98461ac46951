//! The engine's integration tests, in one test binary: a module per area, and the helpers
//! they share declared once here. Each binary links the whole engine and compiles its
//! generic operators again, so one binary instead of one per file saves most of the
//! tests' build time. Run one area with a filter, e.g.
//! `cargo test --release -p timely-engine --test suite -- rescaling::`.
//!
//! proptest saves the failing cases of module `x` in `tests/proptest-regressions/x.txt` (a
//! directory beside the nearest one above the source that holds a `main.rs`: this one) and
//! runs them again first.

/// The communication crate's test helpers (timeouts, free loopback ports, cluster
/// configurations): one copy, so that every test takes its ports from one counter.
#[path = "../../../communication/tests/common/mod.rs"]
mod common;
mod leaving_support;
mod model_support;
mod operators_support;
mod randomized_support;
mod reachability_support;

mod admission_model;
mod bootstrap_model;
mod cluster;
mod hashing;
mod joining_during_leave;
mod leave_model;
mod leaving;
mod leaving_at_once;
mod leaving_dataflows;
mod leaving_held;
mod leaving_joined_dataflows;
mod leaving_refusals;
mod leaving_sources;
mod leaving_unbuilt;
mod leaving_unbuilt_after_join;
mod logging;
mod loops_smoke;
mod operators_builtin;
mod operators_execute;
mod operators_generic;
mod operators_handles;
mod operators_scopes;
mod operators_timely_style;
mod randomized;
mod randomized_joining;
mod randomized_leaving;
mod reachability_graph;
mod reachability_scopes;
mod reachability_tracker;
mod rescaling;
mod trace;
mod wire_fuzz;
mod wire_input;
mod wire_joins;
mod wire_rescale;
