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
//! as soon as the end of its connection arrives, naming it; one that stays connected but sends
//! nothing for the peer timeout (it froze, or the network cut it off) ends setup then, since
//! every process sends a heartbeat frame to each connected peer every quarter of the peer
//! timeout while it waits for the others (set-up keepalives, at most [`KEEPALIVE_BYTES`] a
//! connection; on a sealed session they are its first records, and the send thread's numbering
//! goes on after them).
//!
//! A process joining a running cluster ([`Entry::Join`]) is the highest process: it listens
//! (so that its own join acceptor can admit the next joiner once it runs) but accepts nobody
//! during setup, and dials every member in join mode. A member still setting up is dialled
//! again until the deadline, as a member not listening yet is: a join asked for by a process
//! that runs may reach a peer of it that is finishing its own set-up. Its other refusals (a
//! count that does not match, its view or answer) end the join at once, since retrying cannot
//! help. No member admits a joiner before the joiner decides: each sends its view (ready, with
//! the processes it knows have left; or refused while a leave is in progress), and only once
//! every member's view is in does the joiner tell each that it joins, or withdraw from all
//! ([`NetworkError::JoinPostponed`]: a leave in progress, or a process that left which it was
//! not told of with `gone`), so a join refused for a leave admits nothing anywhere.
//!
//! Setup runs on a current-thread tokio runtime ([`super::runtime`]) on the calling thread:
//! one task per dialed peer, the accept loop ([`super::accept`], at most
//! [`MAX_PENDING_HANDSHAKES`] handshakes at once, so a silent client delays nobody), and one
//! task per connected peer that waits for its connection to end. Setup is one `select!` between
//! collecting the peers, accepting, and the deadline (`sleep_until`, so it is exact); when it is
//! decided, the runtime is shut down, which cancels every dial and handshake still in progress.
//! The streams are then handed to the data path as blocking std sockets.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::Interest;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

pub use super::accept::MAX_PENDING_HANDSHAKES;
use super::accept::{accept_loop, configure, handshake_slots, listen, RefusalLog};
use super::framing::MessageHeader;
use super::handshake::{greet, ClusterIdentity, LocalProcess, Role, HANDSHAKE_TIMEOUT};
use super::join_answer::{read_join_view, JoinAnswer, JoinView};
use super::joining::{commit, unknown_departures, unknown_departures_error, withdraw, Viewed};
use super::liveness::Liveness;
use super::peer_stream::PeerStream;
use super::proof::Side;
use super::runtime::{adopt, current_thread, release};
use super::seal::Sealer;
use super::NetworkError;

/// The first and the longest pause between two attempts to dial a peer.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_millis(250);
/// The longest a single TCP connect may take before the dialer tries again.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// A process stops sending set-up keepalives on a connection after this many bytes, and a
/// peer that sent this many is running (a watch cannot tell more bytes from these).
pub const KEEPALIVE_BYTES: usize = 32 << 10;

/// How long setup may take, and how long a connected peer may stay silent during it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetupTimes {
    /// When setup gives up on the processes that have not connected.
    pub deadline: Duration,
    /// A connected peer silent for longer is lost (its heartbeats every quarter of it).
    pub liveness: Liveness,
}

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
    let times = SetupTimes { deadline, liveness: Liveness::default() };
    establish_with(entry, process, addresses, gone, threads, identity, times)
}

