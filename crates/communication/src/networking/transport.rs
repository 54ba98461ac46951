//! Moving framed messages over established connections.
//!
//! This module owns the network threads of a process once [`super::establish`] has connected
//! it: per remote process `q`, a send thread `timely:send-{q}` and a receive thread
//! `timely:recv-{q}` ([`send`] and [`receive`]), the per-worker endpoints that feed and drain
//! them ([`WorkerEndpoints`]), failure reporting through [`NetworkHealth`] and the wake-up
//! callback, and the orderly close with a goodbye frame ([`Transport::shutdown`]). It must not
//! serialize or interpret payloads, know about channels beyond the id in the header, or block a
//! worker except when the send queue to a process is full (back-pressure).
//!
//! Threads and blocking sockets: each connection carries one byte stream in each direction, so
//! two threads per peer read and write at full speed without an event loop, and a worker never
//! runs network code. An async runtime (tokio) would save threads only for clusters of hundreds
//! of processes, and would put a runtime beneath the worker loop, which must stay synchronous.
//!
//! Failure: the first error on any connection (end of stream without a goodbye, a read or write
//! error, a malformed header, or a peer silent for longer than its timeout, see
//! [`super::liveness`]) is recorded as [`NetworkError::PeerLost`] naming the process, and
//! every local worker is woken so none waits forever. Closing a [`Transport`] by dropping it
//! shuts its sockets down, which its peers see as a lost process; [`Transport::shutdown`] says
//! goodbye first, which they see as an orderly end.
//!
//! Joins: the set of links grows while the transport runs. [`Transport::add_process`] (called by
//! the join acceptor, [`super::acceptor`], which [`Transport::accept_joins`] starts) starts the
//! new process's two threads exactly like the initial ones (its silences are watched, heartbeats
//! go both ways, clock probes are answered, a joiner probes process 0 as every process does, and
//! the goodbye and abort frames reach it), delivers its
//! messages to the local workers' existing queues, and tells each local worker of it with a
//! [`JoinedProcess`] holding that worker's sender to it, then wakes it. Processes join in index
//! order, one at a time; the links sit behind one mutex that only setup, joins and the close
//! take (a worker's hot path never does).
//!
//! Observation: given a [`FrameObserver`], the send and receive threads report every data frame
//! they write and read ([`super::observe`]); without one, what it costs is a branch per written
//! batch, per read and per delivered frame.

mod alarm;
pub(crate) mod links;
pub mod receive;
pub mod send;

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use crate::clock::ClockOffset;
use crate::queue::{thread_queue, QueueSender};

use super::acceptor::JoinAcceptor;
use super::clock_sync::{ClockSync, OffsetLog};
use super::liveness::Silences;
use super::peer_stream::PeerStream;
use super::receive_budget::{BudgetState, BudgetStats, ReceiveBudget};
use super::{ClusterIdentity, FrameObserver, Liveness, NetworkError, NetworkHealth};
use alarm::Alarm;
pub use alarm::WakeFn;
use links::{Core, Link, Links};
pub use links::{JoinedProcess, WorkerEndpoints};
pub use receive::{Delivery, ReceiveStats};
pub use send::ProcessSender;

/// How a transport's threads behave: everything [`Transport::start`] needs besides the streams
/// and the wake-up.
#[derive(Clone, Default)]
pub struct TransportOptions {
    /// Peers silent for longer than this allows are reported lost.
    pub liveness: Liveness,
    /// How a process other than 0 measures its clock against process 0's.
    pub clock: ClockSync,
    /// Told of every data frame the network threads write and read ([`super::observe`]).
    pub frames: Option<Arc<dyn FrameObserver>>,
    /// What received messages may hold in memory before they spill ([`super::receive_budget`]).
    pub receive_budget: ReceiveBudget,
}

/// The network threads of one process and the handles to close them.
pub struct Transport {
    core: Arc<Core>,
    /// Send and receive threads post their peer's index here when they end.
    finished: Receiver<usize>,
    /// Admits joiners while the transport runs ([`Transport::accept_joins`]).
    acceptor: Option<JoinAcceptor>,
}

