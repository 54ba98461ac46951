//! Naming what holds a leave up (`docs/rescaling.md`, "A leaver's operators with inputs").
//!
//! A leaver goes only once its operators hold no capability. Sources are released at the
//! leave (`OperatorBuilder::release_on_leave`), but an operator with inputs is not: its
//! capabilities may stand for output it owes for records it received, which releasing would
//! lose. One that keeps a capability forever (retained, to emit every epoch like a source)
//! therefore keeps its process from leaving. This module makes that wait visible: once every
//! other worker sealed the leaver (nothing more reaches it) and an operator of it still holds
//! capabilities [`REPORT_AFTER`] later, it names the operator, its address and held times on
//! stderr, once, and marks the wait on the worker's trace as an activity that ends when the
//! operator drops them. It also names, once, a leaver whose leave is complete while its
//! program has not returned [`REPORT_AFTER`] later: its process goes only once the program
//! returns, and a program that waits for its own dataflows' progress then waits forever.

use std::time::{Duration, Instant};

use crate::logging::Activity;
use crate::worker::WorkerState;

/// How long an operator may hold a sealed leaver's leave before it is named: long enough
/// that an operator finishing output it owes (its frontier is on its way) is not.
pub const REPORT_AFTER: Duration = Duration::from_secs(2);

/// The trace activity of an operator holding a leave up (its name and address follow).
pub const HELD: &str = "rescale: leave held by operator";

/// On a leaving worker that every other worker sealed: notes the operators that hold
/// capabilities, and names those that held them for [`REPORT_AFTER`]. Called at the end of
/// each of its steps until it is drained.
pub(crate) fn check(state: &WorkerState) {
    let rescaling = state.rescaling();
    let leaves = &rescaling.leaves;
    let me = state.index();
    let sealed = {
        let (departed, sealed_from) = (leaves.departed.borrow(), leaves.sealed_from.borrow());
        (0..state.peers()).all(|w| w == me || departed.contains(&w) || sealed_from.contains(&w))
    };
    let mut report = rescaling.held_report.borrow_mut();
    if !sealed {
        return;
    }
    let now = Instant::now();
    let holders: Vec<(Vec<usize>, String)> = rescaling
        .operators
        .borrow()
        .iter()
        .filter_map(|entry| Some((entry.address.clone(), entry.held.upgrade()?.holding()?)))
        .collect();
    // Operators that dropped their capabilities end their activity.
    report.holders.retain(|address, _| holders.iter().any(|(held, _)| held == address));
    for (address, holding) in holders {
        let (since, named) = report.holders.entry(address.clone()).or_insert((now, None));
        if named.is_none() && now.duration_since(*since) >= REPORT_AFTER {
            eprintln!(
                "timely: worker {me} is leaving the cluster and nothing more reaches it, but operator \
                 {holding} (address {address:?}) still holds capabilities; the leave waits until it \
                 drops them. Operators with inputs are not released at a leave (their capabilities \
                 may stand for output they owe): one that keeps a capability forever keeps its \
                 process from leaving (docs/rescaling.md, \"A leaver's operators with inputs\")"
            );
            *named = Some(Activity::begin(state.logger(), &format!("{HELD} {holding} {address:?}")));
        }
    }
}

/// On a drained leaver (its leave is complete, its dataflows dropped): if its program has not
/// returned [`REPORT_AFTER`] after the drain, says on stderr, once, that the process waits for
/// it. Called at the end of each of its steps.
pub(crate) fn check_returned(state: &WorkerState) {
    let rescaling = state.rescaling();
    if rescaling.leaves.program_returned.get() {
        return;
    }
    let mut report = rescaling.held_report.borrow_mut();
    let now = Instant::now();
    let (since, named) = report.unreturned.get_or_insert((now, false));
    if !*named && now.duration_since(*since) >= REPORT_AFTER {
        *named = true;
        eprintln!(
            "timely: worker {} has completed its leave (nothing reaches it and its dataflows are \
             dropped), but its program has not returned: its process leaves the cluster once the \
             program returns on every worker of it. A loop that waits for progress of its own \
             dataflows (a released source's epochs, a probe's times) never ends now: stop waiting \
             when `worker.leaving` (`Worker::is_leaving`) says so (docs/rescaling.md, \"A \
             leaver's sources\")",
            state.index()
        );
    }
}
