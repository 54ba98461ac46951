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

use std::collections::HashMap;
use std::fmt::Display;
use std::hash::{BuildHasherDefault, Hasher};

use pyo3::exceptions::{PyException, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{create_exception, ffi, intern};

use crate::errors::{add_note, TimelyError};
use crate::record::Record;

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
/// The pickle protocol (every supported Python has it).
const PICKLE_PROTOCOL: u8 = 5;

const TAG_NONE: u8 = 0x00;
const TAG_FALSE: u8 = 0x01;
const TAG_TRUE: u8 = 0x02;
const TAG_INT: u8 = 0x03;
const TAG_BIG_POSITIVE: u8 = 0x04;
const TAG_BIG_NEGATIVE: u8 = 0x05;
const TAG_FLOAT: u8 = 0x06;
const TAG_STR: u8 = 0x07;
const TAG_BYTES: u8 = 0x08;
const TAG_TUPLE: u8 = 0x09;
const TAG_LIST: u8 = 0x0a;
const TAG_DICT: u8 = 0x0b;
const TAG_PICKLED: u8 = 0x0c;
const TAG_KEY: u8 = 0x0d;
const TAG_KEY_REF: u8 = 0x0e;

static PICKLE_DUMPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static PICKLE_LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Appends the encoding of `records` (a batch) to `out`.
///
/// On error `out` is left as it was. A value that cannot be pickled raises the pickling
/// error with a note naming the record and the value's type.
pub fn encode_records(py: Python<'_>, records: &[Record], out: &mut Vec<u8>) -> PyResult<()> {
    let start = out.len();
    let result = Encoder {
        py,
        out: &mut *out,
        pickled: Vec::new(),
        record: 0,
        keys: AddressMap::default(),
        key_objects: Vec::new(),
    }
    .batch(records);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// Decodes a whole batch written by `encode_records`, appending to `into`.
///
/// Never panics, never reads out of bounds, allocates in proportion to `bytes.len()`, and
/// rejects trailing bytes. Malformed input raises `CodecError` and leaves `into` as it was.
/// With `allow_pickle == false`, a batch with pickled values is an error instead of being
/// unpickled.
pub fn decode_records(
    py: Python<'_>,
    bytes: &[u8],
    into: &mut Vec<Record>,
    allow_pickle: bool,
) -> PyResult<()> {
    let start = into.len();
    let decoder = Decoder {
        py,
        input: bytes,
        pos: 0,
        allow_pickle,
        stack: Vec::new(),
        pickled: None,
        keys: Vec::new(),
    };
    let result = decoder.batch(into);
    if result.is_err() {
        into.truncate(start);
    }
    result
}

/// The fully qualified name of `value`'s type (`module.QualName`), or `?`.
fn type_name(value: &Bound<'_, PyAny>) -> String {
    value.get_type().fully_qualified_name().map(|name| name.to_string()).unwrap_or_else(|_| "?".to_owned())
}

#[inline]
fn write_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Writes a varint length and the bytes.
#[inline]
fn write_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    write_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn changed_size(what: &str) -> PyErr {
    PyRuntimeError::new_err(format!("{what} changed size while it was being encoded"))
}

/// Hashes object addresses (the encoder's key table is keyed by object identity).
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(byte));
        }
    }

    fn write_u64(&mut self, value: u64) {
        let mixed = value.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = mixed ^ (mixed >> 29);
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
}

type AddressMap = HashMap<usize, u32, BuildHasherDefault<AddressHasher>>;

