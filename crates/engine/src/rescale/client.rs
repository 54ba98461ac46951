//! The joining worker's side of the bootstrap protocol.
//!
//! Before the user's code builds dataflows, a joining worker asks its server for a welcome and
//! waits for it ([`await_welcome`]); while dataflows are built, each scope of a dataflow the
//! server built before the join enters the joining mode of its ledger with the server's state
//! and the `Next` messages of the existing workers; [`bootstrap`] then requests the missing
//! ranges ([`advance`], while the worker steps: its operators wait for the ledgers) and tells
//! the server it is done. This module must not run operators.

use std::collections::HashSet;
use std::rc::{Rc, Weak};
use std::time::Duration;

use super::messages::{BootstrapMessage, ScopeWelcome, Welcome};
use super::{Initial, Rescaling};
use crate::cluster_failure::stop_for_program;
use crate::logging::Event;
use crate::progress::ScopeLedger;
use crate::worker::WorkerState;

/// More workers than any cluster has: a welcome naming a dataflow of more is a violation.
const MAX_WORKERS: u64 = 1 << 31;

/// How long a joining worker parks at most between checks while it waits.
const WAIT: Duration = Duration::from_millis(50);

/// The state of a worker of a joining process.
pub(crate) struct Joiner {
    server: usize,
    welcome: Option<Welcome>,
    /// `Next` messages received: sender and `(channel, first direct sequence)` per scope.
    next: Vec<(usize, Vec<(usize, u64)>)>,
    /// The ledgers of scopes being bootstrapped, by progress channel.
    joining: Vec<(usize, Weak<dyn ScopeLedger>)>,
    /// Range requests sent: `(channel, sender)`.
    requested: HashSet<(usize, usize)>,
    /// Range requests answered: `(channel, sender)`.
    answered: HashSet<(usize, usize)>,
    /// Set once `bootstrap` finished.
    finished: bool,
}

impl Joiner {
    pub(crate) fn new(server: usize) -> Self {
        Joiner {
            server,
            welcome: None,
            next: Vec::new(),
            joining: Vec::new(),
            requested: HashSet::new(),
            answered: HashSet::new(),
            finished: false,
        }
    }

    fn welcome(&self) -> &Welcome {
        self.welcome.as_ref().expect("a joining worker builds dataflows only after its welcome")
    }

    /// The number of workers dataflow `index` was built for on the server, if it was built
    /// there before the join and still runs.
    pub(crate) fn dataflow_peers(&self, index: usize) -> Option<usize> {
        self.welcome().dataflows.get(index).copied().flatten().map(|peers| peers as usize)
    }

    /// The number of workers before this worker's process joined, once the welcome is in.
    pub(crate) fn existing(&self) -> Option<usize> {
        self.welcome.as_ref().map(|welcome| welcome.existing)
    }

    /// True for a dataflow the server built before the join (running or completed).
    fn built_before_join(&self, index: usize) -> bool {
        index < self.welcome().dataflows.len()
    }

    pub(crate) fn initial(&self, address: &[usize]) -> Initial {
        if !self.built_before_join(address[0]) {
            return Initial::Ordinary;
        }
        if self.completed_scope(&address[..address.len() - 1]) {
            // Nobody holds anything in a scope the server has completed.
            return Initial::Joining { counted: 0, times: None };
        }
        let counted =
            self.dataflow_peers(address[0]).expect("a scope the server runs is in a dataflow it runs");
        let times = self.welcome().operators.iter().find(|(a, _)| a == address).map(|(_, t)| t.clone());
        Initial::Joining { counted, times }
    }

    /// True for a scope (a whole dataflow, or a region or loop in one) the server built
    /// before the join and has completed and dropped: it starts empty here, so that its
    /// inputs are closed, its probes see it complete and it completes on its own.
    fn completed_scope(&self, scope: &[usize]) -> bool {
        self.built_before_join(scope[0])
            && !self.welcome().scopes.iter().any(|welcome| welcome.address == scope)
    }

    /// The server.
    pub(crate) fn server(&self) -> usize {
        self.server
    }

    /// A scope was built: if the server built it before the join, its ledger starts joining
    /// (unless the server completed it: then it starts empty, like its operators, and drops
    /// the batches the others still send for it).
    ///
    /// # Errors
    ///
    /// The server's state of the scope does not decode or does not fit the scope: a violation
    /// of the server.
    pub(crate) fn scope_built(
        &mut self,
        channel: usize,
        address: &[usize],
        ledger: &Rc<dyn ScopeLedger>,
    ) -> Result<(), String> {
        if !self.built_before_join(address[0]) {
            return Ok(());
        }
        if self.completed_scope(address) {
            ledger.detach();
            return Ok(());
        }
        let welcome = self.welcome();
        let Some(scope) = welcome.scopes.iter().find(|scope| scope.channel == channel) else {
            return Err(format!(
                "sent a welcome without the scope {address:?} (progress channel {channel}) this worker \
                 built; every worker must build the same dataflows in the same order"
            ));
        };
        ledger.start_joining(welcome.existing);
        ledger.install_state(&scope.state, self.server, scope.announced).map_err(|error| {
            format!("sent a progress state of scope {address:?} that does not fit: {error}")
        })?;
        // Workers that left sent everything before the join: the state holds all of it.
        for &worker in &welcome.departed {
            ledger.direct_from(worker, 0);
        }
        for (from, scopes) in &self.next {
            for &(_, first) in scopes.iter().filter(|(c, _)| *c == channel) {
                ledger.direct_from(*from, first);
            }
        }
        self.joining.push((channel, Rc::downgrade(ledger)));
        Ok(())
    }

