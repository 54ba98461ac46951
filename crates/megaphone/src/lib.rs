//! Megaphone: keyed stateful operators whose state lives in bins that a routing table assigns
//! to workers, and that move between workers while the dataflow runs.
//!
//! Layout: `bins` (key to bin), `table` (bin to worker, commands), `schedule` (the table in force
//! at each time), `strategy`
//! (planning a migration as timed commands, rebalancing), `controller` (a program's planned
//! table and the moves it has yet to send), `departures` (processes that leave: which workers
//! left the table and where their bins go), `codec` (how records and bin state
//! cross processes, through the engine's `ExchangeData`), `state` (the bin state that the
//! operator pair shares on one worker), `routing` (the routing state, and how a worker that
//! joined assembles it), `commands` (operator C: commands to every worker), `handover`
//! (operator K: the routing state to workers that join), `leaving` (what C, F and the data
//! edge share while processes leave), `router` (operator F), `stateful`
//! (operator S), `operators` (the user-facing keyed operators). `docs/megaphone.md` describes the model and
//! the guarantee. This crate depends on the engine's public API only and never on Python.

mod bins;
mod codec;
mod commands;
mod context;
mod controller;
mod departures;
mod error;
mod handover;
mod leaving;
mod operators;
mod router;
mod routing;
mod schedule;
mod state;
mod stateful;
mod strategy;
mod table;

pub use bins::{Bins, DEFAULT_BINS, MAX_BINS};
pub use context::Context;
pub use controller::Controller;
pub use error::MegaphoneError;
pub use operators::{Control, KeyedOperators, StateMachine};
pub use strategy::{plan, rebalance, Strategy};
pub use table::{Command, RoutingTable};
