//! The last records of a join handshake: the member's view, the joiner's decision and the
//! member's answer.
//!
//! This module owns [`JoinAnswer`] and its one-byte encoding, which a member writes last
//! ([`super::handshake`], step 4) and the joiner reads: whether the member admitted it, or why
//! not; and the exchange before it (`docs/rescaling.md`, "Joins and leaves at the same time"):
//! the member's [`JoinView`] (ready, with the processes it knows have left, or refused, for
//! instance because a process is leaving), then the joiner's one-byte decision, which it sends
//! only once every member's view is in. It must not decide the view or the answer (the
//! transport does, under the locks that order joins and leaves) and reads every record before
//! a deadline.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::handshake_io::{io_failure, read_record, silent};
use super::NetworkError;

/// The most processes a view lists (a longer list is not a view).
pub const MAX_LISTED_PROCESSES: usize = 4096;

/// What a member tells a joiner before the joiner decides to join.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JoinView {
    /// The member would admit the joiner; `departed` are the processes it knows have left the
    /// cluster (the joiner must not dial them). The member holds the joiner's place (its own
    /// leave waits) until the decision.
    Ready {
        /// Processes that left the cluster, in order.
        departed: Vec<usize>,
    },
    /// Processes are leaving the cluster (this member or others it heard of); no process
    /// joins until they are gone.
    LeavesInProgress {
        /// The leaving processes, in order.
        leaving: Vec<usize>,
    },
    /// The member refuses for a reason of the final answer (another process joined first, it
    /// is shutting down).
    Refused(JoinAnswer),
}

impl JoinView {
    /// The record: a code, a count (u16) and that many process indices (u32), little-endian.
    fn encode(&self) -> Vec<u8> {
        let (code, listed): (u8, &[usize]) = match self {
            JoinView::Ready { departed } => (0, departed),
            JoinView::LeavesInProgress { leaving } => (4, leaving),
            JoinView::Refused(answer) => (answer.code(), &[]),
        };
        let listed = &listed[..listed.len().min(MAX_LISTED_PROCESSES)];
        let mut bytes = vec![code];
        bytes.extend_from_slice(&(listed.len() as u16).to_le_bytes());
        for &process in listed {
            bytes.extend_from_slice(&(process as u32).to_le_bytes());
        }
        bytes
    }

    /// Why the joiner does not join now, in words, for a view that is not `Ready`.
    pub fn reason(&self) -> String {
        match self {
            JoinView::Ready { .. } => String::new(),
            JoinView::LeavesInProgress { leaving } => format!(
                "process(es) {} {} leaving the cluster; a process can join only once no process \
                 is leaving (ask again once {} gone)",
                listed(leaving),
                if leaving.len() == 1 { "is" } else { "are" },
                if leaving.len() == 1 { "it has" } else { "they have" },
            ),
            JoinView::Refused(answer) => answer.reason().to_owned(),
        }
    }
}

/// Process indices for a message: `2, 3`.
pub fn listed(processes: &[usize]) -> String {
    processes.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
}

/// The joiner's decision after every member's view: join, or withdraw (any other byte, or
/// the connection's end, withdraws too).
const JOIN: u8 = 1;
const WITHDRAW: u8 = 0;

/// Sends the member's view to a joiner, within `timeout`.
///
/// # Errors
///
/// [`NetworkError::HandshakeIo`] when the joiner does not take it in time.
pub async fn write_join_view(
    stream: &mut tokio::net::TcpStream,
    view: &JoinView,
    timeout: Duration,
) -> Result<(), NetworkError> {
    let bytes = view.encode();
    let write = tokio::time::timeout(timeout, stream.write_all(&bytes)).await;
    match write {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(io_failure(&error)),
        Err(_) => Err(silent()),
    }
}

