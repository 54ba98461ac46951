//! What must hold in every reachable state, and in every state where nothing can happen.
//!
//! This module owns the properties the explorer checks, and the `Model` the explorer runs
//! (whose actions are `actions`'); it does not enumerate states.

use super::actions::{self, leave_allowed, Action, Config};
use super::model::{bit, Leave, Seen, State, Verdict, JOINER};
use crate::model_support::explorer::{self, Model};

/// The property a state violates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Property {
    /// The joiner's decision is one for every member: never admitted by one and withdrawn
    /// from by another.
    Split,
    /// A join and a leave never overlap: no process that the joiner dialed starts its leave,
    /// while any member admitted the joiner, without the joiner's `Done` (its bootstrap
    /// finished there). Otherwise the leaver sealed its peers without the joiner, or with one
    /// that cannot take part in the leave, and the joiner acts as a member towards it.
    Overlap,
    /// A state without enabled actions is complete: the join admitted everywhere (and
    /// bootstrapped) or withdrawn from everywhere with a reason, no reservation left, every
    /// leave asked for departed and known as gone by every process still present.
    Incomplete,
}

pub type Violation = explorer::Violation<Property>;

/// The model as the explorer sees it: the actions are `actions`', the properties these.
impl Model for Config {
    type Action = Action;
    type Property = Property;
    type State = State;

    fn check_state(&self, state: &State) -> Result<(), Violation> {
        check_state(state, self)
    }

    fn check_terminal(&self, state: &State) -> Result<(), Violation> {
        check_terminal(state, self)
    }

    fn enabled(&self, state: &State) -> Vec<Action> {
        actions::enabled(state, self)
    }

    /// No action is wrong in itself here: every property is one of states.
    fn apply(&self, state: &State, action: Action) -> Result<State, Violation> {
        Ok(actions::apply(state, self, action))
    }
}

fn violation(property: Property, detail: String) -> Violation {
    Violation { property, detail }
}

/// Checks the invariants of one state, and tallies the states where a leave waits for the join.
pub fn check_state(state: &State, config: &Config) -> Result<(), Violation> {
    let waits = |m: usize| {
        let process = &state.processes[m];
        process.asked && process.leave == Leave::Staying && !leave_allowed(state, config, m)
    };
    if (0..config.members).any(waits) {
        config.waiting.set(config.waiting.get() + 1);
    }
    let (admitted, withdrawn) = state.verdict_sets();
    if admitted != 0 && withdrawn != 0 {
        let detail = format!("the joiner admits at {admitted:04b} and withdraws from {withdrawn:04b}");
        return Err(violation(Property::Split, detail));
    }
    if state.admitted_anywhere(config.members) {
        for l in (0..config.members).filter(|&l| state.joiner.dialed & bit(l) != 0) {
            let knew = state.processes[l].left_knowing;
            if knew.is_some() && knew != Some(Seen::Done) {
                let detail = format!(
                    "process {l} started its leave knowing the joiner as {knew:?}, while a member admitted it"
                );
                return Err(violation(Property::Overlap, detail));
            }
        }
    }
    Ok(())
}

/// Checks a state in which no action is enabled, and tallies the join's outcome.
pub fn check_terminal(state: &State, config: &Config) -> Result<(), Violation> {
    let incomplete = |detail: String| Err(violation(Property::Incomplete, detail));
    let present = |p: usize| !state.processes[p].departed();
    let joiner = &state.joiner;
    for m in (0..config.members).filter(|&m| config.leavers & bit(m) != 0) {
        if present(m) {
            return incomplete(format!("process {m} asked to leave and never went"));
        }
    }
    let dialed = (0..config.members).filter(|&m| joiner.dialed & bit(m) != 0);
    let verdicts: Vec<_> = dialed.clone().map(|m| joiner.verdicts[m]).collect();
    let admitted = match verdicts.first().copied().flatten() {
        _ if verdicts.iter().any(Option::is_none) => return incomplete("the joiner never decided".into()),
        Some(Verdict::Admit) => true,
        Some(Verdict::Withdraw(_)) => false,
        None => return incomplete("the joiner dialed no member".into()),
    };
    if admitted && !joiner.booted {
        return incomplete("the admitted joiner never bootstrapped".into());
    }
    let expected = if admitted { Seen::Done } else { Seen::Withdrawn };
    for m in dialed.filter(|&m| present(m)) {
        if state.processes[m].joiner != expected {
            return incomplete(format!("process {m} knows the joiner as {:?}", state.processes[m].joiner));
        }
    }
    let mut still = (0..config.members).filter(|&p| present(p)).collect::<Vec<_>>();
    if admitted {
        still.push(JOINER);
    }
    for p in still {
        let process = &state.processes[p];
        if process.reserved || process.leaving != 0 {
            let detail =
                format!("process {p}: reserved {}, leaving {:04b}", process.reserved, process.leaving);
            return incomplete(detail);
        }
    }
    let tally = &config.outcomes[usize::from(!admitted)];
    tally.set(tally.get() + 1);
    Ok(())
}
