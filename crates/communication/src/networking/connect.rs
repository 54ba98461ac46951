//! Connection setup: one authenticated TCP connection between every pair of processes.
//!
//! This module owns [`establish`] and [`establish_as`]: process `p` listens on its address,
//! dials every lower process (retrying until the deadline, since processes start in any order)
//! and, during setup, accepts every higher one, running the [`super::handshake`] on each
//! connection. It must not move messages (that is [`super::transport`]'s job) and must not let
//! a stranger on the port stop setup: connections that fail the handshake with garbage, another
//! protocol version, a wrong proof, a silence or a join hello are logged (at most three lines a second,
//! [`super::accept::RefusalLog`]) and dropped, while a peer that proved it knows the secret but
//! is configured differently (cluster id, process or thread count) ends setup with that error on
//! both sides. The dialler fails on any answer that is not a valid peer: it called the address
//! of the process it expects, and retrying cannot help. A peer that connected and then closed
//! its connection (it exited or crashed while this process waited for others) ends setup
//! within [`CLOSED_PEER_CHECK`], naming it.
//!
//! A process joining a running cluster ([`Entry::Join`]) is the highest process: it listens
//! (so that its own join acceptor can admit the next joiner once it runs) but accepts nobody
//! during setup, and dials every member in join mode; a member's refusal (still setting up, a
//! count that does not match, its verdict) ends the join at once, since retrying cannot help.
//!
//! Setup uses std threads and blocking sockets: one thread per dialed peer, one acceptor thread
//! that polls a non-blocking listener, and one short-lived thread per accepted handshake (at
//! most [`MAX_PENDING_HANDSHAKES`] at once; see [`super::accept`]), so a silent client delays
//! nobody. This is a handful of threads for a few seconds; tokio would add a runtime dependency
//! to the bottom crate without making setup simpler or faster.

use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

pub use super::accept::MAX_PENDING_HANDSHAKES;
use super::accept::{accept_loop, configure, listen, spawn_named, Door, RefusalLog};
use super::handshake::{handshake, read_verdict, ClusterIdentity, LocalProcess, Role, HANDSHAKE_TIMEOUT};
use super::peer_stream::PeerStream;
use super::proof::Side;
use super::NetworkError;

/// The first and the longest pause between two attempts to dial a peer.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_millis(250);
/// The longest a single TCP connect may take before the dialer tries again.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// How a process enters its cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// As one of the initial processes, which connect to each other.
    Setup,
    /// As the next process of a running cluster (`--join`): the highest index of `addresses`.
    Join,
}

/// A process's connections after setup, and the listener its join acceptor goes on with.
pub struct Connections {
    /// Index `q` holds the stream to process `q`; `None` at this process.
    pub streams: Vec<Option<PeerStream>>,
    /// Still bound to this process's address (`None` for a cluster of one process).
    pub listener: Option<TcpListener>,
}

/// Connects process `process` of the cluster listed in `addresses` to every other process, as
/// one of the initial processes.
///
/// Every process runs `threads` worker threads and uses the same `identity`. Returns one entry
/// per process: index `q` holds the stream to process `q` (with `TCP_NODELAY` set, blocking,
/// without timeouts, positioned after the handshake, with the keys of its sealed records when it
/// is sealed: see [`ClusterIdentity::sealing`]), and `None` at `process`. The listener is
/// closed before this returns; [`establish_as`] keeps it.
///
/// # Errors
///
/// [`NetworkError::AddressInUse`] when this process cannot listen, a mismatch reported by a
/// peer (wrapped in [`NetworkError::Peer`] with its address), or
/// [`NetworkError::MissingPeers`] naming the processes that did not connect within `deadline`.
pub fn establish(
    process: usize,
    addresses: &[String],
    threads: usize,
    identity: &ClusterIdentity,
    deadline: Duration,
) -> Result<Vec<Option<PeerStream>>, NetworkError> {
    establish_as(Entry::Setup, process, addresses, &[], threads, identity, deadline).map(|done| done.streams)
}

