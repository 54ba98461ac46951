//! What must hold in every reachable state, and in every state where nothing can happen.
//!
//! This module owns the properties the explorer checks; it does not enumerate states. The
//! second dataflow's checks of the same properties (and of `InitialCount`) are `second`'s.

use super::actions::Config;
use super::model::State;
use super::second;
use crate::model_support::dataflow::{Counts, WORKERS};
use crate::model_support::explorer;

/// The property a state (or an action) violates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Property {
    /// Initial counts plus all batches sent must equal the capabilities held and the messages
    /// not yet consumed.
    Accounting,
    /// No data message may be addressed to a worker that has left: no one would consume it
    /// (and every worker's frontier would stay behind its time forever).
    NoLostMessage,
    /// Every progress batch must reach every worker that is still a member: a member forgets
    /// a sender only once it applied every batch that sender sent, and a stayer sends its
    /// batches to every member. A lost batch leaves the member's view behind for good (a lost release holds its
    /// frontier back forever).
    NoLostBatch,
    /// A member's view must be exactly the initial counts plus a prefix of each sender's
    /// batches: none applied twice, none skipped.
    PrefixView,
    /// A member's frontier at a location (a leaver's too, while it runs) must not pass a
    /// pointstamp that is still held anywhere and can reach that location.
    Frontier,
    /// A notification at `t` must not be delivered while a message or capability at or before
    /// `t` can reach the consumer's input.
    EarlyNotification,
    /// In the second dataflow, built during the leave: every worker that built it counts the
    /// initial capabilities of exactly the workers that built it or may still as far as it
    /// knows (those whose `Left` it has not taken in).
    InitialCount,
    /// A state without enabled actions must be complete: every leaver gone, every capability
    /// released, every message consumed, every batch applied by every worker still present.
    Deadlock,
}

/// A property violated, with the facts that show it.
pub type Violation = explorer::Violation<Property>;

/// Checks the invariants of one state (all but `config.unchecked`).
pub fn check_state(state: &State, config: &Config) -> Result<(), Violation> {
    let checked = |property| config.unchecked != Some(property);
    let truth = state.truth();
    if checked(Property::Accounting) && truth != state.sent_total() {
        let detail = format!("held {truth:?}, sent {:?}", state.sent_total());
        return Err(violation(Property::Accounting, detail));
    }
    for l in state.peers().filter(|&l| !state.member(l)) {
        if checked(Property::NoLostMessage) && state.workers[l].inbox.iter().any(|&n| n > 0) {
            let detail = format!("worker {l} left, but messages reached it: {:?}", state.workers[l].inbox);
            return Err(violation(Property::NoLostMessage, detail));
        }
    }
    for r in state.peers().filter(|&r| state.member(r)) {
        if let Some(s) = state.peers().find(|&s| state.limit(r, s) < state.logs[s].sent()) {
            if checked(Property::NoLostBatch) {
                let detail = format!(
                    "worker {s} sent batches up to {}, but worker {r}, still a member, gets those below {}",
                    state.logs[s].sent(),
                    state.limit(r, s)
                );
                return Err(violation(Property::NoLostBatch, detail));
            }
        }
    }
    for w in state.peers().filter(|&w| state.member(w)) {
        let worker = &state.workers[w];
        if checked(Property::PrefixView) && worker.view != state.view_of_prefixes(&worker.next) {
            let detail = format!("worker {w} view {:?} after batches {:?}", worker.view, worker.next);
            return Err(violation(Property::PrefixView, detail));
        }
        if checked(Property::Frontier) {
            for (_, view) in state.possible_views(w) {
                check_frontiers(w, &view, &truth)?;
            }
        }
    }
    if config.second.is_some() {
        second::check_state(state, config)?;
    }
    Ok(())
}

/// Checks that no pointstamp held anywhere (`truth`) is behind worker `w`'s frontier in `view`.
fn check_frontiers(w: usize, view: &Counts, truth: &Counts) -> Result<(), Violation> {
    view.frontier_behind(w, truth).map_or(Ok(()), |detail| Err(violation(Property::Frontier, detail)))
}

/// Checks a state in which no action is enabled: every leaver gone, every notice handled,
/// everything released, and every member's view, once every batch that reaches it arrived,
/// empty. Each such view is the sum of every batch sent if every batch reaches the member, that
/// is the true counts (by the accounting invariant); the last condition says the member's
/// frontiers are all empty, so nothing is left waiting behind a count no one will release.
pub fn check_terminal(state: &State, config: &Config) -> Result<(), Violation> {
    let leavers_gone = state.peers().all(|l| !config.leaver(l) || !state.member(l));
    let noticed = state.peers().all(|w| state.noticed(w));
    let released = state.truth().is_zero();
    let mut behind = Vec::new();
    for r in state.peers().filter(|&r| state.member(r)) {
        let mut through = [0; WORKERS];
        for (s, end) in through.iter_mut().enumerate() {
            *end = state.limit(r, s);
        }
        let view = state.view_of_prefixes(&through);
        if !view.is_zero() {
            behind.push((r, view.0));
        }
    }
    let second = config.second.and_then(|_| second::incomplete(state, config));
    if leavers_gone && noticed && released && behind.is_empty() && second.is_none() {
        return Ok(());
    }
    let detail = format!(
        "stuck: leavers gone {leavers_gone}, every notice handled {noticed}, all released {released}, \
         members whose complete view is not empty {behind:?}; {}",
        second.unwrap_or_default()
    );
    Err(violation(Property::Deadlock, detail))
}

fn violation(property: Property, detail: String) -> Violation {
    Violation { property, detail }
}
