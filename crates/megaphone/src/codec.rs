//! How the operator pair's records and bin state cross processes.
//!
//! Three wire types, each `ExchangeData` by composing the `ExchangeData` encodings of the
//! user's types (the trait the engine's exchange uses, so whatever a user's record, key or
//! state type already uses across processes is used here too):
//! - [`Routed`]: a record on its way from F to S, with the worker F chose;
//! - [`BinState`]: the state and pending notifications of one bin on its way to a new owner;
//! - [`Side`]: a record of either input of a keyed binary operator.
//!
//! A batch is a sequence of length-prefixed sections (`u64` little endian); decoding checks
//! every length against the bytes present and returns an error, never panics, on bytes that
//! are not such an encoding ([`CodecError`]). This module owns the byte layout only.

use timely_engine::dataflow::{DecodeError, ExchangeData};

/// Why bytes are not a batch of this module's wire types.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// A length or value past the bytes present.
    #[error("{expected} bytes expected, {left} left")]
    Short { expected: usize, left: usize },
    /// A length or index that does not fit in a `usize`.
    #[error("{0} does not fit a usize")]
    TooLarge(u64),
    /// A section of `u64`s whose length is not a multiple of 8.
    #[error("{0} bytes are not a list of u64")]
    NotU64s(usize),
    /// Bytes after the last section.
    #[error("{0} bytes left over")]
    LeftOver(usize),
    /// A bin whose keys and states, or notification times and keys, differ in number.
    #[error("bin {0}: keys, states and notifications of different lengths")]
    Lengths(usize),
    /// A keyed binary operator's record tagged neither 0 (first input) nor 1 (second).
    #[error("a side tag other than 0 and 1: {0}")]
    Tag(u8),
    /// Tags and records of a keyed binary operator's batch that differ in number.
    #[error("the side tags and the records of a batch differ in number")]
    TagCount,
}

impl From<CodecError> for DecodeError {
    fn from(error: CodecError) -> Self {
        DecodeError::Format(Box::new(error))
    }
}

/// A record routed by F to worker `target`.
///
/// `target` is not sent across processes: a record that arrived through the exchange is at its
/// target, and decoding sets the field to `usize::MAX`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routed<D> {
    /// The worker the record goes to.
    pub target: usize,
    /// The record.
    pub record: D,
}

impl<D: ExchangeData> ExchangeData for Routed<D> {
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>) {
        let records: Vec<D> = batch.iter().map(|routed| routed.record.clone()).collect();
        D::encode_batch(&records, out);
    }

    fn decode_batch(bytes: &[u8]) -> Result<Vec<Self>, DecodeError> {
        let records = D::decode_batch(bytes)?;
        Ok(records.into_iter().map(|record| Routed { target: usize::MAX, record }).collect())
    }
}

/// The state of bin `bin` and its pending per-key notifications, shipped to worker `target`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BinState<K, S> {
    /// The worker that receives the bin.
    pub target: usize,
    /// The bin.
    pub bin: usize,
    /// The keys that have state, and their states (same length).
    pub keys: Vec<K>,
    /// The state of each key of `keys`.
    pub states: Vec<S>,
    /// Pending notifications: times, and the key of each (same length).
    pub notify_times: Vec<u64>,
    /// The key of each notification of `notify_times`.
    pub notify_keys: Vec<K>,
}

