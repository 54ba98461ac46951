//! The errors of the networking layer.
//!
//! This module owns [`NetworkError`] (and [`AddressError`], what is wrong with a hostfile's
//! line): one variant per way cluster setup or transport can fail,
//! each with a `Display` message that says what happened and what to check. It must not decide
//! what to do about an error (retry, log, abort): that is the caller's business.

use std::fmt;
use std::time::Duration;

/// What is wrong with an address of a hostfile.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// `host` without `:port`.
    #[error("the port is missing")]
    NoPort,
    /// `[::1]` without `:port`.
    #[error("the port is missing after ']'")]
    NoPortAfterBracket,
    /// `[::1:2101`.
    #[error("an IPv6 address opened with '[' lacks its ']'")]
    UnclosedBracket,
    /// `::1:2101`.
    #[error("an IPv6 address needs brackets, as in [::1]:2101")]
    UnbracketedIpv6,
    /// `:2101`.
    #[error("the host is empty")]
    EmptyHost,
    /// `a b:2101`.
    #[error("the host contains white space")]
    SpaceInHost,
    /// `host:0`.
    #[error("port 0 is not a fixed port")]
    PortZero,
    /// `host:http`, `host:99999`; holds the port as written.
    #[error("the port {0:?} is not a number from 1 to 65535")]
    BadPort(String),
}

/// Everything that can go wrong while reading a hostfile, setting up connections, or moving
/// bytes between processes.
///
/// Errors are `Clone` (they are stored in [`super::NetworkHealth`] and read by every worker), so
/// operating-system errors are kept as their message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetworkError {
    /// The hostfile could not be read.
    HostfileUnreadable {
        /// The path that was given.
        path: String,
        /// The operating system's message.
        reason: String,
    },
    /// A line of the hostfile is not an address of the form `host:port`.
    HostfileLine {
        /// The line number, counting from 1.
        line: usize,
        /// The line as it stands in the file.
        content: String,
        /// What is wrong with it.
        reason: AddressError,
    },
    /// The hostfile lists fewer addresses than there are processes.
    TooFewHosts {
        /// How many addresses the hostfile lists.
        found: usize,
        /// How many processes the cluster has.
        needed: usize,
    },
    /// The arguments of a networking call contradict each other (a bug in the caller).
    InvalidArguments(String),
    /// Another program already listens on the address this process must listen on.
    AddressInUse {
        /// The address from the hostfile.
        address: String,
    },
    /// This process could not listen on its address for another reason.
    Bind {
        /// The address from the hostfile.
        address: String,
        /// The operating system's message.
        reason: String,
    },
    /// The other end of a connection does not speak the timely_py protocol.
    NotAPeer {
        /// What it sent instead.
        detail: String,
    },
    /// The other end runs another version of the timely_py protocol.
    VersionMismatch {
        /// This process's protocol version.
        ours: u32,
        /// The peer's protocol version.
        theirs: u32,
    },
    /// The other end belongs to another cluster.
    ClusterMismatch {
        /// This process's cluster id.
        ours: u64,
        /// The peer's cluster id.
        theirs: u64,
    },
    /// The other end was started with another number of processes.
    ProcessesMismatch {
        /// This process's number of processes.
        ours: u64,
        /// The peer's number of processes.
        theirs: u64,
    },
    /// The other end was started with another number of worker threads per process.
    ThreadsMismatch {
        /// This process's worker threads.
        ours: u64,
        /// The peer's worker threads.
        theirs: u64,
    },
    /// The other end claims a process index outside the cluster.
    ProcessOutOfRange {
        /// The index it claims.
        index: u64,
        /// The number of processes.
        processes: u64,
    },
    /// The other end is a process of this cluster, but not the one expected on this connection.
    UnexpectedProcess {
        /// The process index it claims.
        found: u64,
        /// Which process was expected, in words.
        expected: String,
    },
    /// The other end does not know the cluster secret (or this process does not).
    AuthenticationFailed,
    /// This process is setting the cluster up, and the other end is in join mode: a joiner that
    /// came too early, or a running cluster this process wrongly tries to start with.
    JoinDuringSetup,
    /// This process tries to join, but the member it dialed is still setting the cluster up.
    ClusterStillSettingUp,
    /// This process admits joiners, and the other end starts as an initial process.
    ClusterAlreadyRunning,
    /// A joiner's index or process count does not follow the cluster's current size.
    JoinCountMismatch {
        /// How many processes the member has now.
        members: u64,
        /// The joiner's process index (`-p`).
        joiner: u64,
        /// The joiner's process count after the join (`--nn`).
        after: u64,
    },
    /// The join cannot happen now but may later: a process is leaving the cluster, or a
    /// member says a process left that this joiner was not told of (`--gone`). Nothing was
    /// admitted anywhere: the joiner withdrew from every member before any admitted it.
    JoinPostponed {
        /// Why, naming the processes.
        reason: String,
    },
    /// The member passed the handshake, then refused to admit this joiner.
    JoinRefused {
        /// Why, as the member said.
        reason: String,
    },
    /// A handshake did not complete: the peer went silent, closed, or the connection failed.
    HandshakeIo {
        /// What happened.
        reason: String,
    },
    /// An error on the connection with one peer address.
    Peer {
        /// The peer's address (as in the hostfile, or as seen on an accepted socket).
        address: String,
        /// What went wrong.
        error: Box<NetworkError>,
    },
    /// Some processes did not connect before the setup deadline.
    MissingPeers {
        /// The missing processes, with their addresses.
        missing: Vec<(usize, String)>,
        /// How long setup waited.
        waited: Duration,
        /// The last problem seen while waiting (a refused connection, a rejected handshake).
        last_problem: Option<String>,
    },
    /// Bytes on an established connection do not form a valid message header.
    MalformedHeader {
        /// What is wrong with the header.
        reason: String,
    },
    /// The connection to a process failed after setup.
    PeerLost {
        /// The index of the lost process.
        process: usize,
        /// What happened.
        reason: String,
    },
    /// A message cannot be sent because the transport is shut down or failed.
    TransportClosed {
        /// The process the message was for.
        process: usize,
    },
    /// The cluster has no secret, yet names addresses other machines can reach (see
    /// [`super::protection`]).
    Unprotected {
        /// The addresses that are not loopback.
        non_loopback: Vec<String>,
    },
    /// An operating-system error outside any one connection.
    Io {
        /// What was being done.
        context: String,
        /// The operating system's message.
        reason: String,
    },
}

