//! The process-to-process transport of cluster mode.
//!
//! This module owns everything between the sockets of two processes: where each process
//! listens ([`hostfile`]), how connections are opened and authenticated ([`connect`],
//! [`accept`], [`handshake`], on the runtime of [`runtime`]), how processes join a running cluster ([`acceptor`], [`join_answer`], `joining`, one membership change at a time: [`membership_gate`]), how bytes are cut into messages ([`framing`]), the threads that move them
//! ([`transport`]), when a silent peer counts as lost ([`liveness`]), how clocks are measured
//! against process 0's ([`clock_sync`]), whom the network threads tell of the data frames they
//! move ([`observe`]), what the handshake proves and the keys it derives ([`proof`]), the
//! sealed records that authenticate and encrypt frames after it ([`seal`], applied to a
//! connection by [`peer_stream`]), whether a cluster may run
//! without a secret ([`protection`]), and how failures are reported ([`health`], [`NetworkError`]);
//! [`harness`] and [`join_fuzz`] check joins through this public API for the tests and the
//! fuzzer. It must not
//! serialize typed data, allocate channels or know about timestamps: the cluster allocator,
//! built on top, decides what a payload means.
//!
//! One TCP connection joins every pair of processes and multiplexes all channels. The path of
//! a message: a worker frames it into its [`ProcessSender`]'s buffer; the send thread writes
//! buffers to the socket in batches; the peer's receive thread reads into large buffers and
//! hands the worker a [`Payload`] that is a slice of the buffer it was read into (no copy),
//! then wakes the worker. Buffers on both sides are recycled and deliveries go through a
//! [`crate::queue::ThreadQueue`], so the steady state allocates nothing (messages larger than
//! the buffers excepted).
//!
//! Joining: every process keeps its listener after setup and runs a join acceptor
//! ([`acceptor`], one thread for the whole run) that admits the next process of a running
//! cluster (`--join W --nn N`, see [`connect::Entry::Join`]) after a join-mode handshake; the
//! transport then grows by one link ([`Transport::add_process`]) and each local worker gets a
//! [`JoinedProcess`]. One process joins at a time, with the index that equals the cluster's size.
//!
//! Concurrency: the control plane (setup's dials, accepts and handshakes, the join acceptor)
//! runs on a current-thread tokio runtime ([`runtime`]): deadlines are `tokio::time` timeouts,
//! setup is a `select!` between collecting peers, accepting and its deadline, and accepted
//! strangers are bounded by a semaphore. Setup's runtime lives on the calling thread for the
//! length of setup; the join acceptor's on its one thread for the whole run. The data path does
//! not use tokio: after setup each peer gets one send and one receive thread on blocking std
//! sockets, which keeps the worker loop synchronous and free of a runtime, and per-peer threads
//! are cheap at the scale of one connection per pair of processes (`docs/design.md`, "Control
//! plane on tokio").
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use timely_communication::networking::{establish, default_addresses, ClusterIdentity, Transport, TransportOptions};
//!
//! let addresses = default_addresses(2);
//! let streams = establish(0, &addresses, 1, &ClusterIdentity::default(), Duration::from_secs(30))?;
//! let (transport, mut workers) = Transport::start(0, 1, streams, TransportOptions::default(), Arc::new(|_worker| {}))?;
//! // worker 0 sends to worker 1 (on process 1) ...
//! transport.shutdown(Duration::from_secs(5))?;
//! # Ok::<(), timely_communication::networking::NetworkError>(())
//! ```

pub mod accept;
pub mod acceptor;
pub mod clock_sync;
pub mod connect;
pub mod error;
pub mod framing;
pub mod handshake;
pub mod handshake_io;
pub mod harness;
pub mod health;
pub mod hostfile;
pub mod join_answer;
pub mod join_fuzz;
mod joining;
pub mod liveness;
pub mod membership_gate;
pub mod observe;
pub mod payload;
pub mod peer_stream;
pub mod proof;
pub mod protection;
pub mod receive_budget;
pub mod runtime;
pub mod seal;
pub mod seconds;
pub mod spill_file;
pub mod transport;

pub use clock_sync::{ClockSync, DEFAULT_CLOCK_INTERVAL};
pub use connect::{establish, establish_as, establish_with, Connections, Entry, SetupTimes};
pub use error::{AddressError, NetworkError};
pub use framing::{
    MessageHeader, CLOCK_PROBE_CHANNEL, CLOCK_REPLY_CHANNEL, FIRST_CONTROL_CHANNEL, GOODBYE_CHANNEL,
    HEADER_BYTES, HEARTBEAT_CHANNEL, MAX_MESSAGE_BYTES,
};
pub use handshake::{ClusterIdentity, Sealing, PROTOCOL_VERSION};
pub use health::NetworkHealth;
pub use hostfile::{default_addresses, parse_hostfile, read_hostfile};
pub use join_answer::{JoinAnswer, JoinView};
pub use liveness::{Liveness, DEFAULT_PEER_TIMEOUT};
pub use membership_gate::MembershipGate;
pub use observe::{FrameDirection, FrameObserver};
pub use payload::Payload;
pub use peer_stream::PeerStream;
pub use proof::Side;
pub use protection::{decide_protection, Protection};
pub use receive_budget::{
    BudgetError, BudgetStats, ByteCountError, ReceiveBudget, DEFAULT_EARLY_BYTES,
    DEFAULT_RECEIVE_BUDGET_BYTES,
};
pub use seal::{SessionKeys, Violation};
pub use seconds::{parse_seconds, SecondsError};
pub use transport::{
    Delivery, JoinedProcess, ProcessSender, ReceiveStats, Transport, TransportOptions, WakeFn,
    WorkerEndpoints,
};