impl<K: ExchangeData, S: ExchangeData> ExchangeData for BinState<K, S> {
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>) {
        put_u64(out, batch.len() as u64);
        for bin in batch {
            put_u64(out, bin.target as u64);
            put_u64(out, bin.bin as u64);
            put_section(out, |out| K::encode_batch(&bin.keys, out));
            put_section(out, |out| S::encode_batch(&bin.states, out));
            put_section(out, |out| bin.notify_times.iter().for_each(|&time| put_u64(out, time)));
            put_section(out, |out| K::encode_batch(&bin.notify_keys, out));
        }
    }

    fn decode_batch(bytes: &[u8]) -> Result<Vec<Self>, DecodeError> {
        let mut reader = Reader::new(bytes);
        let count = reader.u64()?;
        let mut batch = Vec::new();
        for _ in 0..count {
            let target = reader.usize()?;
            let bin = reader.usize()?;
            let keys = K::decode_batch(reader.section()?)?;
            let states = S::decode_batch(reader.section()?)?;
            let notify_times = Reader::new(reader.section()?).u64s()?;
            let notify_keys = K::decode_batch(reader.section()?)?;
            if keys.len() != states.len() || notify_times.len() != notify_keys.len() {
                return Err(CodecError::Lengths(bin).into());
            }
            batch.push(BinState { target, bin, keys, states, notify_times, notify_keys });
        }
        reader.finish()?;
        Ok(batch)
    }
}

/// A record of the first or of the second input of a keyed binary operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Side<A, B> {
    /// From the first input.
    First(A),
    /// From the second input.
    Second(B),
}

