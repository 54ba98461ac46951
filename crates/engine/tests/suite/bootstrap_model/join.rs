//! The join: the server's welcome and announcement, back-fills, and the joiner's bootstrap.
//!
//! This module owns the steps of `docs/rescaling.md` ("Bootstrap of progress state" and
//! "Capabilities of joining workers") and their broken variants: which join step is enabled
//! and what it does. The joiner applies progress batches as explicit steps (its order of
//! ranges and direct batches is what the protocol is about); the server's receipt of the
//! batches a range needs is committed when the joiner applies the range.

use super::actions::{barrier, Action, Bug, Config};
use super::model::{Counts, State, CONSUMER_OUT, INITIAL, INPUT_OUT, JOINER, SERVER, TIMES};
use super::views::{commit, possible_views, serve_range};

/// The join steps enabled in `state`.
pub fn actions(state: &State, config: &Config, actions: &mut Vec<Action>) {
    let join = &state.join;
    if join.snapshot.is_none() {
        for (r, _) in possible_views(state, SERVER, None) {
            actions.push(Action::Snapshot { r });
        }
    }
    for v in (0..INITIAL).filter(|&v| join.backfill[v].is_none()) {
        actions.push(Action::Backfill(v as u8));
    }
    if join.promised.is_some() {
        actions.push(Action::Announce);
    }
    for v in 0..INITIAL {
        if join.replay[v].is_some() {
            actions.push(Action::Replay(v as u8));
        }
    }
    for from in 0..state.workers.len() {
        if joiner_batch(state, config, from).is_some() {
            actions.push(Action::Apply(from as u8));
        }
    }
    if !join.booted && bootstrap_complete(state, config) {
        actions.push(Action::Bootstrap);
    }
}

/// Performs a join step (every action that is not a worker's local step).
pub fn apply(next: &mut State, config: &Config, action: Action) {
    match action {
        Action::Snapshot { r } => snapshot(next, config, r),
        Action::Backfill(v) => {
            let s = next.logs[v as usize].sent();
            next.join.backfill[v as usize] = Some(s);
            plan_replay(next, config, v as usize);
        }
        Action::Announce => {
            let (input, consumer) = next.join.promised.take().expect("nothing promised");
            announce(next, input, consumer);
        }
        Action::Replay(v) => replay(next, config, v as usize),
        Action::Apply(from) => joiner_apply(next, config, from as usize),
        Action::Bootstrap => next.join.booted = true,
        local => unreachable!("{local:?} is a worker's local step"),
    }
}

/// The batch of `from` the joiner would apply next, if it has it and may apply it: after the
/// welcome, a batch below `s[from]` comes in a range (which the server can always serve: it
/// was sent before `s[from]` was), a later one directly; the joiner's own batches directly.
fn joiner_batch<'a>(state: &'a State, config: &Config, from: usize) -> Option<&'a Counts> {
    state.join.snapshot?;
    let seq = state.workers[JOINER].next[from];
    if from < INITIAL {
        state.join.backfill[from]?;
    } else if barrier(state, config).is_some_and(|a| state.workers[JOINER].next[SERVER] <= a) {
        return None;
    }
    state.logs[from].get(seq)
}

/// The joiner applies its next batch of `from`; a range batch means the server received the
/// whole range `[r, s)` before serving it.
fn joiner_apply(next: &mut State, config: &Config, from: usize) {
    let applied = *joiner_batch(next, config, from).expect("no batch to apply");
    if from < INITIAL {
        let s = next.join.backfill[from].expect("back-filled");
        if next.workers[JOINER].next[from] < s {
            serve_range(next, from, s);
        }
    }
    let joiner = &mut next.workers[JOINER];
    joiner.view.add_all(&applied);
    joiner.next[from] += 1;
}

/// Every range applied and the announcement (if any) applied, as `docs/rescaling.md` step 4.
fn bootstrap_complete(state: &State, config: &Config) -> bool {
    let (join, joiner) = (&state.join, &state.workers[JOINER]);
    if join.snapshot.is_none() || join.promised.is_some() {
        return false;
    }
    let late_ranges = config.bug == Some(Bug::RunsBeforeRanges) && join.replay.iter().any(Option::is_some);
    let ranges = !late_ranges && (0..INITIAL).all(|v| join.backfill[v].is_some_and(|s| joiner.next[v] >= s));
    ranges && join.announce.is_none_or(|a| joiner.next[SERVER] > a)
}

/// The server's welcome, with the batches below `r` applied: its progress state, and the
/// joiner's capabilities at the times of the capabilities its own operators hold (or, broken,
/// the least times its view shows).
fn snapshot(next: &mut State, config: &Config, r: [u8; 3]) {
    commit(next, SERVER, r);
    let server = &next.workers[SERVER];
    let (input, consumer) = if config.bug == Some(Bug::AnnouncesFromView) {
        let at = |location| server.view.least_at(location).map(|t| t as u8);
        (at(INPUT_OUT), at(CONSUMER_OUT))
    } else {
        let lowest_notify = (0..TIMES as u8).find(|&t| server.notify & (1 << t) != 0);
        (server.epoch, server.held.into_iter().chain(lowest_notify).min())
    };
    next.workers[JOINER].view = server.view;
    next.workers[JOINER].next = [r[0], r[1], 0];
    next.join.snapshot = Some([r[0], r[1]]);
    if config.bug == Some(Bug::AnnouncesLate) {
        next.join.promised = Some((input, consumer));
    } else {
        announce(next, input, consumer);
    }
    for v in 0..INITIAL {
        plan_replay(next, config, v);
    }
}

/// The joiner gets capabilities at `input` and `consumer`; the server's next batch counts them.
fn announce(next: &mut State, input: Option<u8>, consumer: Option<u8>) {
    let mut batch = Counts::default();
    if let Some(t) = input {
        batch.add(INPUT_OUT, t as usize, 1);
    }
    if let Some(t) = consumer {
        batch.add(CONSUMER_OUT, t as usize, 1);
    }
    next.workers[JOINER].epoch = input;
    next.workers[JOINER].held = consumer;
    next.join.announce = next.send_batch(SERVER, batch);
}

/// Batches a broken joiner applies out of order, once the welcome and `s[v]` are known: a
/// joiner that keeps direct batches below `r[v]` applies `[s[v], r[v])` a second time; a
/// joiner that runs before its ranges arrived applies direct batches from `s[v]` on and the
/// range `[r[v], s[v])` whenever it comes.
fn plan_replay(next: &mut State, config: &Config, v: usize) {
    let (Some(r), Some(s)) = (next.join.snapshot, next.join.backfill[v]) else { return };
    match config.bug {
        Some(Bug::KeepsBatchesBelowR) if s < r[v] => next.join.replay[v] = Some((s, r[v])),
        Some(Bug::RunsBeforeRanges) if r[v] < s => {
            next.join.replay[v] = Some((r[v], s));
            next.workers[JOINER].next[v] = s;
        }
        _ => {}
    }
}

/// A broken joiner applies one batch out of order (a late range batch: served by the server
/// once it received the whole range).
fn replay(next: &mut State, config: &Config, v: usize) {
    let (seq, end) = next.join.replay[v].expect("nothing to replay");
    if config.bug == Some(Bug::RunsBeforeRanges) {
        serve_range(next, v, end);
    }
    let batch = *next.logs[v].get(seq).expect("replayed batch retained");
    next.workers[JOINER].view.add_all(&batch);
    next.join.replay[v] = Some((seq + 1, end)).filter(|&(seq, end)| seq < end);
}