    fn ledger(&self, channel: usize) -> Option<Rc<dyn ScopeLedger>> {
        self.joining.iter().find(|(c, _)| *c == channel).and_then(|(_, ledger)| ledger.upgrade())
    }
}

/// Checks a welcome of the server against what this joining worker knows: the workers
/// before its process, and counts and indices that fit them.
fn check_welcome(welcome: &Welcome, first: usize) -> Result<(), String> {
    if welcome.existing != first {
        return Err(format!(
            "sent a welcome for a cluster of {} workers before the join, but the joining workers start at {first}",
            welcome.existing
        ));
    }
    // Not bounded by `first`: with back-to-back joins the server may count joiners admitted
    // after this one (the ledger grows to them too); bounded so that counts cannot overflow.
    if let Some(peers) = welcome.dataflows.iter().flatten().find(|&&peers| peers > MAX_WORKERS) {
        return Err(format!("sent a welcome with a dataflow built for {peers} workers"));
    }
    if let Some(worker) = welcome.departed.iter().find(|&&worker| worker >= first) {
        return Err(format!("sent a welcome naming worker {worker} of {first} as departed"));
    }
    let mut channels = HashSet::new();
    if let Some(scope) = welcome.scopes.iter().find(|scope| !channels.insert(scope.channel)) {
        return Err(format!("sent a welcome naming progress channel {} twice", scope.channel));
    }
    // A scope's state is of a dataflow the server runs: the joiner counts its operators'
    // capabilities by that dataflow's workers, which must be there.
    let runs = |scope: &ScopeWelcome| {
        scope
            .address
            .first()
            .is_some_and(|&dataflow| matches!(welcome.dataflows.get(dataflow), Some(Some(_))))
    };
    if let Some(scope) = welcome.scopes.iter().find(|scope| !runs(scope)) {
        return Err(format!(
            "sent a welcome with the progress state of scope {:?}, which is in no dataflow it runs",
            scope.address
        ));
    }
    Ok(())
}

/// Why a message to the joining side is not taken: it breaks the protocol (the sender is to
/// blame), or it shows that this process was started in a way that does not fit its cluster.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ClientError {
    /// The message breaks the protocol; the text says how, after "worker W ".
    #[error("{0}")]
    Protocol(String),
    /// The welcome's departed workers are not this process's `--gone`.
    #[error(transparent)]
    Departed(#[from] DepartedMismatch),
}

impl From<String> for ClientError {
    fn from(reason: String) -> ClientError {
        ClientError::Protocol(reason)
    }
}

impl From<&str> for ClientError {
    fn from(reason: &str) -> ClientError {
        ClientError::Protocol(reason.to_owned())
    }
}

/// A joining process's server says the workers that left the cluster are `departed`, but this
/// process was told `known` (by `--gone`), for processes of `threads` workers. Either this
/// process was started with the wrong `--gone` (the usual case) or its server is wrong; either
/// way the run ends as a configuration error of this process, blaming no other, and the
/// message says how to start it.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "this joining process was started with --gone {known_processes:?} (workers {known:?}), but its \
     bootstrap server, worker {server}, says the processes that left the cluster are \
     {departed_processes:?} (workers {departed:?}); start a joining process with --gone naming \
     exactly the processes that left"
)]
pub(crate) struct DepartedMismatch {
    /// The server that sent the welcome.
    pub server: usize,
    /// The departed workers the welcome names.
    pub departed: Vec<usize>,
    /// Their processes.
    pub departed_processes: Vec<usize>,
    /// The workers this process was told left (`--gone`).
    pub known: Vec<usize>,
    /// Their processes.
    pub known_processes: Vec<usize>,
}

impl DepartedMismatch {
    /// The mismatch between the welcome of `server` naming `departed` and this process's
    /// `known`, for processes of `threads` workers.
    fn new(server: usize, departed: &[usize], known: &[usize], threads: usize) -> DepartedMismatch {
        let processes = |workers: &[usize]| {
            let mut processes: Vec<usize> = workers.iter().map(|worker| worker / threads.max(1)).collect();
            processes.dedup();
            processes
        };
        DepartedMismatch {
            server,
            departed: departed.to_vec(),
            departed_processes: processes(departed),
            known: known.to_vec(),
            known_processes: processes(known),
        }
    }
}

