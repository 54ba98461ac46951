//! `Leaves`: a worker's view of the processes leaving and gone, kept in its `Rescaling`
//! (`docs/rescaling.md`, "Leaving a running cluster").
//!
//! This module owns which workers are leaving and which have left, the membership every
//! exchange routes over (the workers present, leavers excluded), the *sealed* markers sent and
//! received, the keyed exchanges ([`KeyedRoutes`]) and the input handles and sources
//! ([`ReleaseOnLeave`]) registered with it, and the operators that watch the membership. The protocol that changes
//! it is in `leave`.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::{Rc, Weak};

use crate::logging::Activity;
use crate::scheduling::Activator;

/// A keyed exchange, asked whether it may still route records to a worker.
pub trait KeyedRoutes {
    /// True while this exchange may release records to `worker` at some time.
    fn may_route_to(&self, worker: usize) -> bool;
}

/// Something that holds capabilities no input justifies, which only the program would release:
/// an input handle the program feeds through, or a source operator whose logic decides when
/// it ends (every operator built with `OperatorBuilder::release_on_leave`: the engine's
/// `source`, the Python bindings' sources).
pub trait ReleaseOnLeave {
    /// This worker is leaving: hand on what was accepted (or given), hold no capability from
    /// now on and accept nothing more.
    fn release(&self);
}

/// Why this worker's process cannot leave (nothing was sent).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LeaveRefused {
    /// Every other process has left or is leaving: none would stay to take the work.
    #[error("this process cannot leave the cluster: no other process is present to take its work")]
    LastProcess,
    /// Processes `joining` (indices) are joining the cluster: asking again once the join is
    /// over can succeed (`docs/rescaling.md`, "Joins and leaves at the same time").
    #[error(
        "this process cannot leave the cluster: a join is in progress (process(es) {} not yet \
         admitted and bootstrapped everywhere); a process can leave only once no process is \
         joining: ask again after the join",
        listed(joining)
    )]
    JoinInProgress { joining: Vec<usize> },
}

impl LeaveRefused {
    /// True when the leave was refused only because a join is in progress: asking again once
    /// it is over can succeed.
    pub fn waits_for_join(&self) -> bool {
        matches!(self, LeaveRefused::JoinInProgress { .. })
    }
}

/// Why this worker cannot build a dataflow: it is leaving and told the others how many
/// dataflows it built (`Left`), so they no longer count it in any later one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "this worker is leaving the cluster and told the others that it builds no more dataflows \
     (its leave is complete, its program returned, or it held nothing while a worker that stays \
     counted it in a dataflow it had not built): it cannot build a dataflow any more \
     (docs/rescaling.md, \"Dataflows built during a leave\")"
)]
pub struct DataflowRefused;

/// `0, 1, 2`.
fn listed(indices: &[usize]) -> String {
    indices.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
}

/// A worker's view of leaves.
#[derive(Default)]
pub struct Leaves {
    /// Workers whose process is leaving (their notice arrived), this one's included.
    pub(super) leaving: RefCell<BTreeSet<usize>>,
    /// Workers whose process left: it said goodbye after everything it sent.
    pub(super) departed: RefCell<BTreeSet<usize>>,
    /// Leavers this worker told that it sends them nothing more.
    pub(super) sealed_to: RefCell<BTreeSet<usize>>,
    /// On a leaver: the workers that told it so.
    pub(super) sealed_from: RefCell<BTreeSet<usize>>,
    /// On a drained leaver: the workers it told so (`Drained`).
    pub(super) drained_to: RefCell<BTreeSet<usize>>,
    /// On a drained leaver: the workers that answered that they send it nothing more.
    pub(super) released_from: RefCell<BTreeSet<usize>>,
    /// Drained leavers this worker sends nothing more, not even membership announcements.
    pub(super) released_to: RefCell<BTreeSet<usize>>,
    /// True once this worker is leaving.
    pub(super) this_leaves: Cell<bool>,
    /// True once this worker sent `Left`: it builds no more dataflows.
    pub(super) this_left: Cell<bool>,
    /// True once this worker's program returned: it builds no more dataflows, so a leaver
    /// sends `Left` at once instead of when it is drained.
    pub(super) program_returned: Cell<bool>,
    /// True once this leaving worker is drained and dropped its dataflows.
    pub(super) drained: Cell<bool>,
    /// Per worker whose leave is complete (its `Left` arrived): the number of dataflows it built.
    pub(super) built: RefCell<BTreeMap<usize, usize>>,
    /// On a leaver: per worker that handled its notice (`BuiltAtNotice`), the number of
    /// dataflows it had built then, which count this leaver's initial capabilities.
    pub(super) built_at_notice: RefCell<BTreeMap<usize, usize>>,
    /// Bumped whenever the workers present change (a join, a leave's notice, a departure).
    pub(super) version: Cell<u64>,
    /// The keyed exchanges of this worker.
    pub(super) routes: RefCell<Vec<Weak<dyn KeyedRoutes>>>,
    /// Operators to wake when the workers present change.
    pub(super) watchers: RefCell<Vec<Weak<Activator>>>,
    /// The input handles and sources of this worker, released when it starts leaving.
    pub(super) inputs: RefCell<Vec<Weak<dyn ReleaseOnLeave>>>,
    /// On a leaving worker: the trace activity of its leave, ended once it is drained.
    pub(super) activity: RefCell<Option<Activity>>,
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

    /// The workers among `0..peers` that may still be sent something: those that have not
    /// left, leaving ones included, but no drained leaver this worker released.
    pub fn receivers(&self, peers: usize) -> Vec<usize> {
        let (departed, released) = (self.departed.borrow(), self.released_to.borrow());
        (0..peers).filter(|w| !departed.contains(w) && !released.contains(w)).collect()
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

    /// True on a leaver that has built `built` dataflows while a worker that has not sealed it
    /// had built more when it handled the notice: that worker counts this leaver's initial
    /// capabilities in a dataflow this leaver has not built, and may wait for its `Left`.
    pub(crate) fn left_awaited(&self, built: usize) -> bool {
        let (sealed, departed) = (self.sealed_from.borrow(), self.departed.borrow());
        self.built_at_notice.borrow().iter().any(|(worker, &dataflows)| {
            dataflows > built && !sealed.contains(worker) && !departed.contains(worker)
        })
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

    /// Registers an input handle or a source, released when this worker starts leaving (at
    /// once if it already is).
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

    /// This worker starts leaving: every input handle and source lets go of its capabilities.
    pub(super) fn release_inputs(&self) {
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
