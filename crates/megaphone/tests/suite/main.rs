//! Megaphone's integration tests, in one test binary: a module per area, and the helpers they
//! share (`common`) declared once here. Each binary links the engine and compiles its generic
//! operators again, so one binary instead of one per file saves most of the tests' build
//! time. Run one area with a filter, e.g. `cargo test --release -p timely-megaphone --test
//! suite -- joins::`.

mod common;

mod built_during_leave;
mod cluster;
mod errors;
mod joins;
mod leaves;
mod migration;
mod never_built;
mod planning;
mod randomized;
