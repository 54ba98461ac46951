//! Sealed records: authenticated encryption of what a connection carries after its handshake.
//!
//! This module owns the record format, the keys of a session ([`SessionKeys`], derived by
//! [`super::proof::session_keys`]), [`Sealer`], which turns plaintext into records, and
//! [`Opener`], which checks a record's sequence number and tag and decrypts it in place. It
//! must not touch sockets ([`super::peer_stream`] applies it to a connection) nor know what the
//! plaintext holds (frames, [`super::framing`]).
//!
//! # Record format (integers little-endian)
//!
//! | bytes | field |
//! |---:|---|
//! | 4 | plaintext length, 1 to [`MAX_RECORD_BYTES`] |
//! | 8 | sequence number: 0 for the first record of a direction, then 1, 2, ... |
//! | length | the plaintext encrypted with AES-256-GCM |
//! | 16 | the GCM tag over the ciphertext, with the 12 header bytes as associated data |
//!
//! Each direction has its own key, so the nonce (4 zero bytes, then the sequence number) is
//! never used twice with one key. The receiver knows which number is due: a record with a later
//! one means records were dropped (a gap), an earlier one that a record was replayed, and a tag
//! that does not verify that the record was forged or corrupted. Each is a [`Violation`], which
//! ends the connection. Records do not follow frame boundaries: the frames of the plaintext are
//! a byte stream, cut into records of at most [`MAX_RECORD_BYTES`].

use std::fmt;

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Key, Nonce, Tag};

/// The size of a record key (AES-256).
pub const KEY_BYTES: usize = 32;

/// The bytes before a record's ciphertext: its length and sequence number.
pub const RECORD_HEADER_BYTES: usize = 12;

/// The bytes of the tag after a record's ciphertext.
pub const TAG_BYTES: usize = 16;

/// The most plaintext one record carries (64 KiB): a receiver holds at most this much of a
/// record it cannot check yet, whatever a header claims.
pub const MAX_RECORD_BYTES: usize = 1 << 16;

/// The bytes a record adds to its plaintext.
pub const RECORD_OVERHEAD_BYTES: usize = RECORD_HEADER_BYTES + TAG_BYTES;

/// The two keys of one connection's sealed records, seen from one end.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKeys {
    sending: [u8; KEY_BYTES],
    receiving: [u8; KEY_BYTES],
}

impl SessionKeys {
    /// Keys that seal with `sending` and open with `receiving`.
    pub fn new(sending: [u8; KEY_BYTES], receiving: [u8; KEY_BYTES]) -> SessionKeys {
        SessionKeys { sending, receiving }
    }

    /// The key of the records this end sends.
    pub fn sending(&self) -> &[u8; KEY_BYTES] {
        &self.sending
    }

    /// The key of the records this end receives.
    pub fn receiving(&self) -> &[u8; KEY_BYTES] {
        &self.receiving
    }
}

impl fmt::Debug for SessionKeys {
    /// Never shows the keys.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionKeys(<hidden>)")
    }
}

/// Why a received record was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// The header announces no plaintext, or more than [`MAX_RECORD_BYTES`].
    Length {
        /// The announced plaintext length.
        length: u32,
    },
    /// The record's number is later than the one due: records were dropped.
    Gap {
        /// The number due.
        expected: u64,
        /// The number the record carries.
        found: u64,
    },
    /// The record's number was received already.
    Replay {
        /// The number due.
        expected: u64,
        /// The number the record carries.
        found: u64,
    },
    /// The tag does not verify: the record was forged or corrupted.
    Forged {
        /// The record's number.
        seqno: u64,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Length { length } => write!(
                f,
                "a sealed record announces {length} bytes of plaintext (1 to {MAX_RECORD_BYTES} are \
                 allowed)"
            ),
            Violation::Gap { expected, found } => write!(
                f,
                "sealed record {found} arrived where record {expected} was due: records were \
                 dropped on the way"
            ),
            Violation::Replay { expected, found } => {
                write!(f, "sealed record {found} arrived again where record {expected} was due: a replay")
            }
            Violation::Forged { seqno } => {
                write!(f, "sealed record {seqno} failed authentication: it was forged or corrupted")
            }
        }
    }
}

impl std::error::Error for Violation {}

