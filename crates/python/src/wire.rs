//! Records between processes: the engine's `ExchangeData` for `Record`, `Routed` and
//! `RoutedPair`, through `codec`, with the interpreter attached once per batch. Owns the
//! framing of routing hashes in front of a batch; must not know what the records mean.

use crate::codec;
use crate::record::{PythonFailure, Record, Routed, RoutedPair};
use pyo3::prelude::*;
use timely_engine::dataflow::ExchangeData;

/// Records cross processes in batches through `codec`, with the interpreter attached once per
/// batch. Peers are authenticated when they connect, so pickled values are accepted.
impl ExchangeData for Record {
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>) {
        Python::attach(|py| encode_or_unwind(py, batch, out));
    }

    fn decode_batch(bytes: &[u8]) -> Result<Vec<Self>, String> {
        Python::attach(|py| decode(py, bytes))
    }

    fn decode_batch_into(bytes: &[u8], into: &mut Vec<Self>) -> Result<(), String> {
        Python::attach(|py| codec::decode_records(py, bytes, into, true).map_err(|error| error.to_string()))
    }
}

impl ExchangeData for Routed {
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>) {
        Python::attach(|py| {
            let records: Vec<Record> = batch.iter().map(|Routed(_, x)| clone_ref(x, py)).collect();
            encode_with_hashes(py, batch.iter().map(|Routed(hash, _)| *hash), &records, out);
        })
    }

    fn decode_batch(bytes: &[u8]) -> Result<Vec<Self>, String> {
        Python::attach(|py| {
            let (hashes, records) = decode_with_hashes(py, bytes, 1)?;
            Ok(hashes.into_iter().zip(records).map(|(hash, x)| Routed(hash, x)).collect())
        })
    }
}

impl ExchangeData for RoutedPair {
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>) {
        Python::attach(|py| {
            let records: Vec<Record> =
                batch.iter().flat_map(|RoutedPair(_, k, x)| [clone_ref(k, py), clone_ref(x, py)]).collect();
            encode_with_hashes(py, batch.iter().map(|RoutedPair(hash, _, _)| *hash), &records, out);
        })
    }

    fn decode_batch(bytes: &[u8]) -> Result<Vec<Self>, String> {
        Python::attach(|py| {
            let (hashes, records) = decode_with_hashes(py, bytes, 2)?;
            let mut records = records.into_iter();
            let mut pairs = Vec::with_capacity(hashes.len());
            for hash in hashes {
                match (records.next(), records.next()) {
                    (Some(k), Some(x)) => pairs.push(RoutedPair(hash, k, x)),
                    _ => return Err("a keyed batch with fewer records than keys".to_owned()),
                }
            }
            Ok(pairs)
        })
    }
}

/// A new reference to the same object.
fn clone_ref(record: &Record, py: Python<'_>) -> Record {
    Record(record.0.clone_ref(py))
}

/// Encodes `records`, or unwinds with the Python error (an unpicklable record, say), which the
/// worker raises to its caller.
pub(crate) fn encode_or_unwind(py: Python<'_>, records: &[Record], out: &mut Vec<u8>) {
    if let Err(error) = codec::encode_records(py, records, out) {
        std::panic::resume_unwind(Box::new(PythonFailure(error)));
    }
}

fn decode(py: Python<'_>, bytes: &[u8]) -> Result<Vec<Record>, String> {
    let mut records = Vec::new();
    codec::decode_records(py, bytes, &mut records, true).map_err(|error| error.to_string())?;
    Ok(records)
}

/// Writes the number of hashes (`u32`), the hashes (`u64` each, little endian), then the records.
fn encode_with_hashes(
    py: Python<'_>,
    hashes: impl ExactSizeIterator<Item = u64>,
    records: &[Record],
    out: &mut Vec<u8>,
) {
    let count = u32::try_from(hashes.len()).expect("a batch has fewer than 2^32 records");
    out.extend_from_slice(&count.to_le_bytes());
    hashes.for_each(|hash| out.extend_from_slice(&hash.to_le_bytes()));
    encode_or_unwind(py, records, out);
}

/// Reads what `encode_with_hashes` wrote, checking that there are `per_hash` records per hash.
fn decode_with_hashes(
    py: Python<'_>,
    bytes: &[u8],
    per_hash: usize,
) -> Result<(Vec<u64>, Vec<Record>), String> {
    let count = bytes.get(..4).ok_or("a routed batch shorter than its count")?;
    let count = u32::from_le_bytes(count.try_into().expect("four bytes")) as usize;
    let end = count.checked_mul(8).and_then(|n| n.checked_add(4)).filter(|&end| end <= bytes.len());
    let end =
        end.ok_or_else(|| format!("a routed batch of {} bytes cannot hold {count} hashes", bytes.len()))?;
    let hashes = bytes[4..end]
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("eight bytes")))
        .collect();
    let records = decode(py, &bytes[end..])?;
    if records.len() != count * per_hash {
        return Err(format!("a routed batch with {count} hashes and {} records", records.len()));
    }
    Ok((hashes, records))
}
