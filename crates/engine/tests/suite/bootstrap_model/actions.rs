//! The model's transitions: every action a worker, a channel or the join can take next.
//!
//! This module owns which actions are enabled in a state and what each one does, for the
//! protocol of `docs/rescaling.md` and for its variants (a fix, and deliberately broken
//! implementations). Each local action is one worker step (`model_support::dataflow::Step`)
//! and ends with that step's progress batch sent; the join's actions are in `join`, the
//! initial workers' lazily applied batches in `views`. It does not judge states: an action
//! returns an error only for an event that is wrong in itself (a notification delivered too
//! early); states are checked in `properties`.

use super::join;
use super::model::{State, INITIAL, JOINER, WORKERS};
use super::views::possible_views;
use crate::model_support::dataflow::{passed, steps, Step};
use crate::model_support::views::{least, View};

/// A deliberate bug, to show that the checker finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// The joiner applies direct batches below `r[v]` although the state already holds them.
    KeepsBatchesBelowR,
    /// The server announces the joiner's capabilities at the least times in its progress view
    /// instead of the times of capabilities its own operators hold.
    AnnouncesFromView,
    /// The joiner runs its operators as soon as it has the welcome, before its ranges arrived.
    RunsBeforeRanges,
    /// The server announces in a later step than its snapshot, when it may have released the
    /// capability the announcement relied on.
    AnnouncesLate,
}

/// Which protocol the model runs, and how much work the workers do.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Receivers apply a joiner's batches only after the server's announcement batch (the fix
    /// this model proposes for the contract; `false` is the contract as written).
    pub barrier: bool,
    pub bug: Option<Bug>,
    /// Data messages each worker's input may send.
    pub sends: [u8; WORKERS],
    /// The last epoch inputs may advance to (below `TIMES`).
    pub last_epoch: u8,
    /// Actions taken before the exploration starts (its start state is reachable).
    pub prelude: &'static [Action],
}

/// One step of the system. Worker indices are `u8` to keep traces of millions of states small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// A worker's local step: its input or its consumer acts, and it sends the step's batch.
    Local(Step),
    /// The joiner applies the next progress batch of `from` (from a range the server serves
    /// once it received it, or directly).
    Apply(u8),
    /// A broken joiner applies a batch of `from` out of order (again, or late).
    Replay(u8),
    /// The server handles the join, having applied each sender's batches below `r`: welcome
    /// (snapshot) and capability announcement.
    Snapshot { r: [u8; WORKERS] },
    /// An initial worker back-fills its channels and sends the joiner `s[v]`.
    Backfill(u8),
    /// A late server sends the announcement it promised at the snapshot.
    Announce,
    /// The joiner finishes its bootstrap and starts running its operators.
    Bootstrap,
}

/// Whether worker `w` runs its operators (and so acts on, and is judged by, its frontiers).
pub fn running(state: &State, config: &Config, w: usize) -> bool {
    w < INITIAL
        || state.join.booted
        || (config.bug == Some(Bug::RunsBeforeRanges) && state.join.snapshot.is_some())
}

/// The server's announcement batch, when receivers must apply it before any joiner batch.
pub fn barrier(state: &State, config: &Config) -> Option<u8> {
    state.join.announce.filter(|_| config.barrier)
}

/// Every action enabled in `state`.
pub fn enabled(state: &State, config: &Config) -> Vec<Action> {
    let mut actions = Vec::new();
    for w in 0..WORKERS {
        if running(state, config, w) {
            local_actions(state, config, w, &mut actions);
        }
    }
    join::actions(state, config, &mut actions);
    actions
}

fn local_actions(state: &State, config: &Config, w: usize, actions: &mut Vec<Action>) {
    let routes = |to| connected(state, w, to);
    let notifying = |t| notifying_views(state, config, w, t);
    let local = steps(&state.workers[w], w, config.last_epoch, routes, notifying);
    actions.extend(local.into_iter().map(Action::Local));
}

/// The least views of worker `w` whose frontier at the consumer's input has passed `t`. The
/// joiner applies batches as explicit steps, so its only view is the one it has.
fn notifying_views(state: &State, config: &Config, w: usize, t: usize) -> Vec<View> {
    if w == JOINER {
        let worker = &state.workers[w];
        return [(worker.next, worker.view)].into_iter().filter(|(_, view)| passed(view, t)).collect();
    }
    let mut views = possible_views(state, w, barrier(state, config));
    views.retain(|(_, view)| passed(view, t));
    least(views)
}

/// Whether `from` has a data channel to `to`: initial workers to each other from the start, to
/// the joiner once back-filled; the joiner to everyone (it runs only after every back-fill).
fn connected(state: &State, from: usize, to: usize) -> bool {
    to < INITIAL || from == JOINER || state.join.backfill[from].is_some()
}

/// The state after `action`, or a description of why the action itself was wrong.
pub fn apply(state: &State, config: &Config, action: Action) -> Result<State, String> {
    let mut next = state.clone();
    match action {
        Action::Local(step) => {
            let batch = step.apply(&mut next.workers, &next.logs)?;
            next.send_batch(step.worker(), batch);
        }
        _ => join::apply(&mut next, config, action),
    }
    next.compact();
    Ok(next)
}
