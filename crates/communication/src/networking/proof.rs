//! What the set-up handshake proves, and the session keys it derives.
//!
//! This module owns the cryptography of [`super::handshake`]: the transcript of a handshake
//! (a SHA-256 over both hellos exactly as sent, the dialler's first), the proof each side sends
//! (HMAC-SHA256 keyed by the cluster secret over a label naming the sender's side, dialler or
//! acceptor, and the transcript), its constant-time check, and the two keys of the sealed
//! records that follow the handshake ([`super::seal`]), derived with HKDF-SHA256 from the secret
//! and the transcript. It must not read or write sockets nor judge hellos.
//!
//! Why this shape: a proof covers both hellos, so both nonces (freshness), both process indices,
//! the cluster id, the counts and whether the session is sealed; and it names the side that
//! sends it, so a proof made by an acceptor is refused by an acceptor. An attacker who connects
//! to processes `a` and `b` and passes each one's hello and proof to the other (a relay) gets
//! from each an acceptor's proof, which the other, accepting too, refuses; and a dialler only
//! ever dials the address of the process it expects, whose index the transcript also fixes.

use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::seal::{SessionKeys, KEY_BYTES};
use super::NetworkError;

/// The size of a proof.
pub const PROOF_BYTES: usize = 32;

/// Separates the transcript hash from any other hash of the same bytes.
const TRANSCRIPT_LABEL: &[u8] = b"timely_py handshake transcript v5";
/// The label of a proof sent by the process that dialled the connection.
const DIALLER_LABEL: &[u8] = b"timely_py handshake proof v5, sent by the dialler";
/// The label of a proof sent by the process that accepted the connection.
const ACCEPTOR_LABEL: &[u8] = b"timely_py handshake proof v5, sent by the acceptor";
/// The HKDF info of the key for the bytes the dialler sends, and for those the acceptor sends.
const DIALLER_KEY_INFO: &[u8] = b"timely_py record key v5, dialler to acceptor";
const ACCEPTOR_KEY_INFO: &[u8] = b"timely_py record key v5, acceptor to dialler";

/// Which end of a TCP connection a process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The process that called `connect`.
    Dialler,
    /// The process that accepted the connection on its listener.
    Acceptor,
}

impl Side {
    /// The other end.
    pub fn other(self) -> Side {
        match self {
            Side::Dialler => Side::Acceptor,
            Side::Acceptor => Side::Dialler,
        }
    }

    fn proof_label(self) -> &'static [u8] {
        match self {
            Side::Dialler => DIALLER_LABEL,
            Side::Acceptor => ACCEPTOR_LABEL,
        }
    }

    fn key_info(self) -> &'static [u8] {
        match self {
            Side::Dialler => DIALLER_KEY_INFO,
            Side::Acceptor => ACCEPTOR_KEY_INFO,
        }
    }
}

/// The hash of both hellos of one handshake, the dialler's first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transcript([u8; 32]);

impl Transcript {
    /// The transcript of the hellos as sent by the dialler and by the acceptor.
    pub fn new(dialler_hello: &[u8], acceptor_hello: &[u8]) -> Transcript {
        let mut hash = Sha256::new();
        hash.update(TRANSCRIPT_LABEL);
        for hello in [dialler_hello, acceptor_hello] {
            hash.update((hello.len() as u64).to_le_bytes());
            hash.update(hello);
        }
        Transcript(hash.finalize().into())
    }
}

/// The proof the process on `side` sends, knowing `secret`.
///
/// # Errors
///
/// The secret is not a valid HMAC key (HMAC takes any length, so in practice never).
pub fn proof(secret: &[u8], side: Side, transcript: &Transcript) -> Result<[u8; PROOF_BYTES], NetworkError> {
    Ok(keyed(secret, side, transcript)?.finalize().into_bytes().into())
}

/// Checks, in constant time, a proof received from the process on `side`.
///
/// # Errors
///
/// [`NetworkError::AuthenticationFailed`] when it is not the proof of that side over this
/// transcript with this secret.
pub fn verify(
    secret: &[u8],
    side: Side,
    transcript: &Transcript,
    received: &[u8; PROOF_BYTES],
) -> Result<(), NetworkError> {
    keyed(secret, side, transcript)?.verify_slice(received).map_err(|_| NetworkError::AuthenticationFailed)
}

/// The keys of the sealed records of a connection, for the process on `side`: it seals with the
/// key of its own side and opens with the other's.
pub fn session_keys(secret: &[u8], side: Side, transcript: &Transcript) -> SessionKeys {
    let derive = Hkdf::<Sha256>::new(Some(&transcript.0), secret);
    let key = |of: Side| {
        let mut key = [0u8; KEY_BYTES];
        // 32 bytes is far below HKDF-SHA256's limit of 8160, so expansion cannot fail.
        derive.expand(of.key_info(), &mut key).expect("HKDF-SHA256 yields 32 bytes");
        key
    };
    SessionKeys::new(key(side), key(side.other()))
}

/// The MAC of a proof from `side`, not yet finalized.
fn keyed(secret: &[u8], side: Side, transcript: &Transcript) -> Result<Hmac<Sha256>, NetworkError> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).map_err(|error| {
        NetworkError::InvalidArguments(format!("the cluster secret is not a valid key: {error}"))
    })?;
    mac.update(side.proof_label());
    mac.update(&transcript.0);
    Ok(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"s3cret";

    #[test]
    fn a_proof_verifies_only_for_its_side_its_transcript_and_its_secret() {
        let transcript = Transcript::new(b"dialler hello", b"acceptor hello");
        let from_dialler = proof(SECRET, Side::Dialler, &transcript).expect("a proof");
        assert_eq!(verify(SECRET, Side::Dialler, &transcript, &from_dialler), Ok(()));
        // An acceptor's check of an acceptor's proof (what a relay would present) fails.
        assert_eq!(
            verify(SECRET, Side::Acceptor, &transcript, &from_dialler),
            Err(NetworkError::AuthenticationFailed)
        );
        let swapped = Transcript::new(b"acceptor hello", b"dialler hello");
        assert_eq!(
            verify(SECRET, Side::Dialler, &swapped, &from_dialler),
            Err(NetworkError::AuthenticationFailed)
        );
        assert_eq!(
            verify(b"guess", Side::Dialler, &transcript, &from_dialler),
            Err(NetworkError::AuthenticationFailed)
        );
    }

    #[test]
    fn the_transcript_separates_the_hellos() {
        // Moving a byte from one hello to the other changes the transcript.
        assert_ne!(Transcript::new(b"ab", b"c"), Transcript::new(b"a", b"bc"));
    }

    #[test]
    fn the_two_sides_derive_matching_keys_that_differ_by_direction() {
        let transcript = Transcript::new(b"d", b"a");
        let dialler = session_keys(SECRET, Side::Dialler, &transcript);
        let acceptor = session_keys(SECRET, Side::Acceptor, &transcript);
        assert_eq!(dialler.sending(), acceptor.receiving());
        assert_eq!(dialler.receiving(), acceptor.sending());
        assert_ne!(dialler.sending(), dialler.receiving());
        let other = session_keys(SECRET, Side::Dialler, &Transcript::new(b"d", b"b"));
        assert_ne!(other.sending(), dialler.sending());
    }
}
