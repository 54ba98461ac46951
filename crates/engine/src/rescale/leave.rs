//! Leaves: a worker's part when processes leave a running cluster (`docs/rescaling.md`,
//! "Leaving a running cluster").
//!
//! This module owns which workers are leaving and which have left, the membership every
//! exchange routes over (the workers present, leavers excluded), the *sealed* markers a
//! worker sends each leaver once nothing more can reach it from here, and a leaver's test for
//! being drained. Keyed exchanges register as [`KeyedRoutes`]: a worker seals a leaver only
//! once none of them may still release records to it. Input handles register as
//! [`ReleaseOnLeave`]: when this worker starts leaving they deliver what they accepted and let
//! go of their capabilities, so that a program that goes on feeding does not hold the leave up.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::{Rc, Weak};

use super::messages::BootstrapMessage;
use super::Rescaling;
use crate::scheduling::Activator;
use crate::worker::{Activity, WorkerState};

/// A keyed exchange, asked whether it may still route records to a worker.
pub trait KeyedRoutes {
    /// True while this exchange may release records to `worker` at some time.
    fn may_route_to(&self, worker: usize) -> bool;
}

/// Something the worker's program feeds through (an input handle), holding capabilities that
/// the program, not an operator, releases.
pub trait ReleaseOnLeave {
    /// This worker is leaving: hand on what was accepted, hold no capability from now on and
    /// accept nothing more.
    fn release(&self);
}

/// Why this worker's process cannot leave (it is the last process of the cluster).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaveRefused(pub String);

impl std::fmt::Display for LeaveRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "this process cannot leave the cluster: {}", self.0)
    }
}

impl std::error::Error for LeaveRefused {}

/// A worker's view of leaves.
#[derive(Default)]
pub struct Leaves {
    /// Workers whose process is leaving (their notice arrived), this one's included.
    leaving: RefCell<BTreeSet<usize>>,
    /// Workers whose process left: it said goodbye after everything it sent.
    departed: RefCell<BTreeSet<usize>>,
    /// Leavers this worker told that it sends them nothing more.
    sealed_to: RefCell<BTreeSet<usize>>,
    /// On a leaver: the workers that told it so.
    sealed_from: RefCell<BTreeSet<usize>>,
    /// True once this worker is leaving.
    this_leaves: Cell<bool>,
    /// True once this worker sent `Left`: it builds no more dataflows.
    this_left: Cell<bool>,
    /// True once this worker's program returned: it builds no more dataflows, so a leaver
    /// sends `Left` at once instead of when it is drained.
    program_returned: Cell<bool>,
    /// True once this leaving worker is drained and dropped its dataflows.
    drained: Cell<bool>,
    /// Per worker whose leave is complete (its `Left` arrived): the number of dataflows it built.
    built: RefCell<BTreeMap<usize, usize>>,
    /// Bumped whenever the workers present change (a join, a leave's notice, a departure).
    version: Cell<u64>,
    /// The keyed exchanges of this worker.
    routes: RefCell<Vec<Weak<dyn KeyedRoutes>>>,
    /// Operators to wake when the workers present change.
    watchers: RefCell<Vec<Weak<Activator>>>,
    /// The input handles of this worker, released when it starts leaving.
    inputs: RefCell<Vec<Weak<dyn ReleaseOnLeave>>>,
    /// On a leaving worker: the trace activity of its leave, ended once it is drained.
    activity: RefCell<Option<Activity>>,
}

impl Leaves {
    /// The workers present among `0..peers`: neither leaving nor gone.
    pub fn members(&self, peers: usize) -> Vec<usize> {
        let (leaving, departed) = (self.leaving.borrow(), self.departed.borrow());
        (0..peers).filter(|w| !leaving.contains(w) && !departed.contains(w)).collect()
    }

    /// The workers among `0..peers` that have not left: those present and those leaving.
    pub fn not_gone(&self, peers: usize) -> Vec<usize> {
        let departed = self.departed.borrow();
        (0..peers).filter(|w| !departed.contains(w)).collect()
    }