/// Connects process `process` to every other process of `addresses` as [`establish`] does, and
/// returns the listener too. With [`Entry::Join`], `process` must be the last of `addresses`
/// (the cluster's size after the join) and every member must have as many processes as
/// `process`; the processes of `gone` left the cluster before: they are not dialed, and their
/// streams are `None`.
///
/// # Errors
///
/// Those of [`establish`]; for a join, also the members' refusals:
/// [`NetworkError::ClusterStillSettingUp`], [`NetworkError::JoinCountMismatch`],
/// [`NetworkError::JoinRefused`] (each wrapped with the member's address).
pub fn establish_as(
    entry: Entry,
    process: usize,
    addresses: &[String],
    gone: &[usize],
    threads: usize,
    identity: &ClusterIdentity,
    deadline: Duration,
) -> Result<Connections, NetworkError> {
    check_arguments(entry, process, addresses, gone, threads)?;
    if addresses.len() == 1 {
        return Ok(Connections { streams: vec![None], listener: None });
    }
    let listener = listen(&addresses[process])?;
    let (events, arrivals) = crossbeam_channel::unbounded();
    let role = if entry == Entry::Join { Role::Joining } else { Role::Setup };
    let setup = Arc::new(Setup {
        local: LocalProcess { process, processes: addresses.len(), threads, role },
        identity: identity.for_addresses(addresses),
        refusals: RefusalLog::default(),
        end: Instant::now() + deadline,
        stop: AtomicBool::new(false),
        pending: AtomicUsize::new(0),
        last_problem: Mutex::new(None),
        events,
    });
    // A joiner is the highest process: nobody is to be accepted during its setup, and a next
    // joiner waits in the listener's backlog for the join acceptor.
    let (acceptor, mut listener) = match entry {
        Entry::Setup => {
            let setup = Arc::clone(&setup);
            let accept = move || {
                accept_loop(&listener, &setup);
                listener
            };
            (Some(spawn_named("timely:accept".into(), accept)?), None)
        }
        Entry::Join => (None, Some(listener)),
    };
    let dialers = spawn_dialers(&setup, addresses, gone);
    let result = dialers.and_then(|dialers| {
        let result = collect(&setup, &arrivals, addresses, gone, deadline);
        if result.is_ok() {
            // Every dialer has connected, so each has ended or is about to.
            dialers.into_iter().for_each(|dialer| drop(dialer.join()));
        }
        result
    });
    // The acceptor ends within one poll and hands the listener back; a dialer still in a
    // handshake after a failure ends by itself.
    setup.stop.store(true, Ordering::SeqCst);
    if let Some(acceptor) = acceptor {
        listener = acceptor.join().ok();
    }
    let streams = result?;
    let listener = listener.ok_or_else(|| NetworkError::Io {
        context: format!("the listener on {}", addresses[process]),
        reason: "its accept thread panicked".into(),
    })?;
    Ok(Connections { streams, listener: Some(listener) })
}

/// Rejects arguments no cluster can have.
fn check_arguments(
    entry: Entry,
    process: usize,
    addresses: &[String],
    gone: &[usize],
    threads: usize,
) -> Result<(), NetworkError> {
    if !gone.is_empty() && (entry != Entry::Join || gone.iter().any(|&q| q >= process)) {
        return Err(NetworkError::InvalidArguments(format!(
            "only a joining process names processes that left, each below its own index {process}; \
             found {gone:?}"
        )));
    }
    if entry == Entry::Join && (process == 0 || process + 1 != addresses.len()) {
        return Err(NetworkError::InvalidArguments(format!(
            "a joining process must be the last of the addresses and not the first; it is process \
             {process} of {}",
            addresses.len()
        )));
    }
    if process >= addresses.len() {
        return Err(NetworkError::InvalidArguments(format!(
            "process index {process} is not below the number of addresses ({})",
            addresses.len()
        )));
    }
    if threads == 0 {
        return Err(NetworkError::InvalidArguments("a process needs at least one worker thread".into()));
    }
    Ok(())
}

/// What the helper threads report to [`establish`].
enum Event {
    /// A handshake with `process` succeeded.
    Connected { process: usize, address: String, stream: PeerStream },
    /// Setup cannot succeed.
    Failed(NetworkError),
}

/// What the helper threads of one setup share.
struct Setup {
    local: LocalProcess,
    identity: ClusterIdentity,
    /// Refusals of accepted connections, logged at a bounded rate.
    refusals: RefusalLog,
    /// When setup gives up.
    end: Instant,
    /// Set when setup is over, successfully or not; helpers then stop.
    stop: AtomicBool,
    /// Handshakes of accepted connections in progress.
    pending: AtomicUsize,
    /// The last problem seen, reported if some peer is missing at the end.
    last_problem: Mutex<Option<String>>,
    events: Sender<Event>,
}

