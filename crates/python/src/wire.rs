//! Records between processes: the engine's `ExchangeData` for `Record` and `KeyedPair`,
//! through `codec`, with the interpreter attached once per batch; must not know what the
//! records mean.

use crate::codec;
use crate::record::{KeyedPair, PythonFailure, Record};
use pyo3::prelude::*;
use timely_engine::dataflow::{DecodeError, ExchangeData};

/// Records cross processes in batches through `codec`, with the interpreter attached once per
/// batch. Peers are authenticated when they connect, so pickled values are accepted.
impl ExchangeData for Record {
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>) {
        Python::attach(|py| encode_or_unwind(py, batch, out));
    }

    fn decode_batch(bytes: &[u8]) -> Result<Vec<Self>, DecodeError> {
        Python::attach(|py| decode(py, bytes))
    }

    fn decode_batch_into(bytes: &[u8], into: &mut Vec<Self>) -> Result<(), DecodeError> {
        Python::attach(|py| codec::decode_records(py, bytes, into, true).map_err(python_error))
    }
}

impl ExchangeData for KeyedPair {
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>) {
        Python::attach(|py| {
            let records: Vec<Record> =
                batch.iter().flat_map(|KeyedPair(k, x)| [clone_ref(k, py), clone_ref(x, py)]).collect();
            encode_or_unwind(py, &records, out);
        })
    }

    fn decode_batch(bytes: &[u8]) -> Result<Vec<Self>, DecodeError> {
        Python::attach(|py| {
            let records = decode(py, bytes)?;
            if records.len() % 2 != 0 {
                let reason = format!("{} records, not pairs", records.len());
                return Err(DecodeError::Malformed { what: "a keyed batch", reason });
            }
            let mut records = records.into_iter();
            let mut pairs = Vec::with_capacity(records.len() / 2);
            while let (Some(k), Some(x)) = (records.next(), records.next()) {
                pairs.push(KeyedPair(k, x));
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

fn decode(py: Python<'_>, bytes: &[u8]) -> Result<Vec<Record>, DecodeError> {
    let mut records = Vec::new();
    codec::decode_records(py, bytes, &mut records, true).map_err(python_error)?;
    Ok(records)
}

/// The codec's error (a `CodecError` exception: the bytes are not a batch of records) as the
/// engine's.
pub(crate) fn python_error(error: PyErr) -> DecodeError {
    DecodeError::Format(Box::new(error))
}
