//! The communication crate's integration tests, in one test binary: a module per area, and
//! the helpers they share (`../common`, used by the other crates' tests too) declared once
//! here. One binary instead of one per file saves most of the tests' build time. Run one area
//! with a filter, e.g. `cargo test --release -p timely-communication --test suite -- join::`.
//!
//! Two files are binaries of their own, since they change what the whole process shares:
//! `config_environment.rs` sets environment variables, and `join_fuzz.rs` counts the panics
//! of every thread of the process (each says so at its top).

#[path = "../common/mod.rs"]
mod common;

mod clock_sync;
mod cluster;
mod config;
mod frames;
mod inboxes;
mod initialize;
mod join;
mod leave;
mod liveness;
mod networking;
mod process;
mod sealing;
mod setup_keepalive;
mod thread;
