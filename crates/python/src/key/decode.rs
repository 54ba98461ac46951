//! Canonical key bytes (`encode`) read back: `validate` checks bytes that came from another
//! process without the interpreter, `to_object` builds the Python key they stand for. Both
//! read with one parser, so they accept the same bytes; anything malformed (a cut value, an
//! unknown tag, trailing bytes, nesting deeper than `MAX_DEPTH`, or a value written in a
//! form that is not canonical) is a [`KeyBytesError`], never a panic.

use super::encode::tag;
use super::form::MAX_DEPTH;
use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{IntoPyDict, PyBytes, PyComplex, PyFloat, PyFrozenSet, PyInt, PyString, PyTuple, PyType};

/// Why bytes are not the canonical bytes of one key.
#[derive(Debug, thiserror::Error)]
pub enum KeyBytesError {
    /// The bytes end inside a value.
    #[error("malformed key bytes: cut at byte {at} (needs {needs} more)")]
    Cut { at: usize, needs: usize },
    /// A tag that no kind of key has.
    #[error("malformed key bytes: unknown tag {tag} at byte {at}")]
    UnknownTag { tag: u8, at: usize },
    /// Another tag where a rational's numerator or denominator was expected.
    #[error("malformed key bytes: tag {0} where an int was expected")]
    NotAnInt(u8),
    /// Bytes after the key.
    #[error("malformed key bytes: {0} bytes after the key")]
    Trailing(usize),
    /// Tuples or frozensets nested deeper than `MAX_DEPTH`.
    #[error("malformed key bytes: tuples or frozensets nested more than {MAX_DEPTH} deep")]
    TooDeep,
    /// A value in a form that `encode` never writes (a float equal to an int, a rational not
    /// in lowest terms, frozenset elements out of order...): two keys that compare equal would
    /// then have different bytes.
    #[error("malformed key bytes: {0}")]
    NotCanonical(String),
    /// Python refused to build the value (a `Fraction` or a big int it could not make).
    #[error("malformed key bytes: {0}")]
    Python(PyErr),
}

/// Checks that `bytes` are the canonical bytes of one key.
pub fn validate(bytes: &[u8]) -> Result<(), KeyBytesError> {
    parse(bytes, &mut Check)
}

/// The Python key whose canonical bytes are `bytes`; a `ValueError` if they are malformed.
pub fn to_object<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    parse(bytes, &mut Build(py)).map_err(|error| PyValueError::new_err(error.to_string()))
}

fn parse<B: Builder>(bytes: &[u8], builder: &mut B) -> Result<B::Value, KeyBytesError> {
    let mut reader = Reader { bytes, at: 0 };
    let value = reader.value(0, builder)?;
    match reader.at == bytes.len() {
        true => Ok(value),
        false => Err(KeyBytesError::Trailing(bytes.len() - reader.at)),
    }
}

/// An int inside a rational: in 64 bits, or the two's complement bytes of a larger one.
#[derive(Clone, Copy)]
enum IntValue<'a> {
    Small(i64),
    Big(&'a [u8]),
}

/// What the parser makes of each value it reads (checked already as far as the bytes alone
/// allow).
trait Builder {
    type Value;
    fn none(&mut self) -> Result<Self::Value, KeyBytesError>;
    fn int(&mut self, int: IntValue<'_>) -> Result<Self::Value, KeyBytesError>;
    fn float(&mut self, value: f64) -> Result<Self::Value, KeyBytesError>;
    fn complex(&mut self, real: f64, imag: f64) -> Result<Self::Value, KeyBytesError>;
    fn rational(
        &mut self,
        numerator: IntValue<'_>,
        denominator: IntValue<'_>,
    ) -> Result<Self::Value, KeyBytesError>;
    fn nan(&mut self) -> Result<Self::Value, KeyBytesError>;
    fn str(&mut self, text: &[u8]) -> Result<Self::Value, KeyBytesError>;
    fn bytes(&mut self, bytes: &[u8]) -> Result<Self::Value, KeyBytesError>;
    fn tuple(&mut self, items: Vec<Self::Value>) -> Result<Self::Value, KeyBytesError>;
    fn frozenset(&mut self, items: Vec<Self::Value>) -> Result<Self::Value, KeyBytesError>;
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], KeyBytesError> {
        let end = self.at.checked_add(len).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or(KeyBytesError::Cut { at: self.at, needs: len })?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn byte(&mut self) -> Result<u8, KeyBytesError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<usize, KeyBytesError> {
        let bytes: [u8; 4] = self.take(4)?.try_into().expect("four bytes taken");
        Ok(u32::from_le_bytes(bytes) as usize)
    }

    fn u64(&mut self) -> Result<u64, KeyBytesError> {
        let bytes: [u8; 8] = self.take(8)?.try_into().expect("eight bytes taken");
        Ok(u64::from_le_bytes(bytes))
    }

    fn sized(&mut self) -> Result<&'a [u8], KeyBytesError> {
        let len = self.u32()?;
        self.take(len)
    }

