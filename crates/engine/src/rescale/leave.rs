//! Leaves: a worker's part when processes leave a running cluster (`docs/rescaling.md`,
//! "Leaving a running cluster").
//!
//! This module owns the leave protocol: a leave's notice, the *sealed* markers a worker sends
//! each leaver once nothing more can reach it from here, a leaver's `Left` (how many
//! dataflows it built), departures, and a leaver's test for being drained. What it changes is
//! the worker's [`Leaves`] (in `leave_state`, re-exported here), which also keeps the
//! membership every exchange routes over. Keyed exchanges register as [`KeyedRoutes`]: a
//! worker seals a leaver only once none of them may still release records to it. Input
//! handles and sources (operators built with `release_on_leave`, Rust's and Python's)
//! register as [`ReleaseOnLeave`]: when this worker starts leaving they deliver what they
//! accepted and let go of their capabilities, so that a program that goes on feeding does not
//! hold the leave up.

use std::rc::Weak;

use super::messages::BootstrapMessage;
use super::phases;
use super::state::Rescaling;
use super::violation::ProtocolViolation;
use crate::cluster_failure::stop_for_program;
use crate::logging::Activity;
use crate::worker::WorkerState;

pub use super::leave_state::{DataflowRefused, KeyedRoutes, LeaveRefused, Leaves, ReleaseOnLeave};

/// This worker's process leaves: tells every other worker that has not left (once). Refused,
/// before anything is sent, when no other process is present to take its work, or while a
/// join is in progress (a joiner reserved by this process's join acceptor, or one its workers
/// know of that has not finished its bootstrap): the process's [`MembershipGate`] decides,
/// under the lock its join acceptor takes to offer a joiner its view, so a joiner is never
/// admitted by a process that is leaving (`docs/rescaling.md`, "Joins and leaves at the same
/// time").
///
/// [`MembershipGate`]: timely_communication::networking::MembershipGate
pub(crate) fn leave(state: &WorkerState) -> Result<(), LeaveRefused> {
    let rescaling = state.rescaling();
    let leaves = &rescaling.leaves;
    let threads = state.allocator().threads();
    let process = state.index() / threads;
    if leaves.members(state.peers()).iter().all(|worker| worker / threads == process) {
        return Err(LeaveRefused::LastProcess);
    }
    if leaves.this_leaves.get() {
        return Ok(());
    }
    let gate = state.allocator().membership_gate();
    if let Some(gate) = gate {
        gate.begin_leave(process, || joins_in_progress(state))
            .map_err(|joining| LeaveRefused::JoinInProgress { joining })?;
    }
    leaves.this_leaves.set(true);
    leaves.activity.replace(Some(Activity::begin(state.logger(), phases::LEAVE)));
    let me = state.index();
    // Every worker not gone hears of it, other leavers too: they seal it as well.
    let others: Vec<usize> = {
        let departed = leaves.departed.borrow();
        (0..state.peers()).filter(|w| *w != me && !departed.contains(w)).collect()
    };
    for worker in others {
        rescaling.send(worker, BootstrapMessage::Leaving { from: me });
    }
    notice(state, me);
    leaves.release_inputs();
    Ok(())
}

/// The processes this worker knows are joining: announced by the network and not yet taken
/// in, admitted and not yet done with their bootstrap (their `Done` reaches every worker), or
/// this worker's own process while it bootstraps.
fn joins_in_progress(state: &WorkerState) -> Vec<usize> {
    let threads = state.allocator().threads().max(1);
    let rescaling = state.rescaling();
    let mut joining: Vec<usize> =
        rescaling.server.borrow().joining().map(|worker| worker / threads).collect();
    if state.allocator().has_joins() {
        joining.push(state.peers() / threads);
    }
    if rescaling.client.borrow().as_ref().is_some_and(|joiner| !joiner.finished) {
        joining.push(state.index() / threads);
    }
    joining.sort_unstable();
    joining.dedup();
    joining
}

