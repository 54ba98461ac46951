//! The bootstrap server's side: admitting joined workers and answering their requests.
//!
//! Every existing worker admits joined workers (grows its ledgers, sends each new worker its
//! `Next` message); the worker a joiner names as its server also welcomes it (snapshot of every
//! scope's progress state, announcement of the capabilities it hands over) and answers its
//! range requests as soon as it has the batches, at the start of its steps, while it keeps
//! running its own dataflows. This module must not block; what it keeps between steps is in `server_state`.
//!
//! A joining process asks one server (`--join W`) for the welcomes of all its workers. So that
//! a joiner cannot be welcomed, and its capabilities announced, by two servers, a server tells
//! every other worker before the joiner's process whom it welcomed (`Serving`): a worker that
//! knows another server of a process refuses a hello of that process, and one that learns of
//! another server after a hello or welcome of its own ends the run naming the joiner. Over
//! the race (two hellos arriving before either `Serving`) both welcomes go out; counting the
//! capabilities twice only holds frontiers back, and the run ends when the `Serving` messages
//! arrive.

use std::collections::BTreeMap;
use std::ops::Range;

use super::messages::{BootstrapMessage, ScopeWelcome, Welcome};
use super::phases::{self, phase};
use super::state::Rescaling;
use super::violation::ProtocolViolation;
use crate::cluster_failure::stop_for_violation;
use crate::logging::Activity;
use crate::progress::JoinDataError;
use crate::worker::WorkerState;

/// A `Hello` of worker `from` arrived: it waits for this worker's welcome.
///
/// # Errors
///
/// Why the request breaks the protocol: `from` did not join, or asked before.
pub(crate) fn hello(state: &WorkerState, from: usize) -> Result<(), ProtocolViolation> {
    let mut server = state.rescaling().server.borrow_mut();
    if !server.may_have_joined(from, state.peers()) {
        return Err(ProtocolViolation::HelloWithoutJoin);
    }
    if server.hellos.contains(&from) || server.active.contains(&from) || server.finished.contains(&from) {
        return Err(ProtocolViolation::HelloTwice);
    }
    let process = state.rescaling().violations.process_of(from);
    if let Some(&other) = server.servers.get(&process).filter(|&&other| other != state.index()) {
        return Err(ProtocolViolation::SecondServer { asked: state.index(), server: other, process });
    }
    server.hellos.push(from);
    Ok(())
}

/// Worker `from` says it welcomed joining worker `joiner`: recorded as the server of the
/// joiner's process. If this worker was asked by that process too (a pending hello or a
/// welcome of its own), or knows another server of it, the run ends naming the joiner.
///
/// # Errors
///
/// Why the message breaks the protocol: `joiner` did not join, or `from` is not before it.
pub(crate) fn serving(state: &WorkerState, from: usize, joiner: usize) -> Result<(), ProtocolViolation> {
    let rescaling = state.rescaling();
    let mut server = rescaling.server.borrow_mut();
    if !server.may_have_joined(joiner, state.peers()) || from >= joiner {
        return Err(ProtocolViolation::ServingNoJoiner { joiner });
    }
    let process = rescaling.violations.process_of(joiner);
    let me = state.index();
    let asked_me = server.hellos.iter().any(|&hello| rescaling.violations.process_of(hello) == process);
    let reason = match server.servers.get(&process) {
        _ if asked_me => Some(ProtocolViolation::SecondServer { asked: me, server: from, process }),
        Some(&other) if other == me => {
            Some(ProtocolViolation::SecondServer { asked: me, server: from, process })
        }
        Some(&other) if other != from => Some(ProtocolViolation::TwoServers { first: other, second: from }),
        _ => None,
    };
    if let Some(reason) = reason {
        drop(server);
        stop_for_violation(&rescaling.violations, joiner, &format!("worker {joiner} {reason}"));
    }
    server.servers.insert(process, from);
    Ok(())
}