/// Takes a message of worker `from` for the joining side.
///
/// # Errors
///
/// Why the message breaks the protocol: this worker is not joining, the message is not one a
/// joining worker takes from `from` (a welcome or batches not from its server, a second
/// welcome or `Next`, batches it did not ask for), or its contents do not fit
/// ([`ClientError::Protocol`]); a welcome whose departed workers differ from this process's
/// `--gone` ([`ClientError::Departed`]), a configuration error of this process that the
/// caller ends the run with, blaming no other process. Nothing of the message is kept then.
pub(crate) fn receive(
    state: &WorkerState,
    from: usize,
    message: BootstrapMessage,
) -> Result<(), ClientError> {
    let rescaling = state.rescaling();
    let mut client = rescaling.client.borrow_mut();
    let Some(joiner) = client.as_mut() else {
        return Err(ClientError::Protocol(format!(
            "sent a {} message to worker {}, which is not joining",
            message.kind(),
            state.index()
        )));
    };
    match message {
        BootstrapMessage::Welcome(welcome) => {
            if from != joiner.server {
                return Err(ClientError::Protocol(format!(
                    "sent a welcome, but the server of this worker is worker {}",
                    joiner.server
                )));
            }
            if joiner.welcome.is_some() {
                return Err("sent a second welcome".into());
            }
            let threads = state.allocator().threads().max(1);
            check_welcome(&welcome, state.index() / threads * threads)?;
            if let Some((next, _)) = joiner.next.iter().find(|(next, _)| *next >= welcome.existing) {
                return Err(ClientError::Protocol(format!(
                    "sent a welcome, but worker {next}, which joined too, sent a Next message"
                )));
            }
            let known = rescaling.leaves.departed();
            if welcome.departed != known {
                return Err(DepartedMismatch::new(from, &welcome.departed, &known, threads).into());
            }
            joiner.welcome = Some(welcome)
        }
        BootstrapMessage::Next { from, scopes } => {
            if joiner.next.iter().any(|(next, _)| *next == from) {
                return Err("sent a second Next message".into());
            }
            if let Some(existing) = joiner.existing().filter(|existing| from >= *existing) {
                return Err(ClientError::Protocol(format!(
                    "sent a Next message, but only the {existing} workers before the join do"
                )));
            }
            for &(channel, first) in &scopes {
                if let Some(ledger) = joiner.ledger(channel) {
                    ledger.direct_from(from, first);
                }
            }
            joiner.next.push((from, scopes));
        }
        BootstrapMessage::Batches { channel, sender, start, batches } => {
            if from != joiner.server {
                return Err(ClientError::Protocol(format!(
                    "sent progress batches, but the server of this worker is worker {}",
                    joiner.server
                )));
            }
            if !joiner.requested.contains(&(channel, sender)) || !joiner.answered.insert((channel, sender)) {
                return Err(ClientError::Protocol(format!(
                    "sent progress batches of worker {sender} on channel {channel} that were not asked for"
                )));
            }
            let Some(ledger) = joiner.ledger(channel) else {
                return Err(ClientError::Protocol(format!(
                    "sent batches for progress channel {channel}, which is not being bootstrapped"
                )));
            };
            ledger.install_range(sender, start, &batches).map_err(|error| {
                format!("sent progress batches of channel {channel} that do not fit: {error}")
            })?;
        }
        other => {
            return Err(ClientError::Protocol(format!("sent a {} message to a joining worker", other.kind())))
        }
    }
    Ok(())
}

/// Moves the network on and waits a little (parked until something arrives); unwinds if the
/// cluster failed.
fn wait(state: &WorkerState) {
    state.allocator().release();
    state.allocator().await_events(Some(WAIT));
    state.receive_events(false);
    // Bootstrap messages only: a process that joins meanwhile is admitted at this worker's
    // first step, once its dataflows are built (admitted now, it would get a `Next` message
    // naming no scope and wait for one forever).
    super::handle_events(state, false);
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
        let name = super::phases::CONNECT.to_owned();
        logger.log_at(start, Event::Activity { name: name.clone(), start: true });
        logger.log_at(end, Event::Activity { name, start: false });
    }
    super::phase(state, super::phases::STATE, || {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The mismatch is a typed error of its own, not a protocol violation, and says both
    /// views in processes and workers and what to pass.
    #[test]
    fn a_departed_mismatch_is_a_configuration_error_naming_both_views() {
        let error: ClientError = DepartedMismatch::new(0, &[2, 3], &[], 2).into();
        assert!(matches!(error, ClientError::Departed(_)), "{error:?}");
        let text = error.to_string();
        for needed in [
            "started with --gone [] (workers [])",
            "worker 0, says the processes that left the cluster are [1] (workers [2, 3])",
            "--gone naming exactly the processes that left",
        ] {
            assert!(text.contains(needed), "expected {needed:?} in: {text}");
        }
        let protocol: ClientError = "sent a second welcome".into();
        assert_eq!(protocol, ClientError::Protocol("sent a second welcome".into()));
    }
}
