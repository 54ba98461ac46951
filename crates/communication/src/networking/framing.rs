//! Message framing on a connection between two processes.
//!
//! This module owns the wire layout of a message: a fixed [`HEADER_BYTES`]-byte header of six
//! little-endian `u64`s ([`MessageHeader`]) followed by `length` payload bytes, the validation of
//! headers read from a socket, and the reserved control frames: the goodbye that announces an
//! orderly close, the heartbeat that says a silent sender is still alive, the abort that
//! says why a failing process closes (which process it blames), and the clock probe and reply
//! that measure clock offsets (see [`super::clock_sync`]), and the walk over the headers of a
//! buffer of whole frames ([`headers_in`]). It must not interpret payloads, own buffers, or
//! touch sockets.
//!
//! Layout (offsets in bytes): `channel` 0, `source` 8, `target_lower` 16, `target_upper` 24,
//! `length` 32, `seqno` 40.
//!
//! What `seqno` counts on a data frame is the layer above's choice; the transport carries it
//! untouched. The cluster allocator ([`crate::allocator::cluster`]) keeps one counter per
//! pusher, that is per (`channel`, `source`, target range), starting at 0 and incremented by
//! every message it frames: a point-to-point channel has a pusher per target worker (a range
//! of one), a broadcast channel one per remote process (the range of that process's workers).
//! So the frames of one (`channel`, `source`, target range) carry 0, 1, 2, ... in the order
//! sent, as long as a worker allocates each channel id once (the engine does). A message the
//! sender refuses (too large) still uses up its number, so a gap means a message was lost.

use super::NetworkError;

/// The size of an encoded [`MessageHeader`].
pub const HEADER_BYTES: usize = 6 * 8;

/// The largest payload a message may carry (1 GiB); a header announcing more is rejected, so a
/// corrupt or hostile length cannot make a receiver allocate without bound.
pub const MAX_MESSAGE_BYTES: usize = 1 << 30;

/// The lowest of the channel ids reserved for control frames (the top 16 ids); no data channel
/// may use them, and a control frame on a channel this build does not know is malformed.
pub const FIRST_CONTROL_CHANNEL: u64 = u64::MAX - 15;

/// The channel id of the goodbye frame ([`MessageHeader::goodbye`]).
pub const GOODBYE_CHANNEL: u64 = u64::MAX;

/// The channel id of the heartbeat frame ([`MessageHeader::heartbeat`]).
pub const HEARTBEAT_CHANNEL: u64 = u64::MAX - 1;

/// The channel id of the abort frame ([`MessageHeader::abort`]).
pub const ABORT_CHANNEL: u64 = u64::MAX - 2;

/// The channel id of the clock probe frame ([`MessageHeader::clock_probe`]).
pub const CLOCK_PROBE_CHANNEL: u64 = u64::MAX - 3;

/// The channel id of the clock reply frame ([`MessageHeader::clock_reply`]).
pub const CLOCK_REPLY_CHANNEL: u64 = u64::MAX - 4;

/// What precedes every message on a connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MessageHeader {
    /// The channel the message belongs to.
    pub channel: u64,
    /// The global index of the sending worker.
    pub source: u64,
    /// The first global worker index the message is for.
    pub target_lower: u64,
    /// One past the last global worker index the message is for (`target_lower < target_upper`).
    pub target_upper: u64,
    /// The number of payload bytes that follow the header.
    pub length: u64,
    /// The sender's sequence number for this message (assigned by the layer above; the
    /// cluster allocator counts per (`channel`, `source`, target range) from 0, see the
    /// module docs). Control frames use it for their own values.
    pub seqno: u64,
}

impl MessageHeader {
    /// The frame a process sends last on a connection, so that the receiver knows the end of
    /// the stream that follows is expected, not a lost peer.
    pub fn goodbye() -> MessageHeader {
        MessageHeader { channel: GOODBYE_CHANNEL, target_upper: 1, ..MessageHeader::default() }
    }

    /// The frame a send thread writes when it has written nothing for a while, so that the
    /// receiver can tell a quiet peer from a lost one. It carries nothing for workers.
    pub fn heartbeat() -> MessageHeader {
        MessageHeader { channel: HEARTBEAT_CHANNEL, target_upper: 1, ..MessageHeader::default() }
    }

