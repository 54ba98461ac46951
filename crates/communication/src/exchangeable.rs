//! Elements that can travel between processes.
//!
//! This module owns the [`Exchangeable`] trait, which every channel element implements so that
//! any allocator (thread, process or cluster) can carry it, and its default implementation
//! through bincode for every serde type. Decoding reads bytes that arrived from another
//! process: it must never panic or allocate more than the input justifies, and reports
//! malformed input as an error. It must not know which types travel.

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
    /// Bytes that are not such an encoding; the message says what is wrong.
    fn decode(bytes: &[u8]) -> Result<Self, String>;
}

impl<T: Serialize + DeserializeOwned + Send + 'static> Exchangeable for T {
    fn encode(&self, out: &mut Vec<u8>) {
        bincode_encode(self, out);
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        bincode_decode(bytes)
    }
}

/// Appends the bincode encoding of `value` to `out`.
///
/// # Panics
///
/// If `value`'s `Serialize` implementation fails (serde types in memory encode without error).
pub fn bincode_encode<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    bincode::serialize_into(out, value).unwrap_or_else(|error| {
        panic!(
            "cannot encode a {}: {error}",
            std::any::type_name::<T>()
        )
    })
}

/// Reads a value encoded by [`bincode_encode`] from all of `bytes`.
///
/// Lengths inside `bytes` are checked against its size before anything is allocated, and
/// trailing bytes are an error.
///
/// # Errors
///
/// Bytes that do not hold exactly one encoded `T`.
pub fn bincode_decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(bytes.len() as u64)
        .reject_trailing_bytes()
        .deserialize(bytes)
        .map_err(|error| {
            format!(
                "malformed {} ({} bytes): {error}",
                std::any::type_name::<T>(),
                bytes.len()
            )
        })
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
        assert!(error.contains("malformed"), "{error}");
    }
}
