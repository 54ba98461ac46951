//! The trace crate's integration tests, in one test binary (one link of Arrow and Parquet
//! instead of one per file): a module per area. Run one area with a filter, e.g.
//! `cargo test --release -p timely-trace --test suite -- writer::`.
//!
//! proptest saves the failing cases of module `x` in `tests/proptest-regressions/x.txt` (a
//! directory beside the nearest one above the source that holds a `main.rs`: this one) and
//! runs them again first.

mod file_encoding;
mod writer;
