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
//!    (8 bytes), the protocol version (`u32`), the length of the rest of the hello (`u32`, 64 in
//!    versions 1 to 3, 72 in version 4), then the cluster id, the sender's process index, the
//!    number of processes, the worker threads per process, the mode (five `u64`s: 0 to set a
//!    cluster up, 1 to join a running one) and a random 32-byte nonce. The magic and the
//!    version stay at offsets 0 and 8 in every future version, so a mismatch can be reported.
//! 2. Each side checks the other's hello (magic, version, cluster id, mode, process count,
//!    process index, threads). Because the hellos are symmetric, a mismatch is seen by both sides.
//! 3. Both sides send a proof, HMAC-SHA256 keyed by the cluster secret over a fixed label, the
//!    cluster id, the sender's nonce, the receiver's nonce, the sender's index and the receiver's
//!    index, and check the other's proof in constant time. The sender's values come first, so a
//!    proof cannot be reflected back to its author, and a peer echoing our own nonce or index is
//!    refused.
//! 4. In join mode only, the member then sends one byte, its [`Verdict`] ([`super::verdict`]): whether it admitted
//!    the joiner. The hellos already refuse what either side can see (a member still setting
//!    up, a joiner that is not next); the verdict covers what only the member knows at the moment
//!    of admission (another joiner came first, it is shutting down), so that every refusal
//!    reaches the joiner as an error rather than as a connection that later closes.
//!
//! # Modes and roles
//!
//! During setup ([`Role::Setup`]) both sides announce the same process count, and each checks
//! that the other's index is a different one below it. In join mode a joiner `p`
//! ([`Role::Joining`]) announces `p + 1` processes and each member it dials
//! ([`Role::Admitting`]) announces its current count `C`; both check that `p == C`. A hello of
//! the other mode is refused on both sides with an error naming the situation
//! ([`NetworkError::ClusterStillSettingUp`] for the joiner of a cluster not yet running,
//! [`NetworkError::JoinDuringSetup`] for the process setting up,
//! [`NetworkError::ClusterAlreadyRunning`] for a member).
//!
//! The secret keeps out processes that do not know it; it does not encrypt or authenticate the
//! bytes that follow the handshake, so it is no defence against an attacker who can rewrite
//! traffic on the network.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::framing::read_words;
pub use super::verdict::{read_verdict, write_verdict, Verdict};
use super::NetworkError;

/// The version of the wire protocol (handshake and framing) this build speaks. Version 2 added
/// the heartbeat frame, which a version 1 receiver would take for data; version 3 added the
/// clock probe and reply frames, which a version 2 receiver rejects as unknown control frames;
/// version 4 added the mode to the hello and the join verdict.
pub const PROTOCOL_VERSION: u32 = 4;

/// The first bytes every timely_py process sends on a new connection.
pub const MAGIC: [u8; 8] = *b"TIMELYPY";

/// How long a handshake may take before the peer is given up on.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Magic, version and body length.
const PREFIX_BYTES: usize = 16;
/// Cluster id, process, processes, threads, mode and nonce.
const BODY_BYTES: usize = 5 * 8 + NONCE_BYTES;
/// The mode word of a hello that sets a cluster up, and of one that joins a running cluster.
const SETUP_MODE: u64 = 0;
const JOIN_MODE: u64 = 1;
const NONCE_BYTES: usize = 32;
const PROOF_BYTES: usize = 32;
/// Separates handshake proofs from any other use of the same secret.
const PROOF_LABEL: &[u8] = b"timely_py handshake proof v1";

/// Which cluster a process belongs to, and the secret its members share.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ClusterIdentity {
    /// Distinguishes clusters that might reach each other's ports (0 by default).
    pub cluster_id: u64,
    /// The shared secret each process proves it knows (empty by default).
    pub secret: Vec<u8>,
}

impl std::fmt::Debug for ClusterIdentity {
    /// Shows the cluster id and the secret's length, never the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterIdentity")
            .field("cluster_id", &self.cluster_id)
            .field("secret", &format_args!("<{} bytes>", self.secret.len()))
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
    nonce: [u8; NONCE_BYTES],
}

