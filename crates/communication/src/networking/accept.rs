//! Accepting connections on a listener, one handshake thread per connection.
//!
//! This module owns what setup ([`super::connect`]) and the join acceptor
//! ([`super::acceptor`]) share: listening on an address, the loop that polls a non-blocking
//! listener until its owner stops it, the limit of [`MAX_PENDING_HANDSHAKES`] handshakes at once
//! (a connection beyond it is dropped, so a flood of silent clients delays nobody for longer
//! than one handshake timeout), the socket options of every connection, naming threads, and the
//! log of refused connections ([`RefusalLog`]: at most three lines a second, with the count of
//! those not shown, so a flood of strangers cannot flood the log). It must not run or judge
//! handshakes: a [`Door`] does that with each accepted stream.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::NetworkError;

/// The most handshakes of accepted connections that run at once; further connections are
/// dropped until one finishes.
pub const MAX_PENDING_HANDSHAKES: usize = 16;

/// The longest an accept loop waits for a connection before it checks whether to stop (so a
/// stop takes effect within this time); a connection that arrives is accepted at once.
const ACCEPT_WAIT: Duration = Duration::from_millis(20);

/// Refused connections are logged at most [`REFUSALS_SHOWN_PER_INTERVAL`] times in this interval.
pub const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(1);

/// How many refusals are shown per [`REFUSAL_LOG_INTERVAL`] (so that a port probe does not hide
/// the wrong secret that follows it); the others are counted.
pub const REFUSALS_SHOWN_PER_INTERVAL: u64 = 3;

/// What an accept loop serves: it decides when to stop and what to do with a connection.
pub(crate) trait Door: Send + Sync + 'static {
    /// Whether the loop should end (the listener is then dropped, which frees the port).
    fn stopped(&self) -> bool;
    /// The count of handshakes in progress, kept by the loop.
    fn pending(&self) -> &AtomicUsize;
    /// A connection was dropped or failed its handshake.
    fn reject(&self, error: NetworkError);
    /// Runs the handshake of an accepted connection (on its own thread).
    fn greet(&self, stream: TcpStream, peer: SocketAddr);
}

