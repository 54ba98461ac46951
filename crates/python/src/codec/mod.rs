//! The codec for records that cross a process boundary.
//!
//! Inside a process records move as references; between processes a batch of records is
//! encoded by `encode_records` and decoded by `decode_records`, both called once per batch
//! with the interpreter attached. Exact built-in types (`type(x) is int`, not subclasses)
//! have a native encoding; everything else, subclasses included, is pickled, so that a
//! `bool` stays a `bool` and an `IntEnum` or a `namedtuple` keeps its type. The values a
//! batch pickles are pickled together, in one `pickle.dumps` call per batch, so that
//! pickle's per-call cost and its references to classes are paid once per batch rather than
//! once per record. `docs/codec.md` describes the format for readers who do not read Rust.
//!
//! # Format (version 1)
//!
//! ```text
//! batch   = version:u8 (= 1)  count:varint  pickled_len:varint  pickled  value*count
//! pickled = pickled_len bytes: pickle.dumps(list_of_values, protocol=5), absent if 0
//! ```
//!
//! A varint is unsigned LEB128 (7 bits a byte, low group first, at most 10 bytes, at most
//! 64 bits). Nothing may follow the last value. Every value starts with one tag byte:
//!
//! | tag    | value                   | payload after the tag                                      |
//! |--------|-------------------------|------------------------------------------------------------|
//! | `0x00` | `None`                  | -                                                          |
//! | `0x01` | `False`                 | -                                                          |
//! | `0x02` | `True`                  | -                                                          |
//! | `0x03` | `int` in i64            | zigzag varint (`(n << 1) ^ (n >> 63)`)                     |
//! | `0x04` | `int` >= 2**63          | varint `len`, `len` bytes of the magnitude, little endian  |
//! | `0x05` | `int` < -2**63          | the same, for the magnitude of the negative value          |
//! | `0x06` | `float`                 | 8 bytes, IEEE 754 binary64, little endian                  |
//! | `0x07` | `str`                   | varint `len`, `len` bytes of UTF-8                         |
//! | `0x08` | `bytes`                 | varint `len`, `len` bytes                                  |
//! | `0x09` | `tuple`                 | varint `n`, `n` values                                     |
//! | `0x0a` | `list`                  | varint `n`, `n` values                                     |
//! | `0x0b` | `dict`                  | varint `n`, `n` pairs of values: key, then value           |
//! | `0x0c` | anything else (pickled) | varint `i`: item `i` of the batch's pickled list           |
//! | `0x0d` | `str`, remembered       | as `0x07`; the str also becomes the next entry of the batch's key table |
//! | `0x0e` | `str`, repeated         | varint `i`: entry `i` of the key table                     |
//!
//! Big-int magnitudes are canonical: at least one byte, the last (most significant) not
//! zero. A `str` with lone surrogates has no UTF-8 encoding and is pickled. The encoder uses
//! `0x0d`/`0x0e` for `str` dict keys (the same key object in many records is sent once per
//! batch and decoded as one object, as pickle's memo does), at most `MAX_KEYS` of them a
//! batch. Containers nest natively at most `MAX_DEPTH` deep (a record's own container is at
//! depth 0); a deeper container is pickled whole on encode, and a native container tag at
//! that depth is rejected on decode.
//!
//! # Untrusted input
//!
//! `decode_records` never panics and never reads out of bounds. Every declared length or
//! count is checked against the bytes that remain before anything is allocated (a container
//! of `n` values needs at least `n` bytes, a dict at least `2n`), so memory is proportional
//! to the input's length. Malformed input raises `CodecError` (a `TimelyError`) naming the
//! byte offset. Unpickling runs arbitrary code: decode a batch with pickled values only from
//! trusted peers, or pass `allow_pickle = false` to reject such a batch.

mod decode;
mod encode;
mod format;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

pub use decode::decode_records;
use decode::sequence;
pub use encode::encode_records;
use format::CodecError;

use crate::record::Record;

/// `encode_records(records)`: the encoding of a batch of records as bytes.
#[pyfunction]
#[pyo3(name = "encode_records")]
fn py_encode_records<'py>(py: Python<'py>, records: &Bound<'py, PyList>) -> PyResult<Bound<'py, PyBytes>> {
    let records: Vec<Record> = records.iter().map(|record| Record(record.unbind())).collect();
    let mut out = Vec::new();
    encode_records(py, &records, &mut out)?;
    Ok(PyBytes::new(py, &out))
}

/// `decode_records(data, allow_pickle=True)`: the records of a batch made by `encode_records`.
#[pyfunction]
#[pyo3(name = "decode_records", signature = (data, allow_pickle = true))]
fn py_decode_records<'py>(py: Python<'py>, data: &[u8], allow_pickle: bool) -> PyResult<Bound<'py, PyList>> {
    let mut records = Vec::new();
    decode_records(py, data, &mut records, allow_pickle)?;
    Ok(sequence(py, false, records.into_iter().map(|record| record.0))?.cast_into()?)
}

/// Adds the codec's functions and `CodecError` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(py_encode_records, m)?)?;
    m.add_function(wrap_pyfunction!(py_decode_records, m)?)?;
    m.add("CodecError", m.py().get_type::<CodecError>())?;
    Ok(())
}
