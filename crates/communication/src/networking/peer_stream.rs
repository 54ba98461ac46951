//! A connection after its handshake, and its two ends as the transport's threads use them.
//!
//! This module owns [`PeerStream`], what setup and the join acceptor hand the transport (the
//! socket and, for a sealed session, the keys the handshake derived), and the reading and
//! writing ends made from it: [`Inflow`] (a [`Read`] of the plaintext the peer sent) and
//! [`Outflow`] (a [`Write`] whose bytes reach the peer). On a sealed session they apply
//! [`super::seal`]'s records, so the receive and send threads read and write frames the same
//! way either way. It must not know what the bytes mean.
//!
//! Costs of a sealed session: the sender copies each buffer once into the records it writes
//! (encryption in place there); the receiver reads records into a buffer of its own, decrypts in
//! place, and copies the plaintext into the receive slab, so a payload is copied once (an
//! unsealed session copies nothing). A receiver holds at most [`READ_BUFFER_BYTES`] of records,
//! whatever a header claims. The receive thread's silence check counts whole records: bytes of a
//! record that has not fully arrived do not yet show the peer alive (a record is at most
//! 64 KiB, a heartbeat's record 76 bytes).

use std::io::{ErrorKind, IoSlice, Read, Write};
use std::net::TcpStream;
use std::ops::Range;

use super::seal::{Opener, Sealer, SessionKeys, MAX_RECORD_BYTES, RECORD_OVERHEAD_BYTES};

/// The size of a sealed reader's buffer: four records of the largest size.
pub const READ_BUFFER_BYTES: usize = 4 * (MAX_RECORD_BYTES + RECORD_OVERHEAD_BYTES);

/// A sealed writer's record buffer is freed, rather than kept, when it grew beyond this.
const MAX_KEPT_OUTPUT_BYTES: usize = 4 << 20;

/// A connection positioned after its handshake.
#[derive(Debug)]
pub struct PeerStream {
    /// The socket.
    pub stream: TcpStream,
    /// The keys of the session's sealed records; `None` when the session is not sealed.
    pub keys: Option<SessionKeys>,
    /// The sealed records this end sent before the transport took the stream (set-up's
    /// keepalives), so that the send thread's numbering goes on from there; 0 when unsealed.
    pub records_sent: u64,
}

impl PeerStream {
    /// Whether what follows the handshake is sealed.
    pub fn is_sealed(&self) -> bool {
        self.keys.is_some()
    }

    /// The socket (to shut it down), the writing end and the reading end of the connection.
    ///
    /// # Errors
    ///
    /// The socket cannot be shared (cloned).
    pub fn split(self) -> std::io::Result<(TcpStream, Outflow, Inflow)> {
        let (socket, writer) = (self.stream.try_clone()?, self.stream.try_clone()?);
        let keys = self.keys.as_ref();
        let outflow = match keys {
            Some(keys) => Outflow::Sealed(Box::new(SealedWriter::new(
                writer,
                Sealer::resume(keys.sending(), self.records_sent),
            ))),
            None => Outflow::Plain(writer),
        };
        Ok((socket, outflow, Inflow::new(self.stream, keys)))
    }
}

impl From<TcpStream> for PeerStream {
    /// An unsealed session over `stream`.
    fn from(stream: TcpStream) -> PeerStream {
        PeerStream { stream, keys: None, records_sent: 0 }
    }
}

/// The reading end of a connection: plaintext, opened from records on a sealed session.
pub enum Inflow {
    /// Reads the socket as it is.
    Plain(TcpStream),
    /// Opens the records read from the socket.
    Sealed(Box<SealedReader<TcpStream>>),
}

impl Inflow {
    /// The reading end of `stream`, opening records with `keys` if given.
    pub fn new(stream: TcpStream, keys: Option<&SessionKeys>) -> Inflow {
        match keys {
            Some(keys) => Inflow::Sealed(Box::new(SealedReader::new(stream, Opener::new(keys.receiving())))),
            None => Inflow::Plain(stream),
        }
    }

    /// The socket beneath.
    pub fn socket(&self) -> &TcpStream {
        match self {
            Inflow::Plain(stream) => stream,
            Inflow::Sealed(reader) => &reader.inner,
        }
    }
}

impl Read for Inflow {
    fn read(&mut self, into: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Inflow::Plain(stream) => stream.read(into),
            Inflow::Sealed(reader) => reader.read(into),
        }
    }
}

/// The writing end of a connection: bytes written are sealed into records on a sealed session.
/// `W` is what writes the bytes out (the socket, or a writer around it).
pub enum Outflow<W = TcpStream> {
    /// Writes to `W` as they are.
    Plain(W),
    /// Seals what is written into records.
    Sealed(Box<SealedWriter<W>>),
}