impl Transport {
    /// Starts the network threads of process `process` (with `threads` workers) over the
    /// `streams` from [`super::establish`], and returns the endpoints of each local worker.
    /// `options` say how the threads behave; `wake` is called with a local worker's index when
    /// something arrived for it.
    ///
    /// # Errors
    ///
    /// A stream at `process` (other `None`s are processes that left the cluster before this one
    /// joined: sends to their workers are dropped); a socket that cannot be cloned; a
    /// thread that cannot be spawned (threads already started are then closed).
    pub fn start(
        process: usize,
        threads: usize,
        streams: Vec<Option<PeerStream>>,
        options: TransportOptions,
        wake: WakeFn,
    ) -> Result<(Transport, Vec<WorkerEndpoints>), NetworkError> {
        check_streams(process, threads, &streams)?;
        let TransportOptions { liveness, clock, frames, receive_budget } = options;
        let budget = BudgetState::new(receive_budget);
        let (deliver, receivers): (Vec<QueueSender<Delivery>>, Vec<_>) =
            (0..threads).map(|_| thread_queue()).unzip();
        let (joins, joined): (Vec<_>, Vec<_>) = (0..threads).map(|_| crossbeam_channel::unbounded()).unzip();
        let (done, finished) = crossbeam_channel::unbounded();
        let alarm = Arc::new(Alarm {
            health: NetworkHealth::new(),
            wake,
            threads,
            closing: AtomicBool::new(false),
            silences: Silences::new(liveness, streams.len(), process),
        });
        let links = Mutex::new(Links { links: Vec::with_capacity(streams.len()), open: true });
        let offsets = Arc::new(OffsetLog::default());
        let core = Core {
            process,
            threads,
            links,
            alarm,
            liveness,
            clock,
            offsets,
            frames,
            budget,
            deliver,
            done,
            joins,
            gate: Arc::default(),
        };
        let transport = Transport { core: Arc::new(core), finished, acceptor: None };
        for (remote, stream) in streams.into_iter().enumerate() {
            if stream.is_none() && remote != process {
                // A process that left before this one joined: never heard from, never silent.
                transport.core.alarm.silences.depart(remote);
            }
            let link = stream.map(|stream| transport.core.link(remote, stream)).transpose()?;
            transport.core.links().links.push(link);
        }
        let endpoints = transport.core.endpoints(receivers, joined)?;
        Ok((transport, endpoints))
    }

    /// Keeps admitting joiners on `listener` (from [`super::establish_as`]) until the transport
    /// closes: starts the thread `timely:join-acceptor` ([`super::acceptor`]), which admits
    /// each process that passes the join handshake for `identity` with
    /// [`Transport::add_process`]. The listener is closed (and the port free) once the
    /// transport is shut down, aborted or dropped.
    ///
    /// # Errors
    ///
    /// The thread cannot be spawned, or an acceptor already runs.
    pub fn accept_joins(
        &mut self,
        listener: TcpListener,
        identity: ClusterIdentity,
    ) -> Result<(), NetworkError> {
        if self.acceptor.is_some() {
            return Err(NetworkError::InvalidArguments("this transport already admits joiners".into()));
        }
        self.acceptor = Some(JoinAcceptor::start(listener, identity, Arc::clone(&self.core))?);
        Ok(())
    }

    /// Adds process `process`, connected by `stream` (positioned after a join handshake), to
    /// the cluster: starts its send and receive threads, then gives each local worker its
    /// sender to it through [`WorkerEndpoints::joins`] and wakes it.
    ///
    /// # Errors
    ///
    /// [`NetworkError::JoinRefused`] when `process` is not the next index or the transport is
    /// closing; a socket that cannot be shared or a thread that cannot be spawned.
    pub fn add_process(&self, process: usize, stream: PeerStream) -> Result<(), NetworkError> {
        self.core.admit(process, stream, |_, _| Ok(()))
    }

    /// The number of processes of the cluster, this one and those that joined included.
    pub fn processes(&self) -> usize {
        self.core.links().links.len()
    }

    /// This process's index.
    pub fn process(&self) -> usize {
        self.core.process
    }

    /// A new sender to process `process`, with its own buffer (messages of one sender arrive in
    /// the order they were sent; there is no order between two senders).
    ///
    /// # Errors
    ///
    /// `process` is this process or not in the cluster.
    pub fn sender(&self, process: usize) -> Result<ProcessSender, NetworkError> {
        self.core.sender(&self.core.links(), process)
    }

    /// This process's clock measured against process 0's, every measurement so far, oldest
    /// first (always empty on process 0). The same measurements go to
    /// [`crate::clock::offsets_since`].
    pub fn clock_offsets(&self) -> Vec<ClockOffset> {
        self.core.offsets.history()
    }

    /// The shared record of failures, for workers to poll.
    pub fn health(&self) -> NetworkHealth {
        self.core.alarm.health.clone()
    }

