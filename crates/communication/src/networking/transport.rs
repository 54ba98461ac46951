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

pub mod receive;
pub mod send;

use std::net::{Shutdown, TcpListener, TcpStream};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use crate::clock::ClockOffset;
use crate::queue::{thread_queue, QueueSender, ThreadQueue};

use super::acceptor::JoinAcceptor;
use super::clock_sync::{ClockSync, OffsetLog, ProbeSchedule};
use super::join_answer::JoinAnswer;
use super::liveness::Silences;
use super::payload::Payload;
use super::peer_stream::PeerStream;
use super::receive_budget::{BudgetState, BudgetStats, ReceiveBudget, Spiller};
use super::{ClusterIdentity, FrameObserver, Liveness, MessageHeader, NetworkError, NetworkHealth};
pub use receive::ReceiveStats;
pub use send::ProcessSender;

/// Called with a local worker index (`0..threads`) after messages were delivered to that
/// worker, or when the network failed; it should unpark the worker's thread.
pub type WakeFn = Arc<dyn Fn(usize) + Send + Sync>;

/// A received message: its header and its payload.
pub type Delivery = (MessageHeader, Payload);

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

/// What one local worker uses to talk to other processes.
pub struct WorkerEndpoints {
    /// The worker's global index (`process * threads + local index`).
    pub index: usize,
    /// A sender per process (index `q` sends to process `q`; `None` for this process).
    pub senders: Vec<Option<ProcessSender>>,
    /// Messages from other processes for this worker, in order per sending process (processes
    /// that join later deliver here too).
    pub receiver: ThreadQueue<Delivery>,
    /// One message per process that joins, in join order, each followed by a wake-up.
    pub joins: Receiver<JoinedProcess>,
}

/// A process that joined the cluster, as one local worker learns of it.
pub struct JoinedProcess {
    /// The new process's index (the cluster's size before it joined).
    pub process: usize,
    /// This worker's sender to it.
    pub sender: ProcessSender,
}

/// The network threads of one process and the handles to close them.
pub struct Transport {
    core: Arc<Core>,
    /// Send and receive threads post their peer's index here when they end.
    finished: Receiver<usize>,
    /// Admits joiners while the transport runs ([`Transport::accept_joins`]).
    acceptor: Option<JoinAcceptor>,
}

/// What the transport shares with its join acceptor.
pub(crate) struct Core {
    process: usize,
    threads: usize,
    links: Mutex<Links>,
    alarm: Arc<Alarm>,
    liveness: Liveness,
    clock: ClockSync,
    offsets: Arc<OffsetLog>,
    frames: Option<Arc<dyn FrameObserver>>,
    /// What received messages hold in memory, shared by every receive thread.
    budget: Arc<BudgetState>,
    /// Where every receive thread delivers, one queue per local worker.
    deliver: Vec<QueueSender<Delivery>>,
    /// Where every send and receive thread reports its end.
    done: Sender<usize>,
    /// Where each local worker learns of joins.
    joins: Vec<Sender<JoinedProcess>>,
}

/// The connections of a process.
struct Links {
    /// One entry per process; `None` for this process.
    links: Vec<Option<Link>>,
    /// Cleared when the transport closes: nobody is admitted after that.
    open: bool,
}

/// The threads and queues of one connection.
struct Link {
    /// A handle to the socket, to shut it down.
    socket: TcpStream,
    /// Feeds the send thread.
    queue: send::Queue,
    send_thread: Option<JoinHandle<()>>,
    receive_thread: Option<JoinHandle<()>>,
    stats: Arc<receive::SharedStats>,
}

/// Where the network threads of a process report a failure, and whom they wake.
struct Alarm {
    health: NetworkHealth,
    wake: WakeFn,
    threads: usize,
    /// Set when this process closes its sockets itself: errors after that are not failures.
    closing: AtomicBool,
    /// When each peer was last heard from.
    silences: Silences,
}

impl Alarm {
    /// Records that the connection to `process` failed and wakes every local worker.
    ///
    /// If another peer has been silent for about its timeout, that peer is recorded lost
    /// first: `process` most likely ended because it lost the silent peer too.
    fn raise(&self, process: usize, reason: String) {
        if self.closing.load(Ordering::SeqCst) {
            return;
        }
        if let Some((silent, reason)) = self.silences.overdue(process) {
            self.health.record(NetworkError::PeerLost { process: silent, reason });
        }
        self.health.record(NetworkError::PeerLost { process, reason });
        self.wake_all();
    }

