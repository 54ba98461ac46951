//! The second dataflow: one built during the leave, and the `Left` messages that settle how
//! many initial capabilities its operators count.
//!
//! `docs/rescaling.md` ("Dataflows built during a leave"): every operator counts one implicit
//! initial capability per worker that builds its dataflow or may still. A worker builds the
//! second dataflow counting every worker whose `Left` it has not taken in, and a worker whose
//! `Left` it took in only if that `Left` says it built the dataflow (`Leaves::builders`). A
//! drained leaver sends every other worker still present `Left{dataflows}` (how many it
//! built: 1, or 2 if it built this one too) before its goodbye, FIFO with it, and builds
//! nothing afterwards; a worker that takes in a `Left` saying the leaver never built the
//! second dataflow, having built it itself, retires the leaver's initial capabilities there,
//! in its own view only (`Rescaling::retire_initial`: local `-1`s, never sent).
//!
//! The dataflow is an input and a notifying consumer like the first one's, without the
//! exchange: each worker's input sends only to its own consumer (a pipeline), so it needs no
//! sealed marker and adds no routing. What it checks is the count of initial capabilities,
//! which no data movement affects. Each stayer builds it at a moment of its choice after it
//! handled the notice; each leaver builds it at a moment of its choice after its notice and
//! before its `Left`, or never. Its progress batches have sequence numbers of their own (a
//! ledger per dataflow, as in the engine) and reach every worker, which applies them lazily
//! (`model_support::views`) from the moment it built the dataflow: batches sent before are
//! buffered for it. A leaver sends no batch after its goodbye, so forgetting it drops none of
//! this dataflow's.
//!
//! This module owns the second dataflow's state, its steps (build, take in a `Left`) and its
//! properties; `actions` and `properties` call into it.

use super::actions::{Bug, Config};
use super::model::{has, State};
use super::properties::{Property, Violation};
use super::unbuilt;
use crate::model_support::dataflow::{
    self, passed, Counts, Log, Step, Worker, CONSUMER_OUT, INPUT_OUT, WORKERS,
};
use crate::model_support::views::{extensions, least, View};

/// The bounds of the second dataflow's work.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// Data messages each worker's input may send (to its own consumer).
    pub sends: [u8; WORKERS],
    /// The last epoch its inputs may advance to.
    pub last_epoch: u8,
    /// The stayers built it before the notice, with an exchange, and the leavers never build
    /// it (`unbuilt`); otherwise it is built during the leave, without an exchange.
    pub unbuilt: bool,
}

/// The second dataflow's state, and what the workers know of the leavers' `Left`s.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Second {
    /// The workers that built it, one bit each.
    pub built: u8,
    /// Per worker that built it: how many workers' initial capabilities its view counts.
    pub counted: [i8; WORKERS],
    pub workers: [Worker; WORKERS],
    pub logs: [Log; WORKERS],
    /// Per leaver that sent `Left`: the number of dataflows it says it built.
    pub left: [Option<u8>; WORKERS],
    /// Per worker: the leavers whose `Left` it took in, one bit each.
    pub heard: [u8; WORKERS],
    /// The workers that never build it (the leavers of an unbuilt one), one bit each.
    pub never: u8,
    /// The leavers that forwarded what they received in it (unbuilt), one bit each.
    pub forwarded: u8,
}

/// The initial counts of `n` workers: `Counts::initial`, for any count a view may hold.
fn initial(n: i8) -> Counts {
    let mut counts = Counts::default();
    counts.add(INPUT_OUT, 0, n);
    counts.add(CONSUMER_OUT, 0, n);
    counts
}

impl Second {
    pub fn built(&self, w: usize) -> bool {
        has(self.built, w)
    }

    /// Whether worker `v` took in `w`'s `Left`.
    pub fn heard(&self, v: usize, w: usize) -> bool {
        has(self.heard[v], w)
    }

    /// The true counts: every capability held and every message not yet consumed.
    pub fn truth(&self) -> Counts {
        dataflow::truth(&self.workers)
    }

    /// The initial capabilities of the workers that built it plus every batch sent.
    pub fn sent_total(&self) -> Counts {
        let mut counts = initial(self.built.count_ones() as i8);
        for log in &self.logs {
            counts.add_all(&log.prefix_sum(log.sent()));
        }
        counts
    }

    /// The view worker `w` must have if it applied exactly each sender's batches before `next`.
    pub fn view_of_prefixes(&self, w: usize, next: &[u8; WORKERS]) -> Counts {
        let mut counts = initial(self.counted[w]);
        for (log, &end) in self.logs.iter().zip(next.iter()) {
            counts.add_all(&log.prefix_sum(end));
        }
        counts
    }

