//! The model's transitions: every action a worker can take next, and what it does.
//!
//! This module owns which actions are enabled in a state and what each one does, for the
//! leave protocol of `docs/rescaling.md` ("Leaving a running cluster") and for its variants
//! (the contract as written, and deliberately broken implementations). Each local action is
//! one worker step (`model_support::dataflow::Step`) and ends with that step's progress batch
//! sent; the leave adds the notice, the goodbye and the forget, and, with a second dataflow
//! (`Config::second`), its building, its steps and the `Left`s (`second`). It does not judge
//! states: an
//! action returns an error only for an event that is wrong in itself (a notification
//! delivered too early); states are checked in `properties`.

use super::model::{has, Forgot, State};
use super::properties::Property;
use super::second::{self, Bounds, SecondAction};
use super::unbuilt;
use crate::model_support::dataflow::{passed, steps, Step, Worker, CONSUMER_OUT, INPUT_OUT, TIMES, WORKERS};
use crate::model_support::views::{commit, least, View};

/// A deliberate bug, to show that the checker finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// (a) A leaver goes once it consumed what it has and holds nothing, without waiting for
    /// the sealed markers.
    LeavesWithoutSealedMarkers,
    /// (b) A leaver says goodbye before the batch of its last step is sent: the goodbye carries
    /// that batch's sequence number instead of the one after it.
    GoodbyeBeforeLastBatch,
    /// (c) A stayer forgets the leavers when it handles the notice instead of at their
    /// goodbyes: it sends them no more batches and applies only those they sent before.
    ForgetsAtNotice,
    /// (d) A leaver discards its capabilities when it handles the notice, without a batch
    /// that releases them.
    DiscardsCapabilitiesAtNotice,
    /// (e) A stayer keeps routing data to the leavers after it sent its sealed marker.
    RoutesAfterSealed,
    /// (f) A stayer that forgets a leaver also removes the leaver's counts from its view (its
    /// initial capabilities and the sum of its batches), as if they summed to zero. They do not
    /// in general: the `+1` of a message the leaver sent and the `-1` of one it consumed are
    /// settled by other workers' batches.
    RemovesTheLeaversCounts,
    /// (g) A worker that takes in a leaver's `Left` retires the leaver's initial capabilities
    /// in every live dataflow it built, the ones the leaver built too included.
    RetiresWhereBuilt,
    /// (h) A leaver sends `Left` when it handles the notice, before it is drained, counting the
    /// dataflows it built so far, and may still build one during its leave.
    LeftBeforeDrained,
    /// (i) A stayer that builds a dataflow during a leave counts the stayers' initial
    /// capabilities only, never the leavers' (which may still build it).
    CountsLeaversNever,
    /// (j) Every worker counts every worker's initial capabilities in a dataflow built during
    /// a leave, and a `Left` retires none.
    CountsLeaversAlways,
    /// (k) A stayer may take in a leaver's goodbye before its `Left` (they are not FIFO) and
    /// build a dataflow in between, counting the departed leaver, whose `Left` it has not
    /// taken in, as one that builds nothing (`Leaves::builders` for a departed worker).
    ForgetsBeforeLeft,
    /// (l) A leaver forwards what it received in a dataflow it never built at its notice,
    /// before it is drained (a stayer that has not handled the notice may still send to it).
    ForwardsBeforeDrained,
    /// (m) A leaver goes without forwarding what it received in a dataflow it never built.
    GoesWithoutForwarding,
    /// (n) A leaver that forwards messages sends a batch consuming them, and the target one
    /// taking them in again, instead of leaving the senders' counts to the target's `-1`.
    RecountsForwarded,
}

/// Which protocol the model runs, and how much work the workers do.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// The workers the dataflow was built for: `0..peers`.
    pub peers: usize,
    /// The leavers, one bit per worker (the others are stayers).
    pub leavers: u8,
    /// Every worker that handled the notice sends a sealed marker to every leaver but itself,
    /// and a leaver waits for the markers of all other workers (the fix this model proposes;
    /// `false` is the contract as written: only stayers send markers, and a leaver waits for
    /// theirs). With one leaver both are the same.
    pub sealed_by_all: bool,
    pub bug: Option<Bug>,
    /// Data messages each worker's input may send.
    pub sends: [u8; WORKERS],
    /// The last epoch inputs may advance to (below `TIMES`).
    pub last_epoch: u8,
    /// Actions taken before the exploration starts (its start state is reachable).
    pub prelude: &'static [Action],
    /// A property not checked in every state (to show what a violation of it leads to).
    pub unchecked: Option<Property>,
    /// A second dataflow, built during the leave (`second`), and its bounds; with it, a
    /// drained leaver sends `Left` before its goodbye.
    pub second: Option<Bounds>,
}

