//! The handshake that opens every connection between two processes of a cluster.
//!
//! This module owns [`ClusterIdentity`], the hello each side sends, its validation, and the
//! proof of the cluster secret. It must not open, accept or retry connections (that is
//! [`super::connect`]'s job), and it reads only fixed-size records, so a peer cannot make it
//! allocate, and only until a deadline, so a silent peer cannot stall it.
//!
//! # Wire format (all integers little-endian)
//!
//! 1. Both sides send a hello at once, without waiting for the other: the magic `TIMELYPY`
//!    (8 bytes), the protocol version (`u32`), the length of the rest of the hello (`u32`, 80 in
//!    version 5), then the cluster id, the sender's process index, the number of processes, the
//!    worker threads per process, the mode (0 to set a cluster up, 1 to join a running one) and
//!    whether the sender asks for sealed records (0 or 1) (six `u64`s), and a random 32-byte
//!    nonce. The magic and the version stay at offsets 0 and 8 in every future version, so a
//!    mismatch can be reported.
//! 2. Each side checks only the prefix of the other's hello (magic, version, length): a hello of
//!    another version cannot be authenticated, so the dialler reports it (it called that
//!    address) and the acceptor refuses the connection without ending anything.
//! 3. Both sides send a proof ([`super::proof`]): HMAC-SHA256 keyed by the cluster secret over
//!    a label naming the sender's side (dialler or acceptor) and the hash of both hellos as sent,
//!    the dialler's first. Each checks the other's proof, made by the other side, in constant
//!    time. So a proof is bound to this connection's nonces, to both process indices and to its
//!    direction: an acceptor's proof, which is all a relay between two acceptors can obtain, is
//!    refused by an acceptor.
//! 4. Only then is the peer's hello judged (cluster id, mode, process count and index, direction,
//!    threads): a mismatch is a proven misconfiguration of a process that knows the secret, so
//!    it may end setup; a stranger never gets that far.
//! 5. When either hello asks for sealed records, everything after the proofs is sealed
//!    ([`super::seal`]) with two keys derived from the secret and the hellos, one per direction.
//! 6. In join mode only (version 6), the member then sends its view ([`super::join_answer`]:
//!    ready, with the processes it knows have left; or refused, naming the processes leaving),
//!    the joiner answers with one byte once every member's view is in (join or withdraw), and
//!    the member sends one byte, its [`JoinAnswer`]:
//!    whether it admitted the joiner (not sealed: changing them on the way can only make the join
//!    fail, which cutting the connection does too). The hellos already refuse what
//!    either side can see (a member still setting up, a joiner that is not next); the answer
//!    covers what only the member knows at the moment of admission (another joiner came first,
//!    it is shutting down), so that every refusal reaches the joiner as an error rather than as a
//!    connection that later closes.
//!
//! # Modes and roles
//!
//! During setup ([`Role::Setup`]) both sides announce the same process count, and each checks
//! that the other's index is a different one below it, the dialler's above the acceptor's. In
//! join mode a joiner `p` ([`Role::Joining`]) announces `p + 1` processes and each member it
//! dials ([`Role::Admitting`]) announces its current count `C`; both check that `p == C`. A
//! hello of the other mode is refused on both sides with an error naming the situation
//! ([`NetworkError::ClusterStillSettingUp`] for the joiner of a cluster not yet running, which
//! dials again until its deadline,
//! [`NetworkError::JoinDuringSetup`] for the process setting up,
//! [`NetworkError::ClusterAlreadyRunning`] for a member).
//!
//! Without a secret (loopback clusters, `--insecure`) anyone can make a proof and derive the
//! keys from the hellos it saw: sealing then guards against nothing but accidents.

use std::net::TcpStream;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream as AsyncStream;

use super::framing::read_words;
use super::handshake_io::{io_failure, read_record, silent};
use super::proof::{proof, session_keys, verify, Side, Transcript, PROOF_BYTES};
use super::seal::SessionKeys;
use super::NetworkError;

