//! Clusters of simulated processes on one machine, for the join tests and the acceptor fuzzer.
//!
//! This module owns [`Member`] (one process: its transport, join acceptor and workers'
//! endpoints, started as an initial process or as a joiner), [`start_cluster`] (the initial
//! processes, each set up on its own thread as separate processes would be) and [`exchange`]
//! (every worker sends one numbered frame to every worker of every other process, and each
//! checks that it received exactly those). It must not be used by the runtime: it exists so that
//! the tests and the fuzzer check the network through its public API in one way.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{
    establish_with, ClusterIdentity, Connections, Entry, JoinedProcess, Liveness, MessageHeader,
    NetworkError, SetupTimes, Transport, TransportOptions, WorkerEndpoints,
};

/// The channel [`exchange`] sends on.
pub const EXCHANGE_CHANNEL: u64 = 1;

/// One simulated process.
pub struct Member {
    /// Its network threads and join acceptor.
    pub transport: Transport,
    /// Its workers' endpoints; [`Member::take_joins`] adds the senders to processes that joined.
    pub workers: Vec<WorkerEndpoints>,
}

impl Member {
    /// Process `process` of `addresses` (the cluster's size, after the join for a joiner),
    /// connected as `entry` says, with its transport started (peers lost after `liveness`) and
    /// admitting joiners.
    ///
    /// # Errors
    ///
    /// Those of [`establish_with`] and [`Transport::start`].
    pub fn start(
        entry: Entry,
        process: usize,
        addresses: &[String],
        (threads, liveness): (usize, Liveness),
        identity: &ClusterIdentity,
        deadline: Duration,
    ) -> Result<Member, NetworkError> {
        let Connections { streams, listener } = establish_with(
            entry,
            process,
            addresses,
            &[],
            threads,
            identity,
            SetupTimes { deadline, liveness },
        )?;
        let wake = Arc::new(|_worker: usize| {});
        let (mut transport, workers) = Transport::start(
            process,
            threads,
            streams,
            TransportOptions { liveness, ..Default::default() },
            wake,
        )?;
        if let Some(listener) = listener {
            transport.accept_joins(listener, identity.clone())?;
        }
        Ok(Member { transport, workers })
    }

    /// Moves the senders of every process that joined since the last call into the workers'
    /// endpoints; returns, per local worker, the processes it learned of.
    ///
    /// # Panics
    ///
    /// When a worker learns of a process out of order (a bug in the transport).
    pub fn take_joins(&mut self) -> Vec<Vec<usize>> {
        self.workers
            .iter_mut()
            .map(|worker| {
                let joined: Vec<JoinedProcess> = worker.joins.try_iter().collect();
                joined
                    .into_iter()
                    .map(|JoinedProcess { process, sender }| {
                        assert_eq!(process, worker.senders.len(), "joins arrive in index order");
                        worker.senders.push(Some(sender));
                        process
                    })
                    .collect()
            })
            .collect()
    }

    /// Shuts the transport down with goodbyes, dropping the endpoints first.
    ///
    /// # Errors
    ///
    /// Those of [`Transport::shutdown`].
    pub fn shutdown(self, timeout: Duration) -> Result<(), NetworkError> {
        drop(self.workers);
        self.transport.shutdown(timeout)
    }
}

/// Shuts every member down with goodbyes, all at once (each waits for the others' goodbyes);
/// returns each one's result in order.
pub fn shutdown_all(members: Vec<Member>, timeout: Duration) -> Vec<Result<(), NetworkError>> {
    let handles: Vec<_> =
        members.into_iter().map(|member| std::thread::spawn(move || member.shutdown(timeout))).collect();
    handles
        .into_iter()
        .map(|handle| {
            handle
                .join()
                .unwrap_or_else(|_| Err(NetworkError::InvalidArguments("a shutdown thread panicked".into())))
        })
        .collect()
}

/// What went wrong in a simulated cluster.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A process could not be set up.
    #[error("process {process}: {error}")]
    Start {
        /// The process.
        process: usize,
        /// Why.
        error: NetworkError,
    },
    /// A process's setup thread panicked.
    #[error("process {process}: its setup thread panicked")]
    SetupPanicked {
        /// The process.
        process: usize,
    },
    /// A frame could not be sent.
    #[error(transparent)]
    Send(NetworkError),
    /// Frames of a round did not all arrive in time.
    #[error("worker {worker} received {} of {expected} frames of round {round} (from {sources:?})", .sources.len())]
    Missing {
        /// The worker receiving.
        worker: usize,
        /// The frames it expected.
        expected: usize,
        /// The round.
        round: u64,
        /// The workers whose frame arrived.
        sources: Vec<u64>,
    },
    /// A frame that is not the one expected, or came twice.
    #[error("worker {worker} received a wrong or repeated frame: {header:?}")]
    WrongFrame {
        /// The worker receiving.
        worker: usize,
        /// The frame's header.
        header: MessageHeader,
    },
}