    /// The workers among `0..peers` whose initial capabilities the operators of dataflow
    /// `dataflow` count, the same number on every worker: those that build it or may still.
    /// A worker whose leave is complete built the dataflows its `Left` counts and no other;
    /// a worker that left before this one heard of it (a joiner's welcome lists such
    /// workers) builds no dataflow from now on.
    pub fn builders(&self, dataflow: usize, peers: usize) -> usize {
        let (departed, built) = (self.departed.borrow(), self.built.borrow());
        (0..peers)
            .filter(|w| match built.get(w) {
                Some(&dataflows) => dataflow < dataflows,
                None => !departed.contains(w),
            })
            .count()
    }

    /// The workers that said (`Left`) they built no more than the dataflows before `dataflow`:
    /// they never built it and never will. A keyed operator of that dataflow that counted one
    /// of them in (this worker built it before it saw the leave) drops it as absent.
    pub fn left_without_building(&self, dataflow: usize) -> Vec<usize> {
        let built = self.built.borrow();
        built.iter().filter(|&(_, &dataflows)| dataflows <= dataflow).map(|(&worker, _)| worker).collect()
    }

    /// True once this worker sent `Left` (its program returned during its leave, or its leave
    /// is complete): it builds no more dataflows.
    pub fn has_left(&self) -> bool {
        self.this_left.get()
    }

    /// True once this leaving worker is drained and dropped its dataflows: it has nothing more
    /// to do.
    pub fn is_drained(&self) -> bool {
        self.drained.get()
    }

    /// Records that this worker's program returned: it builds no more dataflows.
    pub(crate) fn program_returned(&self) {
        self.program_returned.set(true);
    }

    /// True on a leaving worker that may tell the others now how many dataflows it built: its
    /// program returned, and it has not told them yet.
    #[inline]
    pub(crate) fn may_announce_built(&self) -> bool {
        self.this_leaves.get() && self.program_returned.get() && !self.this_left.get()
    }

    /// Workers whose process is leaving (not yet gone).
    pub fn leaving(&self) -> Vec<usize> {
        self.leaving.borrow().iter().copied().collect()
    }

    /// Workers whose process left the cluster.
    pub fn departed(&self) -> Vec<usize> {
        self.departed.borrow().iter().copied().collect()
    }

    /// True once this worker's process is leaving.
    pub fn is_leaving(&self) -> bool {
        self.this_leaves.get()
    }

    /// A number that changes whenever the workers present change.
    #[inline]
    pub fn version(&self) -> u64 {
        self.version.get()
    }

    /// Records that the workers present changed and wakes the operators that watch them.
    pub(crate) fn changed(&self) {
        self.version.set(self.version.get() + 1);
        self.watchers.borrow_mut().retain(|watcher| match watcher.upgrade() {
            Some(activator) => {
                activator.activate();
                true
            }
            None => false,
        });
    }

    /// Wakes `activator`'s operator whenever the workers present change, while the `Rc` lives.
    pub fn wake_on_change(&self, activator: &Rc<Activator>) {
        self.watchers.borrow_mut().push(Rc::downgrade(activator));
    }

    /// Registers an input handle, released when this worker starts leaving (at once if it
    /// already is).
    pub fn release_on_leave(&self, input: Weak<dyn ReleaseOnLeave>) {
        if self.this_leaves.get() {
            if let Some(input) = input.upgrade() {
                input.release();
            }
            return;
        }
        let mut inputs = self.inputs.borrow_mut();
        inputs.retain(|input| input.strong_count() > 0);
        inputs.push(input);
    }

    /// This worker starts leaving: every input handle lets go of its capabilities.
    fn release_inputs(&self) {
        // Taken out first: releasing hands records on, which must not find the list borrowed.
        let inputs = std::mem::take(&mut *self.inputs.borrow_mut());
        inputs.iter().filter_map(Weak::upgrade).for_each(|input| input.release());
    }

    /// Registers a keyed exchange, asked before this worker seals a leaver.
    pub fn register_routes(&self, routes: Weak<dyn KeyedRoutes>) {
        self.routes.borrow_mut().push(routes);
    }