/// The version of the wire protocol (handshake and framing) this build speaks. Version 2 added
/// the heartbeat frame, which a version 1 receiver would take for data; version 3 added the
/// clock probe and reply frames, which a version 2 receiver rejects as unknown control frames;
/// version 4 added the mode to the hello and the join answer; version 5 binds each proof to
/// both hellos and to the side that sends it, and added the request for sealed records;
/// version 6 added the member's view and the joiner's decision before the join answer.
pub const PROTOCOL_VERSION: u32 = 6;

/// The first bytes every timely_py process sends on a new connection.
pub const MAGIC: [u8; 8] = *b"TIMELYPY";

/// How long a handshake may take before the peer is given up on.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Magic, version and body length.
const PREFIX_BYTES: usize = 16;
/// Cluster id, process, processes, threads, mode, sealing and nonce.
const BODY_BYTES: usize = 6 * 8 + NONCE_BYTES;
/// A whole hello.
const HELLO_BYTES: usize = PREFIX_BYTES + BODY_BYTES;
/// The mode word of a hello that sets a cluster up, and of one that joins a running cluster.
const SETUP_MODE: u64 = 0;
const JOIN_MODE: u64 = 1;
const NONCE_BYTES: usize = 32;

/// Which cluster a process belongs to, and the secret its members share.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ClusterIdentity {
    /// Distinguishes clusters that might reach each other's ports (0 by default).
    pub cluster_id: u64,
    /// The shared secret each process proves it knows (empty by default).
    pub secret: Vec<u8>,
    /// Whether this process asks for sealed records after the handshake.
    pub sealing: Sealing,
}

/// Whether a process asks for the frames after the handshake to be sealed (authenticated and
/// encrypted, [`super::seal`]). A connection is sealed when either of its ends asks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sealing {
    /// Ask unless the cluster is all loopback ([`ClusterIdentity::for_addresses`] decides;
    /// left undecided, a connection asks unless its peer's address is loopback).
    #[default]
    Auto,
    /// Always ask (`TIMELY_SEAL=1`).
    Always,
    /// Never ask (`TIMELY_SEAL=0`); the peer may still ask.
    Never,
}

impl ClusterIdentity {
    /// This identity with [`Sealing::Auto`] decided for the cluster at `addresses`: sealed
    /// unless every address is loopback ([`super::protection::is_loopback`]).
    pub fn for_addresses(&self, addresses: &[String]) -> ClusterIdentity {
        let sealing = match self.sealing {
            Sealing::Auto if addresses.iter().all(|address| super::protection::is_loopback(address)) => {
                Sealing::Never
            }
            Sealing::Auto => Sealing::Always,
            decided => decided,
        };
        ClusterIdentity { sealing, ..self.clone() }
    }
}

impl std::fmt::Debug for ClusterIdentity {
    /// Shows the cluster id and the secret's length, never the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterIdentity")
            .field("cluster_id", &self.cluster_id)
            .field("secret", &format_args!("<{} bytes>", self.secret.len()))
            .field("sealing", &self.sealing)
            .finish()
    }
}

/// This process's place in the cluster, as announced in its hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalProcess {
    /// This process's index.
    pub process: usize,
    /// The number of processes in the cluster (for a member admitting a joiner, its count
    /// before the join; for the joiner, the count after it).
    pub processes: usize,
    /// Worker threads per process.
    pub threads: usize,
    /// Why this process opens the connection.
    pub role: Role,
}

/// What a process does with a connection, which decides the mode of its hello and what it
/// expects of the peer's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Setting the cluster up with the other initial processes (setup mode).
    Setup,
    /// Joining a running cluster as its process `processes - 1` (join mode).
    Joining,
    /// Admitting the next joiner into the running cluster of `processes` processes (join mode).
    Admitting,
}

/// What one side announces about itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hello {
    cluster_id: u64,
    process: u64,
    processes: u64,
    threads: u64,
    mode: u64,
    /// 1 when the sender asks for sealed records.
    sealed: u64,
    nonce: [u8; NONCE_BYTES],
}