    /// Waits until a failure is recorded (by another network thread), at most `limit`.
    fn await_failure(&self, limit: Duration) {
        let end = Instant::now() + limit;
        while self.health.is_healthy() && !self.closing.load(Ordering::SeqCst) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The number of processes of the cluster.
    fn processes(&self) -> usize {
        self.silences.processes()
    }

    fn wake_all(&self) {
        (0..self.threads).for_each(|local| (self.wake)(local));
    }
}

/// The global worker indices of `process` in a cluster of `threads` workers per process.
fn workers_of(process: usize, threads: usize) -> Range<u64> {
    let first = (process * threads) as u64;
    first..first + threads as u64
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

impl Core {
    /// The links, locked (a panic elsewhere while holding them leaves them usable).
    fn links(&self) -> MutexGuard<'_, Links> {
        self.links.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the two threads of the connection to `remote` (on a sealed session they write and
    /// read sealed records, [`super::peer_stream`]).
    fn link(&self, remote: usize, stream: PeerStream) -> Result<Link, NetworkError> {
        let (socket, writer, reader) = stream.split().map_err(|error| {
            NetworkError::io(format!("cannot share the socket to process {remote}"), &error)
        })?;
        let stats = Arc::new(receive::SharedStats::default());
        // Every process answers probes; only the others probe process 0, the reference clock.
        let probes = (remote == 0).then(|| ProbeSchedule::new(self.clock));
        let alarm = Arc::clone(&self.alarm);
        let frames = self.frames.clone();
        let (queue, send_thread) =
            send::spawn(remote, writer, self.liveness, probes, frames.clone(), alarm, self.done.clone())?;
        let clock = receive::ClockEnd::new(queue.commands.clone(), Arc::clone(&self.offsets));
        let inbound = receive::Inbound::new(
            remote,
            workers_of(self.process, self.threads),
            workers_of(remote, self.threads),
            self.deliver.clone(),
            Arc::clone(&self.alarm),
            Arc::clone(&stats),
            receive::Duties {
                liveness: self.liveness,
                clock,
                frames,
                departure: queue.departure(),
                spiller: Spiller::new(Arc::clone(&self.budget)),
            },
        );
        let receive_thread = receive::spawn(inbound, reader, self.done.clone());
        let mut link = Link { socket, queue, send_thread: Some(send_thread), receive_thread: None, stats };
        match receive_thread {
            Ok(thread) => link.receive_thread = Some(thread),
            Err(error) => {
                link.close();
                return Err(error);
            }
        }
        Ok(link)
    }

    /// One set of endpoints per local worker.
    fn endpoints(
        &self,
        receivers: Vec<ThreadQueue<Delivery>>,
        joined: Vec<Receiver<JoinedProcess>>,
    ) -> Result<Vec<WorkerEndpoints>, NetworkError> {
        let links = self.links();
        receivers
            .into_iter()
            .zip(joined)
            .enumerate()
            .map(|(local, (receiver, joins))| {
                let senders = (0..links.links.len())
                    .map(|q| match &links.links[q] {
                        Some(_) => self.sender(&links, q).map(Some),
                        None if q == self.process => Ok(None),
                        None => Ok(Some(ProcessSender::gone(
                            q,
                            workers_of(q, self.threads),
                            workers_of(self.process, self.threads),
                            self.alarm.health.clone(),
                        ))),
                    })
                    .collect::<Result<_, _>>()?;
                Ok(WorkerEndpoints { index: self.process * self.threads + local, senders, receiver, joins })
            })
            .collect()
    }

    /// A new sender to process `process` over `links`.
    fn sender(&self, links: &Links, process: usize) -> Result<ProcessSender, NetworkError> {
        let link = links.links.get(process).and_then(Option::as_ref).ok_or_else(|| {
            NetworkError::InvalidArguments(format!(
                "process {} has no connection to process {process} (the cluster has {} processes)",
                self.process,
                links.links.len()
            ))
        })?;
        Ok(ProcessSender::new(
            process,
            workers_of(process, self.threads),
            workers_of(self.process, self.threads),
            &link.queue,
            self.alarm.health.clone(),
        ))
    }

    /// Admits `process` over `stream` if it is the next index and the transport is open, then
    /// starts its link and tells every local worker. `answer` is called with the answer first
    /// (the join acceptor writes it to the joiner; a refusal is then returned as
    /// [`NetworkError::JoinRefused`]). A link that cannot start after an admission makes the
    /// process lost, since it already counts itself a member.
    pub(crate) fn admit(
        &self,
        process: usize,
        mut stream: PeerStream,
        answer: impl FnOnce(&mut TcpStream, JoinAnswer) -> Result<(), NetworkError>,
    ) -> Result<(), NetworkError> {
        let mut links = self.links();
        let members = links.links.len();
        let refusal = if !links.open {
            Some((JoinAnswer::Closing, JoinAnswer::Closing.reason().to_string()))
        } else if process != members {
            let reason =
                format!("process {process} is not the next to join; the cluster has {members} processes");
            Some((JoinAnswer::Superseded, reason))
        } else {
            None
        };
        if let Some((refused, reason)) = refusal {
            drop(links);
            answer(&mut stream.stream, refused)?;
            return Err(NetworkError::JoinRefused { reason });
        }
        answer(&mut stream.stream, JoinAnswer::Admitted)?;
        self.alarm.silences.add();
        let link = self.link(process, stream).inspect_err(|error| {
            self.alarm.raise(process, format!("its connection could not start: {error}"));
        })?;
        links.links.push(Some(link));
        for local in 0..self.threads {
            let sender = self.sender(&links, process)?;
            // A worker that dropped its endpoints has finished and needs no sender.
            let _ = self.joins[local].send(JoinedProcess { process, sender });
            (self.alarm.wake)(local);
        }
        Ok(())
    }

    /// The cluster's current size and whether the transport admits anyone.
    pub(crate) fn admitting(&self) -> (usize, bool) {
        let links = self.links();
        (links.links.len(), links.open)
    }

    /// This process's index and its worker threads.
    pub(crate) fn local(&self) -> (usize, usize) {
        (self.process, self.threads)
    }
}

impl Link {
    /// Stops both threads without a goodbye: the peer sees a lost process.
    fn close(&self) {
        let _ = self.queue.commands.try_send(send::Command::Stop);
        let _ = self.socket.shutdown(Shutdown::Both);
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