struct Encoder<'a, 'py> {
    py: Python<'py>,
    out: &'a mut Vec<u8>,
    /// Values to pickle at the end of the batch, with the index of their record.
    pickled: Vec<(Bound<'py, PyAny>, usize)>,
    /// The index of the record being encoded.
    record: usize,
    /// The key table: str dict keys already sent, by address, and the objects themselves
    /// (held, so that no address is reused while the batch is encoded).
    keys: AddressMap,
    key_objects: Vec<Bound<'py, PyAny>>,
}

impl<'py> Encoder<'_, 'py> {
    fn batch(&mut self, records: &[Record]) -> PyResult<()> {
        self.out.reserve(records.len() * 4 + 12);
        self.out.push(FORMAT_VERSION);
        write_varint(self.out, records.len() as u64);
        let pickled_at = self.out.len();
        self.out.push(0); // no pickled values, unless `write_pickled` replaces it
        for (index, record) in records.iter().enumerate() {
            self.record = index;
            let value = record.bind(self.py);
            if let Err(error) = self.value(value, 0) {
                let note = format!(
                    "timely_py.codec: while encoding record {index} of the batch (of type '{}')",
                    type_name(value)
                );
                add_note(self.py, &error, &note);
                return Err(error);
            }
        }
        if !self.pickled.is_empty() {
            self.write_pickled(pickled_at, records)?;
        }
        Ok(())
    }

    fn value(&mut self, value: &Bound<'py, PyAny>, depth: usize) -> PyResult<()> {
        if value.is_exact_instance_of::<PyInt>() {
            return self.int(value);
        }
        if value.is_exact_instance_of::<PyString>() {
            // SAFETY: the exact type was checked above.
            return match unsafe { value.cast_unchecked::<PyString>() }.to_str() {
                Ok(text) => {
                    self.out.push(TAG_STR);
                    write_bytes(self.out, text.as_bytes());
                    Ok(())
                }
                // Lone surrogates: no UTF-8 encoding exists; pickle keeps them.
                Err(_) => self.pickle(value),
            };
        }
        if value.is_exact_instance_of::<PyFloat>() {
            // SAFETY: the exact type was checked above.
            let number = unsafe { value.cast_unchecked::<PyFloat>() }.value();
            self.out.push(TAG_FLOAT);
            self.out.extend_from_slice(&number.to_le_bytes());
            return Ok(());
        }
        if value.is_exact_instance_of::<PyTuple>() {
            if depth >= MAX_DEPTH {
                return self.pickle(value);
            }
            // SAFETY: the exact type was checked above.
            let tuple = unsafe { value.cast_unchecked::<PyTuple>() };
            self.out.push(TAG_TUPLE);
            write_varint(self.out, tuple.len() as u64);
            for item in tuple.iter_borrowed() {
                self.value(&item, depth + 1)?;
            }
            return Ok(());
        }
        if value.is_none() {
            self.out.push(TAG_NONE);
            return Ok(());
        }
        if value.is_exact_instance_of::<PyBool>() {
            // SAFETY: the exact type was checked above.
            let truth = unsafe { value.cast_unchecked::<PyBool>() }.is_true();
            self.out.push(if truth { TAG_TRUE } else { TAG_FALSE });
            return Ok(());
        }
        if value.is_exact_instance_of::<PyBytes>() {
            // SAFETY: the exact type was checked above.
            let bytes = unsafe { value.cast_unchecked::<PyBytes>() };
            self.out.push(TAG_BYTES);
            write_bytes(self.out, bytes.as_bytes());
            return Ok(());
        }
        if value.is_exact_instance_of::<PyList>() && depth < MAX_DEPTH {
            // SAFETY: the exact type was checked above.
            return self.list(unsafe { value.cast_unchecked::<PyList>() }, depth);
        }
        if value.is_exact_instance_of::<PyDict>() && depth < MAX_DEPTH {
            // SAFETY: the exact type was checked above.
            return self.dict(unsafe { value.cast_unchecked::<PyDict>() }, depth);
        }
        self.pickle(value)
    }

    #[inline]
    fn int(&mut self, value: &Bound<'py, PyAny>) -> PyResult<()> {
        let mut overflow = 0;
        // SAFETY: `value` is a live int; the call sets `overflow` instead of raising.
        let small = unsafe { ffi::PyLong_AsLongLongAndOverflow(value.as_ptr(), &mut overflow) };
        if overflow == 0 {
            if small == -1 {
                if let Some(error) = PyErr::take(self.py) {
                    return Err(error);
                }
            }
            self.out.push(TAG_INT);
            write_varint(self.out, ((small << 1) ^ (small >> 63)) as u64);
            return Ok(());
        }
        let py = self.py;
        let magnitude = if overflow < 0 { value.neg()? } else { value.clone() };
        let bits: usize = magnitude.call_method0(intern!(py, "bit_length"))?.extract()?;
        let bytes =
            magnitude.call_method1(intern!(py, "to_bytes"), (bits.div_ceil(8), intern!(py, "little")))?;
        self.out.push(if overflow < 0 { TAG_BIG_NEGATIVE } else { TAG_BIG_POSITIVE });
        write_bytes(self.out, bytes.cast::<PyBytes>()?.as_bytes());
        Ok(())
    }