/// Listens on `address`, non-blocking, naming the address in the error.
pub(crate) fn listen(address: &str) -> Result<TcpListener, NetworkError> {
    let listener = TcpListener::bind(address).map_err(|error| match error.kind() {
        std::io::ErrorKind::AddrInUse => NetworkError::AddressInUse { address: address.to_string() },
        _ => NetworkError::Bind { address: address.to_string(), reason: error.to_string() },
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|error| NetworkError::io(format!("cannot poll the listener on {address}"), &error))?;
    Ok(listener)
}

/// Accepts connections until `door` stops, handing each to its own handshake thread.
pub(crate) fn accept_loop<D: Door>(listener: &TcpListener, door: &Arc<D>) {
    while !door.stopped() {
        match listener.accept() {
            Ok((stream, peer)) => admit(stream, peer, door),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => await_connection(listener),
            Err(error) => {
                door.reject(NetworkError::io("accepting a connection failed", &error));
                std::thread::sleep(ACCEPT_WAIT);
            }
        }
    }
}

/// Waits until `listener` has a connection to accept, or [`ACCEPT_WAIT`] passes.
#[cfg(unix)]
fn await_connection(listener: &TcpListener) {
    use std::os::fd::AsRawFd;
    let mut ready = libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: `ready` is one valid pollfd for the duration of the call, and the descriptor is
    // the listener's, open while `listener` is borrowed. An error or a signal just ends the wait.
    unsafe { libc::poll(&mut ready, 1, ACCEPT_WAIT.as_millis() as libc::c_int) };
}

/// Waits [`ACCEPT_WAIT`] / 10 (without `poll(2)`, a connection waits for the next look).
#[cfg(not(unix))]
fn await_connection(_listener: &TcpListener) {
    std::thread::sleep(ACCEPT_WAIT / 10);
}

/// Starts the handshake of an accepted connection, unless too many are in progress.
fn admit<D: Door>(stream: TcpStream, peer: SocketAddr, door: &Arc<D>) {
    if door.pending().fetch_add(1, Ordering::SeqCst) >= MAX_PENDING_HANDSHAKES {
        door.pending().fetch_sub(1, Ordering::SeqCst);
        let reason = format!("more than {MAX_PENDING_HANDSHAKES} handshakes in progress");
        return door.reject(NetworkError::HandshakeIo { reason }.at(peer));
    }
    let shared = Arc::clone(door);
    let spawned = spawn_named("timely:handshake".into(), move || {
        shared.greet(stream, peer);
        shared.pending().fetch_sub(1, Ordering::SeqCst);
    });
    if let Err(error) = spawned {
        door.pending().fetch_sub(1, Ordering::SeqCst);
        door.reject(error.at(peer));
    }
}

/// Spawns a thread named `name`.
pub(crate) fn spawn_named<T: Send + 'static>(
    name: String,
    body: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>, NetworkError> {
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(body)
        .map_err(|error| NetworkError::io(format!("cannot spawn thread {name}"), &error))
}

/// Sets the socket options every connection uses.
pub(crate) fn configure(stream: &TcpStream) -> Result<(), NetworkError> {
    stream.set_nonblocking(false).and_then(|()| stream.set_nodelay(true)).map_err(|error| {
        NetworkError::HandshakeIo { reason: format!("cannot configure the socket: {error}") }
    })
}

/// Logs refused connections at most [`REFUSALS_SHOWN_PER_INTERVAL`] times per
/// [`REFUSAL_LOG_INTERVAL`], counting the others.
#[derive(Default)]
pub(crate) struct RefusalLog {
    /// When the current interval began, how many refusals it showed, and how many were not
    /// shown since the last one that was.
    state: Mutex<(Option<Instant>, u64, u64)>,
}

impl RefusalLog {
    /// Whether a refusal at `now` is to be shown: `Some` with the words to append about those
    /// not shown since the last one that was (empty when none), or `None` (it is counted).
    pub(crate) fn admit(&self, now: Instant) -> Option<String> {
        self.count(now).map(|unshown| match unshown {
            0 => String::new(),
            _ => format!(" ({unshown} more refused since the last one shown)"),
        })
    }

    /// [`RefusalLog::admit`]'s decision, with the count of refusals not shown.
    fn count(&self, now: Instant) -> Option<u64> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (began, shown, unshown) = &mut *state;
        if !began.is_some_and(|at| now.saturating_duration_since(at) < REFUSAL_LOG_INTERVAL) {
            *began = Some(now);
            *shown = 0;
        }
        if *shown == REFUSALS_SHOWN_PER_INTERVAL {
            *unshown += 1;
            return None;
        }
        *shown += 1;
        Some(std::mem::take(unshown))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_shown_a_few_times_an_interval_with_the_count_of_the_others() {
        let log = RefusalLog::default();
        let start = Instant::now();
        // A flood: 10,000 refusals over 3.5 intervals.
        let shown: Vec<(u32, u64)> = (0..10_000u32)
            .filter_map(|i| {
                let at = start + REFUSAL_LOG_INTERVAL.mul_f64(3.5 * f64::from(i) / 10_000.0);
                log.count(at).map(|unshown| (i, unshown))
            })
            .collect();
        let per = REFUSALS_SHOWN_PER_INTERVAL as usize;
        assert_eq!(shown.len(), 4 * per, "{shown:?}");
        assert_eq!(shown[..per], (0..per as u32).map(|i| (i, 0)).collect::<Vec<_>>()[..]);
        assert_eq!(log.admit(start), None, "within the interval of the last one shown");
        let later = log.admit(start + REFUSAL_LOG_INTERVAL * 5).expect("shown");
        assert!(later.contains("more refused since the last one shown"), "{later}");
        let counted: u64 = shown.iter().map(|&(_, unshown)| unshown).sum();
        // Every refusal is either shown or counted in the next line shown (the last ones wait).
        assert!(counted + shown.len() as u64 <= 10_000 && counted >= 8_000, "{counted}");
    }
}