/// Starts the initial processes of a cluster listed in `addresses`, each on its own thread.
///
/// # Errors
///
/// The first process's error, with its index.
pub fn start_cluster(
    addresses: &[String],
    threads: usize,
    identity: &ClusterIdentity,
    deadline: Duration,
) -> Result<Vec<Member>, HarnessError> {
    let handles: Vec<_> = (0..addresses.len())
        .map(|process| {
            let (addresses, identity) = (addresses.to_vec(), identity.clone());
            std::thread::spawn(move || {
                let settings = (threads, Liveness::default());
                Member::start(Entry::Setup, process, &addresses, settings, &identity, deadline)
            })
        })
        .collect();
    handles
        .into_iter()
        .enumerate()
        .map(|(process, handle)| match handle.join() {
            Ok(result) => result.map_err(|error| HarnessError::Start { process, error }),
            Err(_) => Err(HarnessError::SetupPanicked { process }),
        })
        .collect()
}

/// The payload of round `round`'s frame from worker `source` to worker `target`.
fn payload(source: u64, target: u64, round: u64) -> [u8; 24] {
    let mut bytes = [0u8; 24];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip([source, target, round]) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    bytes
}

/// Every worker of `members` sends one frame of round `round` to every worker of every other
/// member it has a sender to; then every worker must receive, within `limit`, exactly one
/// frame from each worker of every other member, with the right payload.
///
/// # Errors
///
/// What went wrong: a send that failed, a frame missing, duplicated or wrong.
pub fn exchange(members: &mut [Member], round: u64, limit: Duration) -> Result<(), HarnessError> {
    for member in members.iter_mut() {
        let threads = member.workers.len();
        for worker in &mut member.workers {
            send_round(worker, threads, round)?;
        }
    }
    let deadline = Instant::now() + limit;
    for member in members.iter_mut() {
        let remote_workers = member.workers.iter().map(|w| w.senders.iter().flatten().count()).max();
        let expected = remote_workers.unwrap_or(0) * member.workers.len();
        for worker in &mut member.workers {
            receive_round(worker, round, expected, deadline)?;
        }
    }
    Ok(())
}

/// Worker `worker` sends round `round` to every worker of every process it has a sender to
/// (every process runs `threads` workers).
fn send_round(worker: &mut WorkerEndpoints, threads: usize, round: u64) -> Result<(), HarnessError> {
    let source = worker.index as u64;
    for sender in worker.senders.iter_mut().flatten() {
        let first = (sender.process() * threads) as u64;
        for target in first..first + threads as u64 {
            let header = MessageHeader {
                channel: EXCHANGE_CHANNEL,
                source,
                target_lower: target,
                target_upper: target + 1,
                length: 0,
                seqno: round,
            };
            sender.send(header, &payload(source, target, round)).map_err(HarnessError::Send)?;
        }
        sender.flush().map_err(HarnessError::Send)?;
    }
    Ok(())
}

/// Receives `expected` frames of round `round` on `worker`, each from a distinct source.
fn receive_round(
    worker: &mut WorkerEndpoints,
    round: u64,
    expected: usize,
    deadline: Instant,
) -> Result<(), HarnessError> {
    let mut sources = std::collections::BTreeSet::new();
    while sources.len() < expected {
        let Some((header, bytes)) = worker.receiver.try_recv() else {
            if Instant::now() > deadline {
                let sources = sources.into_iter().collect();
                return Err(HarnessError::Missing { worker: worker.index, expected, round, sources });
            }
            std::thread::sleep(Duration::from_micros(200));
            continue;
        };
        let target = worker.index as u64;
        let right = header.channel == EXCHANGE_CHANNEL
            && header.seqno == round
            && (header.target_lower, header.target_upper) == (target, target + 1)
            && bytes.in_memory() == Some(&payload(header.source, target, round)[..]);
        if !right || !sources.insert(header.source) {
            return Err(HarnessError::WrongFrame { worker: worker.index, header });
        }
    }
    Ok(())
}