    /// Items are read by index with a bounds check, in case the list changes meanwhile.
    fn list(&mut self, list: &Bound<'py, PyList>, depth: usize) -> PyResult<()> {
        let len = list.len();
        self.out.push(TAG_LIST);
        write_varint(self.out, len as u64);
        for index in 0..len {
            let item = list.get_item(index).map_err(|_| changed_size("a list"))?;
            self.value(&item, depth + 1)?;
        }
        if list.len() != len {
            return Err(changed_size("a list"));
        }
        Ok(())
    }

    /// Walks the dict with `PyDict_Next` holding strong references to each key and value;
    /// unlike PyO3's iterator it raises instead of panicking if the dict changes meanwhile.
    fn dict(&mut self, dict: &Bound<'py, PyDict>, depth: usize) -> PyResult<()> {
        let len = dict.len();
        self.out.push(TAG_DICT);
        write_varint(self.out, len as u64);
        let (mut position, mut seen): (ffi::Py_ssize_t, usize) = (0, 0);
        let (mut key, mut value) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: `PyDict_Next` bounds-checks `position` against the dict's current entries,
        // and the borrowed key and value become owned references before anything else runs.
        while unsafe { ffi::PyDict_Next(dict.as_ptr(), &mut position, &mut key, &mut value) } != 0 {
            let (key, value) =
                unsafe { (Bound::from_borrowed_ptr(self.py, key), Bound::from_borrowed_ptr(self.py, value)) };
            seen += 1;
            if seen > len {
                return Err(changed_size("a dict"));
            }
            self.key(&key, depth)?;
            self.value(&value, depth + 1)?;
        }
        if seen != len || dict.len() != len {
            return Err(changed_size("a dict"));
        }
        Ok(())
    }

    /// A dict key: a str is sent once per batch and then referred to by its index.
    fn key(&mut self, key: &Bound<'py, PyAny>, depth: usize) -> PyResult<()> {
        if key.is_exact_instance_of::<PyString>() {
            let address = key.as_ptr() as usize;
            if let Some(&index) = self.keys.get(&address) {
                self.out.push(TAG_KEY_REF);
                write_varint(self.out, u64::from(index));
                return Ok(());
            }
            if self.key_objects.len() < MAX_KEYS {
                // SAFETY: the exact type was checked above.
                if let Ok(text) = unsafe { key.cast_unchecked::<PyString>() }.to_str() {
                    self.out.push(TAG_KEY);
                    write_bytes(self.out, text.as_bytes());
                    self.keys.insert(address, self.key_objects.len() as u32);
                    self.key_objects.push(key.clone());
                    return Ok(());
                }
            }
        }
        self.value(key, depth + 1)
    }

    /// Refers to `value` in the batch's pickled list, pickled by `write_pickled`.
    fn pickle(&mut self, value: &Bound<'py, PyAny>) -> PyResult<()> {
        self.out.push(TAG_PICKLED);
        write_varint(self.out, self.pickled.len() as u64);
        self.pickled.push((value.clone(), self.record));
        Ok(())
    }