    /// How many initial capabilities worker `v` must count: every worker that built the
    /// dataflow or may still, as far as `v` knows (every worker whose `Left` it has not
    /// taken in).
    pub fn expected_count(&self, peers: usize, v: usize) -> i8 {
        (0..peers).filter(|&w| self.built(w) || !self.heard(v, w)).count() as i8
    }

    /// Every view worker `w` may hold: its committed view extended by any prefix of the
    /// batches sent (they all reach it).
    pub fn possible_views(&self, w: usize) -> Vec<View> {
        extensions(&self.workers[w], &self.logs, |sender| self.logs[sender].sent())
    }

    /// Folds the batches every worker that built the dataflow applied into the logs' prefixes,
    /// as long as no member may still build it (one that builds it needs them all).
    pub fn compact(&mut self, members: u8) {
        let members = members & !self.never;
        if (0..WORKERS).any(|r| has(members, r) && !self.built(r)) {
            return;
        }
        for sender in 0..WORKERS {
            let mut keep = self.logs[sender].sent();
            for receiver in (0..WORKERS).filter(|&r| has(members, r)) {
                keep = keep.min(self.workers[receiver].next[sender]);
            }
            self.logs[sender].trim(keep);
        }
    }
}

/// One step of the second dataflow or of its `Left`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecondAction {
    /// Worker `w` builds the second dataflow.
    Build(u8),
    /// A local step of the second dataflow (its batch goes to every worker).
    Local(Step),
    /// Worker `v` takes in leaver `l`'s `Left`.
    HearLeft { v: u8, l: u8 },
    /// Leaver `l`'s program returns during its leave: it builds nothing more, and sends `Left`
    /// at once instead of at its goodbye (`Worker::program_returned`).
    Return(u8),
    /// Leaver `l` hands what it received in an unbuilt dataflow to the target (`unbuilt`).
    Forward(u8),
}

/// The second dataflow's actions enabled in `state`.
pub fn enabled(state: &State, config: &Config, bounds: &Bounds) -> Vec<SecondAction> {
    let mut actions = Vec::new();
    let second = &state.second;
    for w in state.peers().filter(|&w| state.member(w)) {
        let may_build =
            !config.leaver(w) || second.left[w].is_none() || config.bug == Some(Bug::LeftBeforeDrained);
        if state.noticed(w) && !second.built(w) && may_build && !bounds.unbuilt {
            actions.push(SecondAction::Build(w as u8));
        }
        if second.built(w) {
            let notifying = |t| {
                let mut views = second.possible_views(w);
                views.retain(|(_, view)| passed(view, t));
                least(views)
            };
            let routes = |to| if bounds.unbuilt { unbuilt::routes(state, config, w, to) } else { to == w };
            let local = dataflow::steps(&second.workers[w], w, bounds.last_epoch, routes, notifying);
            actions.extend(local.into_iter().map(SecondAction::Local));
        }
        for l in state.peers().filter(|&l| l != w && second.left[l].is_some() && !second.heard(w, l)) {
            actions.push(SecondAction::HearLeft { v: w as u8, l: l as u8 });
        }
        if config.leaver(w) && state.noticed(w) && second.left[w].is_none() {
            actions.push(SecondAction::Return(w as u8));
        }
        if bounds.unbuilt && unbuilt::may_forward(state, config, w) {
            actions.push(SecondAction::Forward(w as u8));
        }
    }
    actions
}

