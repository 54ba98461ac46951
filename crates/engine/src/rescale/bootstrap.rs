//! The joining worker's bootstrap, as its worker drives it (`docs/rescaling.md`).
//!
//! Before the user's code builds dataflows, a joining worker asks its server for a welcome and
//! waits for it ([`await_welcome`]), taking in bootstrap messages meanwhile (`dispatch`); while
//! dataflows are built, each scope of a dataflow the server built before the join enters the
//! joining mode of its ledger (`Joiner::scope_built`); `Worker::bootstrap` then checks that
//! every dataflow was built ([`pending`]), requests the missing ranges ([`advance`], while the
//! worker steps: its operators wait for the ledgers) and tells the server it is done. The
//! messages the joining side takes are handled in `client`. This module must not run
//! operators.

use std::time::Duration;

use super::dispatch;
use super::messages::BootstrapMessage;
use super::phases::{self, phase};
use super::state::Rescaling;
use crate::cluster_failure::stop_for_program;
use crate::logging::Event;
use crate::worker::WorkerState;

/// How long a joining worker parks at most between checks while it waits.
const WAIT: Duration = Duration::from_millis(50);

/// Moves the network on and waits a little (parked until something arrives); unwinds if the
/// cluster failed.
fn wait(state: &WorkerState) {
    state.allocator().release();
    state.allocator().await_events(Some(WAIT));
    state.receive_events(false);
    // Bootstrap messages only: a process that joins meanwhile is admitted at this worker's
    // first step, once its dataflows are built (admitted now, it would get a `Next` message
    // naming no scope and wait for one forever).
    dispatch::handle_events(state, false);
}

/// On a joining worker: asks the server for its welcome and waits for it.
/// Does nothing on other workers and once the welcome is in. The process's connection to the
/// cluster is recorded in the trace first (it happened before the worker could log).
pub(crate) fn await_welcome(state: &WorkerState) {
    let rescaling = state.rescaling();
    let server = match rescaling.client.borrow().as_ref() {
        Some(joiner) if joiner.welcome.is_none() => joiner.server,
        _ => return,
    };
    if let (Some(logger), Some((start, end))) = (state.logger(), state.allocator().join_connection()) {
        let name = phases::CONNECT.to_owned();
        logger.log_at(start, Event::Activity { name: name.clone(), start: true });
        logger.log_at(end, Event::Activity { name, start: false });
    }
    phase(state, phases::STATE, || {
        rescaling.send(server, BootstrapMessage::Hello { from: state.index() });
        while rescaling.client.borrow().as_ref().is_some_and(|joiner| joiner.welcome.is_none()) {
            wait(state);
        }
    });
}

/// On a joining worker that has not finished its bootstrap: its server. Checks that every
/// dataflow the server runs was built here.
pub(crate) fn pending(state: &WorkerState) -> Option<usize> {
    let server = match state.rescaling().client.borrow().as_ref() {
        Some(joiner) if !joiner.finished => joiner.server,
        _ => return None,
    };
    check_dataflows(state);
    Some(server)
}

/// Sends the range requests that became known; once every scope has all its ranges, tells
/// the server, activates the bootstrapped scopes and returns true.
pub(crate) fn advance(state: &WorkerState, server: usize) -> bool {
    let rescaling = state.rescaling();
    if !request_ranges(rescaling, server, state.index()) {
        return false;
    }
    let mut client = rescaling.client.borrow_mut();
    let joiner = client.as_mut().expect("a joining worker");
    // Every existing worker waits for this before it may end its run.
    for worker in 0..joiner.welcome().existing {
        rescaling.send(worker, BootstrapMessage::Done { from: state.index() });
    }
    joiner.finished = true;
    for scope in rescaling.live_scopes() {
        if joiner.joining.iter().any(|(channel, _)| *channel == scope.channel) {
            scope.activator.activate();
        }
    }
    true
}

/// Sends the range requests that became known; true once every scope has all its ranges.
fn request_ranges(rescaling: &Rescaling, server: usize, me: usize) -> bool {
    let mut requests = Vec::new();
    let mut complete = true;
    {
        let mut client = rescaling.client.borrow_mut();
        let joiner = client.as_mut().expect("a joining worker");
        for (channel, ledger) in &joiner.joining {
            let Some(ledger) = ledger.upgrade() else { continue };
            complete &= ledger.has_all_ranges();
            for (sender, start, end) in ledger.missing_ranges().unwrap_or_default() {
                if joiner.requested.insert((*channel, sender)) {
                    requests.push((*channel, sender, start, end));
                }
            }
        }
    }
    for (channel, sender, start, end) in requests {
        rescaling.send(server, BootstrapMessage::Range { from: me, channel, sender, start, end });
    }
    complete
}

/// A joining worker called `bootstrap()` before building every dataflow its server runs: a
/// mistake of the program (or a server that counts dataflows wrongly).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "bootstrap: the server, worker {server}, runs {expected} dataflows but this worker built \
     {built}; build every dataflow before calling bootstrap()"
)]
pub(crate) struct MissingDataflows {
    /// The joiner's server.
    pub server: usize,
    /// The dataflows its welcome names.
    pub expected: usize,
    /// The dataflows this worker built.
    pub built: usize,
}

/// Every dataflow the server runs must have been built here before `bootstrap`; else the run
/// ends with [`MissingDataflows`], blaming no other process.
fn check_dataflows(state: &WorkerState) {
    let rescaling = state.rescaling();
    let client = rescaling.client.borrow();
    let Some(joiner) = client.as_ref() else { return };
    let expected = joiner.welcome().dataflows.len();
    let built = rescaling.dataflow_peers.borrow().len();
    if built < expected {
        let error = MissingDataflows { server: joiner.server, expected, built };
        drop(client);
        stop_for_program(&error.to_string());
    }
}
