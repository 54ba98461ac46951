//! Where the network threads of a process report a failure, and whom they wake.
//!
//! This module owns [`Alarm`], shared by every send and receive thread of a process: the first
//! failure of a connection is recorded in the process's [`NetworkHealth`] as a lost peer (or
//! first the peer that has been silent for its timeout, which most likely caused it), and every
//! local worker is woken through the [`WakeFn`]. It must not read or write sockets.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::networking::liveness::Silences;
use crate::networking::{NetworkError, NetworkHealth};

/// Called with a local worker index (`0..threads`) after messages were delivered to that
/// worker, or when the network failed; it should unpark the worker's thread.
pub type WakeFn = Arc<dyn Fn(usize) + Send + Sync>;

/// Where the network threads of a process report a failure, and whom they wake.
pub(super) struct Alarm {
    pub(super) health: NetworkHealth,
    pub(super) wake: WakeFn,
    pub(super) threads: usize,
    /// Set when this process closes its sockets itself: errors after that are not failures.
    pub(super) closing: AtomicBool,
    /// When each peer was last heard from.
    pub(super) silences: Silences,
}

impl Alarm {
    /// Records that the connection to `process` failed and wakes every local worker.
    ///
    /// If another peer has been silent for about its timeout, that peer is recorded lost
    /// first: `process` most likely ended because it lost the silent peer too.
    pub(super) fn raise(&self, process: usize, reason: String) {
        if self.closing.load(Ordering::SeqCst) {
            return;
        }
        if let Some((silent, reason)) = self.silences.overdue(process) {
            self.health.record(NetworkError::PeerLost { process: silent, reason });
        }
        self.health.record(NetworkError::PeerLost { process, reason });
        self.wake_all();
    }

    /// Waits until a failure is recorded (by another network thread), at most `limit`.
    pub(super) fn await_failure(&self, limit: Duration) {
        let end = Instant::now() + limit;
        while self.health.is_healthy() && !self.closing.load(Ordering::SeqCst) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The number of processes of the cluster.
    pub(super) fn processes(&self) -> usize {
        self.silences.processes()
    }

    pub(super) fn wake_all(&self) {
        (0..self.threads).for_each(|local| (self.wake)(local));
    }
}