impl<W> Outflow<W> {
    /// The writing end over `stream`, sealing records with `keys` if given.
    pub fn new(stream: W, keys: Option<&SessionKeys>) -> Outflow<W> {
        match keys {
            Some(keys) => Outflow::Sealed(Box::new(SealedWriter::new(stream, Sealer::new(keys.sending())))),
            None => Outflow::Plain(stream),
        }
    }

    /// The same writing end with `wrap` put around the writer beneath (below the sealing, so
    /// that a record is never cut by what `wrap` adds).
    ///
    /// # Errors
    ///
    /// Those of `wrap`.
    pub fn try_map<V>(self, wrap: impl FnOnce(W) -> std::io::Result<V>) -> std::io::Result<Outflow<V>> {
        Ok(match self {
            Outflow::Plain(stream) => Outflow::Plain(wrap(stream)?),
            Outflow::Sealed(writer) => {
                let SealedWriter { inner, sealer, out } = *writer;
                Outflow::Sealed(Box::new(SealedWriter { inner: wrap(inner)?, sealer, out }))
            }
        })
    }

    /// The writer beneath.
    pub fn get_ref(&self) -> &W {
        match self {
            Outflow::Plain(stream) => stream,
            Outflow::Sealed(writer) => &writer.inner,
        }
    }
}

impl<W: Write> Write for Outflow<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self {
            Outflow::Plain(stream) => stream.write(bytes),
            Outflow::Sealed(writer) => writer.write(bytes),
        }
    }

    fn write_vectored(&mut self, slices: &[IoSlice<'_>]) -> std::io::Result<usize> {
        match self {
            Outflow::Plain(stream) => stream.write_vectored(slices),
            Outflow::Sealed(writer) => writer.write_vectored(slices),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Outflow::Plain(stream) => stream.flush(),
            Outflow::Sealed(writer) => writer.flush(),
        }
    }
}

/// Seals everything written into records and writes them whole: a write returns only once all
/// its bytes are on their way (a partial record would make the rest of the stream unreadable).
pub struct SealedWriter<W> {
    inner: W,
    sealer: Sealer,
    /// The records of the current write, reused from write to write.
    out: Vec<u8>,
}

impl<W> SealedWriter<W> {
    /// A writer to `inner` whose first record is number 0.
    pub fn new(inner: W, sealer: Sealer) -> SealedWriter<W> {
        SealedWriter { inner, sealer, out: Vec::new() }
    }
}

impl<W: Write> SealedWriter<W> {
    /// Writes the records collected in `out`, then empties it.
    fn write_out(&mut self) -> std::io::Result<()> {
        let written = self.inner.write_all(&self.out);
        self.out.clear();
        if self.out.capacity() > MAX_KEPT_OUTPUT_BYTES {
            self.out = Vec::new();
        }
        written
    }
}

