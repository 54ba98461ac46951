//! Encoding a batch of records into the codec's format. Owns the encoder and its key table;
//! must not decode.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{ffi, intern};

use crate::codec::format::*;
use crate::errors::add_note;
use crate::record::Record;

/// The pickle protocol (every supported Python has it).
const PICKLE_PROTOCOL: u8 = 5;

static PICKLE_DUMPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

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