/// A `Range` request of worker `from` arrived: it is answered once the batches are here.
///
/// # Errors
///
/// Why the request breaks the protocol: this worker did not welcome `from` (or `from` said it
/// was done), it names a worker or progress channel that does not exist, an empty-or-reversed
/// range, or repeats an earlier request.
pub(crate) fn range(
    state: &WorkerState,
    from: usize,
    channel: usize,
    sender: usize,
    start: u64,
    end: u64,
) -> Result<(), ProtocolViolation> {
    let rescaling = state.rescaling();
    let peers = state.peers();
    let mut server = rescaling.server.borrow_mut();
    if !server.active.contains(&from) {
        return Err(ProtocolViolation::RangeNotServing);
    }
    if sender >= peers {
        return Err(ProtocolViolation::RangeUnknownSender { sender, peers });
    }
    if end < start {
        return Err(ProtocolViolation::RangeReversed { sender, start, end });
    }
    if !rescaling.recording_scopes().iter().any(|scope| scope.channel == channel) {
        return Err(ProtocolViolation::RangeUnknownChannel { channel });
    }
    if !server.requested.insert((from, channel, sender)) {
        return Err(ProtocolViolation::RangeTwice { sender, channel });
    }
    server.ranges.push((from, channel, sender, start, end));
    Ok(())
}

/// Admits the new `workers`: their progress batches are expected, and each gets this
/// worker's `Next` message.
pub(crate) fn admit(state: &WorkerState, workers: Range<usize>) {
    let rescaling = state.rescaling();
    let peers = state.peers();
    for scope in &rescaling.live_scopes() {
        scope.ledger.grow(peers);
    }
    let next = rescaling.next_sends();
    for worker in workers.clone() {
        rescaling.send(worker, BootstrapMessage::Next { from: state.index(), scopes: next.clone() });
    }
    let mut server = rescaling.server.borrow_mut();
    let waiting: Vec<usize> = workers.clone().filter(|worker| !server.finished.contains(worker)).collect();
    server.admitted.extend(waiting);
    server.joined.push(workers);
}

/// Welcomes admitted joiners and answers range requests whose batches have arrived.
pub(crate) fn serve(state: &WorkerState) {
    let rescaling = state.rescaling();
    let (hellos, ranges) = {
        let server = rescaling.server.borrow();
        (server.hellos.is_empty(), server.ranges.is_empty())
    };
    // A worker that is itself still joining has no complete progress state to give yet.
    if !hellos && !rescaling.bootstrapping.get() {
        let peers = state.peers();
        let waiting = std::mem::take(&mut rescaling.server.borrow_mut().hellos);
        let (now, later): (Vec<usize>, Vec<usize>) = waiting.into_iter().partition(|&from| from < peers);
        rescaling.server.borrow_mut().hellos = later;
        now.into_iter().for_each(|from| phase(state, phases::STATE, || welcome(state, from)));
    }
    if !ranges {
        answer_ranges(state);
    }
}

/// Sends joining worker `to` its welcome and announces its capabilities.
fn welcome(state: &WorkerState, to: usize) {
    let rescaling = state.rescaling();
    let existing = {
        let server = rescaling.server.borrow();
        let Some(process) = server.joined.iter().find(|workers| workers.contains(&to)) else {
            panic!("bootstrap: worker {to} asked for a welcome but did not join");
        };
        process.start
    };
    let operators = held_capabilities(rescaling);
    let announced = phase(state, phases::HANDOVER, || announce(rescaling, &operators));
    let scopes = rescaling
        .live_scopes()
        .into_iter()
        .map(|scope| ScopeWelcome {
            channel: scope.channel,
            address: scope.address.clone(),
            state: scope.ledger.snapshot(),
            announced: announced.iter().find(|(channel, _)| *channel == scope.channel).map(|(_, seq)| *seq),
        })
        .collect();
    let dataflows = {
        let built = state.dataflow_slots();
        let peers = rescaling.dataflow_peers.borrow();
        peers.iter().zip(built).map(|(&peers, alive)| alive.then_some(peers as u64)).collect()
    };
    let operators = operators.into_iter().map(|(address, _, times)| (address, times)).collect();
    let departed = rescaling.leaves.departed();
    let welcome = Welcome { existing, dataflows, operators, scopes, departed };
    rescaling.send(to, BootstrapMessage::Welcome(welcome));
    let me = state.index();
    for worker in rescaling.leaves.not_gone(existing).into_iter().filter(|&worker| worker != me) {
        rescaling.send(worker, BootstrapMessage::Serving { from: me, joiner: to });
    }
    let mut server = rescaling.server.borrow_mut();
    server.active.insert(to);
    server.servers.insert(rescaling.violations.process_of(to), me);
}