    /// Pickles the batch's pickled list and puts it in place of the empty one at `at`.
    fn write_pickled(&mut self, at: usize, records: &[Record]) -> PyResult<()> {
        let py = self.py;
        let dumps = PICKLE_DUMPS.import(py, "pickle", "dumps")?;
        let values = PyList::new(py, self.pickled.iter().map(|(value, _)| value))?;
        let pickled = match dumps.call1((values, PICKLE_PROTOCOL)) {
            Ok(pickled) => pickled,
            Err(error) => return Err(self.explain_pickling_error(dumps, error, records)),
        };
        let pickled = pickled.cast::<PyBytes>()?.as_bytes();
        let mut header = Vec::with_capacity(10);
        write_varint(&mut header, pickled.len() as u64);
        let (old_len, added) = (self.out.len(), header.len() + pickled.len());
        self.out.resize(old_len + added - 1, 0);
        self.out.copy_within(at + 1..old_len, at + added);
        self.out[at..at + header.len()].copy_from_slice(&header);
        self.out[at + header.len()..at + added].copy_from_slice(pickled);
        Ok(())
    }

    /// The error of the first value that cannot be pickled alone, with a note naming it and
    /// its record; `error` itself if each can.
    fn explain_pickling_error(&self, dumps: &Bound<'py, PyAny>, error: PyErr, records: &[Record]) -> PyErr {
        for (value, index) in &self.pickled {
            let Err(own) = dumps.call1((value, PICKLE_PROTOCOL)) else { continue };
            let value_type = type_name(value);
            let whole = records[*index].bind(self.py);
            let note = if whole.is(value) {
                format!(
                    "timely_py.codec: record {index} of the batch (of type '{value_type}') cannot be pickled"
                )
            } else {
                format!(
                    "timely_py.codec: record {index} of the batch (of type '{}') holds a value of type \
                     '{value_type}' that cannot be pickled",
                    type_name(whole)
                )
            };
            add_note(self.py, &own, &note);
            return own;
        }
        add_note(
            self.py,
            &error,
            "timely_py.codec: while pickling the batch's values that are not exact built-in types",
        );
        error
    }
}

struct Decoder<'a, 'py> {
    py: Python<'py>,
    input: &'a [u8],
    pos: usize,
    allow_pickle: bool,
    /// The items of the containers being decoded, shared by all of them so that a
    /// container's declared length never decides an allocation.
    stack: Vec<Py<PyAny>>,
    /// The batch's pickled list.
    pickled: Option<Bound<'py, PyList>>,
    /// The batch's key table.
    keys: Vec<Bound<'py, PyAny>>,
}

impl<'a, 'py> Decoder<'a, 'py> {
    fn batch(mut self, into: &mut Vec<Record>) -> PyResult<()> {
        let version = match self.input.first() {
            Some(&version) => version,
            None => {
                return Err(CodecError::new_err(
                    "timely_py.codec: empty input (a batch has at least 3 bytes)",
                ))
            }
        };
        if version != FORMAT_VERSION {
            return Err(self.error(
                0,
                format!("unsupported format version {version} (this build reads {FORMAT_VERSION})"),
            ));
        }
        self.pos = 1;
        let count = self.length(1, "the batch")?;
        self.unpickle()?;
        into.reserve(count);
        for _ in 0..count {
            into.push(Record(self.value(0)?.unbind()));
        }
        if self.pos != self.input.len() {
            let trailing = self.input.len() - self.pos;
            return Err(
                self.error(self.pos, format!("{trailing} trailing bytes after the last of {count} records"))
            );
        }
        Ok(())
    }

