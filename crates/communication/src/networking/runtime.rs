//! The tokio runtime of the control plane, and moving sockets between it and the data path.
//!
//! This module owns how set-up ([`super::connect`]), the join acceptor ([`super::acceptor`]) and
//! the handshake's blocking wrapper ([`super::handshake::handshake`]) run asynchronous code: a
//! current-thread runtime on the thread that needs it ([`current_thread`]), a blocking std socket
//! made a tokio one ([`adopt`]) and back ([`release`]: blocking, so the data path's send and
//! receive threads use it as before), and naming the threads the control plane starts
//! ([`spawn_named`]). It must not run handshakes or decide anything about a connection.

use std::net::TcpStream;
use std::thread::JoinHandle;

use super::NetworkError;

/// A runtime on the calling thread, with the I/O and time drivers (set-up is a few sockets and
/// timers: one thread is plenty, and the data path never runs on it).
///
/// # Errors
///
/// The runtime cannot be built (the OS refuses an epoll instance or an eventfd).
pub(crate) fn current_thread() -> Result<tokio::runtime::Runtime, NetworkError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|error| NetworkError::io("cannot start the set-up runtime", &error))
}

/// `stream` as a tokio stream; must be called inside a runtime.
///
/// # Errors
///
/// The socket cannot be made non-blocking or registered with the runtime.
pub(crate) fn adopt(stream: TcpStream) -> std::io::Result<tokio::net::TcpStream> {
    stream.set_nonblocking(true)?;
    tokio::net::TcpStream::from_std(stream)
}

/// `stream` as a blocking std stream, as the data path's threads use it.
///
/// # Errors
///
/// The socket cannot be deregistered or made blocking.
pub(crate) fn release(stream: tokio::net::TcpStream) -> std::io::Result<TcpStream> {
    let stream = stream.into_std()?;
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// Spawns a thread named `name`.
///
/// # Errors
///
/// The OS refuses a thread.
pub(crate) fn spawn_named<T: Send + 'static>(
    name: String,
    body: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>, NetworkError> {
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(body)
        .map_err(|error| NetworkError::io(format!("cannot spawn thread {name}"), &error))
}