impl<A: ExchangeData, B: ExchangeData> ExchangeData for Side<A, B> {
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>) {
        let mut tags = Vec::with_capacity(batch.len());
        let (mut firsts, mut seconds) = (Vec::new(), Vec::new());
        for record in batch {
            match record {
                Side::First(a) => {
                    tags.push(0u8);
                    firsts.push(a.clone());
                }
                Side::Second(b) => {
                    tags.push(1u8);
                    seconds.push(b.clone());
                }
            }
        }
        put_section(out, |out| out.extend_from_slice(&tags));
        put_section(out, |out| A::encode_batch(&firsts, out));
        put_section(out, |out| B::encode_batch(&seconds, out));
    }

    fn decode_batch(bytes: &[u8]) -> Result<Vec<Self>, DecodeError> {
        let mut reader = Reader::new(bytes);
        let tags = reader.section()?;
        let mut firsts = A::decode_batch(reader.section()?)?.into_iter();
        let mut seconds = B::decode_batch(reader.section()?)?.into_iter();
        reader.finish()?;
        let batch = tags
            .iter()
            .map(|tag| match tag {
                0 => firsts.next().map(Side::First).ok_or(CodecError::TagCount),
                1 => seconds.next().map(Side::Second).ok_or(CodecError::TagCount),
                &other => Err(CodecError::Tag(other)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if firsts.next().is_some() || seconds.next().is_some() {
            return Err(CodecError::TagCount.into());
        }
        Ok(batch)
    }
}

fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// Appends what `write` writes, preceded by its length.
fn put_section(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    put_u64(out, 0);
    write(out);
    let length = (out.len() - start - 8) as u64;
    out[start..start + 8].copy_from_slice(&length.to_le_bytes());
}

/// Reads what `put_u64` and `put_section` wrote, checking every length.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes }
    }

    fn take(&mut self, length: usize) -> Result<&'a [u8], CodecError> {
        if length > self.bytes.len() {
            return Err(CodecError::Short { expected: length, left: self.bytes.len() });
        }
        let (taken, rest) = self.bytes.split_at(length);
        self.bytes = rest;
        Ok(taken)
    }

    fn u64(&mut self) -> Result<u64, CodecError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("eight bytes")))
    }

    fn usize(&mut self) -> Result<usize, CodecError> {
        let value = self.u64()?;
        usize::try_from(value).map_err(|_| CodecError::TooLarge(value))
    }

    fn section(&mut self) -> Result<&'a [u8], CodecError> {
        let length = self.usize()?;
        self.take(length)
    }

    /// Every remaining `u64`.
    fn u64s(mut self) -> Result<Vec<u64>, CodecError> {
        if !self.bytes.len().is_multiple_of(8) {
            return Err(CodecError::NotU64s(self.bytes.len()));
        }
        let mut values = Vec::with_capacity(self.bytes.len() / 8);
        while !self.bytes.is_empty() {
            values.push(self.u64()?);
        }
        Ok(values)
    }

    fn finish(self) -> Result<(), CodecError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(CodecError::LeftOver(self.bytes.len()))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::codec::{put_section, put_u64, BinState, CodecError, Routed, Side};
    use proptest::prelude::*;
    use timely_engine::dataflow::{DecodeError, ExchangeData};

    fn round_trip<D: ExchangeData + PartialEq + std::fmt::Debug>(batch: Vec<D>) {
        let mut bytes = Vec::new();
        D::encode_batch(&batch, &mut bytes);
        assert_eq!(D::decode_batch(&bytes).expect("a batch"), batch);
        // Every strict prefix is rejected with an error, never a panic.
        for cut in 0..bytes.len() {
            let _ = D::decode_batch(&bytes[..cut]);
        }
    }

    proptest! {
        #[test]
        fn bin_states_round_trip(bins in prop::collection::vec(
            (0usize..4096, prop::collection::vec((any::<u64>(), any::<i64>()), 0..8),
             prop::collection::vec((any::<u64>(), "[a-z]{0,6}"), 0..4)), 0..4)) {
            let batch: Vec<BinState<String, i64>> = bins.into_iter().map(|(bin, entries, notes)| BinState {
                target: bin % 7,
                bin,
                keys: entries.iter().map(|(k, _)| k.to_string()).collect(),
                states: entries.iter().map(|(_, s)| *s).collect(),
                notify_times: notes.iter().map(|(t, _)| *t).collect(),
                notify_keys: notes.into_iter().map(|(_, k)| k).collect(),
            }).collect();
            round_trip(batch);
        }

        #[test]
        fn sides_round_trip_in_order(records in prop::collection::vec(prop_oneof![
            any::<u32>().prop_map(Side::First), "[a-z]{0,5}".prop_map(Side::Second)], 0..40)) {
            round_trip::<Side<u32, String>>(records);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = BinState::<String, u64>::decode_batch(&bytes);
            let _ = Side::<u64, String>::decode_batch(&bytes);
            let _ = Routed::<u64>::decode_batch(&bytes);
        }
    }

    #[test]
    fn routed_records_arrive_without_their_target() {
        let batch = vec![Routed { target: 3, record: 10u64 }, Routed { target: 3, record: 11 }];
        let mut bytes = Vec::new();
        Routed::encode_batch(&batch, &mut bytes);
        let decoded = Routed::<u64>::decode_batch(&bytes).unwrap();
        assert_eq!(
            decoded.iter().map(|r| (r.target, r.record)).collect::<Vec<_>>(),
            vec![(usize::MAX, 10), (usize::MAX, 11)]
        );
    }

    #[test]
    fn mismatched_lengths_are_rejected() {
        let bin = BinState {
            target: 0,
            bin: 1,
            keys: vec![1u64, 2],
            states: vec![5u64, 6],
            notify_times: vec![],
            notify_keys: vec![],
        };
        let mut encoded = Vec::new();
        BinState::encode_batch(&[bin], &mut encoded);
        assert!(BinState::<u64, u64>::decode_batch(&encoded).is_ok());
        // The same bin with one state for its two keys.
        let mut one_state = Vec::new();
        u64::encode_batch(&[5], &mut one_state);
        let mut forged = Vec::new();
        put_u64(&mut forged, 1);
        put_u64(&mut forged, 0);
        put_u64(&mut forged, 1);
        put_section(&mut forged, |out| u64::encode_batch(&[1, 2], out));
        put_section(&mut forged, |out| out.extend_from_slice(&one_state));
        put_section(&mut forged, |_| ());
        put_section(&mut forged, |out| u64::encode_batch(&[], out));
        let error = BinState::<u64, u64>::decode_batch(&forged).unwrap_err();
        let cause = match &error {
            DecodeError::Format(cause) => cause.downcast_ref::<CodecError>(),
            _ => None,
        };
        assert_eq!(cause, Some(&CodecError::Lengths(1)), "{error}");
    }
}