/// [`establish_as`] with connected peers lost after `times.liveness` of silence during setup
/// (the peer timeout the transport will use), rather than the default.
///
/// # Errors
///
/// Those of [`establish_as`], and [`NetworkError::PeerLost`] for a peer silent that long.
pub fn establish_with(
    entry: Entry,
    process: usize,
    addresses: &[String],
    gone: &[usize],
    threads: usize,
    identity: &ClusterIdentity,
    times: SetupTimes,
) -> Result<Connections, NetworkError> {
    check_arguments(entry, process, addresses, gone, threads)?;
    if addresses.len() == 1 {
        return Ok(Connections { streams: vec![None], listener: None });
    }
    let listener = listen(&addresses[process])?;
    let role = if entry == Entry::Join { Role::Joining } else { Role::Setup };
    let (events, arrivals) = unbounded_channel();
    let setup = Arc::new(Setup {
        local: LocalProcess { process, processes: addresses.len(), threads, role },
        identity: identity.for_addresses(addresses),
        refusals: RefusalLog::default(),
        last_problem: Mutex::new(None),
        peer_timeout: times.liveness.timeout(),
        events,
    });
    let runtime = current_thread()?;
    let outcome = runtime.block_on(run(&setup, entry, listener, arrivals, addresses, gone, times.deadline));
    // Cancels the dials, handshakes and watches still in progress, without waiting for an
    // address lookup that may still run on the runtime's blocking pool.
    runtime.shutdown_background();
    let (streams, listener) = outcome?;
    for stream in streams.iter().flatten() {
        // The watches' clones shared the socket's non-blocking flag.
        stream.stream.set_nonblocking(false).map_err(|error| NetworkError::io("a set-up socket", &error))?;
    }
    Ok(Connections { streams, listener: Some(listener) })
}

/// The streams of every peer, and this process's listener.
type Collected = (Vec<Option<PeerStream>>, TcpListener);