impl Config {
    pub fn leaver(&self, w: usize) -> bool {
        has(self.leavers, w)
    }
}

/// One step of the system. Worker indices are `u8` to keep traces of millions of states small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// A worker's local step: its input or its consumer acts, and it sends the step's batch.
    Local(Step),
    /// Worker `w` handles the notice of the leave. A stayer stops routing data to the leavers
    /// and sends each its sealed marker (a leaver too, with `Config::sealed_by_all`).
    Notice(u8),
    /// A drained leaver sends its goodbye to every stayer and stops.
    Goodbye(u8),
    /// Stayer `v` received leaver `l`'s goodbye, applies `l`'s batches up to it (they came
    /// before it) and forgets `l`.
    Forget { v: u8, l: u8 },
    /// The second dataflow is built, takes a step, or a worker takes in a `Left`.
    Second(SecondAction),
}

/// Every action enabled in `state`.
pub fn enabled(state: &State, config: &Config) -> Vec<Action> {
    let mut actions = Vec::new();
    for w in state.peers().filter(|&w| state.member(w)) {
        let routes = |to| routes(state, config, w, to);
        let notifying = |t| notifying_views(state, w, t);
        let local = steps(&state.workers[w], w, config.last_epoch, routes, notifying);
        actions.extend(local.into_iter().map(Action::Local));
        if !state.noticed(w) {
            actions.push(Action::Notice(w as u8));
        }
        let forwarded = !config.second.is_some_and(|b| b.unbuilt) || unbuilt::may_go(state, config, w);
        if config.leaver(w) && drained(state, config, w) && forwarded {
            actions.push(Action::Goodbye(w as u8));
        }
    }
    if config.bug != Some(Bug::ForgetsAtNotice) {
        for v in state.peers().filter(|&v| state.member(v) && !config.leaver(v)) {
            for l in state.peers().filter(|&l| state.leave.goodbye[l].is_some()) {
                // The goodbye follows the leaver's `Left` on their channel.
                let left = config.second.is_none()
                    || state.second.heard(v, l)
                    || config.bug == Some(Bug::ForgetsBeforeLeft);
                if state.leave.forgot[v][l].is_none() && left {
                    actions.push(Action::Forget { v: v as u8, l: l as u8 });
                }
            }
        }
    }
    if let Some(bounds) = &config.second {
        actions.extend(second::enabled(state, config, bounds).into_iter().map(Action::Second));
    }
    actions
}

/// Whether worker `from`'s input may send to worker `to`: to every worker of the dataflow
/// until `from` handled the notice, then to the stayers only (its exchange routes over the
/// members without the leavers), unless it is a stayer that keeps routing to them (broken).
fn routes(state: &State, config: &Config, from: usize, to: usize) -> bool {
    let keeps_routing = config.bug == Some(Bug::RoutesAfterSealed) && !config.leaver(from);
    let switched = state.noticed(from) && !keeps_routing;
    to < state.peers as usize && !(switched && config.leaver(to))
}

/// The least views of worker `w` whose frontier at the consumer's input has passed `t`.
fn notifying_views(state: &State, w: usize, t: usize) -> Vec<View> {
    let mut views = state.possible_views(w);
    views.retain(|(_, view)| passed(view, t));
    least(views)
}

/// Whether the leavers have the sealed marker of worker `v`: every worker that handled the
/// notice sent it (a leaver only with `Config::sealed_by_all`), on the data channel after its
/// last data message to each leaver. Data messages are in a leaver's inbox as soon as they are
/// sent, so the marker, which follows them, is there as soon as `v` handled the notice.
fn has_marker(state: &State, config: &Config, v: usize) -> bool {
    state.noticed(v) && (config.sealed_by_all || !config.leaver(v))
}