/// What a successful handshake established.
#[derive(Debug, PartialEq, Eq)]
pub struct Greeting {
    /// The peer's process index.
    pub process: usize,
    /// The keys of the session's sealed records, when either side asked for them.
    pub keys: Option<SessionKeys>,
}

/// Runs the handshake on a fresh blocking `stream`, of which this process is the `side` end, and
/// returns the peer's process index and, for a sealed session, its keys: [`greet`] on a
/// current-thread runtime of its own, for callers outside one (tests, the fuzzer).
///
/// The whole handshake must finish within `timeout`. On success the stream is blocking again,
/// without timeouts, and the next byte on it is the first byte after the peer's proof.
///
/// # Errors
///
/// Those of [`greet`].
pub fn handshake(
    stream: &mut TcpStream,
    local: &LocalProcess,
    identity: &ClusterIdentity,
    side: Side,
    timeout: Duration,
) -> Result<Greeting, NetworkError> {
    let shared = stream.try_clone().map_err(|error| io_failure(&error))?;
    let result = block_on(async move {
        let mut stream = super::runtime::adopt(shared).map_err(|error| io_failure(&error))?;
        greet(&mut stream, local, identity, side, timeout).await
    });
    // The clone shares the socket's flags: make the caller's end blocking again.
    stream.set_nonblocking(false).map_err(|error| io_failure(&error))?;
    result
}

/// Runs `future` to completion on a current-thread runtime made for it.
fn block_on<T>(
    future: impl std::future::Future<Output = Result<T, NetworkError>>,
) -> Result<T, NetworkError> {
    super::runtime::current_thread()?.block_on(future)
}

/// Runs the handshake on a fresh `stream`, of which this process is the `side` end, and returns
/// the peer's process index and, for a sealed session, its keys. The whole handshake must
/// finish within `timeout` (exactly: a `tokio::time::timeout` around it).
///
/// # Errors
///
/// Before the proofs (unauthenticated): [`NetworkError::NotAPeer`] for bytes that are not a
/// hello, [`NetworkError::VersionMismatch`], [`NetworkError::AuthenticationFailed`] for a wrong
/// proof, and [`NetworkError::HandshakeIo`] when the peer is silent, closes, or the socket
/// fails. After them (the peer knows the secret): a mismatch variant naming both values.
pub async fn greet(
    stream: &mut AsyncStream,
    local: &LocalProcess,
    identity: &ClusterIdentity,
    side: Side,
    timeout: Duration,
) -> Result<Greeting, NetworkError> {
    tokio::time::timeout(timeout, exchange(stream, local, identity, side))
        .await
        .unwrap_or_else(|_| Err(silent()))
}

/// The handshake's exchanges, without a deadline.
async fn exchange(
    stream: &mut AsyncStream,
    local: &LocalProcess,
    identity: &ClusterIdentity,
    side: Side,
) -> Result<Greeting, NetworkError> {
    let ours = Hello::new(local, identity.cluster_id, asks_to_seal(stream, identity.sealing))?;
    let our_bytes = ours.encode();
    write_record(stream, &our_bytes).await?;
    let (theirs, their_bytes) = read_hello(stream).await?;
    let transcript = match side {
        Side::Dialler => Transcript::new(&our_bytes, &their_bytes),
        Side::Acceptor => Transcript::new(&their_bytes, &our_bytes),
    };
    write_record(stream, &proof(&identity.secret, side, &transcript)?).await?;
    let mut received = [0u8; PROOF_BYTES];
    read_record(stream, &mut received).await?;
    verify(&identity.secret, side.other(), &transcript, &received)?;
    theirs.check_against(&ours, local.role, side)?;
    let process = usize::try_from(theirs.process).map_err(|_| NetworkError::ProcessOutOfRange {
        index: theirs.process,
        processes: theirs.processes,
    })?;
    let sealed = ours.sealed == 1 || theirs.sealed == 1;
    let keys = sealed.then(|| session_keys(&identity.secret, side, &transcript));
    Ok(Greeting { process, keys })
}

