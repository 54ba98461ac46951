//! The shared record of whether the network still works.
//!
//! This module owns [`NetworkHealth`]: network threads record the first failure there, and
//! workers read it at any time without blocking. It must not decide what a failure means for
//! the computation, nor wake anyone (the transport does that after recording).

use std::sync::{Arc, OnceLock};

use super::NetworkError;

/// Whether the connections of this process still work; cheap to clone and share.
///
/// Only the first failure is kept: later ones are usually consequences of it.
#[derive(Clone, Debug, Default)]
pub struct NetworkHealth {
    failure: Arc<OnceLock<NetworkError>>,
}

impl NetworkHealth {
    /// A healthy record.
    pub fn new() -> NetworkHealth {
        NetworkHealth::default()
    }

    /// The first failure recorded, if any. Never blocks.
    pub fn failure(&self) -> Option<NetworkError> {
        self.failure.get().cloned()
    }

    /// Whether no failure has been recorded. Never blocks.
    pub fn is_healthy(&self) -> bool {
        self.failure.get().is_none()
    }

    /// Records `error` unless a failure was recorded before; returns whether it was the first.
    pub fn record(&self, error: NetworkError) -> bool {
        self.failure.set(error).is_ok()
    }
}
