//! Writes that give up on a peer that stopped reading.
//!
//! This module owns [`DeadlineWriter`], the socket of a send thread: the socket's write
//! timeout is the liveness check interval, and a write that has moved no byte for longer than
//! the peer timeout fails with [`ErrorKind::TimedOut`] naming how long it waited. A peer that
//! keeps sending heartbeats but reads nothing (its receive buffers full, its process stuck)
//! would otherwise block this process's send thread, and then its workers, forever. A write
//! that moves some bytes is progress: a slow reader is never mistaken for a stopped one. It
//! must not decide what a failed write means (the send thread reports it to the alarm).

use std::io::{ErrorKind, IoSlice, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use crate::networking::Liveness;

/// A socket whose writes fail once the peer has taken nothing for longer than its timeout.
pub(super) struct DeadlineWriter {
    stream: TcpStream,
    /// How long a write may move no byte.
    timeout: Duration,
}

impl DeadlineWriter {
    /// Sets `stream`'s write timeout to `liveness`'s check interval, so that a blocked write
    /// wakes to look at the time.
    ///
    /// # Errors
    ///
    /// The socket refused the timeout.
    pub(super) fn new(stream: TcpStream, liveness: Liveness) -> std::io::Result<DeadlineWriter> {
        stream.set_write_timeout(Some(liveness.check_interval()))?;
        Ok(DeadlineWriter { stream, timeout: liveness.timeout() })
    }

    /// Closes the sending direction of the connection.
    pub(super) fn shutdown_write(&self) -> std::io::Result<()> {
        self.stream.shutdown(Shutdown::Write)
    }

    /// Runs `write` until it moves bytes, fails otherwise, or has moved nothing for longer than
    /// the timeout.
    fn retry(
        &mut self,
        mut write: impl FnMut(&mut TcpStream) -> std::io::Result<usize>,
    ) -> std::io::Result<usize> {
        let started = Instant::now();
        loop {
            match write(&mut self.stream) {
                Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    let stalled = started.elapsed();
                    if stalled > self.timeout {
                        let reason = format!(
                            "it read nothing for {:.1} s, longer than the peer timeout of {} s (it \
                             may still send, but it does not receive)",
                            stalled.as_secs_f64(),
                            self.timeout.as_secs_f64()
                        );
                        return Err(std::io::Error::new(ErrorKind::TimedOut, reason));
                    }
                }
                Err(error) if error.kind() == ErrorKind::Interrupted => {}
                result => return result,
            }
        }
    }
}

impl Write for DeadlineWriter {
    fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
        self.retry(|stream| stream.write(buffer))
    }

    fn write_vectored(&mut self, buffers: &[IoSlice<'_>]) -> std::io::Result<usize> {
        self.retry(|stream| stream.write_vectored(buffers))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_peer_that_reads_nothing_fails_the_write_after_the_timeout_and_a_reader_does_not() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a listener");
        let stream = TcpStream::connect(listener.local_addr().unwrap()).expect("connect");
        let (mut peer, _) = listener.accept().expect("accept");
        let liveness = Liveness::new(Duration::from_millis(300)).expect("a timeout");
        let mut writer = DeadlineWriter::new(stream, liveness).expect("a writer");
        // A reader that drains everything: a large write completes.
        let reader = std::thread::spawn(move || {
            let mut total = 0usize;
            let mut chunk = vec![0u8; 1 << 16];
            while total < 32 << 20 {
                total += std::io::Read::read(&mut peer, &mut chunk).expect("read");
            }
            peer
        });
        writer.write_all(&vec![1u8; 32 << 20]).expect("a reading peer takes everything");
        let _peer = reader.join().expect("the reader");
        // Nobody reads any more: the socket buffers fill, then the write times out.
        let started = Instant::now();
        let error = writer.write_all(&vec![2u8; 256 << 20]).expect_err("a peer that reads nothing");
        let waited = started.elapsed();
        assert_eq!(error.kind(), ErrorKind::TimedOut);
        assert!(error.to_string().contains("read nothing for"), "{error}");
        assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(10), "{waited:?}");
    }
}
