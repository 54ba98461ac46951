//! The model's transitions: every action a worker, a channel or the join can take next.
//!
//! This module owns which actions are enabled in a state and what each one does, for the
//! protocol of `docs/rescaling.md` and for its variants (a fix, and deliberately broken
//! implementations). Each local action is one worker step and ends with that step's progress
//! batch sent; the join's actions are in `join`, the initial workers' lazily applied batches
//! in `views`. It does not judge states: an action returns an error only for an event that is
//! wrong in itself (a notification delivered too early); states are checked in `properties`.

use super::join;
use super::model::{
    Counts, State, Worker, CONSUMER_IN, CONSUMER_OUT, INITIAL, INPUT_OUT, JOINER, TIMES, WORKERS,
};
use super::views::{commit, least, possible_views, View};

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
    /// The input moves its capability from its epoch to the next time.
    Advance(u8),
    /// The input drops its capability.
    Close(u8),
    /// The input sends a data message at its epoch to worker `to`.
    Send { from: u8, to: u8 },
    /// The consumer takes a message at time `t` and asks for a notification at `t`.
    Consume(u8, u8),
    /// The consumer is notified at `t` and releases that capability; its worker has applied
    /// each sender's batches below `next` (it committed to that possible view).
    Notify { w: u8, t: u8, next: [u8; WORKERS] },
    /// The consumer drops its initial (on the joiner: its handed-over) capability.
    DropHeld(u8),
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
    let worker = &state.workers[w];
    let wu = w as u8;
    if let Some(e) = worker.epoch {
        if e < config.last_epoch {
            actions.push(Action::Advance(wu));
        }
        actions.push(Action::Close(wu));
        if worker.sends_left > 0 {
            for to in (0..WORKERS).filter(|&to| connected(state, w, to)) {
                actions.push(Action::Send { from: wu, to: to as u8 });
            }
        }
    }
    for t in (0..TIMES).filter(|&t| worker.inbox[t] > 0) {
        actions.push(Action::Consume(wu, t as u8));
    }
    if worker.held.is_some() {
        actions.push(Action::DropHeld(wu));
    }
    for t in (0..TIMES).filter(|&t| worker.notify & (1 << t) != 0) {
        for (next, _) in notifying_views(state, config, w, t) {
            actions.push(Action::Notify { w: wu, t: t as u8, next });
        }
    }
}

/// The least views of worker `w` whose frontier at the consumer's input has passed `t`. The
/// joiner applies batches as explicit steps, so its only view is the one it has.
fn notifying_views(state: &State, config: &Config, w: usize, t: usize) -> Vec<View> {
    let passed = |(_, view): &View| view.frontier(CONSUMER_IN).is_none_or(|f| f > t);
    if w == JOINER {
        let worker = &state.workers[w];
        return [(worker.next, worker.view)].into_iter().filter(passed).collect();
    }
    let mut views = possible_views(state, w, barrier(state, config));
    views.retain(passed);
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
    let mut batch = Counts::default();
    match action {
        Action::Advance(w) => {
            let e = next.workers[w as usize].epoch.as_mut().expect("advance without capability");
            batch.add(INPUT_OUT, *e as usize + 1, 1);
            batch.add(INPUT_OUT, *e as usize, -1);
            *e += 1;
        }
        Action::Close(w) => {
            let e = next.workers[w as usize].epoch.take().expect("close without capability");
            batch.add(INPUT_OUT, e as usize, -1);
        }
        Action::Send { from, to } => {
            let sender = &mut next.workers[from as usize];
            let e = sender.epoch.expect("send without capability") as usize;
            sender.sends_left -= 1;
            batch.add(CONSUMER_IN, e, 1);
            next.workers[to as usize].inbox[e] += 1;
        }
        Action::Consume(w, t) => consume(&mut next.workers[w as usize], t as usize, &mut batch),
        Action::Notify { w, t, next: applied } => {
            notify(&mut next, w as usize, t as usize, applied, &mut batch)?;
        }
        Action::DropHeld(w) => {
            let t = next.workers[w as usize].held.take().expect("drop without capability");
            batch.add(CONSUMER_OUT, t as usize, -1);
        }
        _ => join::apply(&mut next, config, action),
    }
    if let Action::Advance(w)
    | Action::Close(w)
    | Action::Send { from: w, .. }
    | Action::Consume(w, _)
    | Action::Notify { w, .. }
    | Action::DropHeld(w) = action
    {
        next.send_batch(w as usize, batch);
    }
    next.compact();
    Ok(next)
}

fn consume(worker: &mut Worker, t: usize, batch: &mut Counts) {
    worker.inbox[t] -= 1;
    batch.add(CONSUMER_IN, t, -1);
    if worker.notify & (1 << t) == 0 {
        worker.notify |= 1 << t;
        batch.add(CONSUMER_OUT, t, 1);
    }
}

/// Worker `w` commits to its view with batches below `applied` and is notified at `t`.
fn notify(
    next: &mut State,
    w: usize,
    t: usize,
    applied: [u8; WORKERS],
    batch: &mut Counts,
) -> Result<(), String> {
    if let Some(early) = next.truth().frontier(CONSUMER_IN).filter(|&f| f <= t) {
        return Err(format!("worker {w} notified at {t} while a pointstamp at {early} can reach its input"));
    }
    commit(next, w, applied);
    next.workers[w].notify &= !(1 << t);
    batch.add(CONSUMER_OUT, t, -1);
    Ok(())
}
