//! The bytes crate's integration tests, in one test binary: a module per area, and the
//! helpers they share (`common`) declared once here. Run one area with a filter, e.g.
//! `cargo test --release -p timely-bytes --test suite -- slab::`.
//!
//! proptest saves the failing cases of module `x` in `tests/proptest-regressions/x.txt` (a
//! directory beside the nearest one above the source that holds a `main.rs`: this one) and
//! runs them again first.

mod common;

mod bytes_model;
mod slab;
mod threads;
