//! The joining worker's side of the bootstrap protocol: the messages it takes.
//!
//! A joining worker takes its server's welcome (checked against what it knows: the workers
//! before its process, the workers that left), the `Next` messages of the existing workers
//! and the progress batches it asked for, into its `Joiner` state ([`receive`]). What drives
//! the bootstrap (the wait for the welcome, the range requests) is in `bootstrap`. This module
//! must not run operators.

use std::collections::HashSet;

use super::messages::{BootstrapMessage, ScopeWelcome, Welcome};
use super::violation::ProtocolViolation;
use crate::worker::WorkerState;

/// More workers than any cluster has: a welcome naming a dataflow of more is a violation.
const MAX_WORKERS: u64 = 1 << 31;

/// Checks a welcome of the server against what this joining worker knows: the workers
/// before its process, and counts and indices that fit them.
fn check_welcome(welcome: &Welcome, first: usize) -> Result<(), ProtocolViolation> {
    if welcome.existing != first {
        return Err(ProtocolViolation::WelcomeExisting { existing: welcome.existing, first });
    }
    // Not bounded by `first`: with back-to-back joins the server may count joiners admitted
    // after this one (the ledger grows to them too); bounded so that counts cannot overflow.
    if let Some(peers) = welcome.dataflows.iter().flatten().find(|&&peers| peers > MAX_WORKERS) {
        return Err(ProtocolViolation::WelcomeTooManyPeers { peers: *peers });
    }
    if let Some(worker) = welcome.departed.iter().find(|&&worker| worker >= first) {
        return Err(ProtocolViolation::WelcomeDepartedJoiner { worker: *worker, first });
    }
    let mut channels = HashSet::new();
    if let Some(scope) = welcome.scopes.iter().find(|scope| !channels.insert(scope.channel)) {
        return Err(ProtocolViolation::WelcomeChannelTwice { channel: scope.channel });
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
        return Err(ProtocolViolation::WelcomeScopeNotRun { address: scope.address.clone() });
    }
    Ok(())
}

/// Why a message to the joining side is not taken: it breaks the protocol (the sender is to
/// blame), or it shows that this process was started in a way that does not fit its cluster.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientError {
    /// The message breaks the protocol.
    #[error(transparent)]
    Protocol(#[from] ProtocolViolation),
    /// The welcome's departed workers are not this process's `--gone`.
    #[error(transparent)]
    Departed(#[from] DepartedMismatch),
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
        return Err(ProtocolViolation::NotJoining { kind: message.kind(), worker: state.index() }.into());
    };
    match message {
        BootstrapMessage::Welcome(welcome) => {
            if from != joiner.server {
                return Err(
                    ProtocolViolation::NotTheServer { what: "a welcome", server: joiner.server }.into()
                );
            }
            if joiner.welcome.is_some() {
                return Err(ProtocolViolation::WelcomeTwice.into());
            }
            let threads = state.allocator().threads().max(1);
            check_welcome(&welcome, state.index() / threads * threads)?;
            if let Some((next, _)) = joiner.next.iter().find(|(next, _)| *next >= welcome.existing) {
                return Err(ProtocolViolation::WelcomeAfterNext { next: *next }.into());
            }
            let known = rescaling.leaves.departed();
            if welcome.departed != known {
                return Err(DepartedMismatch::new(from, &welcome.departed, &known, threads).into());
            }
            joiner.welcome = Some(welcome)
        }
        BootstrapMessage::Next { from, scopes } => {
            if joiner.next.iter().any(|(next, _)| *next == from) {
                return Err(ProtocolViolation::NextTwice.into());
            }
            if let Some(existing) = joiner.existing().filter(|existing| from >= *existing) {
                return Err(ProtocolViolation::NextFromJoiner { existing }.into());
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
                let server = joiner.server;
                return Err(ProtocolViolation::NotTheServer { what: "progress batches", server }.into());
            }
            if !joiner.requested.contains(&(channel, sender)) || !joiner.answered.insert((channel, sender)) {
                return Err(ProtocolViolation::BatchesNotAsked { sender, channel }.into());
            }
            let Some(ledger) = joiner.ledger(channel) else {
                return Err(ProtocolViolation::BatchesUnknownChannel { channel }.into());
            };
            ledger
                .install_range(sender, start, &batches)
                .map_err(|error| ProtocolViolation::BatchesDoNotFit { channel, error })?;
        }
        other => return Err(ProtocolViolation::UnexpectedForJoiner { kind: other.kind() }.into()),
    }
    Ok(())
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
        let protocol: ClientError = ProtocolViolation::WelcomeTwice.into();
        assert!(matches!(protocol, ClientError::Protocol(ProtocolViolation::WelcomeTwice)), "{protocol:?}");
        assert_eq!(protocol.to_string(), "sent a second welcome");
    }
}