    /// The frame a process sends last when its run failed, naming the process whose loss
    /// caused the failure (`cause`: the sender itself when its own run failed), so that the
    /// receiver blames the root cause rather than the messenger.
    pub fn abort(cause: usize) -> MessageHeader {
        MessageHeader {
            channel: ABORT_CHANNEL,
            target_upper: 1,
            seqno: cause as u64,
            ..MessageHeader::default()
        }
    }

    /// The frame that asks the peer for its clock: `sent_ns` is the prober's clock when it
    /// wrote the frame (in `seqno`), `index` the probe's place in a burst of `burst` probes
    /// (`target_lower` and `target_upper`, so that the target range stays non-empty).
    pub fn clock_probe(sent_ns: i64, index: u64, burst: u64) -> MessageHeader {
        MessageHeader {
            channel: CLOCK_PROBE_CHANNEL,
            target_lower: index,
            target_upper: burst,
            seqno: sent_ns as u64,
            ..MessageHeader::default()
        }
    }

    /// The answer to `probe`: the probe's fields echoed, with the answering process's clock
    /// when it read the probe (`received_ns`) in `source`.
    pub fn clock_reply(probe: &MessageHeader, received_ns: i64) -> MessageHeader {
        MessageHeader { channel: CLOCK_REPLY_CHANNEL, source: received_ns as u64, ..*probe }
    }

    /// Whether this is a clock probe frame.
    pub fn is_clock_probe(&self) -> bool {
        self.channel == CLOCK_PROBE_CHANNEL
    }

    /// Whether this is a clock reply frame.
    pub fn is_clock_reply(&self) -> bool {
        self.channel == CLOCK_REPLY_CHANNEL
    }

    /// Whether the channel is a control channel this build knows.
    fn is_known_control(&self) -> bool {
        (CLOCK_REPLY_CHANNEL..=GOODBYE_CHANNEL).contains(&self.channel)
    }

    /// Whether this is the abort frame (its cause is in `seqno`).
    pub fn is_abort(&self) -> bool {
        self.channel == ABORT_CHANNEL
    }

    /// Whether this is the goodbye frame.
    pub fn is_goodbye(&self) -> bool {
        self.channel == GOODBYE_CHANNEL
    }

    /// Whether this is the heartbeat frame.
    pub fn is_heartbeat(&self) -> bool {
        self.channel == HEARTBEAT_CHANNEL
    }

    /// Whether the channel is reserved for control frames rather than data.
    pub fn is_control(&self) -> bool {
        self.channel >= FIRST_CONTROL_CHANNEL
    }

    /// The bytes the whole message (header and payload) occupies on the wire.
    ///
    /// Only meaningful for a validated header, whose length is at most [`MAX_MESSAGE_BYTES`].
    pub fn required_bytes(&self) -> usize {
        HEADER_BYTES.saturating_add(usize::try_from(self.length).unwrap_or(usize::MAX))
    }

    /// The fields in wire order.
    fn words(&self) -> [u64; 6] {
        [self.channel, self.source, self.target_lower, self.target_upper, self.length, self.seqno]
    }

    /// Encodes the header into the first [`HEADER_BYTES`] bytes of `out`.
    ///
    /// # Panics
    ///
    /// If `out` is shorter than [`HEADER_BYTES`].
    pub fn encode_into(&self, out: &mut [u8]) {
        assert!(
            out.len() >= HEADER_BYTES,
            "a message header needs {HEADER_BYTES} bytes, the buffer has {}",
            out.len()
        );
        for (chunk, word) in out.chunks_exact_mut(8).zip(self.words()) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
    }

