//! The second dataflow as one the leaver never builds: the stayers built it before the notice,
//! its exchange sent the leaver messages, and the drained leaver hands them to a stayer
//! (`docs/rescaling.md`, "Dataflows the leaver never builds that others built before its
//! notice").
//!
//! With `Bounds::unbuilt`, the second dataflow is an input, an exchange and a notifying
//! consumer, like the first, that every stayer built at the start, counting every worker's
//! initial capabilities (the leaver may still build it, as far as they know); the leavers
//! never build it. Until it handles the notice, a stayer's input routes to any worker, the
//! leavers included; after, to the stayers only. The messages a leaver receives there wait
//! in its inbox (the engine keeps them as bytes for a channel it never allocated), so they
//! do not hold up its drain. Once drained (every other worker's sealed marker follows its last
//! message to it), the leaver *forwards* them (`Forward`): each goes to the *target*, the
//! lowest-index stayer, whose consumer takes it like its own, with no batch (the sender's
//! `+1` stands until the target's `-1`). It says goodbye only after that. The leaver's `Left`
//! (1: it built the first dataflow only) retires its initial capabilities in the stayers'
//! views (`second`).
//!
//! This module owns that variant's start, its routing, the forward and its broken versions;
//! `second` calls into it.

use super::actions::{drained, Bug, Config};
use super::model::{has, State};
use crate::model_support::dataflow::{Counts, Worker, CONSUMER_IN};

/// The start of a scenario with an unbuilt second dataflow: every stayer built it, counting
/// every worker's initial capabilities.
pub fn build_at_start(state: &mut State, config: &Config, sends: [u8; 3]) {
    let peers = config.peers;
    let second = &mut state.second;
    for w in (0..peers).filter(|&w| !config.leaver(w)) {
        second.workers[w] = Worker::initial(peers, sends[w]);
        second.counted[w] = peers as i8;
        second.built |= 1 << w;
    }
    second.never = config.leavers;
}

/// Whether stayer `from`'s input may send to `to` in the unbuilt dataflow: to every worker
/// until `from` handled the notice, then to the stayers only.
pub fn routes(state: &State, config: &Config, from: usize, to: usize) -> bool {
    to < config.peers && !(state.noticed(from) && config.leaver(to))
}

/// Whether leaver `l` may forward what it received in the unbuilt dataflow now: once drained
/// (or at its notice, broken), and once only.
pub fn may_forward(state: &State, config: &Config, l: usize) -> bool {
    let ready = match config.bug {
        Some(Bug::ForwardsBeforeDrained) => state.noticed(l),
        _ => drained(state, config, l),
    };
    config.leaver(l) && state.member(l) && !has(state.second.forwarded, l) && ready
}

/// Whether leaver `l` has done with the unbuilt dataflow what its goodbye waits for.
pub fn may_go(state: &State, config: &Config, l: usize) -> bool {
    has(state.second.forwarded, l) || config.bug == Some(Bug::GoesWithoutForwarding)
}

/// The target of forwarded messages: the lowest-index stayer.
fn target(config: &Config) -> usize {
    (0..config.peers).find(|&w| !config.leaver(w)).expect("a stayer")
}

/// Leaver `l` forwards every message in its inbox of the unbuilt dataflow to the target. With
/// `Bug::RecountsForwarded` the leaver also sends a batch consuming them (`-1` each) and the
/// target one taking them in again (`+1` each): two batches that views apply in any order.
pub fn forward(next: &mut State, config: &Config, l: usize) {
    let target = target(config);
    let second = &mut next.second;
    let inbox = std::mem::take(&mut second.workers[l].inbox);
    let mut recount = Counts::default();
    for (t, &n) in inbox.iter().enumerate() {
        second.workers[target].inbox[t] += n;
        recount.add(CONSUMER_IN, t, n as i8);
    }
    second.forwarded |= 1 << l;
    if config.bug == Some(Bug::RecountsForwarded) && !recount.is_zero() {
        second.logs[target].push(recount);
        for count in recount.0.iter_mut().flatten() {
            *count = -*count;
        }
        second.logs[l].push(recount);
    }
}

// Its scenarios, and the broken versions the checker must catch.

use super::properties::Property;
use super::second::Bounds;
use super::{fails, fails_then, holds, scenario, DROPPED};

/// A scenario whose second dataflow the stayers built before the notice and the leavers never
/// build; its inputs send up to `sends[w]` messages each over epochs up to `last_epoch`.
fn with_unbuilt(config: Config, sends: [u8; 3], last_epoch: u8) -> Config {
    Config { second: Some(Bounds { sends, last_epoch, unbuilt: true }), ..config }
}

#[test]
fn a_stayer_sends_to_a_leaver_that_never_built_the_dataflow() {
    holds(with_unbuilt(scenario(2, 0b10, [0, 0, 0], 0, &[]), [2, 0, 0], 1), 200_000);
}

#[test]
fn worker_0_leaves_without_building_the_dataflow() {
    holds(with_unbuilt(scenario(2, 0b01, [0, 0, 0], 0, &[]), [0, 2, 0], 1), 200_000);
}

#[test]
fn one_of_three_leaves_without_building_the_dataflow() {
    holds(with_unbuilt(scenario(3, 0b010, [0, 0, 0], 0, DROPPED), [0, 0, 1], 0), 60_000);
}

#[test]
fn data_in_both_dataflows_and_a_leaver_that_never_built_the_second() {
    holds(with_unbuilt(scenario(2, 0b10, [1, 1, 0], 0, &[]), [1, 0, 0], 0), 800_000);
}

/// The broken variants of the forward: two workers, the second leaves, the first sends it one
/// message in the dataflow it never builds.
fn unbuilt_bug_scenario(bug: Bug) -> Config {
    Config { bug: Some(bug), ..with_unbuilt(scenario(2, 0b10, [0, 0, 0], 0, &[]), [1, 0, 0], 0) }
}

#[test]
fn forwarding_before_the_leaver_is_drained_is_caught() {
    fails_then(unbuilt_bug_scenario(Bug::ForwardsBeforeDrained), Property::NoLostMessage, Property::Deadlock);
}

#[test]
fn going_without_forwarding_is_caught() {
    fails_then(unbuilt_bug_scenario(Bug::GoesWithoutForwarding), Property::NoLostMessage, Property::Deadlock);
}

#[test]
fn recounting_forwarded_messages_is_caught() {
    fails(unbuilt_bug_scenario(Bug::RecountsForwarded), &[Property::Frontier]);
}