/// A leave's notice from `from` arrived (or this worker leaves, `from` itself): every worker
/// of `from`'s process is leaving. A process leaves as a whole, so every worker learns of all
/// its leavers at once, and announces their departure (keyed exchanges) before it seals any of
/// them: nothing reaches a leaver after its seal.
///
/// A worker of `from`'s own process leaves with it: any worker of a process may start the
/// leave, and the notice reaches the others like every other worker. It releases its input
/// handles once it counts its process's workers as leavers, so that what they hand on is
/// routed to the workers present only.
pub(crate) fn notice(state: &WorkerState, from: usize) {
    let threads = state.allocator().threads();
    let workers = state.workers_of(from / threads);
    let gate = state.allocator().membership_gate();
    if let Some(gate) = gate {
        gate.leaving(from / threads);
    }
    let leaves = &state.rescaling().leaves;
    let starts = workers.contains(&state.index()) && !leaves.this_leaves.replace(true);
    if starts {
        leaves.activity.replace(Some(Activity::begin(state.logger(), phases::LEAVE)));
    }
    let mut leaving = leaves.leaving.borrow_mut();
    let new: Vec<usize> = workers.clone().filter(|w| !leaving.contains(w)).collect();
    leaving.extend(workers.clone());
    drop(leaving);
    if !workers.contains(&state.index()) {
        // The leavers learn which dataflows built here count them (those built so far).
        let dataflows = state.dataflows_built();
        for &leaver in new.iter().filter(|&&w| w < state.peers()) {
            state
                .rescaling()
                .send(leaver, BootstrapMessage::BuiltAtNotice { from: state.index(), dataflows });
        }
    }
    if !new.is_empty() {
        leaves.changed();
        if leaves.members(state.peers()).is_empty() {
            no_process_stays(state);
        }
    }
    if starts {
        leaves.release_inputs();
    }
}

/// Every process still present is leaving: their leaves were asked for at about the same
/// time, each before its process heard of the others' (a leave is refused only when no other
/// process is present as it is asked for). No process would stay to take their work, so the
/// run stops with an error on every process rather than end with records lost.
fn no_process_stays(state: &WorkerState) -> ! {
    let threads = state.allocator().threads();
    let mut processes: Vec<usize> = state.rescaling().leaves.leaving().iter().map(|w| w / threads).collect();
    processes.sort_unstable();
    processes.dedup();
    let listed: Vec<String> = processes.iter().map(usize::to_string).collect();
    stop_for_program(&format!(
        "every process of the cluster is leaving: processes {} asked to leave at about the same \
         time, each before it heard of the others' leave, and no process would stay to take their \
         work. Ask for one leave at a time and keep one process (the launcher's `remove` does \
         both; docs/rescaling.md, \"Leaving a running cluster\")",
        listed.join(", ")
    ))
}

/// A leave's notice of worker `from` arrived: its process leaves.
///
/// # Errors
///
/// Why the notice breaks the protocol: `from`'s process has left already. (The envelope's
/// check makes `from` a worker of the process that sent it: a process can announce its own
/// leave only.)
pub(crate) fn notice_from(state: &WorkerState, from: usize) -> Result<(), ProtocolViolation> {
    if state.rescaling().leaves.departed.borrow().contains(&from) {
        return Err(ProtocolViolation::NoticeAfterDeparture);
    }
    notice(state, from);
    Ok(())
}

/// A sealed marker from `from` arrived (on a leaver; it can overtake the notice of a leave
/// started by another worker of this process, so it is taken before this worker leaves).
///
/// # Errors
///
/// `from` sealed this worker before.
pub(crate) fn sealed(rescaling: &Rescaling, from: usize) -> Result<(), ProtocolViolation> {
    match rescaling.leaves.sealed_from.borrow_mut().insert(from) {
        true => Ok(()),
        false => Err(ProtocolViolation::SealedTwice { worker: rescaling.index }),
    }
}