    /// True while some leaver has not been sealed by this worker.
    #[inline]
    pub(crate) fn seals_pending(&self) -> bool {
        self.leaving.borrow().len() > self.sealed_to.borrow().len() + usize::from(self.this_leaves.get())
    }
}

/// This worker's process leaves: tells every other worker that has not left (once). Refused,
/// before anything is sent, when no other process is present to take its work.
pub(crate) fn leave(state: &WorkerState) -> Result<(), LeaveRefused> {
    let rescaling = state.rescaling();
    let leaves = &rescaling.leaves;
    let threads = state.allocator().threads();
    let process = state.index() / threads;
    if leaves.members(state.peers()).iter().all(|worker| worker / threads == process) {
        return Err(LeaveRefused("no other process is present to take its work".to_owned()));
    }
    if leaves.this_leaves.replace(true) {
        return Ok(());
    }
    leaves.activity.replace(Some(Activity::begin(state.logger(), super::phases::LEAVE)));
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
    let leaves = &state.rescaling().leaves;
    let starts = workers.contains(&state.index()) && !leaves.this_leaves.replace(true);
    if starts {
        leaves.activity.replace(Some(Activity::begin(state.logger(), super::phases::LEAVE)));
    }
    let mut leaving = leaves.leaving.borrow_mut();
    let before = leaving.len();
    leaving.extend(workers);
    let grew = leaving.len() > before;
    drop(leaving);
    if grew {
        leaves.changed();
    }
    if starts {
        leaves.release_inputs();
    }
}

/// A leave's notice of worker `from` arrived: its process leaves.
///
/// # Errors
///
/// Why the notice breaks the protocol: `from`'s process has left already. (The envelope's
/// check makes `from` a worker of the process that sent it: a process can announce its own
/// leave only.)
pub(crate) fn notice_from(state: &WorkerState, from: usize) -> Result<(), String> {
    if state.rescaling().leaves.departed.borrow().contains(&from) {
        return Err("announced the leave of its process, which has left already".into());
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
pub(crate) fn sealed(rescaling: &Rescaling, from: usize) -> Result<(), String> {
    match rescaling.leaves.sealed_from.borrow_mut().insert(from) {
        true => Ok(()),
        false => Err(format!("sealed worker {} twice", rescaling.index)),
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
    for leaver in unsealed {
        let routes = leaves.routes.borrow();
        let busy = routes.iter().filter_map(Weak::upgrade).any(|routes| routes.may_route_to(leaver));
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
pub(crate) fn left(state: &WorkerState, from: usize, dataflows: usize) -> Result<(), String> {
    let rescaling = state.rescaling();
    let known = rescaling.leaves.leaving.borrow().contains(&from)
        || rescaling.leaves.departed.borrow().contains(&from);
    if !known {
        notice(state, from);
    }
    if rescaling.leaves.built.borrow_mut().insert(from, dataflows).is_some() {
        return Err("said twice that its leave is complete".into());
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
        for worker in state.workers_of(process) {
            leaves.leaving.borrow_mut().remove(&worker);
            leaves.sealed_to.borrow_mut().remove(&worker);
            leaves.departed.borrow_mut().insert(worker);
        }
    }
    leaves.changed();
}

/// True on a leaving worker that may go: every other worker not gone sealed it, it sealed
/// every other leaver, and its operators hold no capability.
pub(crate) fn drained(state: &WorkerState) -> bool {
    let rescaling = state.rescaling();
    let leaves = &rescaling.leaves;
    if !leaves.this_leaves.get() {
        return false;
    }
    let me = state.index();
    let departed = leaves.departed.borrow();
    let sealed = leaves.sealed_from.borrow();
    let all_sealed =
        (0..state.peers()).filter(|w| *w != me && !departed.contains(w)).all(|w| sealed.contains(&w));
    let drained = all_sealed && !leaves.seals_pending() && !rescaling.holds_capabilities();
    if drained {
        leaves.activity.take();
        leaves.drained.set(true);
    }
    drained
}
