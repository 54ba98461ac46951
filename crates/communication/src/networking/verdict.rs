//! The last record of a join handshake: the member's verdict on the joiner.
//!
//! This module owns [`Verdict`] and its one-byte encoding, which a member writes after the
//! proofs of a join handshake ([`super::handshake`], step 4) and the joiner reads: whether the
//! member admitted it, or why not. It must not decide the verdict (the transport does, under the
//! lock that orders joins) and reads exactly one byte, before a deadline.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use super::handshake::{io_failure, read_record};
use super::NetworkError;

/// The member's answer to a joiner after a successful join handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The joiner is a member: the connection is a peer link from the next byte on.
    Admitted,
    /// Another process joined first, so the joiner's index is no longer the next one.
    Superseded,
    /// The member is shutting down and admits nobody.
    Closing,
    /// The member could not start the connection's threads.
    Failed,
}

impl Verdict {
    fn code(self) -> u8 {
        match self {
            Verdict::Admitted => 0,
            Verdict::Superseded => 1,
            Verdict::Closing => 2,
            Verdict::Failed => 3,
        }
    }

    fn from_code(code: u8) -> Option<Verdict> {
        [Verdict::Admitted, Verdict::Superseded, Verdict::Closing, Verdict::Failed]
            .into_iter()
            .find(|verdict| verdict.code() == code)
    }

    /// Why the join was refused, in words (empty for an admission).
    pub fn reason(self) -> &'static str {
        match self {
            Verdict::Admitted => "",
            Verdict::Superseded => "another process joined first; start this one as the next index",
            Verdict::Closing => "the member is shutting down",
            Verdict::Failed => "the member could not start the connection's threads",
        }
    }
}

/// Sends the member's verdict on a join (the last record of a join handshake).
///
/// # Errors
///
/// [`NetworkError::HandshakeIo`] when the joiner does not take the byte within `timeout`.
pub fn write_verdict(
    stream: &mut TcpStream,
    verdict: Verdict,
    timeout: Duration,
) -> Result<(), NetworkError> {
    stream
        .set_write_timeout(Some(timeout.max(Duration::from_millis(1))))
        .map_err(|error| io_failure(&error))?;
    stream.write_all(&[verdict.code()]).map_err(|error| io_failure(&error))?;
    stream.set_write_timeout(None).map_err(|error| io_failure(&error))
}

/// Reads the member's verdict on this joiner, within `timeout`.
///
/// # Errors
///
/// [`NetworkError::JoinRefused`] with the member's reason, [`NetworkError::NotAPeer`] for a
/// byte that is no verdict, [`NetworkError::HandshakeIo`] when none arrives in time.
pub async fn read_verdict(stream: &mut tokio::net::TcpStream, timeout: Duration) -> Result<(), NetworkError> {
    let mut code = [0u8; 1];
    let read = tokio::time::timeout(timeout, read_record(stream, &mut code)).await;
    read.unwrap_or_else(|_| Err(super::handshake::silent()))?;
    match Verdict::from_code(code[0]) {
        Some(Verdict::Admitted) => Ok(()),
        Some(refusal) => Err(NetworkError::JoinRefused { reason: refusal.reason().into() }),
        None => Err(NetworkError::NotAPeer {
            detail: format!("it sent {} where a join verdict belongs", code[0]),
        }),
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

    /// Reads a verdict from `stream` on a runtime of its own.
    fn read(stream: TcpStream) -> Result<(), NetworkError> {
        crate::networking::runtime::current_thread()?.block_on(async move {
            let mut stream = crate::networking::runtime::adopt(stream).expect("a tokio stream");
            read_verdict(&mut stream, SHORT).await
        })
    }

    #[test]
    fn verdicts_travel_and_refusals_carry_their_reason() {
        for (verdict, expected) in [
            (Verdict::Admitted, Ok(())),
            (
                Verdict::Superseded,
                Err(NetworkError::JoinRefused { reason: Verdict::Superseded.reason().into() }),
            ),
            (
                Verdict::Closing,
                Err(NetworkError::JoinRefused { reason: "the member is shutting down".into() }),
            ),
        ] {
            let (mut a, b) = pair();
            write_verdict(&mut a, verdict, SHORT).expect("write the verdict");
            assert_eq!(read(b), expected);
        }
        let (mut a, b) = pair();
        a.write_all(&[9]).expect("write junk");
        assert!(matches!(read(b), Err(NetworkError::NotAPeer { .. })));
        let (_a, b) = pair();
        assert!(matches!(read(b), Err(NetworkError::HandshakeIo { .. })));
    }
}