impl NetworkError {
    /// The error itself, without the [`NetworkError::Peer`] context around it.
    pub fn root(&self) -> &NetworkError {
        match self {
            NetworkError::Peer { error, .. } => error.root(),
            other => other,
        }
    }

    /// Whether this is a join that may succeed later ([`NetworkError::JoinPostponed`]).
    pub fn is_join_postponed(&self) -> bool {
        matches!(self.root(), NetworkError::JoinPostponed { .. })
    }

    /// Wraps `self` with the address of the peer it concerns.
    pub(crate) fn at(self, address: impl fmt::Display) -> NetworkError {
        NetworkError::Peer { address: address.to_string(), error: Box::new(self) }
    }

    /// Whether the peer is a timely_py process configured differently from this one: such an
    /// error must end setup, where garbage from a stranger is only logged. Only a peer that
    /// proved it knows the secret gets these errors from the handshake; a hello of another
    /// version cannot be authenticated, so an accepting process only logs it.
    pub(crate) fn is_misconfiguration(&self) -> bool {
        matches!(
            self.root(),
            NetworkError::ClusterMismatch { .. }
                | NetworkError::ProcessesMismatch { .. }
                | NetworkError::ThreadsMismatch { .. }
                | NetworkError::ProcessOutOfRange { .. }
        )
    }

    /// An [`NetworkError::Io`] from an operating-system error.
    pub(crate) fn io(context: impl Into<String>, error: &std::io::Error) -> NetworkError {
        NetworkError::Io { context: context.into(), reason: error.to_string() }
    }
}

