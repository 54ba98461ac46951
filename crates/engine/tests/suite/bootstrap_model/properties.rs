//! What must hold in every reachable state, and in every state where nothing can happen.
//!
//! This module owns the properties the explorer checks; it does not enumerate states.

use super::actions::{barrier, running, Config};
use super::model::{Counts, State, INITIAL, JOINER, WORKERS};
use super::views::possible_views;
use crate::model_support::explorer;

/// The property a state (or an action) violates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Property {
    /// Initial counts plus all batches sent must equal the capabilities held and the messages
    /// not yet consumed.
    Accounting,
    /// A worker's view must be exactly the initial counts plus a prefix of each sender's
    /// batches: none applied twice, none skipped.
    PrefixView,
    /// A running worker's frontier at a location must not pass a pointstamp that is still
    /// held anywhere and can reach that location.
    Frontier,
    /// A notification at `t` must not be delivered while a message or capability at or before
    /// `t` can reach the consumer's input.
    EarlyNotification,
    /// A state without enabled actions must be complete: the joiner bootstrapped, every
    /// capability released, every message consumed, every batch applied everywhere.
    Deadlock,
}

/// A property violated, with the facts that show it.
pub type Violation = explorer::Violation<Property>;

/// Checks the invariants of one state.
pub fn check_state(state: &State, config: &Config) -> Result<(), Violation> {
    let truth = state.truth();
    if truth != state.sent_total() {
        return Err(violation(
            Property::Accounting,
            format!("held {truth:?}, sent {:?}", state.sent_total()),
        ));
    }
    for w in 0..WORKERS {
        let worker = &state.workers[w];
        let tracked = w < INITIAL || state.join.booted;
        if tracked && worker.view != state.view_of_prefixes(&worker.next) {
            let detail = format!("worker {w} view {:?} after batches {:?}", worker.view, worker.next);
            return Err(violation(Property::PrefixView, detail));
        }
        if !running(state, config, w) {
            continue;
        }
        if w == JOINER {
            check_frontiers(w, &worker.view, &truth)?;
        } else {
            for (_, view) in possible_views(state, w, barrier(state, config)) {
                check_frontiers(w, &view, &truth)?;
            }
        }
    }
    Ok(())
}

/// Checks that no pointstamp held anywhere (`truth`) is behind worker `w`'s frontier in `view`.
fn check_frontiers(w: usize, view: &Counts, truth: &Counts) -> Result<(), Violation> {
    view.frontier_behind(w, truth).map_or(Ok(()), |detail| Err(violation(Property::Frontier, detail)))
}

/// Checks a state in which no action is enabled. The initial workers' views are then, once
/// every batch in flight arrives, the sum of all batches sent: the true counts (by the
/// accounting invariant), so every frontier is empty exactly when everything is released.
pub fn check_terminal(state: &State) -> Result<(), Violation> {
    let joiner = &state.workers[JOINER];
    let joiner_applied = (0..WORKERS).all(|from| joiner.next[from] == state.logs[from].sent());
    let released = state.truth().is_zero();
    if state.join.booted && joiner_applied && released && joiner.view.is_zero() {
        return Ok(());
    }
    let detail = format!(
        "stuck: joiner booted {}, joiner applied everything {joiner_applied}, all released \
         {released}; joiner next {:?}",
        state.join.booted, joiner.next
    );
    Err(violation(Property::Deadlock, detail))
}

fn violation(property: Property, detail: String) -> Violation {
    Violation { property, detail }
}
