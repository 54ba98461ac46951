//! The model's actions: which are enabled in a state and what each does, per the rule in
//! `docs/rescaling.md` ("Joins and leaves at the same time") or one of its broken variants.
//!
//! This module owns the protocol's steps (a member's view, the joiner's decision, a leave's
//! check, start and departure, every message's delivery); the state is `model`'s and what
//! must hold is `properties`'.

use std::cell::Cell;
use std::fmt;

use super::model::{bit, Leave, Msg, Reason, Seen, Set, State, Verdict, View, JOINER};

/// A deliberately broken variant of the rule, which the checker must catch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// A member that is ready does not reserve the joiner in its gate.
    NoReserve,
    /// A leave's check and its start are two steps: a view may be offered in between.
    CheckApartFromStart,
    /// The joiner admits where the member was ready and withdraws only where it refused.
    AdmitWhereReady,
    /// A leave checks the gate's reservation only, not its workers' record of a joiner that
    /// was admitted and has not sent `Done`.
    LeaveIgnoresUnfinishedJoiner,
    /// A leaving process offers its view: its gate does not count its own leave.
    LeaverOffers,
}

/// A scenario: the members, which of them ask to leave, what the joiner is told, the rule.
pub struct Config {
    /// Initial member processes, `0..members` (2 or 3).
    pub members: usize,
    /// The members that ask to leave, each at a moment of its choice.
    pub leavers: Set,
    /// Whether the joiner is told of the processes that have left when it starts (`--gone`,
    /// as the launcher does), or of none (a program that starts joiners itself).
    pub told_gone: bool,
    /// Whether a member refuses while it knows of another process's leave (the engine's
    /// rule), or only the leaver refuses (which the argument says would suffice).
    pub members_refuse_known_leaves: bool,
    pub bug: Option<Bug>,
    /// Terminal states seen, per outcome of the join: admitted, withdrawn.
    pub outcomes: [Cell<usize>; 2],
    /// States in which a leave asked for waits for the join (its check fails).
    pub waiting: Cell<usize>,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} members, leavers {:04b}, told {}, members refuse {}, bug {:?}",
            self.members, self.leavers, self.told_gone, self.members_refuse_known_leaves, self.bug
        )
    }
}

impl Config {
    fn members(&self) -> impl Iterator<Item = usize> {
        0..self.members
    }

    fn all_members(&self) -> Set {
        self.members().fold(0, |set, m| set | bit(m))
    }
}

/// A step of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Member `m`'s program asks to leave (`worker.leave()`, SIGUSR1).
    Ask(usize),
    /// The leave's check passes (only when the check and the start are apart).
    Check(usize),
    /// Member `m` starts its leave (for the rule, its check passed under the gate's lock).
    Start(usize),
    /// Leaver `m` heard from every peer it sealed: it says goodbye and goes.
    Depart(usize),
    /// The joiner dials the members it was not told had left and sends each its hello.
    JoinerStarts,
    /// The admitted joiner finishes its bootstrap and sends `Done` to the members.
    Bootstrap,
    /// The oldest message from `from` to `to` arrives.
    Deliver { from: usize, to: usize },
}

/// Whether member `m`'s leave may start now.
pub fn leave_allowed(state: &State, config: &Config, m: usize) -> bool {
    let process = &state.processes[m];
    let unfinished = process.joiner == Seen::Admitted;
    !process.reserved && (!unfinished || config.bug == Some(Bug::LeaveIgnoresUnfinishedJoiner))
}

/// Every action enabled in `state`.
pub fn enabled(state: &State, config: &Config) -> Vec<Action> {
    let mut actions = Vec::new();
    for m in config.members().filter(|&m| config.leavers & bit(m) != 0) {
        let process = &state.processes[m];
        match process.leave {
            Leave::Staying if !process.asked => actions.push(Action::Ask(m)),
            Leave::Staying if leave_allowed(state, config, m) => {
                let apart = config.bug == Some(Bug::CheckApartFromStart);
                actions.push(if apart { Action::Check(m) } else { Action::Start(m) });
            }
            Leave::Checked => actions.push(Action::Start(m)),
            Leave::Leaving { sealed, heard } if sealed & !heard == 0 => actions.push(Action::Depart(m)),
            _ => {}
        }
    }
    if !state.joiner.started {
        actions.push(Action::JoinerStarts);
    }
    let (admitted, _) = state.verdict_sets();
    if admitted != 0 && !state.joiner.booted {
        actions.push(Action::Bootstrap);
    }
    for (from, row) in state.channels.iter().enumerate() {
        for (to, queue) in row.iter().enumerate() {
            if !queue.is_empty() {
                actions.push(Action::Deliver { from, to });
            }
        }
    }
    actions
}