/// Whether leaver `l` is drained: it handled the notice, has the sealed marker of every worker
/// it waits for (every stayer; every other worker with `Config::sealed_by_all`), consumed
/// every data message it received and its operators hold no capability, in both dataflows
/// (in an unbuilt second dataflow it has no operators, and what it received waits for the
/// forward).
pub fn drained(state: &State, config: &Config, l: usize) -> bool {
    let waits_for = |v: usize| v != l && (config.sealed_by_all || !config.leaver(v));
    let sealed = config.bug == Some(Bug::LeavesWithoutSealedMarkers)
        || state.peers().filter(|&v| waits_for(v)).all(|v| has_marker(state, config, v));
    let worker = &state.workers[l];
    let idle = |worker: &Worker| worker.inbox == [0; TIMES] && worker.holds_nothing();
    let unbuilt = config.second.is_some_and(|b| b.unbuilt);
    let second = &state.second.workers[l];
    state.noticed(l) && sealed && idle(worker) && (idle(second) || unbuilt && second.holds_nothing())
}

/// The state after `action`, or a description of why the action itself was wrong.
pub fn apply(state: &State, config: &Config, action: Action) -> Result<State, String> {
    let mut next = state.clone();
    match action {
        Action::Local(step) => {
            let batch = step.apply(&mut next.workers, &next.logs)?;
            next.logs[step.worker()].push(batch);
        }
        Action::Notice(w) => notice(&mut next, config, w as usize),
        Action::Goodbye(l) => goodbye(&mut next, config, l as usize),
        Action::Second(action) => {
            let bounds = config.second.as_ref().expect("a second dataflow");
            second::apply(&mut next, config, bounds, action)?;
        }
        Action::Forget { v, l } => {
            let (v, l) = (v as usize, l as usize);
            let end = next.leave.goodbye[l].expect("a goodbye to forget at");
            let mut through = next.workers[v].next;
            through[l] = through[l].max(end);
            commit(&mut next.workers[v], &next.logs, through);
            next.leave.forgot[v][l] = Some(Forgot { end, stop: None });
            if config.bug == Some(Bug::RemovesTheLeaversCounts) {
                let mut removed = next.logs[l].prefix_sum(end);
                removed.add(INPUT_OUT, 0, 1);
                removed.add(CONSUMER_OUT, 0, 1);
                for counts in removed.0.iter_mut().flatten() {
                    *counts = -*counts;
                }
                next.workers[v].view.add_all(&removed);
            }
        }
    }
    next.compact();
    Ok(next)
}

/// Worker `w` handles the notice. Its sealed markers and its routing follow from `noticed`;
/// broken variants discard a leaver's capabilities or make a stayer forget the leavers here.
fn notice(next: &mut State, config: &Config, w: usize) {
    next.leave.noticed |= 1 << w;
    match config.bug {
        Some(Bug::DiscardsCapabilitiesAtNotice) if config.leaver(w) => {
            let worker = &mut next.workers[w];
            (worker.epoch, worker.held, worker.notify) = (None, None, 0);
        }
        Some(Bug::ForgetsAtNotice) if !config.leaver(w) => {
            for l in next.peers().filter(|&l| config.leaver(l)) {
                let end = next.logs[l].sent();
                next.leave.forgot[w][l] = Some(Forgot { end, stop: Some(next.logs[w].sent()) });
            }
        }
        Some(Bug::LeftBeforeDrained) if config.leaver(w) && config.second.is_some() => {
            second::send_left(next, w);
        }
        _ => {}
    }
}

/// Leaver `l` sends its goodbye, carrying the sequence number after its last batch, and
/// stops: it is no longer a member, and nothing of it matters any more but the messages that
/// still reach it (none, if the protocol is right).
fn goodbye(next: &mut State, config: &Config, l: usize) {
    if config.second.is_some() {
        second::send_left(next, l);
        let inbox = next.second.workers[l].inbox;
        next.second.workers[l] = Worker { inbox, ..Worker::default() };
    }
    let sent = next.logs[l].sent();
    let end = if config.bug == Some(Bug::GoodbyeBeforeLastBatch) { sent.saturating_sub(1) } else { sent };
    next.leave.goodbye[l] = Some(end);
    next.members &= !(1 << l);
    let inbox = next.workers[l].inbox;
    next.workers[l] = Worker { inbox, ..Worker::default() };
}