/// Takes `action` in `next`, or says why the action itself was wrong.
pub fn apply(next: &mut State, config: &Config, bounds: &Bounds, action: SecondAction) -> Result<(), String> {
    let peers = next.peers as usize;
    let second = &mut next.second;
    match action {
        SecondAction::Build(w) => {
            let w = w as usize;
            let count = match config.bug {
                Some(Bug::CountsLeaversNever) if !config.leaver(w) => {
                    (0..peers).filter(|&u| !config.leaver(u)).count()
                }
                Some(Bug::CountsLeaversAlways) => peers,
                Some(Bug::ForgetsBeforeLeft) => (0..peers)
                    .filter(|&u| match second.left[u].filter(|_| second.heard(w, u)) {
                        Some(n) => n > 1,
                        None => next.leave.forgot[w][u].is_none(),
                    })
                    .count(),
                _ => (0..peers)
                    .filter(|&u| !second.heard(w, u) || second.left[u].is_some_and(|n| n > 1))
                    .count(),
            };
            second.workers[w] = Worker::initial(count, bounds.sends[w]);
            second.counted[w] = count as i8;
            second.built |= 1 << w;
        }
        SecondAction::Local(step) => {
            let batch = step.apply(&mut second.workers, &second.logs)?;
            second.logs[step.worker()].push(batch);
        }
        SecondAction::Forward(l) => unbuilt::forward(next, config, l as usize),
        SecondAction::Return(l) => {
            let l = l as usize;
            second.left[l] = Some(1 + second.built(l) as u8);
        }
        SecondAction::HearLeft { v, l } => {
            let (v, l) = (v as usize, l as usize);
            second.heard[v] |= 1 << l;
            let never_built = second.left[l].is_some_and(|n| n <= 1);
            let retires = match config.bug {
                Some(Bug::CountsLeaversAlways) => false,
                Some(Bug::RetiresWhereBuilt) => true,
                _ => never_built,
            };
            if second.built(v) && retires {
                second.counted[v] -= 1;
                let worker = &mut second.workers[v];
                worker.view.add(INPUT_OUT, 0, -1);
                worker.view.add(CONSUMER_OUT, 0, -1);
            }
        }
    }
    Ok(())
}

/// Leaver `l` sends `Left`: the number of dataflows it built (the first, and the second if it
/// built it). Sent once: when its program returns, at the goodbye, or earlier with
/// `Bug::LeftBeforeDrained`.
pub fn send_left(state: &mut State, l: usize) {
    let second = &mut state.second;
    if second.left[l].is_none() {
        second.left[l] = Some(1 + second.built(l) as u8);
    }
}

/// Checks the second dataflow's invariants (all but `config.unchecked`).
pub fn check_state(state: &State, config: &Config) -> Result<(), Violation> {
    let checked = |property| config.unchecked != Some(property);
    let second = &state.second;
    for l in state.peers().filter(|&l| !state.member(l)) {
        if checked(Property::NoLostMessage) && second.workers[l].inbox.iter().any(|&n| n > 0) {
            let detail = format!(
                "second dataflow: worker {l} left, but messages reached it: {:?}",
                second.workers[l].inbox
            );
            return Err(Violation { property: Property::NoLostMessage, detail });
        }
    }
    let truth = second.truth();
    if checked(Property::Accounting) && truth != second.sent_total() {
        let detail = format!("second dataflow: held {truth:?}, sent {:?}", second.sent_total());
        return Err(Violation { property: Property::Accounting, detail });
    }
    for w in state.peers().filter(|&w| state.member(w) && second.built(w)) {
        let expected = second.expected_count(state.peers as usize, w);
        if checked(Property::InitialCount) && second.counted[w] != expected {
            let detail = format!(
                "second dataflow: worker {w} counts {} initial capabilities, but {expected} workers \
                 built it or may still as far as it knows",
                second.counted[w]
            );
            return Err(Violation { property: Property::InitialCount, detail });
        }
        let worker = &second.workers[w];
        if checked(Property::PrefixView) && worker.view != second.view_of_prefixes(w, &worker.next) {
            let detail =
                format!("second dataflow: worker {w} view {:?} after batches {:?}", worker.view, worker.next);
            return Err(Violation { property: Property::PrefixView, detail });
        }
        if checked(Property::Frontier) {
            for (_, view) in second.possible_views(w) {
                if let Some(detail) = view.frontier_behind(w, &truth) {
                    let detail = format!("second dataflow: {detail}");
                    return Err(Violation { property: Property::Frontier, detail });
                }
            }
        }
    }
    Ok(())
}

/// Why a state without enabled actions is not complete in the second dataflow, if it is not:
/// a stayer never built it, a capability or a message is left, or a member's view, once every
/// batch arrived, is not empty (it counts an initial capability no one will release).
pub fn incomplete(state: &State, config: &Config) -> Option<String> {
    let second = &state.second;
    let unbuilt: Vec<usize> = state.peers().filter(|&w| !config.leaver(w) && !second.built(w)).collect();
    let released = second.truth().is_zero();
    let mut behind = Vec::new();
    for r in state.peers().filter(|&r| state.member(r) && second.built(r)) {
        let through = std::array::from_fn(|s| second.logs[s].sent());
        let view = second.view_of_prefixes(r, &through);
        if !view.is_zero() {
            behind.push((r, view.0));
        }
    }
    let complete = unbuilt.is_empty() && released && behind.is_empty();
    (!complete).then(|| {
        format!(
            "second dataflow: stayers that never built it {unbuilt:?}, all released {released}, \
             members whose complete view is not empty {behind:?}"
        )
    })
}