/// Whether this end asks for sealed records: as `sealing` says, or, left to [`Sealing::Auto`],
/// unless the peer's address is loopback (or unknown).
fn asks_to_seal(stream: &AsyncStream, sealing: Sealing) -> bool {
    match sealing {
        Sealing::Always => true,
        Sealing::Never => false,
        Sealing::Auto => stream.peer_addr().is_ok_and(|peer| !peer.ip().is_loopback()),
    }
}

impl Hello {
    /// This process's hello, with a fresh random nonce.
    fn new(local: &LocalProcess, cluster_id: u64, seal: bool) -> Result<Hello, NetworkError> {
        let mut nonce = [0u8; NONCE_BYTES];
        getrandom::fill(&mut nonce).map_err(|error| NetworkError::Io {
            context: "cannot draw a random handshake nonce".into(),
            reason: error.to_string(),
        })?;
        Ok(Hello {
            cluster_id,
            process: local.process as u64,
            processes: local.processes as u64,
            threads: local.threads as u64,
            mode: if local.role == Role::Setup { SETUP_MODE } else { JOIN_MODE },
            sealed: u64::from(seal),
            nonce,
        })
    }

    /// The hello as sent: prefix, then body.
    fn encode(&self) -> [u8; HELLO_BYTES] {
        let mut bytes = [0u8; HELLO_BYTES];
        bytes[..8].copy_from_slice(&MAGIC);
        bytes[8..12].copy_from_slice(&PROTOCOL_VERSION.to_le_bytes());
        bytes[12..16].copy_from_slice(&(BODY_BYTES as u32).to_le_bytes());
        let words = [self.cluster_id, self.process, self.processes, self.threads, self.mode, self.sealed];
        for (chunk, word) in bytes[16..64].chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        bytes[64..].copy_from_slice(&self.nonce);
        bytes
    }

    /// Reads the body that follows a valid prefix.
    fn decode_body(body: &[u8; BODY_BYTES]) -> Hello {
        let mut nonce = [0u8; NONCE_BYTES];
        nonce.copy_from_slice(&body[48..]);
        let [cluster_id, process, processes, threads, mode, sealed] = read_words(body);
        Hello { cluster_id, process, processes, threads, mode, sealed, nonce }
    }

    /// Checks the peer's hello (`self`) against ours, sent in `role` from `side`, in the order a
    /// user fixes them.
    fn check_against(&self, ours: &Hello, role: Role, side: Side) -> Result<(), NetworkError> {
        if self.cluster_id != ours.cluster_id {
            return Err(NetworkError::ClusterMismatch { ours: ours.cluster_id, theirs: self.cluster_id });
        }
        self.check_mode(role)?;
        match role {
            Role::Setup => self.check_setup(ours, side)?,
            Role::Joining => self.check_member(ours)?,
            Role::Admitting => self.check_joiner(ours)?,
        }
        if self.threads != ours.threads {
            return Err(NetworkError::ThreadsMismatch { ours: ours.threads, theirs: self.threads });
        }
        if self.sealed > 1 {
            let detail = format!("its hello asks for sealing with the unknown value {}", self.sealed);
            return Err(NetworkError::NotAPeer { detail });
        }
        if self.nonce == ours.nonce {
            return Err(NetworkError::AuthenticationFailed);
        }
        Ok(())
    }

    /// Refuses a hello of the other mode, or of no mode at all.
    fn check_mode(&self, role: Role) -> Result<(), NetworkError> {
        match (self.mode, role) {
            (SETUP_MODE, Role::Setup) | (JOIN_MODE, Role::Joining | Role::Admitting) => Ok(()),
            (JOIN_MODE, Role::Setup) => Err(NetworkError::JoinDuringSetup),
            (SETUP_MODE, Role::Joining) => Err(NetworkError::ClusterStillSettingUp),
            (SETUP_MODE, Role::Admitting) => Err(NetworkError::ClusterAlreadyRunning),
            (mode, _) => {
                Err(NetworkError::NotAPeer { detail: format!("its hello has the unknown mode {mode}") })
            }
        }
    }

