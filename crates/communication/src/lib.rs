//! Communication between timely_py workers.
//!
//! This crate owns the movement of typed data between workers: the [`Push`] and [`Pull`]
//! endpoints, the allocators that create them for each channel (one worker thread, or several
//! threads of one process), the setup of worker threads ([`initialize()`]), and the transport
//! between processes of a cluster ([`networking`]: hostfiles, authenticated connections,
//! framing, network threads).
//!
//! It must not know about timestamps, operators, progress tracking or Python: a channel is an
//! identifier and an element type, nothing more. Engines built on top decide what travels.
//!
//! Designed for rescaling: the number of workers is read through [`Allocator::peers`] every time
//! it is needed, and every allocation is recorded ([`Allocator::allocations`]) so that channels
//! can later be back-filled with endpoints to workers that join.

pub mod allocator;
pub mod clock;
pub mod config_error;
pub mod diagnostics;
pub mod exchangeable;
pub mod initialize;
pub mod largest_allocation;
pub mod networking;
pub mod program_flags;
pub mod push_pull;
pub mod queue;
pub mod runtime_args;
pub mod violations;
pub mod workers;

pub use allocator::joined::JoinedPushers;
pub use allocator::thread::{LocalQueue, SharedQueue};
pub use allocator::{Allocator, AllocatorBuilder, ChannelEndpoints, ChannelRecord, FanOut};
pub use config_error::ConfigError;
pub use exchangeable::Exchangeable;
pub use initialize::{initialize, Config, InitializeError};
pub use networking::{FrameDirection, FrameObserver};
pub use program_flags::{FlagError, Flags, ProgramFlags};
pub use push_pull::{Pull, Push};
pub use runtime_args::{ArgsError, RuntimeArgs, RuntimeOption};
pub use violations::ProtocolViolations;
pub use workers::{initialize_from, SpawnError, WorkerGuards, WorkerPanicked};