/// The state after `action`.
pub fn apply(state: &State, config: &Config, action: Action) -> State {
    let mut next = state.clone();
    match action {
        Action::Ask(m) => next.processes[m].asked = true,
        Action::Check(m) => next.processes[m].leave = Leave::Checked,
        Action::Start(m) => start_leave(&mut next, config, m),
        Action::Depart(m) => {
            let Leave::Leaving { sealed, .. } = next.processes[m].leave else { unreachable!("enabled") };
            for peer in (0..=JOINER).filter(|&p| sealed & bit(p) != 0) {
                next.send(m, peer, Msg::Goodbye);
            }
            next.processes[m].leave = Leave::Departed;
        }
        Action::JoinerStarts => {
            let departed = config.members().filter(|&m| state.processes[m].departed());
            let told = if config.told_gone { departed.fold(0, |set, m| set | bit(m)) } else { 0 };
            next.joiner.started = true;
            next.joiner.told = told;
            next.joiner.dialed = config.all_members() & !told;
            for m in config.members().filter(|&m| told & bit(m) == 0) {
                next.send(JOINER, m, Msg::Hello);
            }
        }
        Action::Bootstrap => {
            next.joiner.booted = true;
            for (m, verdict) in state.joiner.verdicts.iter().enumerate() {
                if *verdict == Some(Verdict::Admit) {
                    next.send(JOINER, m, Msg::Done);
                }
            }
        }
        Action::Deliver { from, to } => {
            let msg = next.channels[from][to].remove(0);
            deliver(&mut next, config, from, to, msg);
        }
    }
    next
}

/// Member `m` starts leaving: it seals the peers it knows (the joiner among them once its
/// workers know of it) and sends each its notice.
fn start_leave(state: &mut State, config: &Config, m: usize) {
    let process = &mut state.processes[m];
    let mut sealed = config.all_members() & !process.gone & !bit(m);
    if matches!(process.joiner, Seen::Admitted | Seen::Done) {
        sealed |= bit(JOINER);
    }
    process.leave = Leave::Leaving { sealed, heard: 0 };
    process.leaving |= bit(m);
    process.left_knowing = Some(process.joiner);
    for peer in (0..=JOINER).filter(|&p| sealed & bit(p) != 0) {
        state.send(m, peer, Msg::Notice);
    }
}

/// `msg` from `from` arrives at `to`; a process that has gone takes nothing in (a hello to
/// it fails the joiner's connection).
fn deliver(state: &mut State, config: &Config, from: usize, to: usize, msg: Msg) {
    if state.processes[to].departed() {
        if msg == Msg::Hello {
            take_view(state, config, to, View::Unreachable);
        }
        return;
    }
    let process = &mut state.processes[to];
    match msg {
        Msg::Hello => {
            let view = offer(process, config, to);
            state.send(to, JOINER, Msg::View(view));
        }
        Msg::View(view) => take_view(state, config, from, view),
        Msg::Admit => {
            process.reserved = false;
            process.joiner = Seen::Admitted;
        }
        Msg::Withdraw => {
            process.reserved = false;
            process.joiner = Seen::Withdrawn;
        }
        Msg::Done => process.joiner = Seen::Done,
        Msg::Notice => {
            process.leaving |= bit(from);
            state.send(to, from, Msg::Marker);
        }
        Msg::Marker => hear(process, from),
        Msg::Goodbye => {
            process.leaving &= !bit(from);
            process.gone |= bit(from);
            hear(process, from);
        }
    }
}

fn hear(process: &mut super::model::Process, from: usize) {
    if let Leave::Leaving { heard, .. } = &mut process.leave {
        *heard |= bit(from);
    }
}

/// Member `m`'s view for the joiner, under its gate's lock: refused while it knows of a leave
/// (its own included), else ready, reserving the joiner.
fn offer(process: &mut super::model::Process, config: &Config, m: usize) -> View {
    let mut known = process.leaving;
    if !config.members_refuse_known_leaves {
        known &= bit(m);
    }
    if config.bug == Some(Bug::LeaverOffers) {
        known &= !bit(m);
    }
    process.joiner = Seen::Viewed;
    if known != 0 {
        return View::Refused { leaving: known };
    }
    process.reserved = config.bug != Some(Bug::NoReserve);
    View::Ready { gone: process.gone }
}

/// The joiner takes in member `m`'s view; once every dialed member's view is in, it decides.
fn take_view(state: &mut State, config: &Config, m: usize, view: View) {
    state.joiner.views[m] = Some(view);
    let joiner = state.joiner;
    let dialed: Vec<usize> = config.members().filter(|&d| joiner.dialed & bit(d) != 0).collect();
    let Some(views) =
        dialed.iter().map(|&d| joiner.views[d].map(|view| (d, view))).collect::<Option<Vec<_>>>()
    else {
        return;
    };
    let reason_of = |(d, view): (usize, View)| match view {
        View::Refused { leaving } => Some(Reason::Leaving(leaving)),
        View::Unreachable => Some(Reason::Unreachable(bit(d))),
        View::Ready { gone } if gone & !joiner.told != 0 => Some(Reason::Untold(gone & !joiner.told)),
        View::Ready { .. } => None,
    };
    let first_reason = views.iter().copied().find_map(reason_of);
    for (d, view) in views {
        let reason =
            if config.bug == Some(Bug::AdmitWhereReady) { reason_of((d, view)) } else { first_reason };
        let verdict = reason.map_or(Verdict::Admit, Verdict::Withdraw);
        state.joiner.verdicts[d] = Some(verdict);
        let msg = if verdict == Verdict::Admit { Msg::Admit } else { Msg::Withdraw };
        state.send(JOINER, d, msg);
    }
}
