//! The membership gate of a process: one membership change at a time, decided locally.
//!
//! This module owns [`MembershipGate`], which the join acceptor and the process's workers
//! share, and the rule it enforces (`docs/rescaling.md`, "Joins and leaves at the same time"):
//!
//! - a joiner is *offered* this process's view only while no leave is known here (this
//!   process leaving included); the offer *reserves* the joiner until it is admitted here and
//!   every local worker was told of it ([`MembershipGate::release`]), after which the workers'
//!   own record of the join (a joined worker not yet bootstrapped) takes over;
//! - this process starts leaving only while no joiner is reserved here and its workers know
//!   of no join in progress ([`MembershipGate::begin_leave`], whose check runs under the
//!   gate's lock, so an offer and a leave cannot pass each other).
//!
//! Each process decides with what it knows. A process that is leaving refuses every joiner's
//! offer itself, and one that offered its view cannot start leaving before that joiner has
//! joined, so a joiner that got every member's view (it commits to none before) is never told
//! of a member that is leaving. It must not talk to sockets or decide what a join or leave
//! means to the workers.

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The membership changes a process knows are in progress.
#[derive(Default)]
pub struct MembershipGate {
    state: Mutex<GateState>,
}

#[derive(Default)]
struct GateState {
    /// Processes known to be leaving and not yet gone (this one included).
    leaving: BTreeSet<usize>,
    /// Joiners offered this process's view and not yet handed to its workers.
    reserved: BTreeSet<usize>,
}

impl MembershipGate {
    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reserves joining process `joiner` if no leave is known here; otherwise the processes
    /// leaving, in order.
    ///
    /// # Errors
    ///
    /// The processes known to be leaving.
    pub fn offer(&self, joiner: usize) -> Result<(), Vec<usize>> {
        let mut state = self.lock();
        if !state.leaving.is_empty() {
            return Err(state.leaving.iter().copied().collect());
        }
        state.reserved.insert(joiner);
        Ok(())
    }

    /// Ends the reservation of `joiner`: it withdrew, was refused, or every local worker was
    /// told of it (then they hold the join in progress themselves).
    pub fn release(&self, joiner: usize) {
        self.lock().reserved.remove(&joiner);
    }

    /// This process (`process`) starts leaving, unless a joiner is reserved or
    /// `join_in_progress` (run under the gate's lock) names one its workers know of.
    ///
    /// # Errors
    ///
    /// The joining processes that hold the leave back, in order.
    pub fn begin_leave(
        &self,
        process: usize,
        join_in_progress: impl FnOnce() -> Vec<usize>,
    ) -> Result<(), Vec<usize>> {
        let mut state = self.lock();
        let mut joining: BTreeSet<usize> = state.reserved.clone();
        if joining.is_empty() {
            joining.extend(join_in_progress());
        }
        if !joining.is_empty() {
            return Err(joining.into_iter().collect());
        }
        state.leaving.insert(process);
        Ok(())
    }

    /// Another process's leave became known here (its notice), or this one's.
    pub fn leaving(&self, process: usize) {
        self.lock().leaving.insert(process);
    }

    /// Process `process` is gone (its goodbye was taken in).
    pub fn gone(&self, process: usize) {
        self.lock().leaving.remove(&process);
    }

    /// The processes known to be leaving, in order.
    pub fn leavers(&self) -> Vec<usize> {
        self.lock().leaving.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offers_and_leaves_exclude_each_other() {
        let gate = MembershipGate::default();
        gate.offer(3).expect("nothing is leaving");
        assert_eq!(gate.begin_leave(1, Vec::new), Err(vec![3]));
        gate.release(3);
        assert_eq!(gate.begin_leave(1, || vec![3]), Err(vec![3]), "the workers still know the join");
        gate.begin_leave(1, Vec::new).expect("no join in progress");
        assert_eq!(gate.offer(4), Err(vec![1]));
        gate.leaving(2);
        assert_eq!(gate.offer(4), Err(vec![1, 2]));
        gate.gone(1);
        gate.gone(2);
        gate.offer(4).expect("every leaver is gone");
        assert!(gate.leavers().is_empty());
    }
}
