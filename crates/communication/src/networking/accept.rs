//! Accepting connections on a listener, one handshake task per connection.
//!
//! This module owns what setup ([`super::connect`]) and the join acceptor
//! ([`super::acceptor`]) share: listening on an address, the asynchronous loop that accepts
//! connections for as long as its owner polls it ([`accept_loop`]; an owner stops it by dropping
//! it, in a `select!`), the limit of [`MAX_PENDING_HANDSHAKES`] handshakes at once (a semaphore:
//! a connection beyond it is dropped, so a flood of silent clients delays nobody for longer than
//! one handshake timeout), the socket options of every connection, and the log of refused
//! connections ([`RefusalLog`]: at most three lines a second, with the count of those not shown,
//! so a flood of strangers cannot flood the log). It must not run or judge handshakes: the
//! owner's `greet` does that with each accepted stream.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use super::NetworkError;

/// The most handshakes of accepted connections that run at once; further connections are
/// dropped until one finishes.
pub const MAX_PENDING_HANDSHAKES: usize = 16;

/// The pause after `accept` itself failed (out of file descriptors, say) before trying again.
const ACCEPT_RETRY: Duration = Duration::from_millis(20);

/// Refused connections are logged at most [`REFUSALS_SHOWN_PER_INTERVAL`] times in this interval.
pub const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(1);

/// How many refusals are shown per [`REFUSAL_LOG_INTERVAL`] (so that a port probe does not hide
/// the wrong secret that follows it); the others are counted.
pub const REFUSALS_SHOWN_PER_INTERVAL: u64 = 3;

/// Listens on `address` (a std listener, non-blocking, ready for [`TcpListener::from_std`]),
/// naming the address in the error.
pub(crate) fn listen(address: &str) -> Result<std::net::TcpListener, NetworkError> {
    let listener = std::net::TcpListener::bind(address).map_err(|error| match error.kind() {
        std::io::ErrorKind::AddrInUse => NetworkError::AddressInUse { address: address.to_string() },
        _ => NetworkError::Bind { address: address.to_string(), reason: error.to_string() },
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|error| NetworkError::io(format!("cannot poll the listener on {address}"), &error))?;
    Ok(listener)
}

/// The permits of [`accept_loop`]: one per handshake that may run at once. Its owner can wait
/// for the handshakes in progress to end by acquiring them all.
pub(crate) fn handshake_slots() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(MAX_PENDING_HANDSHAKES))
}

/// Accepts connections on `listener` for as long as it is polled, spawning `greet` of each
/// (with its `TCP_NODELAY` set) as a task that holds one of `slots`; a connection without a free
/// slot, or that cannot be configured, goes to `reject`.
pub(crate) async fn accept_loop<F>(
    listener: &TcpListener,
    slots: &Arc<Semaphore>,
    greet: impl Fn(TcpStream, SocketAddr) -> F,
    reject: impl Fn(NetworkError),
) -> Infallible
where
    F: Future<Output = ()> + Send + 'static,
{
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                reject(NetworkError::io("accepting a connection failed", &error));
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(slots).try_acquire_owned() else {
            let reason = format!("more than {MAX_PENDING_HANDSHAKES} handshakes in progress");
            reject(NetworkError::HandshakeIo { reason }.at(peer));
            continue;
        };
        if let Err(error) = configure(&stream) {
            reject(error.at(peer));
            continue;
        }
        let handshake = greet(stream, peer);
        tokio::spawn(async move {
            handshake.await;
            drop(slot);
        });
    }
}

/// Sets the socket options every connection uses.
pub(crate) fn configure(stream: &TcpStream) -> Result<(), NetworkError> {
    stream.set_nodelay(true).map_err(|error| NetworkError::HandshakeIo {
        reason: format!("cannot configure the socket: {error}"),
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