/// Runs the handshake on a fresh `stream` and returns the peer's process index.
///
/// The whole handshake must finish within `timeout`. On success the stream's timeouts are
/// cleared, and the next byte on it is the first byte after the peer's proof.
///
/// # Errors
///
/// [`NetworkError::NotAPeer`] for bytes that are not a hello, a mismatch variant naming both
/// values, [`NetworkError::AuthenticationFailed`] for a wrong secret, and
/// [`NetworkError::HandshakeIo`] when the peer is silent, closes, or the socket fails.
pub fn handshake(
    stream: &mut TcpStream,
    local: &LocalProcess,
    identity: &ClusterIdentity,
    timeout: Duration,
) -> Result<usize, NetworkError> {
    let deadline = Instant::now() + timeout;
    let ours = Hello::new(local, identity.cluster_id)?;
    stream
        .set_write_timeout(Some(timeout.max(Duration::from_millis(1))))
        .map_err(|error| io_failure(&error))?;
    write_record(stream, &ours.encode())?;
    let theirs = read_hello(stream, deadline)?;
    theirs.check_against(&ours, local.role)?;
    write_record(stream, &proof(identity, &ours, &theirs)?)?;
    let mut received = [0u8; PROOF_BYTES];
    read_before(stream, &mut received, deadline)?;
    verify(identity, &theirs, &ours, &received)?;
    stream
        .set_read_timeout(None)
        .and_then(|()| stream.set_write_timeout(None))
        .map_err(|error| io_failure(&error))?;
    usize::try_from(theirs.process)
        .map_err(|_| NetworkError::ProcessOutOfRange { index: theirs.process, processes: theirs.processes })
}

impl Hello {
    /// This process's hello, with a fresh random nonce.
    fn new(local: &LocalProcess, cluster_id: u64) -> Result<Hello, NetworkError> {
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
            nonce,
        })
    }

    /// The hello as sent: prefix, then body.
    fn encode(&self) -> [u8; PREFIX_BYTES + BODY_BYTES] {
        let mut bytes = [0u8; PREFIX_BYTES + BODY_BYTES];
        bytes[..8].copy_from_slice(&MAGIC);
        bytes[8..12].copy_from_slice(&PROTOCOL_VERSION.to_le_bytes());
        bytes[12..16].copy_from_slice(&(BODY_BYTES as u32).to_le_bytes());
        let words = [self.cluster_id, self.process, self.processes, self.threads, self.mode];
        for (chunk, word) in bytes[16..56].chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        bytes[56..].copy_from_slice(&self.nonce);
        bytes
    }

    /// Reads the body that follows a valid prefix.
    fn decode_body(body: &[u8; BODY_BYTES]) -> Hello {
        let mut nonce = [0u8; NONCE_BYTES];
        nonce.copy_from_slice(&body[40..]);
        let [cluster_id, process, processes, threads, mode] = read_words(body);
        Hello { cluster_id, process, processes, threads, mode, nonce }
    }

    /// Checks the peer's hello (`self`) against ours, sent in `role`, in the order a user
    /// fixes them.
    fn check_against(&self, ours: &Hello, role: Role) -> Result<(), NetworkError> {
        if self.cluster_id != ours.cluster_id {
            return Err(NetworkError::ClusterMismatch { ours: ours.cluster_id, theirs: self.cluster_id });
        }
        self.check_mode(role)?;
        match role {
            Role::Setup => self.check_setup(ours)?,
            Role::Joining => self.check_member(ours)?,
            Role::Admitting => self.check_joiner(ours)?,
        }
        if self.threads != ours.threads {
            return Err(NetworkError::ThreadsMismatch { ours: ours.threads, theirs: self.threads });
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

    /// During setup: the same count, and another index within it.
    fn check_setup(&self, ours: &Hello) -> Result<(), NetworkError> {
        if self.processes != ours.processes {
            return Err(NetworkError::ProcessesMismatch { ours: ours.processes, theirs: self.processes });
        }
        if self.process >= ours.processes {
            return Err(NetworkError::ProcessOutOfRange { index: self.process, processes: ours.processes });
        }
        if self.process == ours.process {
            return Err(NetworkError::UnexpectedProcess {
                found: self.process,
                expected: format!("a process other than {}", ours.process),
            });
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
    Ok(Hello::new(local, cluster_id)?.encode().to_vec())
}

/// Reads and checks the peer's prefix, then reads its body.
fn read_hello(stream: &mut TcpStream, deadline: Instant) -> Result<Hello, NetworkError> {
    let mut prefix = [0u8; PREFIX_BYTES];
    read_before(stream, &mut prefix, deadline)?;
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
    let mut body = [0u8; BODY_BYTES];
    read_before(stream, &mut body, deadline)?;
    Ok(Hello::decode_body(&body))
}

/// The proof `sender` sends `receiver`.
fn proof(
    identity: &ClusterIdentity,
    sender: &Hello,
    receiver: &Hello,
) -> Result<[u8; PROOF_BYTES], NetworkError> {
    Ok(keyed(identity, sender, receiver)?.finalize().into_bytes().into())
}

/// Checks the proof the peer (`sender`) sent us (`receiver`), in constant time.
fn verify(
    identity: &ClusterIdentity,
    sender: &Hello,
    receiver: &Hello,
    received: &[u8; PROOF_BYTES],
) -> Result<(), NetworkError> {
    keyed(identity, sender, receiver)?.verify_slice(received).map_err(|_| NetworkError::AuthenticationFailed)
}

/// The MAC over everything a proof from `sender` to `receiver` covers, not yet finalized.
fn keyed(identity: &ClusterIdentity, sender: &Hello, receiver: &Hello) -> Result<Hmac<Sha256>, NetworkError> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&identity.secret).map_err(|error| {
        NetworkError::InvalidArguments(format!("the cluster secret is not a valid key: {error}"))
    })?;
    mac.update(PROOF_LABEL);
    mac.update(&identity.cluster_id.to_le_bytes());
    mac.update(&sender.nonce);
    mac.update(&receiver.nonce);
    mac.update(&sender.process.to_le_bytes());
    mac.update(&receiver.process.to_le_bytes());
    Ok(mac)
}

/// Writes a whole handshake record.
pub(super) fn write_record(stream: &mut TcpStream, bytes: &[u8]) -> Result<(), NetworkError> {
    stream.write_all(bytes).map_err(|error| io_failure(&error))
}

/// Fills `buffer` from `stream`, failing once `deadline` passes however slowly bytes trickle in.
pub(super) fn read_before(
    stream: &mut TcpStream,
    buffer: &mut [u8],
    deadline: Instant,
) -> Result<(), NetworkError> {
    let mut filled = 0;
    while filled < buffer.len() {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(silent());
        }
        stream.set_read_timeout(Some(remaining)).map_err(|error| io_failure(&error))?;
        match stream.read(&mut buffer[filled..]) {
            Ok(0) => {
                return Err(NetworkError::HandshakeIo {
                    reason: "the peer closed the connection during the handshake".into(),
                })
            }
            Ok(read) => filled += read,
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) if is_timeout(&error) => return Err(silent()),
            Err(error) => return Err(io_failure(&error)),
        }
    }
    Ok(())
}

