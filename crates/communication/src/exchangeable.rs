//! Elements that can travel between processes.
//!
//! This module owns the [`Exchangeable`] trait, which every channel element implements so that
//! any allocator (thread, process or cluster) can carry it, and its default implementation
//! through bincode for every serde type. Decoding reads bytes that arrived from another
//! process: it must never panic or allocate more than the input justifies, and reports
//! malformed input as a [`DecodeError`]. It must not know which types travel.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// An element that a cluster allocator can write into bytes and read back in another process.
///
/// Every serde type is `Exchangeable` through bincode. Types that need another encoding (a
/// batch of Python objects, say) implement it themselves, which Rust allows for any type
/// that does not implement serde's traits.
pub trait Exchangeable: Send + Sized + 'static {
    /// Appends the element's encoding to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// Reads an element from exactly the bytes `encode` wrote.
    ///
    /// # Errors
    ///
    /// Bytes that are not such an encoding; the error says what is wrong.
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError>;
    /// Like [`Exchangeable::decode`], into `target`, an element no longer used, whose buffers
    /// an implementation may reuse so that receiving allocates nothing. On error `target` may
    /// be left in any state.
    ///
    /// # Errors
    ///
    /// As [`Exchangeable::decode`].
    fn decode_into(bytes: &[u8], target: &mut Self) -> Result<(), DecodeError> {
        *target = Self::decode(bytes)?;
        Ok(())
    }
    /// Checks an element decoded from a message of worker `worker` (a global index, which the
    /// transport has checked belongs to the process at the other end of the connection) against
    /// what the element itself says of its sender. An element that names no sender has nothing
    /// to check.
    ///
    /// # Errors
    ///
    /// The element claims another sender ([`DecodeError::WrongSender`]).
    fn check_sender(&self, worker: usize) -> Result<(), DecodeError> {
        let _ = worker;
        Ok(())
    }
}

impl<T: Serialize + DeserializeOwned + Send + 'static> Exchangeable for T {
    fn encode(&self, out: &mut Vec<u8>) {
        bincode_encode(self, out);
    }

    fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        bincode_decode(bytes)
    }
}

/// Why bytes that arrived from another process are not an element of the type expected. Every
/// variant ends the run naming the sender's process; the variants say what kind of fault it
/// was, for tests and for the message.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The bytes cannot be read as a `what`: cut short, a length past the end, trailing
    /// bytes, an unknown variant.
    #[error("malformed {what}: {reason}")]
    Malformed { what: &'static str, reason: String },
    /// The bytes end before a part that the format requires.
    #[error("{what} shorter than its {part}")]
    Short { what: &'static str, part: &'static str },
    /// A worker index that does not fit in this machine's `usize`.
    #[error("{what} naming worker {index}")]
    WorkerIndex { what: &'static str, index: u64 },
    /// An element that names a sender other than the worker whose connection carried it.
    #[error("{what} that claims to come from worker {claimed}")]
    WrongSender { what: &'static str, claimed: usize },
    /// Bytes that read, but break a rule of their own format (a key not in its canonical
    /// form, say): the error of the crate that owns the format.
    #[error(transparent)]
    Format(Box<dyn std::error::Error + Send + Sync>),
}

/// Appends the bincode encoding of `value` to `out`.
///
/// # Panics
///
/// If `value`'s `Serialize` implementation fails (serde types in memory encode without error).
pub fn bincode_encode<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    bincode::serialize_into(out, value)
        .unwrap_or_else(|error| panic!("cannot encode a {}: {error}", std::any::type_name::<T>()))
}

/// The bincode options of [`bincode_decode`]: lengths checked against the input's size,
/// trailing bytes rejected.
fn decoding_options(bytes: &[u8]) -> impl bincode::Options {
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(bytes.len() as u64)
        .reject_trailing_bytes()
}

/// What went wrong decoding a `T` from `bytes`.
fn malformed<T>(bytes: &[u8], error: bincode::Error) -> DecodeError {
    DecodeError::Malformed {
        what: std::any::type_name::<T>(),
        reason: format!("{error} ({} bytes)", bytes.len()),
    }
}

/// Appends the elements of a sequence encoded by [`bincode_encode`] (a slice or a `Vec`) to
/// `into`, reusing its capacity. On error, `into` may hold some of the elements.
///
/// # Errors
///
/// Bytes that do not hold exactly one encoded sequence of `T`.
pub fn bincode_decode_extend<T: DeserializeOwned>(
    bytes: &[u8],
    into: &mut Vec<T>,
) -> Result<(), DecodeError> {
    use bincode::Options;
    decoding_options(bytes)
        .deserialize_seed(Extend(into), bytes)
        .map_err(|error| malformed::<Vec<T>>(bytes, error))
}

/// Deserializes a sequence by pushing its elements onto a `Vec`.
struct Extend<'a, T>(&'a mut Vec<T>);

impl<'de, T: serde::Deserialize<'de>> serde::de::DeserializeSeed<'de> for Extend<'_, T> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Extend<'_, T> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a sequence")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut sequence: A) -> Result<(), A::Error> {
        while let Some(element) = sequence.next_element()? {
            self.0.push(element);
        }
        Ok(())
    }
}

/// Reads a value encoded by [`bincode_encode`] from all of `bytes`.
///
/// Lengths inside `bytes` are checked against its size before anything is allocated, and
/// trailing bytes are an error.
///
/// # Errors
///
/// Bytes that do not hold exactly one encoded `T`.
pub fn bincode_decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    use bincode::Options;
    decoding_options(bytes).deserialize(bytes).map_err(|error| malformed::<T>(bytes, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Exchangeable + PartialEq + std::fmt::Debug>(value: T) {
        let mut bytes = Vec::new();
        value.encode(&mut bytes);
        assert_eq!(T::decode(&bytes).unwrap(), value);
    }

    #[test]
    fn serde_types_round_trip() {
        round_trip(7u64);
        round_trip((3usize, String::from("timely")));
        round_trip(vec![Some(1i64), None, Some(-5)]);
    }

    #[test]
    fn sequences_extend_a_vector() {
        let mut bytes = Vec::new();
        bincode_encode(&[4u64, 5, 6][..], &mut bytes);
        let mut into = Vec::with_capacity(16);
        into.push(3u64);
        bincode_decode_extend(&bytes, &mut into).unwrap();
        assert_eq!((into.as_slice(), into.capacity()), (&[3, 4, 5, 6][..], 16));
        assert!(bincode_decode_extend::<u64>(&bytes[..bytes.len() - 1], &mut into).is_err());
        assert!(bincode_decode_extend::<u64>(&u64::MAX.to_le_bytes(), &mut Vec::new()).is_err());
    }

    #[test]
    fn malformed_bytes_are_errors() {
        let mut bytes = Vec::new();
        vec![1u64, 2, 3].encode(&mut bytes);
        for cut in 0..bytes.len() {
            assert!(Vec::<u64>::decode(&bytes[..cut]).is_err(), "prefix of {cut} bytes");
        }
        bytes.push(0);
        assert!(Vec::<u64>::decode(&bytes).is_err(), "trailing byte");
        // A length claiming far more elements than the input holds is refused, not allocated.
        let huge = u64::MAX.to_le_bytes();
        let error = Vec::<u64>::decode(&huge).unwrap_err();
        assert!(matches!(error, DecodeError::Malformed { .. }), "{error}");
    }
}