    fn value<B: Builder>(&mut self, depth: usize, builder: &mut B) -> Result<B::Value, KeyBytesError> {
        match self.byte()? {
            tag::NONE => builder.none(),
            tag::INT | tag::BIG_INT => {
                self.at -= 1;
                let int = self.int()?;
                builder.int(int)
            }
            tag::FLOAT => {
                let value = f64::from_bits(self.u64()?);
                if value.is_nan() || (value.is_finite() && value.fract() == 0.0) {
                    return Err(KeyBytesError::NotCanonical(format!(
                        "float {value} is not a canonical float key"
                    )));
                }
                builder.float(value)
            }
            tag::COMPLEX => {
                let (real, imag) = (f64::from_bits(self.u64()?), f64::from_bits(self.u64()?));
                let negative_zero = |x: f64| x == 0.0 && x.is_sign_negative();
                if real.is_nan() || imag.is_nan() || imag == 0.0 || negative_zero(real) {
                    return Err(KeyBytesError::NotCanonical(format!(
                        "complex ({real}, {imag}) is not a canonical complex key"
                    )));
                }
                builder.complex(real, imag)
            }
            tag::RATIONAL => {
                let (numerator, denominator) = (self.int()?, self.int()?);
                check_rational(numerator, denominator)?;
                builder.rational(numerator, denominator)
            }
            tag::NAN => builder.nan(),
            tag::STR => {
                let text = self.sized()?;
                builder.str(text)
            }
            tag::BYTES => {
                let bytes = self.sized()?;
                builder.bytes(bytes)
            }
            tag::TUPLE => {
                let depth = self.nested(depth)?;
                let count = self.u32()?;
                let mut items = Vec::with_capacity(count.min(self.bytes.len() - self.at));
                for _ in 0..count {
                    items.push(self.value(depth, builder)?);
                }
                builder.tuple(items)
            }
            tag::FROZENSET => {
                let depth = self.nested(depth)?;
                let count = self.u32()?;
                let mut items = Vec::with_capacity(count.min(self.bytes.len() - self.at));
                let mut previous: Option<&[u8]> = None;
                for _ in 0..count {
                    let start = self.at;
                    items.push(self.value(depth, builder)?);
                    let item = &self.bytes[start..self.at];
                    if previous.is_some_and(|previous| previous >= item) {
                        return Err(not_canonical("frozenset elements out of order or repeated"));
                    }
                    previous = Some(item);
                }
                builder.frozenset(items)
            }
            tag => Err(KeyBytesError::UnknownTag { tag, at: self.at - 1 }),
        }
    }

    fn nested(&self, depth: usize) -> Result<usize, KeyBytesError> {
        match depth < MAX_DEPTH {
            true => Ok(depth + 1),
            false => Err(KeyBytesError::TooDeep),
        }
    }

    /// An int value (tag 1 or 2), checked to be in its canonical form.
    fn int(&mut self) -> Result<IntValue<'a>, KeyBytesError> {
        match self.byte()? {
            tag::INT => Ok(IntValue::Small(self.u64()? as i64)),
            tag::BIG_INT => {
                let bytes = self.sized()?;
                let (top, next) = match bytes {
                    [.., next, top] => (*top, *next),
                    _ => return Err(not_canonical("a big int of fewer than 9 bytes")),
                };
                let redundant = (top == 0 && next & 0x80 == 0) || (top == 0xff && next & 0x80 != 0);
                if bytes.len() <= 8 || redundant {
                    return Err(not_canonical("a big int not in its fewest bytes, or within 64 bits"));
                }
                Ok(IntValue::Big(bytes))
            }
            other => Err(KeyBytesError::NotAnInt(other)),
        }
    }
}

/// The checks of a rational that need no big arithmetic: a denominator above 1, and, when
/// both fit in 64 bits, lowest terms and no float equal to it.
fn check_rational(numerator: IntValue<'_>, denominator: IntValue<'_>) -> Result<(), KeyBytesError> {
    let positive = match denominator {
        IntValue::Small(d) => d > 1,
        IntValue::Big(bytes) => bytes.last().is_some_and(|top| top & 0x80 == 0),
    };
    if !positive {
        return Err(not_canonical("a rational whose denominator is not above 1"));
    }
    if let (IntValue::Small(n), IntValue::Small(d)) = (numerator, denominator) {
        let (n, d) = (n.unsigned_abs(), d as u64);
        if gcd(n, d) != 1 {
            return Err(not_canonical("a rational not in lowest terms"));
        }
        if d.is_power_of_two() && n < 1 << 53 {
            return Err(not_canonical("a rational equal to a float"));
        }
    }
    Ok(())
}