/// Sends a sealed marker to every leaver that nothing on this worker routes to any more.
///
/// A leaver this worker does not know yet (its process joined, and the notice of its leave
/// overtook the join's: the two travel separately) is sealed once the join is admitted.
pub(crate) fn seal(state: &WorkerState) {
    let rescaling = state.rescaling();
    let leaves = &rescaling.leaves;
    let me = state.index();
    let peers = state.peers();
    let unsealed: Vec<usize> = {
        let sealed = leaves.sealed_to.borrow();
        let leaving = leaves.leaving.borrow();
        leaving.iter().copied().filter(|w| *w != me && *w < peers && !sealed.contains(w)).collect()
    };
    // A drained leaver (it asked for nothing more: every other worker sealed it and it holds
    // no capability) routes nothing any more, and hears of no change: it seals a leave it
    // learns of afterwards at once.
    let drained = !leaves.drained_to.borrow().is_empty();
    for leaver in unsealed {
        let routes = leaves.routes.borrow();
        let busy =
            !drained && routes.iter().filter_map(Weak::upgrade).any(|routes| routes.may_route_to(leaver));
        drop(routes);
        if !busy {
            rescaling.send(leaver, BootstrapMessage::Sealed { from: me });
            leaves.sealed_to.borrow_mut().insert(leaver);
        }
    }
    leaves.routes.borrow_mut().retain(|routes| routes.strong_count() > 0);
}

/// This leaving worker builds no more dataflows (its program returned, or it is drained and
/// goes): tells every other worker not gone how many dataflows it built (before its process's
/// goodbye, on the same connections), so that they stop counting its initial capabilities in
/// any dataflow it never built. From now on it builds no dataflow.
///
/// Sent as soon as the program returned, not only once drained: a stayer that built a
/// dataflow before it saw the leave counts the leaver's initial capabilities there, which may
/// hold back what the leaver waits for (a keyed exchange seals the leaver only once the times
/// at which it was a member are past), so waiting for the drain could wait forever.
pub(crate) fn announce_left(state: &WorkerState, dataflows: usize) {
    let rescaling = state.rescaling();
    let leaves = &rescaling.leaves;
    if leaves.this_left.replace(true) {
        return;
    }
    let me = state.index();
    let others: Vec<usize> = {
        let departed = leaves.departed.borrow();
        (0..state.peers()).filter(|w| *w != me && !departed.contains(w)).collect()
    };
    for worker in others {
        rescaling.send(worker, BootstrapMessage::Left { from: me, dataflows });
    }
}

/// Worker `from` had built `dataflows` dataflows when it handled the notice of this worker's
/// leave (it may arrive before this worker hears of its own process's leave, which another
/// worker of the process started).
///
/// # Errors
///
/// `from` said so before.
pub(crate) fn built_at_notice(
    rescaling: &Rescaling,
    from: usize,
    dataflows: usize,
) -> Result<(), ProtocolViolation> {
    match rescaling.leaves.built_at_notice.borrow_mut().insert(from, dataflows) {
        None => Ok(()),
        Some(_) => Err(ProtocolViolation::BuiltAtNoticeTwice { worker: rescaling.index }),
    }
}

/// On a leaving worker whose program has not returned and whose operators hold no capability
/// (the caller checks that nothing is left to run): if a worker that has not sealed it counts
/// it in a dataflow it has not built (`BuiltAtNotice`), it sends `Left` now and builds no
/// dataflow from then on. That worker may seal it only once its `Left` says it never builds
/// that dataflow (a keyed operator there cannot know otherwise that it routes nothing to it),
/// and without `Left` before the drain, the drain would wait for that seal forever.
pub(crate) fn announce_left_if_awaited(state: &WorkerState) {
    let leaves = &state.rescaling().leaves;
    let built = state.dataflows_built();
    if !leaves.this_left.get() && leaves.left_awaited(built) && !state.rescaling().holds_capabilities() {
        announce_left(state, built);
    }
}

/// Leaver `from` built `dataflows` dataflows and no more: the live dataflows from that index
/// on, all built here while it was counted, stop counting its initial capabilities.
///
/// A `Left` is also a notice of the leave (the worker that started it may have sent its
/// notice on another worker's path): the envelope's check makes `from` a worker of the
/// process that sent it, so a process can only say this of itself.
///
/// Its process's departure arrives after it, but may be taken in first (in the same step).
///
/// # Errors
///
/// `from` said so before.
pub(crate) fn left(state: &WorkerState, from: usize, dataflows: usize) -> Result<(), ProtocolViolation> {
    let rescaling = state.rescaling();
    let known = rescaling.leaves.leaving.borrow().contains(&from)
        || rescaling.leaves.departed.borrow().contains(&from);
    if !known {
        notice(state, from);
    }
    if rescaling.leaves.built.borrow_mut().insert(from, dataflows).is_some() {
        return Err(ProtocolViolation::LeftTwice);
    }
    rescaling.retire_initial(dataflows, &state.dataflow_slots());
    // Operators that counted it in a dataflow it never built learn of it (Megaphone's).
    rescaling.leaves.changed();
    Ok(())
}