    /// Appends the encoded header to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        for word in self.words() {
            out.extend_from_slice(&word.to_le_bytes());
        }
    }

    /// Reads a header from the start of `bytes`.
    ///
    /// Returns `Ok(None)` when fewer than [`HEADER_BYTES`] bytes are available.
    ///
    /// # Errors
    ///
    /// A header that no valid sender writes (see [`MessageHeader::validate`]).
    pub fn try_read(bytes: &[u8]) -> Result<Option<MessageHeader>, NetworkError> {
        let Some(bytes) = bytes.get(..HEADER_BYTES) else {
            return Ok(None);
        };
        let [channel, source, target_lower, target_upper, length, seqno] = read_words(bytes);
        let header = MessageHeader { channel, source, target_lower, target_upper, length, seqno };
        header.validate()?;
        Ok(Some(header))
    }

    /// Checks the header's own consistency: a non-empty target range, a length of at most
    /// [`MAX_MESSAGE_BYTES`], and, on a control channel, a known control frame (goodbye,
    /// heartbeat, abort, clock probe or clock reply) without payload.
    ///
    /// # Errors
    ///
    /// The first rule the header breaks.
    pub fn validate(&self) -> Result<(), NetworkError> {
        let reason = if self.target_lower >= self.target_upper {
            format!("empty target range [{}, {})", self.target_lower, self.target_upper)
        } else if self.length > MAX_MESSAGE_BYTES as u64 {
            format!("payload length {} exceeds the maximum of {MAX_MESSAGE_BYTES} bytes", self.length)
        } else if self.is_control() && !self.is_known_control() {
            format!(
                "unknown control channel {} (this build knows goodbye, heartbeat, abort, clock \
                 probe and clock reply)",
                self.channel
            )
        } else if self.is_control() && self.length != 0 {
            format!("control frame on channel {} with a payload of {} bytes", self.channel, self.length)
        } else {
            return Ok(());
        };
        Err(NetworkError::MalformedHeader { reason })
    }
}

/// The headers of the frames in `buffer`, in order, without validating them.
///
/// `buffer` must hold whole frames, one after the other, as this process framed them (a
/// [`super::ProcessSender`] ships its buffer only between two messages): the walk stops at the
/// first header whose frame does not fit in what is left, so a truncated frame would end it.
pub(crate) fn headers_in(buffer: &[u8]) -> impl Iterator<Item = MessageHeader> + '_ {
    let mut rest = buffer;
    std::iter::from_fn(move || {
        let [channel, source, target_lower, target_upper, length, seqno] =
            read_words(rest.get(..HEADER_BYTES)?);
        let header = MessageHeader { channel, source, target_lower, target_upper, length, seqno };
        rest = rest.get(header.required_bytes()..)?;
        Some(header)
    })
}