fn not_canonical(what: &str) -> KeyBytesError {
    KeyBytesError::NotCanonical(what.to_owned())
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Checks only: builds nothing.
struct Check;

impl Builder for Check {
    type Value = ();
    fn none(&mut self) -> Result<(), KeyBytesError> {
        Ok(())
    }
    fn int(&mut self, _: IntValue<'_>) -> Result<(), KeyBytesError> {
        Ok(())
    }
    fn float(&mut self, _: f64) -> Result<(), KeyBytesError> {
        Ok(())
    }
    fn complex(&mut self, _: f64, _: f64) -> Result<(), KeyBytesError> {
        Ok(())
    }
    fn rational(&mut self, _: IntValue<'_>, _: IntValue<'_>) -> Result<(), KeyBytesError> {
        Ok(())
    }
    fn nan(&mut self) -> Result<(), KeyBytesError> {
        Ok(())
    }
    fn str(&mut self, _: &[u8]) -> Result<(), KeyBytesError> {
        Ok(())
    }
    fn bytes(&mut self, _: &[u8]) -> Result<(), KeyBytesError> {
        Ok(())
    }
    fn tuple(&mut self, _: Vec<()>) -> Result<(), KeyBytesError> {
        Ok(())
    }
    fn frozenset(&mut self, _: Vec<()>) -> Result<(), KeyBytesError> {
        Ok(())
    }
}

/// Builds the Python key.
struct Build<'py>(Python<'py>);

impl<'py> Build<'py> {
    fn int_object(&self, int: IntValue<'_>) -> PyResult<Bound<'py, PyAny>> {
        let py = self.0;
        match int {
            IntValue::Small(n) => Ok(n.into_pyobject(py)?.into_any()),
            IntValue::Big(bytes) => {
                let signed = [(intern!(py, "signed"), true)].into_py_dict(py)?;
                let args = (PyBytes::new(py, bytes), intern!(py, "little"));
                py.get_type::<PyInt>().call_method(intern!(py, "from_bytes"), args, Some(&signed))
            }
        }
    }

    fn fraction(&self, numerator: IntValue<'_>, denominator: IntValue<'_>) -> PyResult<Bound<'py, PyAny>> {
        static FRACTION: PyOnceLock<Py<PyType>> = PyOnceLock::new();
        let py = self.0;
        let (n, d) = (self.int_object(numerator)?, self.int_object(denominator)?);
        let fraction = FRACTION.import(py, "fractions", "Fraction")?.call1((&n, &d))?;
        let lowest = fraction.getattr(intern!(py, "denominator"))?.eq(&d)?;
        let float = py.get_type::<PyFloat>().call1((&fraction,));
        if !lowest || float.is_ok_and(|float| float.eq(&fraction).unwrap_or(true)) {
            return Err(PyValueError::new_err("a rational not in its canonical form"));
        }
        Ok(fraction)
    }
}

impl<'py> Builder for Build<'py> {
    type Value = Bound<'py, PyAny>;
    fn none(&mut self) -> Result<Self::Value, KeyBytesError> {
        Ok(self.0.None().into_bound(self.0))
    }
    fn int(&mut self, int: IntValue<'_>) -> Result<Self::Value, KeyBytesError> {
        self.int_object(int).map_err(KeyBytesError::Python)
    }
    fn float(&mut self, value: f64) -> Result<Self::Value, KeyBytesError> {
        Ok(PyFloat::new(self.0, value).into_any())
    }
    fn complex(&mut self, real: f64, imag: f64) -> Result<Self::Value, KeyBytesError> {
        Ok(PyComplex::from_doubles(self.0, real, imag).into_any())
    }
    fn rational(
        &mut self,
        numerator: IntValue<'_>,
        denominator: IntValue<'_>,
    ) -> Result<Self::Value, KeyBytesError> {
        self.fraction(numerator, denominator).map_err(KeyBytesError::Python)
    }
    fn nan(&mut self) -> Result<Self::Value, KeyBytesError> {
        Ok(PyFloat::new(self.0, f64::NAN).into_any())
    }
    fn str(&mut self, text: &[u8]) -> Result<Self::Value, KeyBytesError> {
        let py = self.0;
        match std::str::from_utf8(text) {
            Ok(text) => Ok(PyString::new(py, text).into_any()),
            Err(_) => PyBytes::new(py, text)
                .call_method1(intern!(py, "decode"), ("utf-8", "surrogatepass"))
                .map_err(KeyBytesError::Python),
        }
    }
    fn bytes(&mut self, bytes: &[u8]) -> Result<Self::Value, KeyBytesError> {
        Ok(PyBytes::new(self.0, bytes).into_any())
    }
    fn tuple(&mut self, items: Vec<Self::Value>) -> Result<Self::Value, KeyBytesError> {
        PyTuple::new(self.0, items).map(Bound::into_any).map_err(KeyBytesError::Python)
    }
    fn frozenset(&mut self, items: Vec<Self::Value>) -> Result<Self::Value, KeyBytesError> {
        PyFrozenSet::new(self.0, &items).map(Bound::into_any).map_err(KeyBytesError::Python)
    }
}
