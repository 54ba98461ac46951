//! Rescaling: workers of processes that join or leave a running cluster (`docs/rescaling.md`).
//!
//! This module owns a worker's part in joins and leaves. It is layered so that dependencies
//! point one way:
//!
//! - the state a worker holds, which knows nothing of the protocols: [`Rescaling`] (`state`:
//!   the registry of what a join must reach and the bootstrap channel), with the state of
//!   each side (`server_state`, `client_state`, `leave_state`), what operators and the
//!   protocol tell each other (`operators`: [`HeldTimes`], [`Initial`]), the [`messages`] and
//!   the trace [`phases`];
//! - the protocols, which work on the worker's state (`crate::worker::WorkerState`, which
//!   holds `Rescaling`): the server side in [`server`], the joining side in [`client`] (its
//!   messages) and `bootstrap` (driven by the worker: the wait for the welcome, the range
//!   requests), leaves in [`leave`] and `stranded`;
//! - `dispatch`, which hands each event of a step to its protocol, and which the worker calls.
//!
//! This file only declares the modules and re-exports what the rest of the engine uses.
//!
//! It must not schedule operators or touch records: joined pushers of data channels are taken
//! by the channels themselves, and a joining worker's scopes hold their operators back until
//! their ledger is ready.

pub(crate) mod bootstrap;
pub mod client;
mod client_state;
mod dispatch;
pub(crate) mod forward_inbox;
pub mod held_report;
pub mod leave;
mod leave_state;
pub mod messages;
mod operators;
pub mod phases;
pub mod server;
mod server_state;
mod state;
pub(crate) mod stranded;
mod violation;

pub(crate) use dispatch::{handle, has_arrivals};
pub use operators::{HeldTimes, Initial};
pub use state::Rescaling;