impl Setup {
    /// Whether helpers should give up: setup is over or its deadline has passed.
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || Instant::now() >= self.end
    }

    /// Records `problem` for the missing-peers error.
    fn note(&self, problem: String) {
        *self.last_problem.lock().unwrap_or_else(PoisonError::into_inner) = Some(problem);
    }

    /// Warns of a dropped connection (at a bounded rate) and records it.
    fn reject(&self, error: NetworkError) {
        let problem = format!("rejected connection: {error}");
        if let Some(more) = self.refusals.admit(Instant::now()) {
            crate::warning!("process {}: {problem}{more}", self.local.process);
        }
        self.note(problem);
    }

    /// Reports an event to [`establish`] (which may have returned already; then nobody listens).
    fn report(&self, event: Event) {
        let _ = self.events.send(event);
    }
}

/// Waits until every peer connected, a helper reports a failure, or the deadline passes.
fn collect(
    setup: &Setup,
    arrivals: &Receiver<Event>,
    addresses: &[String],
    gone: &[usize],
    deadline: Duration,
) -> Result<Vec<Option<PeerStream>>, NetworkError> {
    let mut streams: Vec<Option<PeerStream>> = addresses.iter().map(|_| None).collect();
    let mut missing = addresses.len() - 1 - gone.len();
    while missing > 0 {
        if let Some((process, reason)) = closed_peer(&streams) {
            return Err(NetworkError::PeerLost { process, reason });
        }
        match arrivals.recv_deadline(setup.end.min(Instant::now() + CLOSED_PEER_CHECK)) {
            Ok(Event::Connected { process, address, stream }) => match &streams[process] {
                Some(_) => setup.reject(
                    NetworkError::UnexpectedProcess {
                        found: process as u64,
                        expected: "a process not yet connected".into(),
                    }
                    .at(address),
                ),
                None => {
                    streams[process] = Some(stream);
                    missing -= 1;
                }
            },
            Ok(Event::Failed(error)) => return Err(error),
            Err(_) if Instant::now() < setup.end => {}
            Err(_) => return Err(missing_peers(setup, &streams, addresses, gone, deadline)),
        }
    }
    Ok(streams)
}

/// How often setup looks for connected peers that closed their connection again.
const CLOSED_PEER_CHECK: Duration = Duration::from_millis(100);

/// The first connected peer whose connection has ended (it exited or crashed while this
/// process waited for others), and why; `None` while every connection is open. A peer that
/// finished setup may already send, so bytes waiting mean it is alive; nothing is consumed.
fn closed_peer(streams: &[Option<PeerStream>]) -> Option<(usize, String)> {
    streams.iter().enumerate().find_map(|(process, peer)| {
        let stream = &peer.as_ref()?.stream;
        stream.set_nonblocking(true).ok()?;
        let mut byte = [0u8; 1];
        let state = stream.peek(&mut byte);
        let _ = stream.set_nonblocking(false);
        match state {
            Ok(0) => Some((process, "it closed its connection during set-up".to_string())),
            Err(error) if error.kind() != std::io::ErrorKind::WouldBlock => {
                Some((process, format!("its connection failed during set-up: {error}")))
            }
            _ => None,
        }
    })
}

/// The error naming every process without a stream.
fn missing_peers(
    setup: &Setup,
    streams: &[Option<PeerStream>],
    addresses: &[String],
    gone: &[usize],
    deadline: Duration,
) -> NetworkError {
    let missing = (0..addresses.len())
        .filter(|&q| q != setup.local.process && streams[q].is_none() && !gone.contains(&q))
        .map(|q| (q, addresses[q].clone()))
        .collect();
    let last_problem = setup.last_problem.lock().unwrap_or_else(PoisonError::into_inner).clone();
    NetworkError::MissingPeers { missing, waited: deadline, last_problem }
}

/// Starts one dialing thread per lower process, except those `gone`.
fn spawn_dialers(
    setup: &Arc<Setup>,
    addresses: &[String],
    gone: &[usize],
) -> Result<Vec<JoinHandle<()>>, NetworkError> {
    (0..setup.local.process)
        .filter(|q| !gone.contains(q))
        .map(|q| {
            let (setup, address) = (Arc::clone(setup), addresses[q].clone());
            spawn_named(format!("timely:dial-{q}"), move || dial(q, &address, &setup))
        })
        .collect()
}