    /// Reads the batch's pickled list, if it has one.
    fn unpickle(&mut self) -> PyResult<()> {
        let at = self.pos;
        let len = self.length(1, "the pickled values")?;
        if len == 0 {
            return Ok(());
        }
        let pickled = self.take(len)?;
        if !self.allow_pickle {
            return Err(self.error(
                at,
                "the batch has pickled values, and unpickling is not allowed (allow_pickle=False)",
            ));
        }
        let loads = PICKLE_LOADS.import(self.py, "pickle", "loads")?;
        let values = match loads.call1((PyBytes::new(self.py, pickled),)) {
            Ok(values) => values,
            Err(cause) if cause.is_instance_of::<PyException>(self.py) => {
                return Err(self.error_from(at, "the pickled values cannot be unpickled", cause))
            }
            Err(interrupt) => return Err(interrupt),
        };
        match values.cast_into_exact::<PyList>() {
            Ok(values) => self.pickled = Some(values),
            Err(_) => return Err(self.error(at, "the pickled values are not a list")),
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn error(&self, at: usize, what: impl Display) -> PyErr {
        CodecError::new_err(format!(
            "timely_py.codec: malformed input at byte {at} of {}: {what}",
            self.input.len()
        ))
    }

    /// `error`, with `cause` as the exception's `__cause__`.
    #[cold]
    fn error_from(&self, at: usize, what: impl Display, cause: PyErr) -> PyErr {
        let error = self.error(at, what);
        error.set_cause(self.py, Some(cause));
        error
    }

    #[inline]
    fn byte(&mut self) -> PyResult<u8> {
        match self.input.get(self.pos) {
            Some(&byte) => {
                self.pos += 1;
                Ok(byte)
            }
            None => Err(self.error(self.pos, "unexpected end of input")),
        }
    }

    #[inline]
    fn take(&mut self, len: usize) -> PyResult<&'a [u8]> {
        let left = self.input.len() - self.pos;
        if len > left {
            return Err(self.error(self.pos, format_args!("{len} bytes needed, {left} left")));
        }
        let bytes = &self.input[self.pos..self.pos + len];
        self.pos += len;
        Ok(bytes)
    }

    /// A varint, with fast paths for one and two bytes.
    #[inline]
    fn varint(&mut self) -> PyResult<u64> {
        let (input, pos) = (self.input, self.pos);
        if pos + 1 < input.len() {
            let low = input[pos];
            if low < 0x80 {
                self.pos = pos + 1;
                return Ok(u64::from(low));
            }
            let high = input[pos + 1];
            if high < 0x80 {
                self.pos = pos + 2;
                return Ok(u64::from(low & 0x7f) | u64::from(high) << 7);
            }
        }
        self.long_varint()
    }

    fn long_varint(&mut self) -> PyResult<u64> {
        let start = self.pos;
        let mut value = 0u64;
        let mut shift = 0;
        loop {
            let byte = self.byte()?;
            if shift == 63 && byte > 1 {
                return Err(self.error(start, "varint longer than 64 bits"));
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
            shift += 7;
        }
    }

    /// A declared length or count, checked against the bytes left: each counted element
    /// takes at least `min_size` bytes.
    #[inline]
    fn length(&mut self, min_size: usize, what: &str) -> PyResult<usize> {
        let start = self.pos;
        let declared = self.varint()?;
        let left = self.input.len() - self.pos;
        if declared.saturating_mul(min_size as u64) > left as u64 {
            return Err(self.error(
                start,
                format_args!("{what} declares length {declared}, more than the {left} bytes left allow"),
            ));
        }
        Ok(declared as usize)
    }

    /// An index into a table of `len` entries.
    #[inline]
    fn index(&mut self, len: usize, what: &str) -> PyResult<usize> {
        let start = self.pos;
        let index = self.varint()?;
        if index >= len as u64 {
            return Err(
                self.error(start, format_args!("{what} {index} does not exist (the batch has {len})"))
            );
        }
        Ok(index as usize)
    }

    #[inline]
    fn str(&mut self, at: usize) -> PyResult<Bound<'py, PyAny>> {
        let len = self.length(1, "a str")?;
        let utf8 = self.take(len)?;
        match PyString::from_bytes(self.py, utf8) {
            Ok(text) => Ok(text.into_any()),
            Err(cause) => Err(self.error_from(at, "str is not valid UTF-8", cause)),
        }
    }

    fn value(&mut self, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let at = self.pos;
        let tag = self.byte()?;
        Ok(match tag {
            TAG_NONE => py.None().into_bound(py),
            TAG_FALSE => PyBool::new(py, false).to_owned().into_any(),
            TAG_TRUE => PyBool::new(py, true).to_owned().into_any(),
            TAG_INT => {
                let zigzag = self.varint()?;
                let int = ((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64);
                // SAFETY: a new reference, or null with an exception set.
                unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyLong_FromLongLong(int))? }
            }
            TAG_BIG_POSITIVE | TAG_BIG_NEGATIVE => {
                let len = self.length(1, "an int")?;
                let magnitude = self.take(len)?;
                if !matches!(magnitude.last(), Some(&top) if top != 0) {
                    return Err(self.error(at, "big int magnitude is empty or has a zero top byte"));
                }
                let int = py.get_type::<PyInt>().call_method1(
                    intern!(py, "from_bytes"),
                    (PyBytes::new(py, magnitude), intern!(py, "little")),
                )?;
                if tag == TAG_BIG_NEGATIVE {
                    int.neg()?
                } else {
                    int
                }
            }
            TAG_FLOAT => {
                let bytes = self.take(8)?;
                PyFloat::new(py, f64::from_le_bytes(bytes.try_into().expect("8 bytes"))).into_any()
            }
            TAG_STR => self.str(at)?,
            TAG_BYTES => {
                let len = self.length(1, "a bytes")?;
                PyBytes::new(py, self.take(len)?).into_any()
            }
            TAG_TUPLE | TAG_LIST => {
                self.check_depth(at, depth)?;
                let len = self.length(1, if tag == TAG_TUPLE { "a tuple" } else { "a list" })?;
                let base = self.stack.len();
                for _ in 0..len {
                    let item = self.value(depth + 1)?.unbind();
                    self.stack.push(item);
                }
                sequence(py, tag == TAG_TUPLE, self.stack.drain(base..))?
            }
            TAG_DICT => {
                self.check_depth(at, depth)?;
                let len = self.length(2, "a dict")?;
                let dict = PyDict::new(py);
                for _ in 0..len {
                    let key_at = self.pos;
                    let key = self.value(depth + 1)?;
                    let value = self.value(depth + 1)?;
                    if let Err(cause) = dict.set_item(key, value) {
                        return Err(self.error_from(key_at, "dict key cannot be inserted", cause));
                    }
                }
                dict.into_any()
            }
            TAG_PICKLED => {
                let len = self.pickled.as_ref().map_or(0, |pickled| pickled.len());
                let index = self.index(len, "pickled value")?;
                match &self.pickled {
                    Some(pickled) => pickled.get_item(index)?,
                    None => return Err(self.error(at, "a pickled value in a batch without pickled values")),
                }
            }
            TAG_KEY => {
                if self.keys.len() >= MAX_KEYS {
                    return Err(self.error(at, format!("more than {MAX_KEYS} entries in the key table")));
                }
                let key = self.str(at)?;
                self.keys.push(key.clone());
                key
            }
            TAG_KEY_REF => {
                let index = self.index(self.keys.len(), "key table entry")?;
                self.keys[index].clone()
            }
            _ => return Err(self.error(at, format!("unknown tag 0x{tag:02x}"))),
        })
    }