impl fmt::Display for NetworkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetworkError::HostfileUnreadable { path, reason } => {
                write!(f, "cannot read hostfile {path:?}: {reason}")
            }
            NetworkError::HostfileLine { line, content, reason } => write!(
                f,
                "hostfile line {line} ({content:?}): {reason}; expected host:port, such as \
                 localhost:2101 or [::1]:2101"
            ),
            NetworkError::TooFewHosts { found, needed } => write!(
                f,
                "the hostfile lists {found} address(es) but the cluster has {needed} processes; \
                 list one host:port per process"
            ),
            NetworkError::InvalidArguments(message) => write!(f, "invalid arguments: {message}"),
            NetworkError::AddressInUse { address } => write!(
                f,
                "cannot listen on {address}: the port is in use (another timely_py process or \
                 program holds it); stop it or choose another port in the hostfile"
            ),
            NetworkError::Bind { address, reason } => {
                write!(f, "cannot listen on {address}: {reason}")
            }
            NetworkError::NotAPeer { detail } => write!(f, "not a timely_py peer: {detail}"),
            NetworkError::VersionMismatch { ours, theirs } => write!(
                f,
                "protocol version mismatch: this process speaks version {ours}, the peer speaks \
                 version {theirs}; run the same timely_py release on every process"
            ),
            NetworkError::ClusterMismatch { ours, theirs } => write!(
                f,
                "cluster id mismatch: this process belongs to cluster {ours}, the peer to cluster \
                 {theirs}; check the hostfile ports and the cluster id of each process"
            ),
            NetworkError::ProcessesMismatch { ours, theirs } => write!(
                f,
                "process count mismatch: this process was started with {ours} processes, the \
                 peer with {theirs}; start every process with the same -n"
            ),
            NetworkError::ThreadsMismatch { ours, theirs } => write!(
                f,
                "worker thread count mismatch: this process runs {ours} worker threads, the peer \
                 runs {theirs}; start every process with the same -w"
            ),
            NetworkError::ProcessOutOfRange { index, processes } => write!(
                f,
                "the peer claims process index {index}, but the cluster has only {processes} \
                 processes (indices 0 to {})",
                processes.saturating_sub(1)
            ),
            NetworkError::UnexpectedProcess { found, expected } => write!(
                f,
                "the peer is process {found}, but {expected} was expected on this connection; \
                 do all processes use the same hostfile and distinct -p values?"
            ),
            NetworkError::AuthenticationFailed => write!(
                f,
                "authentication failed: the peer does not prove knowledge of the cluster secret; \
                 give every process the same secret"
            ),
            NetworkError::JoinDuringSetup => write!(
                f,
                "the peer is in join mode while this process is still setting the cluster up: a \
                 process can join only once every initial process is connected (a joiner dials \
                 again until then), and a process cannot start as an initial process of a cluster \
                 that already runs (add it with --join W --nn N)"
            ),
            NetworkError::ClusterStillSettingUp => write!(
                f,
                "cannot join yet: the cluster is still being set up (this member is still waiting \
                 for its initial processes); a joiner dials it again until its connect deadline"
            ),
            NetworkError::ClusterAlreadyRunning => write!(
                f,
                "the peer starts as an initial process, but this cluster is already running; add \
                 a process to it with --join W --nn N"
            ),
            NetworkError::JoinCountMismatch { members, joiner, after } => write!(
                f,
                "the cluster has {members} processes, so the next process to join must be -p \
                 {members} --nn {}, but the joiner is -p {joiner} --nn {after} (one process joins \
                 at a time)",
                members.saturating_add(1)
            ),
            NetworkError::JoinRefused { reason } => write!(f, "the member refused the join: {reason}"),
            NetworkError::JoinPostponed { reason } => {
                write!(f, "the join is postponed, nothing was admitted: {reason}")
            }
            NetworkError::HandshakeIo { reason } => write!(f, "handshake failed: {reason}"),
            NetworkError::Peer { address, error } => write!(f, "peer {address}: {error}"),
            NetworkError::MissingPeers { missing, waited, last_problem } => {
                let names: Vec<String> = missing
                    .iter()
                    .map(|(process, address)| format!("process {process} ({address})"))
                    .collect();
                write!(
                    f,
                    "waited {waited:?} but {} did not connect; check that every process was \
                     started, with the same hostfile, and is reachable",
                    names.join(", ")
                )?;
                match last_problem {
                    Some(problem) => write!(f, " (last problem: {problem})"),
                    None => Ok(()),
                }
            }
            NetworkError::MalformedHeader { reason } => {
                write!(f, "malformed message header: {reason}")
            }
            NetworkError::PeerLost { process, reason } => {
                write!(f, "lost the connection to process {process}: {reason}")
            }
            NetworkError::TransportClosed { process } => {
                write!(f, "cannot send to process {process}: the transport is shut down or failed")
            }
            NetworkError::Unprotected { non_loopback } => write!(
                f,
                "refusing to start without a cluster secret: the hostfile names addresses that are \
                 not loopback ({}), and without a secret any program that reaches them can join the \
                 cluster and run code in it (records may be pickles). Give every process the same \
                 secret and cluster id, for example: export TIMELY_CLUSTER_SECRET=$(python3 -c \
                 'import secrets; print(secrets.token_hex(32))') TIMELY_CLUSTER_ID=42 (the \
                 launcher does this for you); or, on a network you trust, pass --insecure (or set \
                 TIMELY_INSECURE=1) to run without one",
                non_loopback.join(", ")
            ),
            NetworkError::Io { context, reason } => write!(f, "{context}: {reason}"),
        }
    }
}

impl std::error::Error for NetworkError {}