/// Whether a read failed because its timeout passed (the error kind differs by platform).
fn is_timeout(error: &std::io::Error) -> bool {
    matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

fn silent() -> NetworkError {
    NetworkError::HandshakeIo { reason: "the peer did not complete the handshake in time".into() }
}

pub(super) fn io_failure(error: &std::io::Error) -> NetworkError {
    NetworkError::HandshakeIo { reason: error.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    const SHORT: Duration = Duration::from_millis(500);

    /// A connected pair of loopback sockets.
    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let address = listener.local_addr().expect("listener address");
        let client = TcpStream::connect(address).expect("connect loopback");
        let (server, _) = listener.accept().expect("accept loopback");
        (client, server)
    }

    fn local(process: usize) -> LocalProcess {
        LocalProcess { process, processes: 3, threads: 2, role: Role::Setup }
    }

    /// Runs both sides of a handshake; the second side's settings are `(local, identity)`.
    fn both(
        first: (LocalProcess, ClusterIdentity),
        second: (LocalProcess, ClusterIdentity),
    ) -> (Result<usize, NetworkError>, Result<usize, NetworkError>) {
        let (mut a, mut b) = pair();
        let other = std::thread::spawn(move || handshake(&mut b, &second.0, &second.1, SHORT));
        let mine = handshake(&mut a, &first.0, &first.1, SHORT);
        (mine, other.join().expect("handshake thread"))
    }

    fn identity(cluster_id: u64, secret: &[u8]) -> ClusterIdentity {
        ClusterIdentity { cluster_id, secret: secret.to_vec() }
    }

    #[test]
    fn matching_processes_learn_each_others_index() {
        let id = identity(7, b"s3cret");
        assert_eq!(both((local(0), id.clone()), (local(2), id)), (Ok(2), Ok(0)));
    }

    #[test]
    fn mismatches_are_seen_by_both_sides() {
        let (a, b) = both((local(0), identity(1, b"")), (local(1), identity(2, b"")));
        assert_eq!(a, Err(NetworkError::ClusterMismatch { ours: 1, theirs: 2 }));
        assert_eq!(b, Err(NetworkError::ClusterMismatch { ours: 2, theirs: 1 }));
        let more_threads = LocalProcess { threads: 4, ..local(1) };
        let (a, b) = both((local(0), identity(0, b"")), (more_threads, identity(0, b"")));
        assert_eq!(a, Err(NetworkError::ThreadsMismatch { ours: 2, theirs: 4 }));
        assert_eq!(b, Err(NetworkError::ThreadsMismatch { ours: 4, theirs: 2 }));
    }

    #[test]
    fn a_wrong_secret_fails_on_both_sides() {
        let (a, b) = both((local(0), identity(0, b"one")), (local(1), identity(0, b"two")));
        assert_eq!(a, Err(NetworkError::AuthenticationFailed));
        assert_eq!(b, Err(NetworkError::AuthenticationFailed));
    }

    #[test]
    fn a_peer_claiming_our_index_is_refused() {
        let id = identity(0, b"");
        let (a, _) = both((local(1), id.clone()), (local(1), id));
        assert!(matches!(a, Err(NetworkError::UnexpectedProcess { found: 1, .. })));
    }

    #[test]
    fn a_silent_peer_times_out() {
        let (mut a, _b) = pair();
        let started = Instant::now();
        let error = handshake(&mut a, &local(0), &ClusterIdentity::default(), SHORT);
        assert!(matches!(error, Err(NetworkError::HandshakeIo { .. })), "{error:?}");
        assert!(started.elapsed() < SHORT * 4);
    }

    #[test]
    fn garbage_and_huge_lengths_are_not_peers() {
        let mut huge = MAGIC.to_vec();
        huge.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        for bytes in [b"GET / HTTP/1.1\r\n\r\n".to_vec(), huge] {
            let (mut a, mut b) = pair();
            b.write_all(&bytes).expect("write garbage");
            let error = handshake(&mut a, &local(0), &ClusterIdentity::default(), SHORT);
            assert!(matches!(error, Err(NetworkError::NotAPeer { .. })), "{error:?}");
        }
    }

    fn joining(process: usize) -> LocalProcess {
        LocalProcess { process, processes: process + 1, threads: 2, role: Role::Joining }
    }

    fn admitting(process: usize, members: usize) -> LocalProcess {
        LocalProcess { process, processes: members, threads: 2, role: Role::Admitting }
    }

    #[test]
    fn a_joiner_and_a_member_of_the_right_size_learn_each_others_index() {
        let id = identity(7, b"s3cret");
        assert_eq!(both((joining(3), id.clone()), (admitting(1, 3), id)), (Ok(1), Ok(3)));
    }

    #[test]
    fn a_joiner_that_is_not_next_is_refused_on_both_sides() {
        let id = identity(7, b"");
        let (a, b) = both((joining(4), id.clone()), (admitting(0, 3), id));
        let expected = NetworkError::JoinCountMismatch { members: 3, joiner: 4, after: 5 };
        assert_eq!((a, b), (Err(expected.clone()), Err(expected)));
        let text = NetworkError::JoinCountMismatch { members: 3, joiner: 4, after: 5 }.to_string();
        assert!(text.contains("must be -p 3 --nn 4"), "{text}");
    }

    #[test]
    fn the_modes_refuse_each_other_with_the_situation_named() {
        let id = identity(0, b"");
        let (joiner, setup) = both((joining(2), id.clone()), (local(0), id.clone()));
        assert_eq!(
            (joiner, setup),
            (Err(NetworkError::ClusterStillSettingUp), Err(NetworkError::JoinDuringSetup))
        );
        let (late, member) = both((local(1), id.clone()), (admitting(0, 2), id));
        assert_eq!(
            (late, member),
            (Err(NetworkError::JoinDuringSetup), Err(NetworkError::ClusterAlreadyRunning))
        );
        assert!(NetworkError::ClusterStillSettingUp.to_string().contains("still being set up"));
    }

    #[test]
    fn a_join_with_a_wrong_secret_fails_on_both_sides() {
        let (a, b) = both((joining(2), identity(0, b"one")), (admitting(0, 2), identity(0, b"two")));
        assert_eq!(
            (a, b),
            (Err(NetworkError::AuthenticationFailed), Err(NetworkError::AuthenticationFailed))
        );
    }

    #[test]
    fn an_unknown_mode_is_not_a_peer() {
        let (mut a, mut b) = pair();
        let mut hello = hello_bytes(&local(1), 0).expect("a hello");
        hello[48] = 7;
        b.write_all(&hello).expect("write the hello");
        let error = handshake(&mut a, &local(0), &ClusterIdentity::default(), SHORT);
        assert!(
            matches!(error, Err(NetworkError::NotAPeer { ref detail }) if detail.contains("mode 7")),
            "{error:?}"
        );
    }

    #[test]
    fn the_secret_stays_out_of_debug_output() {
        let shown = format!("{:?}", identity(3, b"hunter2"));
        assert!(!shown.contains("hunter2") && shown.contains("<7 bytes>"), "{shown}");
    }
}