/// Processes `processes` left: their workers are gone.
pub(crate) fn departed(state: &WorkerState, processes: Vec<usize>) {
    let leaves = &state.rescaling().leaves;
    for process in processes {
        let gate = state.allocator().membership_gate();
        if let Some(gate) = gate {
            gate.gone(process);
        }
        for worker in state.workers_of(process) {
            leaves.leaving.borrow_mut().remove(&worker);
            leaves.sealed_to.borrow_mut().remove(&worker);
            leaves.departed.borrow_mut().insert(worker);
        }
    }
    leaves.changed();
}

/// True on a leaving worker that may go: every other worker not gone sealed it, it sealed
/// every other leaver, its operators hold no capability, and every other worker not gone
/// answered its `Drained` (sent here once the rest holds) with `Released`.
///
/// A sealed leaver still receives membership announcements: a worker that hears of another
/// change after it sealed this one (a second leave, a join) announces it to every worker not
/// gone, since a leaver that still holds records must route them by it. A drained leaver
/// holds none, but what was sent to it is counted everywhere until it takes it, so it asks
/// for nothing more and goes only once everything sent before each answer arrived.
pub(crate) fn drained(state: &WorkerState) -> bool {
    let rescaling = state.rescaling();
    let leaves = &rescaling.leaves;
    if !leaves.this_leaves.get() {
        return false;
    }
    let me = state.index();
    let others: Vec<usize> = {
        let departed = leaves.departed.borrow();
        (0..state.peers()).filter(|w| *w != me && !departed.contains(w)).collect()
    };
    let all_sealed = others.iter().all(|w| leaves.sealed_from.borrow().contains(w));
    if !all_sealed || leaves.seals_pending() || rescaling.holds_capabilities() {
        return false;
    }
    for &worker in &others {
        if leaves.drained_to.borrow_mut().insert(worker) {
            rescaling.send(worker, BootstrapMessage::Drained { from: me });
        }
    }
    if !others.iter().all(|w| leaves.released_from.borrow().contains(w)) {
        return false;
    }
    leaves.activity.take();
    leaves.drained.set(true);
    true
}

/// Leaving worker `from` is drained: this worker sends it nothing more from now on (its
/// broadcasts leave it out) and answers `Released`, after everything it sent it before.
///
/// # Errors
///
/// `from` is not leaving, or said so before.
pub(crate) fn drained_from(state: &WorkerState, from: usize) -> Result<(), ProtocolViolation> {
    let rescaling = state.rescaling();
    let leaves = &rescaling.leaves;
    if !leaves.leaving.borrow().contains(&from) {
        return Err(ProtocolViolation::DrainedNotLeaving);
    }
    if !leaves.released_to.borrow_mut().insert(from) {
        return Err(ProtocolViolation::DrainedTwice);
    }
    leaves.changed();
    rescaling.send(from, BootstrapMessage::Released { from: state.index() });
    Ok(())
}

/// Worker `from` sends this drained leaver nothing more.
///
/// # Errors
///
/// This worker did not tell `from` that it is drained, or `from` answered before.
pub(crate) fn released(rescaling: &Rescaling, from: usize) -> Result<(), ProtocolViolation> {
    let leaves = &rescaling.leaves;
    if !leaves.drained_to.borrow().contains(&from) {
        return Err(ProtocolViolation::ReleasedNotDrained { worker: rescaling.index });
    }
    match leaves.released_from.borrow_mut().insert(from) {
        true => Ok(()),
        false => Err(ProtocolViolation::ReleasedTwice { worker: rescaling.index }),
    }
}
