//! The join acceptor: the thread that admits new processes into a running cluster.
//!
//! This module owns the thread `timely:join-acceptor`, which a process runs for its whole run
//! on the listener that setup used ([`super::establish_as`], started by
//! [`super::Transport::accept_joins`]): on a current-thread tokio runtime it accepts
//! connections as setup does ([`super::accept`]: at most
//! [`super::accept::MAX_PENDING_HANDSHAKES`] handshakes at once, each a task bounded by the
//! handshake timeout), runs the join handshake as the member ([`Role::Admitting`], announcing
//! the cluster's current size), and hands a joiner that passes it to the transport, which
//! writes its answer and starts the link under the same lock that orders joins. It must not
//! move messages or decide what a join means to the workers (the transport tells them).
//!
//! Anything else that connects (junk, a wrong cluster id or secret, a setup hello, a joiner that
//! is not next, a silence) is refused and dropped; the cluster runs on. Refusals are logged at
//! most three times a second, with the count of those not shown, so a flood of junk cannot flood
//! the log. [`JoinAcceptor::stop`] returns once the listener is closed (a `select!` between
//! accepting and the stop signal, so at once); handshakes still in progress then end on the
//! thread on their own, and a joiner that passed one is refused with [`JoinAnswer::Closing`].

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;

use super::accept::{accept_loop, handshake_slots, RefusalLog, MAX_PENDING_HANDSHAKES};
use super::handshake::{greet, ClusterIdentity, LocalProcess, Role, HANDSHAKE_TIMEOUT};
use super::join_answer::{read_join_decision, write_join_answer, write_join_view, JoinAnswer, JoinView};
use super::peer_stream::PeerStream;
use super::proof::Side;
use super::runtime::{current_thread, release, spawn_named};
use super::transport::links::Core;
use super::NetworkError;

/// How long a member waits for a joiner's decision after sending its view: the joiner decides
/// once every member's view is in, and a member still setting up is dialled again meanwhile.
pub const DECISION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The running join acceptor of a transport.
pub(crate) struct JoinAcceptor {
    /// Tells the thread to close the listener; it answers on the channel it is given.
    stop: oneshot::Sender<std::sync::mpsc::SyncSender<()>>,
}

/// What the acceptor's tasks share.
struct JoinDoor {
    core: Arc<Core>,
    identity: ClusterIdentity,
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
        let runtime = current_thread()?;
        let door = Arc::new(JoinDoor { core, identity, quiet: RefusalLog::default() });
        let (stop, stopped) = oneshot::channel();
        spawn_named("timely:join-acceptor".into(), move || runtime.block_on(serve(listener, door, stopped)))?;
        Ok(JoinAcceptor { stop })
    }

    /// Stops accepting; returns once the listener is closed (the port is free).
    pub(crate) fn stop(self) {
        let (closed, on_close) = std::sync::mpsc::sync_channel(1);
        if self.stop.send(closed).is_ok() {
            // An error means the thread ended (and dropped the listener) already.
            let _ = on_close.recv();
        }
    }
}

/// The thread's work: accepts until told to stop, closes the listener, says so, and lets the
/// handshakes in progress end (each within the handshake timeout).
async fn serve(
    listener: TcpListener,
    door: Arc<JoinDoor>,
    stopped: oneshot::Receiver<std::sync::mpsc::SyncSender<()>>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(error) => return door.reject(NetworkError::io("cannot poll the join listener", &error)),
    };
    let slots = handshake_slots();
    let greet = |stream, peer| Arc::clone(&door).welcome(stream, peer);
    let closed = tokio::select! {
        closed = stopped => closed.ok(),
        _ = accept_loop(&listener, &slots, greet, |error| door.reject(error)) => None,
    };
    drop(listener);
    if let Some(closed) = closed {
        let _ = closed.send(());
    }
    let _ = slots.acquire_many(MAX_PENDING_HANDSHAKES as u32).await;
}

impl JoinDoor {
    fn reject(&self, error: NetworkError) {
        if let Some(more) = self.quiet.admit(Instant::now()) {
            let process = self.core.local().0;
            crate::warning!("process {process}: join acceptor refused a connection: {error}{more}");
        }
    }

    /// Runs the join handshake on `stream`, sends the joiner this process's view, and once the
    /// joiner decides to join hands it to the transport; a joiner that withdraws (or says
    /// nothing within [`DECISION_TIMEOUT`]) is dropped and its reservation released.
    async fn welcome(self: Arc<Self>, mut stream: tokio::net::TcpStream, peer: SocketAddr) {
        let (process, threads) = self.core.local();
        let (members, _) = self.core.admitting();
        let local = LocalProcess { process, processes: members, threads, role: Role::Admitting };
        let greeting =
            match greet(&mut stream, &local, &self.identity, Side::Acceptor, HANDSHAKE_TIMEOUT).await {
                Ok(greeting) => greeting,
                Err(error) => return self.reject(error.at(peer)),
            };
        let joiner = greeting.process;
        let view = self.core.view(joiner);
        let ready = matches!(view, JoinView::Ready { .. });
        let sent = write_join_view(&mut stream, &view, HANDSHAKE_TIMEOUT).await;
        if !ready {
            return self.reject(NetworkError::JoinRefused { reason: view.reason() }.at(peer));
        }
        let admitted = match sent {
            Err(error) => Err(error),
            Ok(()) if !read_join_decision(&mut stream, DECISION_TIMEOUT).await => {
                Err(NetworkError::JoinRefused {
                    reason: format!(
                        "process {joiner} withdrew after this process's view (another member refused it)"
                    ),
                })
            }
            Ok(()) => release(stream)
                .map_err(|error| NetworkError::io("an accepted socket", &error))
                .and_then(|stream| {
                    let answer = |stream: &mut std::net::TcpStream, reply: JoinAnswer| {
                        write_join_answer(stream, reply, HANDSHAKE_TIMEOUT)
                    };
                    // Blocks the runtime for one answer byte and the start of a link's threads.
                    self.core.admit(
                        joiner,
                        PeerStream { stream, keys: greeting.keys, records_sent: 0 },
                        answer,
                    )
                }),
        };
        // Admitted: every local worker was told of the joiner, and holds the join in progress.
        self.core.gate().release(joiner);
        if let Err(error) = admitted {
            self.reject(error.at(peer));
        }
    }
}
