//! The last record of a join handshake: the member's answer to the joiner.
//!
//! This module owns [`JoinAnswer`] and its one-byte encoding, which a member writes after the
//! proofs of a join handshake ([`super::handshake`], step 4) and the joiner reads: whether the
//! member admitted it, or why not. It must not decide the answer (the transport does, under the
//! lock that orders joins) and reads exactly one byte, before a deadline.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use super::handshake_io::{io_failure, read_record, silent};
use super::NetworkError;

/// The member's answer to a joiner after a successful join handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinAnswer {
    /// The joiner is a member: the connection is a peer link from the next byte on.
    Admitted,
    /// Another process joined first, so the joiner's index is no longer the next one.
    Superseded,
    /// The member is shutting down and admits nobody.
    Closing,
    /// The member could not start the connection's threads.
    Failed,
}

impl JoinAnswer {
    fn code(self) -> u8 {
        match self {
            JoinAnswer::Admitted => 0,
            JoinAnswer::Superseded => 1,
            JoinAnswer::Closing => 2,
            JoinAnswer::Failed => 3,
        }
    }

    fn from_code(code: u8) -> Option<JoinAnswer> {
        [JoinAnswer::Admitted, JoinAnswer::Superseded, JoinAnswer::Closing, JoinAnswer::Failed]
            .into_iter()
            .find(|answer| answer.code() == code)
    }

    /// Why the join was refused, in words (empty for an admission).
    pub fn reason(self) -> &'static str {
        match self {
            JoinAnswer::Admitted => "",
            JoinAnswer::Superseded => "another process joined first; start this one as the next index",
            JoinAnswer::Closing => "the member is shutting down",
            JoinAnswer::Failed => "the member could not start the connection's threads",
        }
    }
}

/// Sends the member's answer to a joiner (the last record of a join handshake).
///
/// # Errors
///
/// [`NetworkError::HandshakeIo`] when the joiner does not take the byte within `timeout`.
pub fn write_join_answer(
    stream: &mut TcpStream,
    answer: JoinAnswer,
    timeout: Duration,
) -> Result<(), NetworkError> {
    stream
        .set_write_timeout(Some(timeout.max(Duration::from_millis(1))))
        .map_err(|error| io_failure(&error))?;
    stream.write_all(&[answer.code()]).map_err(|error| io_failure(&error))?;
    stream.set_write_timeout(None).map_err(|error| io_failure(&error))
}

/// Reads the member's answer to this joiner, within `timeout`.
///
/// # Errors
///
/// [`NetworkError::JoinRefused`] with the member's reason, [`NetworkError::NotAPeer`] for a
/// byte that is no answer, [`NetworkError::HandshakeIo`] when none arrives in time.
pub async fn read_join_answer(
    stream: &mut tokio::net::TcpStream,
    timeout: Duration,
) -> Result<(), NetworkError> {
    let mut code = [0u8; 1];
    let read = tokio::time::timeout(timeout, read_record(stream, &mut code)).await;
    read.unwrap_or_else(|_| Err(silent()))?;
    match JoinAnswer::from_code(code[0]) {
        Some(JoinAnswer::Admitted) => Ok(()),
        Some(refusal) => Err(NetworkError::JoinRefused { reason: refusal.reason().into() }),
        None => {
            Err(NetworkError::NotAPeer { detail: format!("it sent {} where a join answer belongs", code[0]) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    const SHORT: Duration = Duration::from_millis(500);

    /// A connected pair of loopback sockets.
    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let client =
            TcpStream::connect(listener.local_addr().expect("an address")).expect("connect loopback");
        (client, listener.accept().expect("accept loopback").0)
    }

    /// Reads an answer from `stream` on a runtime of its own.
    fn read(stream: TcpStream) -> Result<(), NetworkError> {
        crate::networking::runtime::current_thread()?.block_on(async move {
            let mut stream = crate::networking::runtime::adopt(stream).expect("a tokio stream");
            read_join_answer(&mut stream, SHORT).await
        })
    }

    #[test]
    fn answers_travel_and_refusals_carry_their_reason() {
        for (answer, expected) in [
            (JoinAnswer::Admitted, Ok(())),
            (
                JoinAnswer::Superseded,
                Err(NetworkError::JoinRefused { reason: JoinAnswer::Superseded.reason().into() }),
            ),
            (
                JoinAnswer::Closing,
                Err(NetworkError::JoinRefused { reason: "the member is shutting down".into() }),
            ),
        ] {
            let (mut a, b) = pair();
            write_join_answer(&mut a, answer, SHORT).expect("write the answer");
            assert_eq!(read(b), expected);
        }
        let (mut a, b) = pair();
        a.write_all(&[9]).expect("write junk");
        assert!(matches!(read(b), Err(NetworkError::NotAPeer { .. })));
        let (_a, b) = pair();
        assert!(matches!(read(b), Err(NetworkError::HandshakeIo { .. })));
    }
}
