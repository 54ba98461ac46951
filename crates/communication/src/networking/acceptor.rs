//! The join acceptor: the thread that admits new processes into a running cluster.
//!
//! This module owns the thread `timely:join-acceptor`, which a process runs for its whole run
//! on the listener that setup used ([`super::establish_as`], started by
//! [`super::Transport::accept_joins`]): it accepts connections as setup does
//! ([`super::accept`]: at most [`super::accept::MAX_PENDING_HANDSHAKES`] handshakes at once,
//! each on its own thread and within the handshake timeout), runs the join handshake as the
//! member ([`Role::Admitting`], announcing the cluster's current size), and hands a joiner that
//! passes it to the transport, which writes the verdict and starts the link under the same lock
//! that orders joins. It must not move messages or decide what a join means to the workers
//! (the transport tells them).
//!
//! Anything else that connects (junk, a wrong cluster id or secret, a setup hello, a joiner that
//! is not next, a silence) is refused and dropped; the cluster runs on. Refusals are logged at
//! most three times a second, with the count of those not shown, so a flood of junk cannot flood the
//! log. The thread ends within one poll of [`JoinAcceptor::stop`], closing the listener;
//! handshakes still in progress then end on their own, and a joiner that passed one is refused
//! with [`Verdict::Closing`].

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use super::accept::{accept_loop, configure, spawn_named, Door, RefusalLog};
use super::handshake::{
    handshake, write_verdict, ClusterIdentity, LocalProcess, Role, Verdict, HANDSHAKE_TIMEOUT,
};
use super::peer_stream::PeerStream;
use super::proof::Side;
use super::transport::Core;
use super::NetworkError;

/// The running join acceptor of a transport.
pub(crate) struct JoinAcceptor {
    door: Arc<JoinDoor>,
    thread: Option<JoinHandle<()>>,
}

/// What the acceptor's threads share.
struct JoinDoor {
    core: Arc<Core>,
    identity: ClusterIdentity,
    stop: AtomicBool,
    pending: AtomicUsize,
    quiet: RefusalLog,
}

impl JoinAcceptor {
    /// Starts admitting joiners on `listener` into the transport `core`.
    pub(crate) fn start(
        listener: TcpListener,
        identity: ClusterIdentity,
        core: Arc<Core>,
    ) -> Result<JoinAcceptor, NetworkError> {
        listener
            .set_nonblocking(true)
            .map_err(|error| NetworkError::io("cannot poll the join listener", &error))?;
        let door = Arc::new(JoinDoor {
            core,
            identity,
            stop: AtomicBool::new(false),
            pending: AtomicUsize::new(0),
            quiet: RefusalLog::default(),
        });
        let thread = spawn_named("timely:join-acceptor".into(), {
            let door = Arc::clone(&door);
            move || accept_loop(&listener, &door)
        })?;
        Ok(JoinAcceptor { door, thread: Some(thread) })
    }

    /// Stops accepting and waits for the thread, which closes the listener.
    pub(crate) fn stop(mut self) {
        self.door.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            drop(thread.join());
        }
    }
}

impl Door for JoinDoor {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn pending(&self) -> &AtomicUsize {
        &self.pending
    }

    fn reject(&self, error: NetworkError) {
        if let Some(more) = self.quiet.admit(Instant::now()) {
            let process = self.core.local().0;
            crate::warning!("process {process}: join acceptor refused a connection: {error}{more}");
        }
    }

    fn greet(&self, stream: TcpStream, peer: SocketAddr) {
        if let Err(error) = self.admit(stream) {
            self.reject(error.at(peer));
        }
    }
}

impl JoinDoor {
    /// Runs the join handshake on `stream` and hands a joiner that passes it to the transport.
    fn admit(&self, mut stream: TcpStream) -> Result<(), NetworkError> {
        let (process, threads) = self.core.local();
        let (members, _) = self.core.admitting();
        let local = LocalProcess { process, processes: members, threads, role: Role::Admitting };
        configure(&stream)?;
        let greeting = handshake(&mut stream, &local, &self.identity, Side::Acceptor, HANDSHAKE_TIMEOUT)?;
        let answer =
            |stream: &mut TcpStream, verdict: Verdict| write_verdict(stream, verdict, HANDSHAKE_TIMEOUT);
        self.core.admit(greeting.process, PeerStream { stream, keys: greeting.keys }, answer)
    }
}
