//! The leave request from outside: SIGUSR1 makes a cluster process leave its cluster.
//!
//! This module owns the process-wide flag the signal sets, its handler's registration for the
//! length of a run, and the check each worker makes before a step. The launcher's remove
//! request (`python -m timely_py.launch remove`) sends the signal; the handler is registered
//! before the cluster connects, so a process the launcher counts as set up (its join acceptor
//! runs) has it. The leave itself is the engine's (`Worker::leave`, `docs/rescaling.md`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use timely_engine::Worker;

/// The flag SIGUSR1 sets while a cluster run is registered for it.
#[derive(Clone, Default)]
pub struct LeaveSignal {
    requested: Arc<AtomicBool>,
}

impl LeaveSignal {
    /// True once the process was asked to leave.
    #[inline]
    pub fn requested(&self) -> bool {
        self.requested.load(Ordering::Relaxed)
    }

    /// Makes `worker` leave once the process was asked to (once: later calls find it leaving).
    /// A leave refused while a join is in progress is asked for again at the next step (it
    /// waits for the join); any other refusal is reported on stderr once per process, and the
    /// request dropped.
    #[inline]
    pub fn apply(&self, worker: &mut Worker) {
        if self.requested() && !worker.is_leaving() {
            if let Err(refused) = worker.leave() {
                if refused.waits_for_join() {
                    return;
                }
                if self.requested.swap(false, Ordering::Relaxed) {
                    eprintln!("timely_py: asked to leave (SIGUSR1), but {refused}; it stays");
                }
            }
        }
    }

    /// Sets the flag on SIGUSR1 until the returned registration is dropped.
    #[cfg(unix)]
    pub fn register(&self) -> std::io::Result<Registration> {
        let id = signal_hook::flag::register(signal_hook::consts::SIGUSR1, self.requested.clone())?;
        Ok(Registration(Some(id)))
    }

    /// Elsewhere there is no SIGUSR1: a program leaves only by calling `worker.leave()`.
    #[cfg(not(unix))]
    pub fn register(&self) -> std::io::Result<Registration> {
        Ok(Registration(None))
    }
}

/// The handler's registration; dropping it stops the signal from setting the flag.
pub struct Registration(#[cfg(unix)] Option<signal_hook::SigId>, #[cfg(not(unix))] Option<()>);

impl Drop for Registration {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(id) = self.0.take() {
            signal_hook::low_level::unregister(id);
        }
    }
}
