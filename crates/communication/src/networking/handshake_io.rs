//! Reading a handshake's records from a peer, and the errors a failed read or write reports.
//!
//! Shared by the hello and proofs ([`super::handshake`]) and the join's answer
//! ([`super::join_answer`]); the caller bounds the time of every read.

use std::io::ErrorKind;

use super::NetworkError;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream as AsyncStream;

/// Fills `buffer` from `stream` (the caller bounds the time).
pub(crate) async fn read_record(stream: &mut AsyncStream, buffer: &mut [u8]) -> Result<(), NetworkError> {
    match stream.read_exact(buffer).await {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == ErrorKind::UnexpectedEof => Err(NetworkError::HandshakeIo {
            reason: "the peer closed the connection during the handshake".into(),
        }),
        Err(error) => Err(io_failure(&error)),
    }
}

pub(crate) fn silent() -> NetworkError {
    NetworkError::HandshakeIo { reason: "the peer did not complete the handshake in time".into() }
}

pub(crate) fn io_failure(error: &std::io::Error) -> NetworkError {
    NetworkError::HandshakeIo { reason: error.to_string() }
}