    /// What the receive thread of each process has done so far (`None` for this process).
    pub fn receive_stats(&self) -> Vec<Option<ReceiveStats>> {
        self.core.links().links.iter().map(|link| link.as_ref().map(|link| link.stats.snapshot())).collect()
    }

    /// What received messages hold in memory against the receive budget, and what spilled.
    pub fn budget_stats(&self) -> BudgetStats {
        self.core.budget.stats()
    }

    /// Closes every connection in order: sends a goodbye after everything already flushed by
    /// the senders, then waits up to `timeout` for every peer's goodbye.
    ///
    /// Flush every [`ProcessSender`] before; what is sent after the goodbye is lost.
    ///
    /// # Errors
    ///
    /// The first failure recorded, including a peer that did not say goodbye in time.
    pub fn shutdown(mut self, timeout: Duration) -> Result<(), NetworkError> {
        self.stop_accepting();
        let end = Instant::now() + timeout;
        let mut running = {
            let mut links = self.core.links();
            links.open = false;
            for link in links.links.iter().flatten() {
                // A send thread that is gone has recorded why; its peer will not hear a goodbye.
                let _ = link.queue.commands.send_deadline(send::Command::Goodbye, end);
            }
            links.links.iter().map(|link| if link.is_some() { 2 } else { 0 }).collect::<Vec<usize>>()
        };
        // Each connection is closed once both of its threads have ended: ours after writing
        // our goodbye, the receiving one after reading the peer's goodbye and end of stream.
        while running.iter().any(|&threads| threads > 0) {
            match self.finished.recv_deadline(end) {
                Ok(process) => running[process] -= 1,
                Err(_) => break,
            }
        }
        for process in (0..running.len()).filter(|&q| running[q] > 0) {
            let reason = format!("the connection did not close in order within {timeout:?}");
            self.core.alarm.raise(process, reason);
        }
        self.join_finished();
        self.core.alarm.health.failure().map_or(Ok(()), Err)
    }

    /// Closes every connection after a failed run: each peer gets an abort frame naming the
    /// process to blame (the one whose loss made this run fail, or this process when its own
    /// run failed), written after what the senders already flushed; after at most `wait` for
    /// the frames to go out, every socket is shut down.
    pub fn abort(mut self, wait: Duration) {
        self.stop_accepting();
        let alarm = &self.core.alarm;
        let cause = match alarm.health.failure() {
            Some(NetworkError::PeerLost { process, .. }) => process,
            _ => self.core.process,
        };
        alarm.closing.store(true, Ordering::SeqCst);
        let mut links = self.core.links();
        links.open = false;
        for link in links.links.iter().flatten() {
            let _ = link.queue.commands.try_send(send::Command::Abort(cause));
        }
        let end = Instant::now() + wait;
        let sending = |link: &Link| link.send_thread.as_ref().is_some_and(|thread| !thread.is_finished());
        while Instant::now() < end && links.links.iter().flatten().any(sending) {
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Stops the join acceptor, if any, and waits for it to close its listener.
    fn stop_accepting(&mut self) {
        if let Some(acceptor) = self.acceptor.take() {
            acceptor.stop();
        }
    }

    /// Joins the threads that have ended; the others are left to end on their own.
    fn join_finished(&mut self) {
        for link in self.core.links().links.iter_mut().flatten() {
            for slot in [&mut link.send_thread, &mut link.receive_thread] {
                if slot.as_ref().is_some_and(JoinHandle::is_finished) {
                    slot.take().map(JoinHandle::join);
                }
            }
        }
    }
}

impl Drop for Transport {
    /// Stops admitting joiners and shuts every socket down; peers that were not told goodbye
    /// report this process as lost.
    fn drop(&mut self) {
        self.stop_accepting();
        self.core.alarm.closing.store(true, Ordering::SeqCst);
        let mut links = self.core.links();
        links.open = false;
        links.links.iter().flatten().for_each(Link::close);
    }
}

/// Checks that `streams` connect `process` to every other process.
fn check_streams(process: usize, threads: usize, streams: &[Option<PeerStream>]) -> Result<(), NetworkError> {
    // (No stream to another process: it left the cluster before this one joined.)
    let problem = match streams.get(process) {
        _ if threads == 0 => "a process needs at least one worker thread".to_string(),
        None => format!("process {process} is not among the {} streams", streams.len()),
        Some(Some(_)) => format!("process {process} has a stream to itself"),
        Some(None) => return Ok(()),
    };
    Err(NetworkError::InvalidArguments(problem))
}