/// Seals the records of one direction of a connection.
pub struct Sealer {
    cipher: Aes256Gcm,
    next: u64,
}

impl Sealer {
    /// A sealer whose first record is number 0.
    pub fn new(key: &[u8; KEY_BYTES]) -> Sealer {
        Sealer::resume(key, 0)
    }

    /// A sealer whose first record is number `next` (records before it were sent by another
    /// sealer: set-up's keepalives, [`super::connect`]).
    pub fn resume(key: &[u8; KEY_BYTES], next: u64) -> Sealer {
        Sealer { cipher: Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key)), next }
    }

    /// The number of the next record.
    pub fn next_record(&self) -> u64 {
        self.next
    }

    /// Appends `plaintext` to `out` as records of at most [`MAX_RECORD_BYTES`] (nothing for an
    /// empty `plaintext`).
    ///
    /// # Errors
    ///
    /// The cipher refuses (it cannot for records this short).
    pub fn seal_into(&mut self, plaintext: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
        for chunk in plaintext.chunks(MAX_RECORD_BYTES) {
            let start = out.len();
            out.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
            out.extend_from_slice(&self.next.to_le_bytes());
            out.extend_from_slice(chunk);
            let (header, body) = out[start..].split_at_mut(RECORD_HEADER_BYTES);
            let tag = self
                .cipher
                .encrypt_in_place_detached(&nonce(self.next), header, body)
                .map_err(|_| std::io::Error::other("the record cipher refused a record"))?;
            out.extend_from_slice(&tag);
            self.next += 1;
        }
        Ok(())
    }
}

/// Opens the records of one direction of a connection, in order.
pub struct Opener {
    cipher: Aes256Gcm,
    next: u64,
}

impl Opener {
    /// An opener that expects record number 0 first.
    pub fn new(key: &[u8; KEY_BYTES]) -> Opener {
        Opener { cipher: Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key)), next: 0 }
    }

    /// The size of the whole record whose header starts `bytes`, or `None` when fewer than
    /// [`RECORD_HEADER_BYTES`] bytes are there.
    ///
    /// # Errors
    ///
    /// [`Violation::Length`] for a length no sender writes, before any more bytes are awaited.
    pub fn record_bytes(bytes: &[u8]) -> Result<Option<usize>, Violation> {
        let Some(length) = bytes.get(..4) else { return Ok(None) };
        let length = u32::from_le_bytes([length[0], length[1], length[2], length[3]]);
        if length == 0 || length as usize > MAX_RECORD_BYTES {
            return Err(Violation::Length { length });
        }
        Ok(Some(length as usize + RECORD_OVERHEAD_BYTES))
    }

    /// Checks the whole record `record` (as sized by [`Opener::record_bytes`]) and decrypts it
    /// in place; returns where its plaintext lies in `record`.
    ///
    /// # Errors
    ///
    /// The [`Violation`] the record commits; the opener is then of no further use (the
    /// connection must end).
    pub fn open(&mut self, record: &mut [u8]) -> Result<std::ops::Range<usize>, Violation> {
        let total = Opener::record_bytes(record)?.filter(|&total| total == record.len());
        let Some(total) = total else {
            // Only a caller that sized the record wrongly gets here; refuse rather than panic.
            return Err(Violation::Forged { seqno: self.next });
        };
        let mut seqno = [0u8; 8];
        seqno.copy_from_slice(&record[4..RECORD_HEADER_BYTES]);
        let found = u64::from_le_bytes(seqno);
        let expected = self.next;
        if found > expected {
            return Err(Violation::Gap { expected, found });
        }
        if found < expected {
            return Err(Violation::Replay { expected, found });
        }
        let (header, rest) = record.split_at_mut(RECORD_HEADER_BYTES);
        let (body, tag) = rest.split_at_mut(total - RECORD_OVERHEAD_BYTES);
        self.cipher
            .decrypt_in_place_detached(&nonce(expected), header, body, Tag::from_slice(tag))
            .map_err(|_| Violation::Forged { seqno: expected })?;
        self.next += 1;
        Ok(RECORD_HEADER_BYTES..total - TAG_BYTES)
    }
}