/// Why one attempt to dial a peer failed.
enum Attempt {
    /// Worth trying again (the peer may not be up yet); the message is kept as the last problem.
    Retry(String),
    /// The peer answered and cannot be part of this cluster.
    Fatal(NetworkError),
}

/// Dials process `q` at `address` until a handshake succeeds, fails for good, or setup stops.
fn dial(q: usize, address: &str, setup: &Setup) {
    let mut backoff = FIRST_BACKOFF;
    while !setup.stopped() {
        match attempt(q, address, setup) {
            Ok(stream) => {
                let address = address.to_string();
                return setup.report(Event::Connected { process: q, address, stream });
            }
            Err(Attempt::Fatal(error)) => return setup.report(Event::Failed(error)),
            Err(Attempt::Retry(problem)) => setup.note(problem),
        }
        std::thread::sleep(backoff.min(setup.end.saturating_duration_since(Instant::now())));
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One attempt: connect to some address `address` resolves to, and run the handshake.
fn attempt(q: usize, address: &str, setup: &Setup) -> Result<PeerStream, Attempt> {
    let retry = |what: &str, error: &dyn std::fmt::Display| {
        Attempt::Retry(format!("process {q} ({address}): {what}: {error}"))
    };
    let candidates: Vec<SocketAddr> =
        address.to_socket_addrs().map_err(|error| retry("cannot resolve the address", &error))?.collect();
    let mut last = Attempt::Retry(format!("process {q} ({address}): resolves to no address"));
    for candidate in candidates {
        let timeout = CONNECT_TIMEOUT
            .min(setup.end.saturating_duration_since(Instant::now()))
            .max(Duration::from_millis(1));
        match TcpStream::connect_timeout(&candidate, timeout) {
            Ok(stream) => return greet(q, address, stream, setup),
            Err(error) => last = retry("cannot connect", &error),
        }
    }
    Err(last)
}

/// Runs the handshake on a dialed connection and checks that the peer is process `q`.
fn greet(q: usize, address: &str, mut stream: TcpStream, setup: &Setup) -> Result<PeerStream, Attempt> {
    let greeting = configure(&stream)
        .and_then(|()| {
            handshake(&mut stream, &setup.local, &setup.identity, Side::Dialler, HANDSHAKE_TIMEOUT)
        })
        .map_err(|error| match error {
            NetworkError::HandshakeIo { .. } => Attempt::Retry(format!("process {q} ({address}): {error}")),
            other => Attempt::Fatal(other.at(address)),
        })?;
    if greeting.process != q {
        let found = greeting.process as u64;
        let error = NetworkError::UnexpectedProcess { found, expected: format!("process {q}") };
        return Err(Attempt::Fatal(error.at(address)));
    }
    if setup.local.role == Role::Joining {
        // Past the hellos the member may have admitted this joiner: trying again cannot help.
        read_verdict(&mut stream, HANDSHAKE_TIMEOUT).map_err(|error| Attempt::Fatal(error.at(address)))?;
    }
    Ok(PeerStream { stream, keys: greeting.keys })
}

impl Door for Setup {
    fn stopped(&self) -> bool {
        Setup::stopped(self)
    }

    fn pending(&self) -> &AtomicUsize {
        &self.pending
    }

    fn reject(&self, error: NetworkError) {
        Setup::reject(self, error);
    }

    fn greet(&self, stream: TcpStream, peer: SocketAddr) {
        welcome(stream, peer, self);
    }
}

/// Runs the handshake of an accepted connection (which checks that the peer is above this
/// process) and reports the peer.
fn welcome(mut stream: TcpStream, peer: SocketAddr, setup: &Setup) {
    let outcome = configure(&stream).and_then(|()| {
        handshake(&mut stream, &setup.local, &setup.identity, Side::Acceptor, HANDSHAKE_TIMEOUT)
    });
    match outcome {
        Ok(greeting) => {
            let (process, address) = (greeting.process, peer.to_string());
            setup.report(Event::Connected {
                process,
                address,
                stream: PeerStream { stream, keys: greeting.keys },
            });
        }
        Err(error) if error.is_misconfiguration() => setup.report(Event::Failed(error.at(peer))),
        Err(error) => setup.reject(error.at(peer)),
    }
}