impl<W: Write> Write for SealedWriter<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.sealer.seal_into(bytes, &mut self.out)?;
        self.write_out()?;
        Ok(bytes.len())
    }

    fn write_vectored(&mut self, slices: &[IoSlice<'_>]) -> std::io::Result<usize> {
        let mut total = 0;
        for slice in slices {
            self.sealer.seal_into(slice, &mut self.out)?;
            total += slice.len();
        }
        self.write_out()?;
        Ok(total)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Reads records from `inner` and yields their plaintext, refusing the first record that is
/// out of order, forged or of an impossible length with an error of kind
/// [`ErrorKind::InvalidData`] whose message says which (see [`super::seal::Violation`]).
pub struct SealedReader<R> {
    inner: R,
    opener: Opener,
    /// Records read and not yet opened are at `start..end`.
    buffer: Box<[u8]>,
    start: usize,
    end: usize,
    /// The opened plaintext not yet read, inside `buffer` (before `start`).
    plain: Range<usize>,
}

impl<R: Read> SealedReader<R> {
    /// A reader of `inner` that expects record number 0 first.
    pub fn new(inner: R, opener: Opener) -> SealedReader<R> {
        let buffer = vec![0u8; READ_BUFFER_BYTES].into_boxed_slice();
        SealedReader { inner, opener, buffer, start: 0, end: 0, plain: 0..0 }
    }

    /// Opens the next record if it has fully arrived; returns whether it did.
    fn open_next(&mut self) -> std::io::Result<bool> {
        let waiting = &self.buffer[self.start..self.end];
        let size = Opener::record_bytes(waiting).map_err(invalid)?;
        let Some(size) = size.filter(|&size| size <= waiting.len()) else { return Ok(false) };
        let record = &mut self.buffer[self.start..self.start + size];
        let plain = self.opener.open(record).map_err(invalid)?;
        self.plain = self.start + plain.start..self.start + plain.end;
        self.start += size;
        Ok(true)
    }

    /// Reads more bytes from `inner` after what is waiting (moved to the front first when the
    /// buffer's end is near); returns how many (0 at the end of the stream).
    fn fill(&mut self) -> std::io::Result<usize> {
        if self.buffer.len() - self.end < MAX_RECORD_BYTES + RECORD_OVERHEAD_BYTES {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let read = self.inner.read(&mut self.buffer[self.end..])?;
        self.end += read;
        Ok(read)
    }
}

impl<R: Read> Read for SealedReader<R> {
    /// Fills `into` with the plaintext of every record that has arrived (reading the socket only
    /// when none has); the end of the stream between two records is the end of the plaintext.
    fn read(&mut self, into: &mut [u8]) -> std::io::Result<usize> {
        let mut filled = 0;
        while filled < into.len() {
            if !self.plain.is_empty() {
                let count = self.plain.len().min(into.len() - filled);
                into[filled..filled + count]
                    .copy_from_slice(&self.buffer[self.plain.start..self.plain.start + count]);
                self.plain.start += count;
                filled += count;
            } else if self.open_next()? {
                continue;
            } else if filled > 0 {
                break;
            } else if self.fill()? == 0 {
                if self.start == self.end {
                    return Ok(0);
                }
                return Err(std::io::Error::new(
                    ErrorKind::UnexpectedEof,
                    "the connection closed in the middle of a sealed record",
                ));
            }
        }
        Ok(filled)
    }
}

/// A refused record as an I/O error of kind [`ErrorKind::InvalidData`].
fn invalid(violation: super::seal::Violation) -> std::io::Error {
    std::io::Error::new(ErrorKind::InvalidData, violation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::networking::seal::KEY_BYTES;

    const KEY: [u8; KEY_BYTES] = [3; KEY_BYTES];

    /// A reader that returns at most `step` bytes per read.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, into: &mut [u8]) -> std::io::Result<usize> {
            let count = self.step.min(into.len()).min(self.bytes.len());
            into[..count].copy_from_slice(&self.bytes[..count]);
            self.bytes = &self.bytes[count..];
            Ok(count)
        }
    }

    fn written(pieces: &[&[u8]]) -> Vec<u8> {
        let mut writer = SealedWriter::new(Vec::new(), Sealer::new(&KEY));
        let slices: Vec<IoSlice<'_>> = pieces.iter().map(|piece| IoSlice::new(piece)).collect();
        assert_eq!(writer.write_vectored(&slices).expect("a write"), pieces.iter().map(|p| p.len()).sum());
        writer.write_all(b"tail").expect("a write");
        writer.inner
    }

    #[test]
    fn what_is_written_reads_back_whatever_the_read_sizes() {
        let large: Vec<u8> = (0..3 * MAX_RECORD_BYTES + 17).map(|i| (i % 251) as u8).collect();
        let sealed = written(&[b"head", &large]);
        let mut expected = b"head".to_vec();
        expected.extend_from_slice(&large);
        expected.extend_from_slice(b"tail");
        for (step, into) in [(1, 7), (13, 1), (100_000, 4096), (usize::MAX, 1 << 20)] {
            let mut reader = SealedReader::new(Trickle { bytes: &sealed, step }, Opener::new(&KEY));
            let mut plain = Vec::new();
            let mut chunk = vec![0u8; into];
            loop {
                let count = reader.read(&mut chunk).expect("intact records");
                if count == 0 {
                    break;
                }
                plain.extend_from_slice(&chunk[..count]);
            }
            assert_eq!(plain, expected, "step {step}, reads of {into}");
        }
    }

    #[test]
    fn a_cut_record_and_a_forged_one_are_errors_not_data() {
        let sealed = written(&[b"abc"]);
        let cut = &sealed[..sealed.len() - 1];
        let mut reader = SealedReader::new(Trickle { bytes: cut, step: 5 }, Opener::new(&KEY));
        let mut into = [0u8; 64];
        assert_eq!(reader.read(&mut into).expect("the first record"), 3);
        let error = reader.read(&mut into).expect_err("a cut record");
        assert_eq!(error.kind(), ErrorKind::UnexpectedEof);
        let mut forged = sealed.clone();
        forged[14] ^= 1;
        let mut reader = SealedReader::new(Trickle { bytes: &forged, step: 1000 }, Opener::new(&KEY));
        let error = reader.read(&mut into).expect_err("a forged record");
        assert_eq!(error.kind(), ErrorKind::InvalidData);
        assert!(error.to_string().contains("record 0 failed authentication"), "{error}");
    }
}
