//! The codec's wire format: its version, limits, tags and error type (the format itself is
//! described in the `codec` module's documentation). Holds no encoding or decoding logic.

use crate::errors::TimelyError;
use pyo3::create_exception;

create_exception!(
    timely_py,
    CodecError,
    TimelyError,
    "Bytes that are not a valid encoding of a batch of records (see timely_py.codec)."
);

/// The format version, the first byte of every batch.
pub const FORMAT_VERSION: u8 = 1;
/// How deep containers nest natively; deeper ones are pickled.
pub const MAX_DEPTH: usize = 64;
/// How many entries a batch's key table holds at most.
pub const MAX_KEYS: usize = 4096;

pub const TAG_NONE: u8 = 0x00;
pub const TAG_FALSE: u8 = 0x01;
pub const TAG_TRUE: u8 = 0x02;
pub const TAG_INT: u8 = 0x03;
pub const TAG_BIG_POSITIVE: u8 = 0x04;
pub const TAG_BIG_NEGATIVE: u8 = 0x05;
pub const TAG_FLOAT: u8 = 0x06;
pub const TAG_STR: u8 = 0x07;
pub const TAG_BYTES: u8 = 0x08;
pub const TAG_TUPLE: u8 = 0x09;
pub const TAG_LIST: u8 = 0x0a;
pub const TAG_DICT: u8 = 0x0b;
pub const TAG_PICKLED: u8 = 0x0c;
pub const TAG_KEY: u8 = 0x0d;
pub const TAG_KEY_REF: u8 = 0x0e;
