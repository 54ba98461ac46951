//! Reports of messages from other processes that break the protocol.
//!
//! This module owns [`ProtocolViolations`]: a worker, or the engine above it, that finds a
//! message from another process undecodable or inconsistent reports it here with the sending
//! worker; the network's health then records the process of that worker as lost, so every
//! worker of this process stops with an error naming it, and the abort frames this process
//! sends as it closes blame it, not this process. It must not decide what a violation is (the
//! decoders and the engine do) nor stop anything itself.

use crate::networking::{NetworkError, NetworkHealth};

/// Where a worker reports protocol violations of other processes; cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct ProtocolViolations {
    /// The network's health; `None` for a worker without other processes.
    health: Option<NetworkHealth>,
    /// Worker threads per process, to find a worker's process.
    threads: usize,
}

impl ProtocolViolations {
    /// Reports into `health`, for a cluster of processes of `threads` workers each.
    pub(crate) fn new(health: NetworkHealth, threads: usize) -> ProtocolViolations {
        ProtocolViolations { health: Some(health), threads }
    }

    /// The process of global worker `worker`.
    pub fn process_of(&self, worker: usize) -> usize {
        worker / self.threads.max(1)
    }

    /// Records that process `process` broke the protocol (`reason` says how), and returns why
    /// the cluster cannot go on: this violation, or a failure recorded before it.
    pub fn report(&self, process: usize, reason: &str) -> String {
        let error = NetworkError::PeerLost { process, reason: format!("it broke the protocol: {reason}") };
        match &self.health {
            Some(health) => {
                health.record(error.clone());
                health.failure().unwrap_or(error).to_string()
            }
            None => error.to_string(),
        }
    }

    /// Why the cluster cannot go on, if a failure (a violation or a lost process) was recorded.
    pub fn failure(&self) -> Option<String> {
        self.health.as_ref().and_then(NetworkHealth::failure).map(|error| error.to_string())
    }

    /// Whether no failure was recorded. Never blocks.
    pub fn is_healthy(&self) -> bool {
        self.health.as_ref().is_none_or(NetworkHealth::is_healthy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_names_the_process_of_the_sender_and_the_first_failure_wins() {
        let health = NetworkHealth::new();
        let violations = ProtocolViolations::new(health.clone(), 4);
        assert!(violations.is_healthy() && violations.failure().is_none());
        let failure = violations.report(violations.process_of(9), "a progress batch names node 7 of 3");
        assert_eq!(
            failure,
            "lost the connection to process 2: it broke the protocol: a progress batch names node 7 of 3"
        );
        assert_eq!(
            health.failure(),
            Some(NetworkError::PeerLost {
                process: 2,
                reason: "it broke the protocol: a progress batch names node 7 of 3".into()
            })
        );
        assert_eq!(violations.report(1, "later"), failure, "the first failure is kept");
        assert!(!violations.is_healthy());
        let alone = ProtocolViolations::default();
        assert!(alone.report(0, "x").contains("process 0") && alone.is_healthy());
    }
}