/// The nonce of record `seqno`: 4 zero bytes, then the number.
fn nonce(seqno: u64) -> Nonce<aes_gcm::aead::consts::U12> {
    let mut bytes = [0u8; 12];
    bytes[4..].copy_from_slice(&seqno.to_le_bytes());
    Nonce::clone_from_slice(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEY: [u8; KEY_BYTES] = [7; KEY_BYTES];

    /// Cuts `sealed` into its records.
    fn records(sealed: &[u8]) -> Vec<Vec<u8>> {
        let mut rest = sealed;
        let mut out = Vec::new();
        while !rest.is_empty() {
            let size = Opener::record_bytes(rest).expect("a valid length").expect("a header");
            out.push(rest[..size].to_vec());
            rest = &rest[size..];
        }
        out
    }

    fn sealed(messages: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut sealer = Sealer::new(&KEY);
        let mut out = Vec::new();
        for message in messages {
            sealer.seal_into(message, &mut out).expect("sealing");
        }
        records(&out)
    }

    #[test]
    fn records_open_in_order_and_large_plaintext_is_cut() {
        let large = vec![5u8; 2 * MAX_RECORD_BYTES + 3];
        let mut records = sealed(&[b"first", &large, b"last"]);
        assert_eq!(records.len(), 5);
        let mut opener = Opener::new(&KEY);
        let mut plain = Vec::new();
        for record in &mut records {
            let range = opener.open(record).expect("an intact record");
            plain.extend_from_slice(&record[range]);
        }
        let mut expected = b"first".to_vec();
        expected.extend_from_slice(&large);
        expected.extend_from_slice(b"last");
        assert_eq!(plain, expected);
    }

    #[test]
    fn a_flipped_byte_a_replay_and_a_drop_are_told_apart() {
        let records = sealed(&[b"zero", b"one", b"two"]);
        for at in 0..records[1].len() {
            if (0..4).contains(&at) {
                continue; // the length: refused or mis-sized, covered below
            }
            let mut opener = Opener::new(&KEY);
            opener.open(&mut records[0].clone()).expect("record 0");
            let mut flipped = records[1].clone();
            flipped[at] ^= 0x20;
            let error = opener.open(&mut flipped).expect_err("a flipped byte");
            let expected = if (4..12).contains(&at) {
                // A changed sequence number is seen as a gap or a replay, before the tag.
                assert!(matches!(error, Violation::Gap { .. } | Violation::Replay { .. }), "{error}");
                continue;
            } else {
                Violation::Forged { seqno: 1 }
            };
            assert_eq!(error, expected, "byte {at}");
        }
        let mut opener = Opener::new(&KEY);
        opener.open(&mut records[0].clone()).expect("record 0");
        assert_eq!(opener.open(&mut records[0].clone()), Err(Violation::Replay { expected: 1, found: 0 }));
        assert_eq!(opener.open(&mut records[2].clone()), Err(Violation::Gap { expected: 1, found: 2 }));
        let text = Violation::Forged { seqno: 1 }.to_string();
        assert!(text.contains("forged or corrupted"), "{text}");
    }

    #[test]
    fn another_key_does_not_open() {
        let mut record = sealed(&[b"hello"]).remove(0);
        assert_eq!(Opener::new(&[8; KEY_BYTES]).open(&mut record), Err(Violation::Forged { seqno: 0 }));
    }

    #[test]
    fn lengths_are_checked_before_the_body_is_awaited() {
        assert_eq!(Opener::record_bytes(&[1, 0, 0]), Ok(None));
        assert_eq!(Opener::record_bytes(&[0; 4]), Err(Violation::Length { length: 0 }));
        let huge = (MAX_RECORD_BYTES as u32 + 1).to_le_bytes();
        assert!(matches!(Opener::record_bytes(&huge), Err(Violation::Length { .. })));
        assert_eq!(Opener::record_bytes(&3u32.to_le_bytes()), Ok(Some(3 + RECORD_OVERHEAD_BYTES)));
    }

    proptest! {
        #[test]
        fn arbitrary_records_never_panic_and_never_open(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut record = bytes;
            let mut opener = Opener::new(&KEY);
            match Opener::record_bytes(&record) {
                Ok(Some(size)) if size == record.len() => prop_assert!(opener.open(&mut record).is_err()),
                _ => prop_assert!(opener.open(&mut record).is_err()),
            }
        }
    }
}