    #[inline]
    fn check_depth(&self, at: usize, depth: usize) -> PyResult<()> {
        if depth >= MAX_DEPTH {
            return Err(self.error(at, format!("containers nested deeper than {MAX_DEPTH}")));
        }
        Ok(())
    }
}

/// A new tuple or list of `items`, filled directly (no Python code runs while it is
/// incomplete, so nothing sees its empty slots).
fn sequence<'py>(
    py: Python<'py>,
    tuple: bool,
    items: impl ExactSizeIterator<Item = Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let len = items.len() as ffi::Py_ssize_t;
    // SAFETY: a new reference or null with an exception set.
    let sequence = unsafe {
        Bound::from_owned_ptr_or_err(py, if tuple { ffi::PyTuple_New(len) } else { ffi::PyList_New(len) })?
    };
    let mut filled = 0;
    for item in items.take(len as usize) {
        // SAFETY: `filled < len`; the call steals the reference to `item`.
        let status = unsafe {
            if tuple {
                ffi::PyTuple_SetItem(sequence.as_ptr(), filled, item.into_ptr())
            } else {
                ffi::PyList_SetItem(sequence.as_ptr(), filled, item.into_ptr())
            }
        };
        if status != 0 {
            return Err(PyErr::fetch(py));
        }
        filled += 1;
    }
    if filled != len {
        return Err(PyRuntimeError::new_err("timely_py.codec: fewer items than expected"));
    }
    Ok(sequence)
}

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