/// Set-up on the runtime: dials the processes below, accepts those above (not for a joiner,
/// the highest process: a next joiner waits in the listener's backlog for the join acceptor),
/// and collects them until all are connected, one fails set-up, or the deadline passes.
async fn run(
    setup: &Arc<Setup>,
    entry: Entry,
    listener: TcpListener,
    mut arrivals: UnboundedReceiver<Event>,
    addresses: &[String],
    gone: &[usize],
    deadline: Duration,
) -> Result<Collected, NetworkError> {
    let end = tokio::time::Instant::now() + deadline;
    let listener = tokio::net::TcpListener::from_std(listener).map_err(|error| {
        NetworkError::io(format!("cannot poll the listener on {}", addresses[setup.local.process]), &error)
    })?;
    for q in (0..setup.local.process).filter(|q| !gone.contains(q)) {
        tokio::spawn(dial(q, addresses[q].clone(), Arc::clone(setup)));
    }
    let slots = handshake_slots();
    let accepting = async {
        if entry == Entry::Setup {
            let greet = |stream, peer| welcome(stream, peer, Arc::clone(setup));
            let _: std::convert::Infallible =
                accept_loop(&listener, &slots, greet, |error| setup.reject(error)).await;
        }
        std::future::pending::<()>().await;
    };
    let mut streams: Vec<Option<PeerStream>> = addresses.iter().map(|_| None).collect();
    let missing = addresses.len() - 1 - gone.len();
    let mut viewed = Vec::new();
    let result = tokio::select! {
        result = collect(setup, &mut arrivals, &mut streams, &mut viewed, gone, missing) => result,
        () = accepting => unreachable!("the accept loop never ends"),
        () = tokio::time::sleep_until(end) => Err(missing_peers(setup, &streams, &viewed, addresses, gone, deadline)),
    };
    if let Err(error) = result {
        withdraw(viewed).await;
        return Err(error);
    }
    if entry == Entry::Join {
        commit(viewed, gone, &mut streams).await?;
    }
    let listener = listener.into_std().map_err(|error| NetworkError::io("the set-up listener", &error))?;
    Ok((streams, listener))
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

/// What the tasks report to [`collect`].
enum Event {
    /// A handshake with `process` succeeded.
    Connected { process: usize, address: String, stream: PeerStream },
    /// A joiner's handshake with member `process` succeeded and the member is ready to admit
    /// it; it waits for the joiner's decision ([`commit`]).
    Viewed(Viewed),
    /// A connected peer's connection ended during set-up.
    Lost { process: usize, reason: String },
    /// Setup cannot succeed.
    Failed(NetworkError),
}

/// What one dial ends with: a connected peer, or (joining) a member's view.
enum Dialled {
    Connected(PeerStream),
    Viewed(Viewed),
}

/// What the tasks of one setup share.
struct Setup {
    local: LocalProcess,
    identity: ClusterIdentity,
    /// Refusals of accepted connections, logged at a bounded rate.
    refusals: RefusalLog,
    /// The last problem seen, reported if some peer is missing at the end.
    last_problem: Mutex<Option<String>>,
    /// A connected peer silent for longer is lost.
    peer_timeout: Duration,
    events: UnboundedSender<Event>,
}

impl Setup {
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

    /// Reports an event to [`collect`] (which may have ended already; then nobody listens).
    fn report(&self, event: Event) {
        let _ = self.events.send(event);
    }
}

/// Takes events until `missing` peers have connected (each then watched for the end of its
/// connection and for silence), or a task reports that setup cannot succeed; sends every
/// connected peer a keepalive every quarter of the peer timeout meanwhile.
async fn collect(
    setup: &Setup,
    arrivals: &mut UnboundedReceiver<Event>,
    streams: &mut [Option<PeerStream>],
    viewed: &mut Vec<Viewed>,
    gone: &[usize],
    mut missing: usize,
) -> Result<(), NetworkError> {
    let period = setup.peer_timeout / 4;
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut sent = vec![0usize; streams.len()];
    while missing > 0 {
        let event = tokio::select! {
            event = arrivals.recv() => event,
            _ = ticks.tick() => {
                keep_alive(streams, &mut sent)?;
                continue;
            }
        };
        // `setup` holds a sender, so the channel never closes while this runs.
        let Some(event) = event else { continue };
        match event {
            Event::Connected { process, address, stream } => match &streams[process] {
                Some(_) => setup.reject(
                    NetworkError::UnexpectedProcess {
                        found: process as u64,
                        expected: "a process not yet connected".into(),
                    }
                    .at(address),
                ),
                None => {
                    watch(process, &stream.stream, setup.events.clone(), setup.peer_timeout)?;
                    streams[process] = Some(stream);
                    missing -= 1;
                }
            },
            Event::Viewed(view) => {
                // A process that left which this joiner dials anyway would never answer.
                let unknown = unknown_departures(std::slice::from_ref(&view), gone);
                if !viewed.iter().any(|other| other.process == view.process) {
                    viewed.push(view);
                    missing -= 1;
                }
                if !unknown.is_empty() {
                    return Err(unknown_departures_error(&unknown));
                }
            }
            Event::Lost { process, reason } => return Err(NetworkError::PeerLost { process, reason }),
            Event::Failed(error) => return Err(error),
        }
    }
    Ok(())
}

/// Writes a heartbeat frame (sealed on a sealed session) to every connected peer that has had
/// fewer than [`KEEPALIVE_BYTES`] of them. The sockets are non-blocking here (their watches
/// made them so): a write either takes the whole frame, or nothing and the keepalive waits for
/// the next tick; a frame cut short would leave the stream unusable and ends setup.
fn keep_alive(streams: &mut [Option<PeerStream>], sent: &mut [usize]) -> Result<(), NetworkError> {
    let mut frame = Vec::new();
    MessageHeader::heartbeat().write_to(&mut frame);
    for (process, peer) in streams.iter_mut().enumerate() {
        let Some(peer) = peer.as_mut().filter(|_| sent[process] < KEEPALIVE_BYTES) else { continue };
        let mut sealer = peer.keys.as_ref().map(|keys| Sealer::resume(keys.sending(), peer.records_sent));
        let mut bytes = Vec::new();
        match &mut sealer {
            Some(sealer) => sealer
                .seal_into(&frame, &mut bytes)
                .map_err(|error| NetworkError::io("a keepalive", &error))?,
            None => bytes.extend_from_slice(&frame),
        }
        let lost = |reason: String| NetworkError::PeerLost { process, reason };
        match std::io::Write::write(&mut peer.stream, &bytes) {
            Ok(written) if written == bytes.len() => {
                sent[process] += written;
                peer.records_sent = sealer.map_or(0, |sealer| sealer.next_record());
            }
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
            Ok(_) => {
                return Err(lost("a set-up keepalive to it was cut short: its connection is full".into()))
            }
            Err(error) => return Err(lost(format!("its connection failed during set-up: {error}"))),
        }
    }
    Ok(())
}

/// Starts a task that reports [`Event::Lost`] as soon as the connection of `process` ends (it
/// exited or crashed while this process waited for others), or when nothing new arrived on it
/// for `timeout`. Nothing is consumed: the watch peeks, and ends once [`KEEPALIVE_BYTES`] are
/// waiting (the peer runs; its transport may be sending already). Leaves `stream` non-blocking.
fn watch(
    process: usize,
    stream: &TcpStream,
    events: UnboundedSender<Event>,
    timeout: Duration,
) -> Result<(), NetworkError> {
    let clone = stream
        .try_clone()
        .and_then(adopt)
        .map_err(|error| NetworkError::io("watching a set-up connection", &error))?;
    tokio::spawn(async move {
        if let Some(reason) = silence_or_end(&clone, timeout).await {
            let _ = events.send(Event::Lost { process, reason });
        }
    });
    Ok(())
}

/// Why the peer on `stream` is lost, or `None` once it has shown that it runs.
async fn silence_or_end(stream: &tokio::net::TcpStream, timeout: Duration) -> Option<String> {
    let mut waiting = vec![0u8; KEEPALIVE_BYTES];
    let (mut seen, mut heard) = (0, tokio::time::Instant::now());
    loop {
        let peeked = tokio::select! {
            peeked = stream.peek(&mut waiting) => peeked,
            () = tokio::time::sleep_until(heard + timeout) => {
                let silence = timeout.as_secs_f64();
                return Some(format!("it sent nothing for {silence} s during set-up (the peer timeout): it froze or was cut off"));
            }
        };
        match peeked {
            Ok(0) => return Some("it closed its connection during set-up".to_string()),
            Ok(count) if count >= KEEPALIVE_BYTES => return None,
            Ok(count) if count > seen => (seen, heard) = (count, tokio::time::Instant::now()),
            Ok(_) => {}
            Err(error) => return Some(format!("its connection failed during set-up: {error}")),
        }
        // With bytes waiting, a peek shows them rather than the end of the stream; readiness
        // (EPOLLRDHUP) shows the end. Then forget this readiness, so the next peek waits for
        // news rather than returning the same bytes at once.
        if stream.ready(Interest::READABLE).await.is_ok_and(|ready| ready.is_read_closed()) {
            return Some("it closed its connection during set-up".to_string());
        }
        let _ = stream.try_io(Interest::READABLE, || Err::<(), _>(std::io::ErrorKind::WouldBlock.into()));
    }
}

/// The error naming every process without a stream.
fn missing_peers(
    setup: &Setup,
    streams: &[Option<PeerStream>],
    viewed: &[Viewed],
    addresses: &[String],
    gone: &[usize],
    deadline: Duration,
) -> NetworkError {
    let missing = (0..addresses.len())
        .filter(|&q| q != setup.local.process && streams[q].is_none() && !gone.contains(&q))
        .filter(|&q| !viewed.iter().any(|view| view.process == q))
        .map(|q| (q, addresses[q].clone()))
        .collect();
    let last_problem = setup.last_problem.lock().unwrap_or_else(PoisonError::into_inner).clone();
    NetworkError::MissingPeers { missing, waited: deadline, last_problem }
}

/// Why one attempt to dial a peer failed.
enum Attempt {
    /// Worth trying again (the peer may not be up yet); the message is kept as the last problem.
    Retry(String),
    /// The peer answered and cannot be part of this cluster.
    Fatal(NetworkError),
}

/// Dials process `q` at `address` until a handshake succeeds or fails for good (setup's
/// deadline cancels it otherwise).
async fn dial(q: usize, address: String, setup: Arc<Setup>) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        match attempt(q, &address, &setup).await {
            Ok(Dialled::Connected(stream)) => {
                return setup.report(Event::Connected { process: q, address, stream })
            }
            Ok(Dialled::Viewed(view)) => return setup.report(Event::Viewed(view)),
            Err(Attempt::Fatal(error)) => return setup.report(Event::Failed(error)),
            Err(Attempt::Retry(problem)) => setup.note(problem),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One attempt: connect to some address `address` resolves to, and run the handshake.
async fn attempt(q: usize, address: &str, setup: &Setup) -> Result<Dialled, Attempt> {
    let retry = |what: &str, error: &dyn std::fmt::Display| {
        Attempt::Retry(format!("process {q} ({address}): {what}: {error}"))
    };
    let candidates: Vec<SocketAddr> = tokio::net::lookup_host(address)
        .await
        .map_err(|error| retry("cannot resolve the address", &error))?
        .collect();
    let mut last = Attempt::Retry(format!("process {q} ({address}): resolves to no address"));
    for candidate in candidates {
        match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(candidate)).await {
            Ok(Ok(stream)) => return introduce(q, address, stream, setup).await,
            Ok(Err(error)) => last = retry("cannot connect", &error),
            Err(_) => last = retry("cannot connect", &"timed out"),
        }
    }
    Err(last)
}

/// Runs the handshake on a dialed connection and checks that the peer is process `q`; a
/// joiner then reads the member's view.
async fn introduce(
    q: usize,
    address: &str,
    mut stream: tokio::net::TcpStream,
    setup: &Setup,
) -> Result<Dialled, Attempt> {
    let greeting = match configure(&stream) {
        Ok(()) => greet(&mut stream, &setup.local, &setup.identity, Side::Dialler, HANDSHAKE_TIMEOUT).await,
        Err(error) => Err(error),
    }
    .map_err(|error| match error {
        NetworkError::HandshakeIo { .. } | NetworkError::ClusterStillSettingUp => {
            Attempt::Retry(format!("process {q} ({address}): {error}"))
        }
        other => Attempt::Fatal(other.at(address)),
    })?;
    if greeting.process != q {
        let found = greeting.process as u64;
        let error = NetworkError::UnexpectedProcess { found, expected: format!("process {q}") };
        return Err(Attempt::Fatal(error.at(address)));
    }
    if setup.local.role == Role::Joining {
        // No member admits this joiner before it decides: a refusal ends the join everywhere.
        let view = read_join_view(&mut stream, HANDSHAKE_TIMEOUT)
            .await
            .map_err(|error| Attempt::Fatal(error.at(address)))?;
        return match view {
            JoinView::Ready { departed } => {
                let (address, keys) = (address.to_owned(), greeting.keys);
                Ok(Dialled::Viewed(Viewed { process: q, address, stream, keys, departed }))
            }
            refused @ JoinView::LeavesInProgress { .. } => {
                Err(Attempt::Fatal(NetworkError::JoinPostponed { reason: refused.reason() }.at(address)))
            }
            // A member shutting down may be a leaver about to go: nothing was admitted yet.
            refused @ JoinView::Refused(JoinAnswer::Closing) => {
                Err(Attempt::Fatal(NetworkError::JoinPostponed { reason: refused.reason() }.at(address)))
            }
            refused @ JoinView::Refused(_) => {
                Err(Attempt::Fatal(NetworkError::JoinRefused { reason: refused.reason() }.at(address)))
            }
        };
    }
    let stream =
        release(stream).map_err(|error| Attempt::Retry(format!("process {q} ({address}): {error}")))?;
    Ok(Dialled::Connected(PeerStream { stream, keys: greeting.keys, records_sent: 0 }))
}

/// Runs the handshake of an accepted connection (which checks that the peer is above this
/// process) and reports the peer.
async fn welcome(mut stream: tokio::net::TcpStream, peer: SocketAddr, setup: Arc<Setup>) {
    let outcome = greet(&mut stream, &setup.local, &setup.identity, Side::Acceptor, HANDSHAKE_TIMEOUT).await;
    let outcome = outcome.and_then(|greeting| {
        let stream = release(stream).map_err(|error| NetworkError::io("an accepted socket", &error))?;
        Ok((greeting, stream))
    });
    match outcome {
        Ok((greeting, stream)) => {
            let (process, address) = (greeting.process, peer.to_string());
            let stream = PeerStream { stream, keys: greeting.keys, records_sent: 0 };
            setup.report(Event::Connected { process, address, stream });
        }
        Err(error) if error.is_misconfiguration() => setup.report(Event::Failed(error.at(peer))),
        Err(error) => setup.reject(error.at(peer)),
    }
}