/// Announces `+1` at the first held time of every output of `operators`, in the next batch of
/// their scopes; returns `(progress channel, sequence number of that batch)` per scope.
fn announce(rescaling: &Rescaling, operators: &[(Vec<usize>, usize, Vec<u8>)]) -> Vec<(usize, u64)> {
    let mut by_scope: BTreeMap<Vec<usize>, Vec<HeldOperator>> = BTreeMap::new();
    for (address, outputs, times) in operators {
        let (operator, scope) = address.split_last().expect("an operator address is not empty");
        by_scope.entry(scope.to_vec()).or_default().push((*operator, *outputs, times.clone()));
    }
    let mut announced = Vec::new();
    for scope in rescaling.live_scopes() {
        if let Some(held) = by_scope.get(&scope.address) {
            let sequence = scope.ledger.announce(held, 1).unwrap_or_else(|e| panic!("bootstrap: {e}"));
            scope.activator.activate();
            announced.push((scope.channel, sequence));
        }
    }
    announced
}

/// An operator's index in its scope, its number of outputs and its held times (encoded).
type HeldOperator = (usize, usize, Vec<u8>);

/// `(address, outputs, times)` of every live operator instance that holds capabilities.
fn held_capabilities(rescaling: &Rescaling) -> Vec<(Vec<usize>, usize, Vec<u8>)> {
    let mut operators = rescaling.operators.borrow_mut();
    operators.retain(|entry| entry.held.strong_count() > 0);
    operators
        .iter()
        .filter_map(|entry| {
            let times = entry.held.upgrade()?.encoded()?;
            Some((entry.address.clone(), entry.outputs, times))
        })
        .collect()
}

/// Answers the range requests whose batches this worker has received.
fn answer_ranges(state: &WorkerState) {
    let rescaling = state.rescaling();
    let _activity = Activity::begin(state.logger(), phases::RANGES);
    let requests = std::mem::take(&mut rescaling.server.borrow_mut().ranges);
    let scopes = rescaling.recording_scopes();
    let mut later = Vec::new();
    for request @ (from, channel, sender, start, end) in requests {
        // Checked on arrival; a scope whose recording stopped since has nothing to give.
        let range = match scopes.iter().find(|scope| scope.channel == channel) {
            Some(scope) => scope.ledger.range(sender, start, end),
            None => Err(JoinDataError::ChannelNotRecorded { channel }),
        };
        match range {
            Ok(Some(batches)) => {
                rescaling.send(from, BootstrapMessage::Batches { channel, sender, start, batches });
            }
            Ok(None) => later.push(request),
            Err(error) => {
                let reason = format!("worker {from} asked for progress channel {channel}: {error}");
                stop_for_violation(&rescaling.violations, from, &reason);
            }
        }
    }
    rescaling.server.borrow_mut().ranges.extend(later);
}

/// Joining worker `from` has every range; recording stops when no joiner needs it.
///
/// # Errors
///
/// Why the message breaks the protocol: `from` did not join, or said so before.
pub(crate) fn done(state: &WorkerState, from: usize) -> Result<(), ProtocolViolation> {
    let rescaling = state.rescaling();
    let mut server = rescaling.server.borrow_mut();
    if !server.may_have_joined(from, state.peers()) {
        return Err(ProtocolViolation::DoneWithoutJoin);
    }
    if server.finished.contains(&from) {
        return Err(ProtocolViolation::DoneTwice);
    }
    server.admitted.remove(&from);
    server.finished.insert(from);
    if server.active.remove(&from) && server.active.is_empty() {
        drop(server);
        for scope in rescaling.live_scopes() {
            scope.ledger.stop_recording();
        }
        rescaling.retired.borrow_mut().clear();
    }
    Ok(())
}
