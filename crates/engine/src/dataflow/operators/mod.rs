//! Operators: the generic builder and everything built with it.

pub mod aggregate;
pub mod basic;
pub mod builder;
pub mod capability;
pub mod capture;
pub mod generic;
pub mod hashing;
pub mod input;
pub mod iterate;
pub mod keyed;
pub mod notificator;
pub mod output;
pub mod probe;

pub use builder::{InputPort, LeaveRelease, OperatorBuilder, OperatorInfo};
pub use capability::{
    Capability, CapabilityError, CapabilityLedger, CapabilityRef, CapabilitySet, InputCapability,
};
pub use capture::Captured;
pub use hashing::{hash_of, StableHasher};
pub use input::{InputError, InputHandle, ToStream};
pub use iterate::LoopHandle;
pub use keyed::keyed_pact;
pub use notificator::{FrontierNotificator, Notificator};
pub use output::{OutputPort, Session};
pub use probe::ProbeHandle;