/// Reads `N` little-endian `u64`s from the start of `bytes`, which must hold `8 * N` bytes.
pub(crate) fn read_words<const N: usize>(bytes: &[u8]) -> [u64; N] {
    let mut words = [0u64; N];
    for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(8)) {
        let mut array = [0u8; 8];
        array.copy_from_slice(chunk);
        *word = u64::from_le_bytes(array);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn valid_header() -> impl Strategy<Value = MessageHeader> {
        (
            0..FIRST_CONTROL_CHANNEL,
            any::<u64>(),
            0..u64::MAX,
            1..=u64::MAX,
            0..=MAX_MESSAGE_BYTES as u64,
            any::<u64>(),
        )
            .prop_map(|(channel, source, a, b, length, seqno)| MessageHeader {
                channel,
                source,
                target_lower: a.min(b - 1),
                target_upper: b.max(a + 1),
                length,
                seqno,
            })
    }

    proptest! {
        #[test]
        fn round_trips_through_both_encoders(header in valid_header(), tail in any::<Vec<u8>>()) {
            let mut written = Vec::new();
            header.write_to(&mut written);
            let mut encoded = [0u8; HEADER_BYTES];
            header.encode_into(&mut encoded);
            prop_assert_eq!(&written[..], &encoded[..]);
            written.extend_from_slice(&tail);
            prop_assert_eq!(MessageHeader::try_read(&written), Ok(Some(header)));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
            match MessageHeader::try_read(&bytes) {
                Ok(None) => prop_assert!(bytes.len() < HEADER_BYTES),
                Ok(Some(header)) => {
                    prop_assert!(header.target_lower < header.target_upper);
                    prop_assert!(header.length <= MAX_MESSAGE_BYTES as u64);
                }
                Err(error) => {
                    let malformed = matches!(error, NetworkError::MalformedHeader { .. });
                    prop_assert!(malformed, "unexpected error {:?}", error);
                }
            }
        }

        #[test]
        fn short_prefixes_need_more_bytes(header in valid_header(), cut in 0..HEADER_BYTES) {
            let mut written = Vec::new();
            header.write_to(&mut written);
            prop_assert_eq!(MessageHeader::try_read(&written[..cut]), Ok(None));
        }
    }

    #[test]
    fn rejects_empty_ranges_huge_lengths_control_payloads_and_unknown_control_frames() {
        let base = MessageHeader { target_upper: 4, ..MessageHeader::default() };
        let reply = MessageHeader::clock_reply(&MessageHeader::clock_probe(5, 0, 8), 7);
        let cases = [
            (MessageHeader { target_lower: 4, ..base }, "empty target range [4, 4)"),
            (MessageHeader { length: u64::MAX, ..base }, "exceeds the maximum"),
            (MessageHeader { length: 1, ..MessageHeader::goodbye() }, "with a payload of 1 bytes"),
            (MessageHeader { length: 8, ..MessageHeader::heartbeat() }, "with a payload of 8 bytes"),
            (MessageHeader { length: 2, ..MessageHeader::abort(1) }, "with a payload of 2 bytes"),
            (MessageHeader { channel: FIRST_CONTROL_CHANNEL, ..base }, "unknown control channel"),
            (MessageHeader { channel: u64::MAX - 5, ..base }, "unknown control channel"),
            (MessageHeader { length: 8, ..MessageHeader::clock_probe(5, 0, 8) }, "with a payload of 8 bytes"),
            (MessageHeader { length: 1, ..reply }, "with a payload of 1 bytes"),
            (MessageHeader::clock_probe(5, 8, 8), "empty target range [8, 8)"),
        ];
        for (header, reason) in cases {
            let mut bytes = Vec::new();
            header.write_to(&mut bytes);
            let error = MessageHeader::try_read(&bytes).expect_err(reason);
            assert!(error.to_string().contains(reason), "{error}");
        }
        let known = [MessageHeader::goodbye(), MessageHeader::heartbeat(), MessageHeader::abort(2), reply];
        for control in known.into_iter().chain([MessageHeader::clock_probe(5, 7, 8)]) {
            let mut bytes = Vec::new();
            control.write_to(&mut bytes);
            let read = MessageHeader::try_read(&bytes).expect("every known control frame is valid");
            assert_eq!(read, Some(control));
            let kinds = [
                control.is_goodbye(),
                control.is_heartbeat(),
                control.is_abort(),
                control.is_clock_probe(),
                control.is_clock_reply(),
            ];
            assert!(control.is_control() && kinds.iter().filter(|&&kind| kind).count() == 1);
        }
        let last_data = MessageHeader { channel: FIRST_CONTROL_CHANNEL - 1, ..base };
        assert!(!last_data.is_control() && last_data.validate().is_ok());
    }

    #[test]
    fn the_walk_finds_every_header_of_a_buffer_of_whole_frames_and_stops_at_a_cut() {
        let base =
            MessageHeader { channel: 3, source: 1, target_lower: 4, target_upper: 6, ..Default::default() };
        let frames: Vec<MessageHeader> = [0u64, 1, 47, 48, 49, 1000]
            .into_iter()
            .enumerate()
            .map(|(seqno, length)| MessageHeader { length, seqno: seqno as u64, ..base })
            .collect();
        let mut buffer = Vec::new();
        for frame in &frames {
            frame.write_to(&mut buffer);
            // Payloads that look like headers must not be taken for frames.
            buffer.extend((0..frame.length).map(|i| (i % 7) as u8));
        }
        assert_eq!(headers_in(&buffer).collect::<Vec<_>>(), frames);
        assert_eq!(headers_in(&[]).count(), 0);
        // A frame cut anywhere (impossible for a shipped buffer) ends the walk before it.
        let last_start = buffer.len() - frames[5].required_bytes();
        for cut in [last_start + 1, last_start + HEADER_BYTES, buffer.len() - 1] {
            assert_eq!(headers_in(&buffer[..cut]).collect::<Vec<_>>(), frames[..5]);
        }
    }

    #[test]
    fn a_clock_reply_echoes_the_probe_and_carries_the_receive_time() {
        let probe = MessageHeader::clock_probe(1_764_000_000_000_000_001, 3, 8);
        let reply = MessageHeader::clock_reply(&probe, 1_764_000_000_000_000_002);
        assert!(probe.is_clock_probe() && reply.is_clock_reply());
        assert_eq!((reply.seqno, reply.target_lower, reply.target_upper), (probe.seqno, 3, 8));
        assert_eq!(reply.source as i64, 1_764_000_000_000_000_002);
        assert_eq!(reply.length, 0);
    }
}