/// Reads a member's view, within `timeout`.
///
/// # Errors
///
/// [`NetworkError::NotAPeer`] for a record that is no view, [`NetworkError::HandshakeIo`] when
/// none arrives in time.
pub async fn read_join_view(
    stream: &mut tokio::net::TcpStream,
    timeout: Duration,
) -> Result<JoinView, NetworkError> {
    let read = async {
        let mut head = [0u8; 3];
        read_record(stream, &mut head).await?;
        let count = u16::from_le_bytes([head[1], head[2]]) as usize;
        let not_a_view = |detail: String| NetworkError::NotAPeer { detail };
        if count > MAX_LISTED_PROCESSES {
            return Err(not_a_view(format!("its join view lists {count} processes")));
        }
        let mut body = vec![0u8; count * 4];
        read_record(stream, &mut body).await?;
        let processes: Vec<usize> =
            body.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize).collect();
        match head[0] {
            0 => Ok(JoinView::Ready { departed: processes }),
            4 => Ok(JoinView::LeavesInProgress { leaving: processes }),
            code => match JoinAnswer::from_code(code) {
                Some(answer) if answer != JoinAnswer::Admitted && count == 0 => Ok(JoinView::Refused(answer)),
                _ => Err(not_a_view(format!("it sent {code} where a join view belongs"))),
            },
        }
    };
    tokio::time::timeout(timeout, read).await.unwrap_or_else(|_| Err(silent()))
}

/// Sends the joiner's decision (join or withdraw) to a member that sent its view.
///
/// # Errors
///
/// [`NetworkError::HandshakeIo`] when the member does not take it within `timeout`.
pub async fn write_join_decision(
    stream: &mut tokio::net::TcpStream,
    join: bool,
    timeout: Duration,
) -> Result<(), NetworkError> {
    let byte = [if join { JOIN } else { WITHDRAW }];
    let write = tokio::time::timeout(timeout, stream.write_all(&byte)).await;
    match write {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(io_failure(&error)),
        Err(_) => Err(silent()),
    }
}

/// Reads the joiner's decision within `timeout`: true to join; false when it withdrew,
/// closed the connection or said nothing in time.
pub async fn read_join_decision(stream: &mut tokio::net::TcpStream, timeout: Duration) -> bool {
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(timeout, read_record(stream, &mut byte)).await;
    matches!(read, Ok(Ok(()))) && byte[0] == JOIN
}

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

    /// Writes `view` on one end of a pair and reads it from the other, on a runtime of
    /// its own; also answers with `decision` and returns what the reader of decisions saw.
    fn view_through(view: &JoinView, decision: bool) -> (Result<JoinView, NetworkError>, bool) {
        let (a, b) = pair();
        crate::networking::runtime::current_thread().expect("a runtime").block_on(async move {
            let mut member = crate::networking::runtime::adopt(a).expect("a tokio stream");
            let mut joiner = crate::networking::runtime::adopt(b).expect("a tokio stream");
            write_join_view(&mut member, view, SHORT).await.expect("write the view");
            let read = read_join_view(&mut joiner, SHORT).await;
            write_join_decision(&mut joiner, decision, SHORT).await.expect("write the decision");
            (read, read_join_decision(&mut member, SHORT).await)
        })
    }

    #[test]
    fn views_and_decisions_travel_and_a_refusal_names_the_leavers() {
        for view in [
            JoinView::Ready { departed: vec![] },
            JoinView::Ready { departed: vec![2, 5] },
            JoinView::LeavesInProgress { leaving: vec![1, 3] },
            JoinView::Refused(JoinAnswer::Closing),
        ] {
            for decision in [true, false] {
                let (read, decided) = view_through(&view, decision);
                assert_eq!(read.as_ref(), Ok(&view));
                assert_eq!(decided, decision);
            }
        }
        let reason = JoinView::LeavesInProgress { leaving: vec![2] }.reason();
        assert!(reason.starts_with("process(es) 2 is leaving the cluster"), "{reason}");
        let reason = JoinView::LeavesInProgress { leaving: vec![1, 2] }.reason();
        assert!(reason.contains("1, 2 are leaving") && reason.contains("once they have gone"), "{reason}");
        // Junk where a view belongs, and a view listing too many processes, are refused.
        for junk in [vec![9u8, 0, 0], vec![0u8, 0xff, 0xff]] {
            let (mut a, b) = pair();
            a.write_all(&junk).expect("write junk");
            let read =
                crate::networking::runtime::current_thread().expect("a runtime").block_on(async move {
                    let mut stream = crate::networking::runtime::adopt(b).expect("a tokio stream");
                    read_join_view(&mut stream, SHORT).await
                });
            assert!(matches!(read, Err(NetworkError::NotAPeer { .. })), "{junk:?}: {read:?}");
        }
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
