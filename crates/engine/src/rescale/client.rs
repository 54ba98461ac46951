//! The joining worker's side of the bootstrap protocol: the messages it takes.
//!
//! A joining worker takes its server's welcome (checked against what it knows: the workers
//! before its process, the workers that left), the `Next` messages of the existing workers
//! and the progress batches it asked for, into its `Joiner` state ([`receive`]). What drives
//! the bootstrap (the wait for the welcome, the range requests) is in `bootstrap`. This module
//! must not run operators.

use std::collections::HashSet;

use super::messages::{BootstrapMessage, ScopeWelcome, Welcome};
use crate::worker::WorkerState;

/// More workers than any cluster has: a welcome naming a dataflow of more is a violation.
const MAX_WORKERS: u64 = 1 << 31;

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
