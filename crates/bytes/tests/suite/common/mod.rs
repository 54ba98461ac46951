//! Helpers shared by the integration tests: a length-prefixed framing, a receive loop over a
//! simulated socket, and a tiny deterministic random number generator.

use timely_bytes::{Bytes, BytesSlab, SlabStats};

/// Size of the little-endian `u32` length that precedes every message.
pub const HEADER: usize = 4;

/// Frames `messages` as one byte stream: `len as u32 (LE)` then the body, for each.
pub fn encode<M: AsRef<[u8]>>(messages: &[M]) -> Vec<u8> {
    let mut stream = Vec::new();
    for message in messages {
        let body = message.as_ref();
        let len = u32::try_from(body.len()).expect("test messages are small");
        stream.extend_from_slice(&len.to_le_bytes());
        stream.extend_from_slice(body);
    }
    stream
}

/// A message as the receive loop hands it over, with what the slab did while it was the
/// message at the front of `valid()`.
pub struct Received {
    pub body: Bytes,
    /// Bytes the slab copied while this message was at the front.
    pub copied: usize,
    /// Buffer switches (new or reused buffers) while this message was at the front.
    pub switches: usize,
}

fn switches(stats: &SlabStats) -> usize {
    stats.buffers_allocated + stats.buffers_reused
}

/// Feeds `stream` to `slab` the way a network thread would, in reads of at most `chunk()`
/// bytes (`chunk()` must return at least 1), and passes every message to `deliver` as soon as
/// it is complete. The protocol is the one `BytesSlab` documents: extract every complete
/// message, then ask for the bytes the incomplete one still lacks (or for a header).
pub fn receive_stream(
    slab: &mut BytesSlab,
    stream: &[u8],
    mut chunk: impl FnMut() -> usize,
    mut deliver: impl FnMut(Received),
) {
    let mut remaining = stream;
    let mut at_front = slab.stats();
    loop {
        while let Some(len) = message_len(slab.valid()) {
            if slab.valid().len() < HEADER + len {
                break;
            }
            let _header = slab.extract(HEADER);
            let body = slab.extract(len);
            let now = slab.stats();
            deliver(Received {
                body,
                copied: now.bytes_copied - at_front.bytes_copied,
                switches: switches(&now) - switches(&at_front),
            });
            at_front = now;
        }
        let missing = match message_len(slab.valid()) {
            Some(len) => HEADER + len - slab.valid().len(),
            None => HEADER - slab.valid().len(),
        };
        slab.ensure_capacity(missing);
        if remaining.is_empty() {
            assert!(slab.valid().is_empty(), "stream ended inside a message");
            return;
        }
        // A socket read: some bytes, at most what fits.
        let empty = slab.empty();
        let n = chunk().max(1).min(empty.len()).min(remaining.len());
        empty[..n].copy_from_slice(&remaining[..n]);
        slab.make_valid(n);
        remaining = &remaining[n..];
    }
}

fn message_len(valid: &[u8]) -> Option<usize> {
    let header: [u8; HEADER] = valid.get(..HEADER)?.try_into().unwrap();
    Some(u32::from_le_bytes(header) as usize)
}

/// xorshift64*: deterministic pseudo-random numbers without a dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..bound` (`bound > 0`).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

/// `len` bytes that identify message `seq` and the position in it.
pub fn message(seq: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (seq.wrapping_mul(31) ^ i) as u8).collect()
}
