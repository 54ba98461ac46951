//! Decoding untrusted bytes in the codec's format into records. Owns the decoder; must never
//! panic, read out of bounds, or allocate more than the input's length justifies.

use std::fmt::Display;

use pyo3::exceptions::{PyException, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString};
use pyo3::{ffi, intern};

use crate::codec::format::*;
use crate::record::Record;

static PICKLE_LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

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
pub(super) fn sequence<'py>(
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