    /// During setup: the same count, and another index within it, above ours when we accepted
    /// (every process dials the processes below it) and below ours when we dialled.
    fn check_setup(&self, ours: &Hello, side: Side) -> Result<(), NetworkError> {
        if self.processes != ours.processes {
            return Err(NetworkError::ProcessesMismatch { ours: ours.processes, theirs: self.processes });
        }
        if self.process >= ours.processes {
            return Err(NetworkError::ProcessOutOfRange { index: self.process, processes: ours.processes });
        }
        let (expected, fits) = match side {
            Side::Acceptor => (format!("a process above {}", ours.process), self.process > ours.process),
            Side::Dialler => (format!("a process below {}", ours.process), self.process < ours.process),
        };
        if !fits {
            return Err(NetworkError::UnexpectedProcess { found: self.process, expected });
        }
        Ok(())
    }

    /// On the joiner: the member has as many processes as the joiner's index, and is one of them.
    fn check_member(&self, ours: &Hello) -> Result<(), NetworkError> {
        if self.processes != ours.process {
            let (members, joiner, after) = (self.processes, ours.process, ours.processes);
            return Err(NetworkError::JoinCountMismatch { members, joiner, after });
        }
        if self.process >= ours.process {
            return Err(NetworkError::UnexpectedProcess {
                found: self.process,
                expected: format!("a member below {}", ours.process),
            });
        }
        Ok(())
    }

    /// On a member: the joiner is the next process, and counts itself.
    fn check_joiner(&self, ours: &Hello) -> Result<(), NetworkError> {
        if self.process != ours.processes || self.processes != ours.processes.saturating_add(1) {
            let (members, joiner, after) = (ours.processes, self.process, self.processes);
            return Err(NetworkError::JoinCountMismatch { members, joiner, after });
        }
        Ok(())
    }
}

/// The bytes of a hello `local` would send in cluster `cluster_id` (with a fresh nonce), for
/// tools that exercise an acceptor with real and damaged hellos.
///
/// # Errors
///
/// No random nonce can be drawn.
pub(crate) fn hello_bytes(local: &LocalProcess, cluster_id: u64) -> Result<Vec<u8>, NetworkError> {
    Ok(Hello::new(local, cluster_id, false)?.encode().to_vec())
}

/// Reads and checks the peer's prefix, then reads its body; returns the hello and its bytes.
async fn read_hello(stream: &mut AsyncStream) -> Result<(Hello, [u8; HELLO_BYTES]), NetworkError> {
    let mut bytes = [0u8; HELLO_BYTES];
    let (prefix, body) = bytes.split_at_mut(PREFIX_BYTES);
    read_record(stream, prefix).await?;
    if prefix[..8] != MAGIC {
        return Err(NetworkError::NotAPeer {
            detail: format!("it sent \"{}\" where the timely_py greeting belongs", prefix.escape_ascii()),
        });
    }
    let version = u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]);
    if version != PROTOCOL_VERSION {
        return Err(NetworkError::VersionMismatch { ours: PROTOCOL_VERSION, theirs: version });
    }
    let length = u32::from_le_bytes([prefix[12], prefix[13], prefix[14], prefix[15]]);
    if length as usize != BODY_BYTES {
        return Err(NetworkError::NotAPeer {
            detail: format!(
                "its hello announces {length} bytes, a version {PROTOCOL_VERSION} hello has \
                 {BODY_BYTES}"
            ),
        });
    }
    read_record(stream, body).await?;
    let mut fixed = [0u8; BODY_BYTES];
    fixed.copy_from_slice(body);
    Ok((Hello::decode_body(&fixed), bytes))
}

/// Writes a whole handshake record.
pub(super) async fn write_record(stream: &mut AsyncStream, bytes: &[u8]) -> Result<(), NetworkError> {
    stream.write_all(bytes).await.map_err(|error| io_failure(&error))
}

#[cfg(test)]
mod tests;
