//! Opt-in abomonation encoding of plain records between processes: [`Abomonated<T>`].
//!
//! This module is the one place where the engine uses the `abomonation` crate (0.7.3). It
//! owns the wrapper [`Abomonated`], whose [`ExchangeData`] implementation writes a batch of
//! records as their memory image (abomonation's `encode`) and reads it back with
//! abomonation's `decode`, and the sealed trait [`Plain`], the audited list of types it may
//! be used with. It must not be used for anything else, and nothing else in the engine may
//! call into `abomonation`.
//!
//! # When it is safe to use
//!
//! Only for records exchanged **between the authenticated processes of one cluster, all
//! running the same build of the same program on the same kind of machine**. Every
//! connection of a cluster starts with an HMAC handshake over the cluster's id and secret
//! (`networking::handshake`), so the bytes a worker decodes were written by
//! [`ExchangeData::encode_batch`] of this module in a peer that knows the secret. That
//! holds only when
//!
//! - the secret (`TIMELY_CLUSTER_SECRET`) is set and known only to the cluster's processes:
//!   the default, empty secret lets any process that speaks the protocol in;
//! - no one can inject bytes into an established connection: the handshake authenticates
//!   the connection, not each frame after it (loopback, or a network the cluster trusts).
//!
//! Never decode bytes from any other source: a file, a socket that did not pass the
//! handshake, a process built by another compiler, for another target or from other
//! sources.
//!
//! # Why
//!
//! Abomonation copies a value's bytes, pointers included, and on decoding treats bytes as
//! a value and patches its pointers to point into the buffer. That is only sound when the
//! bytes are exactly what `encode` wrote for the same type layout, suitably aligned:
//!
//! - `Vec` and `String` headers are read as written; their field order and the valid
//!   range of their capacity are not a stable layout, so both ends need the same build.
//!   Arbitrary bytes there (or an `enum` discriminant, a `bool`, a `char`) are undefined
//!   behaviour, which no check after `decode` can undo.
//! - Endianness and pointer width are not recorded.
//! - Reading uninitialised padding bytes while encoding is undefined behaviour.
//! - Values must be aligned; network payloads are not.
//!
//! Upstream timely dataflow removed abomonation after soundness bugs of exactly these
//! kinds. This module keeps it behind the following restrictions, each enforced in code:
//!
//! 1. **Only audited types.** [`Plain`] is sealed and implemented here for: the integers
//!    `u8`..`u64`, `i8`..`i64`, `usize`, `isize` and `f32`, `f64` (every bit pattern is a
//!    value); arrays `[F; N]` (N ≤ 32) and tuples of two to four of those ([`Fixed`] types,
//!    no owned memory); `String` (checked to be UTF-8 after decoding); `Vec<F>` for a
//!    [`Fixed`] `F`. Not `bool`, `char`, `NonZero*`, `Option`, enums or references (invalid
//!    bit patterns), not 128-bit integers (alignment 16), not zero-sized types, not user
//!    structs (abomonation's derive and `unsafe_abomonate!` are not audited).
//! 2. **No padding.** A tuple whose fields leave padding (like `(u64, u32)`) fails to
//!    compile when it is encoded (a `const` assertion on [`Plain::PADDING_FREE`]).
//! 3. **Alignment.** Records that own memory (`String`, `Vec`) are decoded from a copy of
//!    the payload in an 8-byte-aligned scratch buffer (every audited type has alignment
//!    ≤ 8, asserted at compile time), and each record's encoding is padded to a multiple
//!    of its type's alignment, so every value and every `Vec` body lands on an aligned
//!    address before abomonation's `decode` looks at it. [`Fixed`] records are copied
//!    straight into the (aligned) vector that is returned.
//! 4. **Lengths.** The record count is checked against the payload size before anything
//!    is allocated; `decode` returning `None` (short input) is an error; trailing bytes
//!    are an error. Truncated or over-long input is therefore an `Err`, never a panic or
//!    a read out of bounds.
//!
//! What remains trusted is the *content* of well-sized input (the `Vec`/`String` headers
//! inside it), which is why the first section limits the peers.
//!
//! # Alternatives
//!
//! bincode through serde is the default: every serde type is [`ExchangeData`] without a
//! wrapper, and its decoder checks every length and value, so it is safe on any input.
//! Prefer it unless a benchmark shows the codec matters (`benches/benches/codecs.rs`,
//! `docs/benchmarks.md`, section "Cluster"). Inside one process records are never
//! encoded at all, whichever codec a type has.
//!
//! # Format
//!
//! A batch is the record count as a little-endian `u64`, then, per record, abomonation's
//! encoding (the value's bytes followed by those of its owned memory) padded with zeros
//! to a multiple of the type's alignment. For a [`Fixed`] type that is the records' bytes
//! back to back, so such batches are written and read with one copy each (the same bytes
//! `abomonation::encode` writes per record; a test checks they are equal).
//!
//! Decoding returns owned records (`ExchangeData::decode_batch` returns a `Vec`), so it
//! copies once: abomonation saves parsing, not the copy. Strings and vectors are cloned
//! out of the scratch buffer, one allocation each, as with bincode.
//!
//! # Every `unsafe` in this module
//!
//! - `unsafe trait Plain` and its `unsafe impl`s: the audit of each type (see the trait).
//! - `encode_batch`: the byte view of a batch of fixed records.
//! - `decode_batch`: the copy of fixed records into the returned vector and its `set_len`.
//! - `encode_each`: the call to `abomonation::encode`.
//! - `decode_each`: the call to `abomonation::decode`.
//! - `with_aligned_copy`: the byte view of the `u64` scratch buffer.
//!
//! Each carries a `SAFETY` comment.
//!
//! ```
//! use timely_engine::dataflow::{Abomonated, ExchangeData};
//!
//! let batch = vec![Abomonated(String::from("plain")), Abomonated(String::from("data"))];
//! let mut bytes = Vec::new();
//! Abomonated::encode_batch(&batch, &mut bytes);
//! assert_eq!(Abomonated::<String>::decode_batch(&bytes).unwrap(), batch);
//! assert!(Abomonated::<String>::decode_batch(&bytes[..bytes.len() - 1]).is_err());
//! ```
//!
//! A type with padding is refused when it is encoded:
//!
//! ```compile_fail
//! use timely_engine::dataflow::{Abomonated, ExchangeData};
//!
//! let mut bytes = Vec::new();
//! Abomonated::encode_batch(&[Abomonated((1u64, 2u32))], &mut bytes);
//! ```

use super::channels::ExchangeData;
use abomonation::Abomonation;
use std::cell::RefCell;
use std::mem::{align_of, size_of};
use timely_communication::exchangeable::DecodeError;

/// A record exchanged between processes with abomonation instead of bincode.
///
/// Wrap the records of a stream in `Abomonated` (`stream.map(Abomonated)`) to exchange
/// them this way; see the [module documentation](self) for when that is allowed. Inside
/// a process it behaves exactly like `T`.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Abomonated<T>(pub T);

impl<T> Abomonated<T> {
    /// The wrapped record.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> From<T> for Abomonated<T> {
    fn from(value: T) -> Self {
        Abomonated(value)
    }
}

impl<T> std::ops::Deref for Abomonated<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for Abomonated<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

mod sealed {
    /// Keeps [`super::Plain`] implemented only by this module.
    pub trait Sealed {}
}

/// The types this module has audited for abomonation (sealed; the list is in the
/// [module documentation](self)).
///
/// # Safety
///
/// An implementing type has no references, no pointers other than the owned buffers
/// abomonation fixes up (`Vec`, `String`), no value-range invariants that arbitrary bits
/// in its fixed-size part could break (other than those of `Vec`/`String` headers, which
/// are trusted, see the module documentation), alignment at most 8, a size that is not
/// zero, and [`Plain::valid`] checks whatever decoding cannot (UTF-8).
pub unsafe trait Plain: sealed::Sealed + Abomonation + Clone + Send + 'static {
    /// True when neither the type nor any part of it has padding bytes.
    const PADDING_FREE: bool;

    /// True when values own memory that abomonation writes after them (`String`, `Vec`);
    /// false for [`Fixed`] types, whose encoding is their bytes.
    const OWNS_MEMORY: bool;

    /// Checks invariants of a decoded value that abomonation does not (UTF-8 of strings).
    fn valid(&self) -> bool {
        true
    }
}

/// [`Plain`] types without owned memory: their encoding is their bytes.
pub trait Fixed: Plain + Copy {}

macro_rules! numbers {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        // SAFETY: a primitive number: every bit pattern is a value, no pointers, no
        // padding, alignment at most 8 and size at least 1 on every supported target.
        unsafe impl Plain for $t {
            const PADDING_FREE: bool = true;
            const OWNS_MEMORY: bool = false;
        }
        impl Fixed for $t {}
    )*};
}

numbers!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);

impl<F: Fixed, const N: usize> sealed::Sealed for [F; N] where [F; N]: Abomonation {}
// SAFETY: an array of fixed types is as plain as its element (its size is `N` times the
// element's, so no padding is added); abomonation implements arrays only for N <= 32, and
// N = 0 (size zero) is refused by the assertions in `encode_batch` and `decode_batch`.
unsafe impl<F: Fixed, const N: usize> Plain for [F; N]
where
    [F; N]: Abomonation,
{
    const PADDING_FREE: bool = F::PADDING_FREE;
    const OWNS_MEMORY: bool = false;
}
impl<F: Fixed, const N: usize> Fixed for [F; N] where [F; N]: Abomonation {}

macro_rules! tuples {
    ($(($($f:ident),+)),*) => {$(
        impl<$($f: Fixed),+> sealed::Sealed for ($($f,)+) {}
        // SAFETY: a tuple of fixed types has no pointers and every bit pattern of its
        // fields is a value; padding between fields is detected by `PADDING_FREE`
        // (the size equals the sum of the fields' sizes) and refused at compile time.
        unsafe impl<$($f: Fixed),+> Plain for ($($f,)+) {
            const PADDING_FREE: bool =
                $($f::PADDING_FREE &&)+ size_of::<($($f,)+)>() == 0 $(+ size_of::<$f>())+;
            const OWNS_MEMORY: bool = false;
        }
        impl<$($f: Fixed),+> Fixed for ($($f,)+) {}
    )*};
}

tuples!((A, B), (A, B, C), (A, B, C, D));

impl sealed::Sealed for String {}
// SAFETY: abomonation writes the bytes after the header and points the decoded header at
// them (alignment 1); `valid` checks UTF-8, so a decoded string is never used as `str`
// before that is known. The header (pointer, capacity, length) has no padding.
unsafe impl Plain for String {
    const PADDING_FREE: bool = true;
    const OWNS_MEMORY: bool = true;

    fn valid(&self) -> bool {
        std::str::from_utf8(self.as_bytes()).is_ok()
    }
}

impl<F: Fixed> sealed::Sealed for Vec<F> {}
// SAFETY: abomonation writes the elements after the header and points the decoded header
// at them. Elements are fixed (no pointers, every bit pattern a value); the body starts at
// a multiple of 8 (the header's size and alignment) and is a multiple of the element's
// size, so it is aligned for `F` (alignment at most 8).
unsafe impl<F: Fixed> Plain for Vec<F> {
    const PADDING_FREE: bool = F::PADDING_FREE;
    const OWNS_MEMORY: bool = true;
}

/// The alignment of the scratch buffer, at least that of every [`Plain`] type.
const SCRATCH_ALIGN: usize = align_of::<u64>();
/// The largest scratch buffer a thread keeps between batches, in `u64` words (4 MiB).
const SCRATCH_KEPT_WORDS: usize = 1 << 19;

thread_local! {
    /// The aligned copy of the payload being decoded, kept between batches.
    static SCRATCH: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// `length` rounded up to a multiple of `align` (a power of two).
fn padded(length: usize, align: usize) -> usize {
    (length + align - 1) & !(align - 1)
}

impl<T: Plain> ExchangeData for Abomonated<T> {
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>) {
        const {
            assert!(T::PADDING_FREE, "Abomonated<T>: T has padding bytes, which abomonation would read");
            assert!(align_of::<T>() <= SCRATCH_ALIGN && size_of::<T>() > 0);
        }
        out.extend_from_slice(&(batch.len() as u64).to_le_bytes());
        if T::OWNS_MEMORY {
            encode_each(batch, out);
        } else {
            // SAFETY: a fixed `T` has no padding (asserted above), so every byte of the
            // batch is initialised; `Abomonated<T>` is `repr(transparent)`, so the slice's
            // bytes are the records' bytes, which is abomonation's encoding of each record
            // (its `entomb` writes nothing) with no padding (size is a multiple of the
            // alignment). The byte slice lives only while `batch` is borrowed.
            let bytes =
                unsafe { std::slice::from_raw_parts(batch.as_ptr().cast::<u8>(), size_of_val(batch)) };
            out.extend_from_slice(bytes);
        }
    }

    fn decode_batch(bytes: &[u8]) -> Result<Vec<Self>, DecodeError> {
        let mut records = Vec::new();
        Self::decode_batch_into(bytes, &mut records)?;
        Ok(records)
    }

    fn decode_batch_into(bytes: &[u8], into: &mut Vec<Self>) -> Result<(), DecodeError> {
        const {
            assert!(align_of::<T>() <= SCRATCH_ALIGN && size_of::<T>() > 0);
        }
        let (count, payload) = match bytes.split_first_chunk::<8>() {
            Some((count, payload)) => (u64::from_le_bytes(*count), payload),
            None => return Err(malformed::<T>(format!("shorter than its count ({} bytes)", bytes.len()))),
        };
        // Every record takes at least `size_of::<T>()` bytes: refuse counts the payload
        // cannot hold before allocating for them.
        let count = usize::try_from(count)
            .ok()
            .filter(|count| count.checked_mul(size_of::<T>()).is_some_and(|size| size <= payload.len()))
            .ok_or_else(|| malformed::<T>(format!("{count} records in {} bytes", payload.len())))?;
        if T::OWNS_MEMORY {
            decode_each(count, payload, into)
        } else if payload.len() == count * size_of::<T>() {
            into.reserve(count);
            // SAFETY: after `reserve`, the vector's buffer has room for `count` more records
            // past its length, aligned for `T` (`Abomonated<T>` is `repr(transparent)`), that
            // is `payload.len()` bytes, so this is the aligned copy and it stays in bounds; the
            // regions do not overlap (the payload is not the vector's). A fixed `T` has no
            // pointers and every bit pattern of its size is a value (the `Plain` audit), so
            // the `count` new records are initialised and valid, which is all `set_len`
            // requires; abomonation's `decode` would only check the length, as done above,
            // and return a reference to these same bytes.
            unsafe {
                let end = into.as_mut_ptr().add(into.len());
                std::ptr::copy_nonoverlapping(payload.as_ptr(), end.cast::<u8>(), payload.len());
                into.set_len(into.len() + count);
            }
            Ok(())
        } else {
            Err(malformed::<T>(format!("{count} records in {} bytes", payload.len())))
        }
    }
}

/// Appends abomonation's encoding of every record, each padded to `T`'s alignment.
fn encode_each<T: Plain>(batch: &[Abomonated<T>], out: &mut Vec<u8>) {
    let start = out.len();
    out.reserve(batch.iter().map(|record| padded(abomonation::measure(&record.0), align_of::<T>())).sum());
    for record in batch {
        // SAFETY: `encode` reads the record's bytes and those of its owned memory:
        // `T: Plain` has no padding (asserted by the caller), so every byte read is
        // initialised, and no pointer it copies is ever followed by the reader before
        // `decode` replaces it. Writing into a `Vec<u8>` cannot fail.
        unsafe { abomonation::encode(&record.0, out) }.expect("writing to a Vec<u8> cannot fail");
        let length = out.len() - start;
        out.resize(start + padded(length, align_of::<T>()), 0);
    }
}

/// Appends the `count` records written by [`encode_each`] in `payload` (after the count) to
/// `records`.
fn decode_each<T: Plain>(
    count: usize,
    payload: &[u8],
    records: &mut Vec<Abomonated<T>>,
) -> Result<(), DecodeError> {
    records.reserve(count);
    with_aligned_copy(payload, |aligned| {
        let mut offset = 0;
        for index in 0..count {
            let rest = aligned.get_mut(offset..).ok_or_else(|| truncated::<T>(index, count))?;
            let available = rest.len();
            // SAFETY: `rest` starts at a multiple of `align_of::<T>()` from the start of the
            // 8-aligned scratch buffer (every record's encoding was padded to that multiple),
            // so the value and, by the `Plain` audit, its owned memory are aligned. `decode`
            // checks that the bytes it reads are within `rest` and returns `None` otherwise.
            // The bytes were written by `encode_each` for the same `T` in a peer of the same
            // build (the module's contract), so the value's fixed part is valid. The decoded
            // value points into `aligned`; it is only checked and cloned below, and never
            // dropped or used after this closure.
            let (record, left) =
                unsafe { abomonation::decode::<T>(rest) }.ok_or_else(|| truncated::<T>(index, count))?;
            if !record.valid() {
                return Err(malformed::<T>(format!("record {index} of {count} is not a valid value")));
            }
            records.push(Abomonated(record.clone()));
            offset += padded(available - left.len(), align_of::<T>());
        }
        if offset == aligned.len() {
            Ok(())
        } else {
            Err(malformed::<T>(format!(
                "{count} records with {} bytes left over",
                aligned.len().saturating_sub(offset)
            )))
        }
    })
}

fn truncated<T>(index: usize, count: usize) -> DecodeError {
    malformed::<T>(format!("{count} records cut short at record {index}"))
}

/// A batch of abomonated `T`s that does not read, for `reason`.
fn malformed<T>(reason: String) -> DecodeError {
    DecodeError::Malformed { what: std::any::type_name::<Vec<T>>(), reason }
}

/// Runs `decode` on a copy of `payload` whose first byte is aligned to [`SCRATCH_ALIGN`].
fn with_aligned_copy<R>(payload: &[u8], decode: impl FnOnce(&mut [u8]) -> R) -> R {
    SCRATCH.with(|scratch| {
        // A decode never starts another one on this thread; if it did, use a fresh buffer.
        let mut fresh = Vec::new();
        let mut borrowed = scratch.try_borrow_mut();
        let words = match borrowed.as_deref_mut() {
            Ok(words) => words,
            Err(_) => &mut fresh,
        };
        let needed = payload.len().div_ceil(size_of::<u64>());
        if words.len() < needed {
            words.resize(needed, 0);
        }
        // SAFETY: the `u64` buffer is initialised and at least `payload.len()` bytes long;
        // viewing initialised memory as bytes is valid, and the view borrows `words`
        // mutably, so nothing else aliases it while it lives.
        let bytes = unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), payload.len()) };
        bytes.copy_from_slice(payload);
        let result = decode(bytes);
        // Keep the buffer for the next batch, unless one huge batch would pin its memory.
        if words.len() > SCRATCH_KEPT_WORDS {
            *words = Vec::new();
        }
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataflow::Message;
    use timely_communication::Exchangeable;

    #[test]
    fn batches_decode_after_what_a_vector_holds() {
        let mut into = vec![Abomonated(1u64)];
        Abomonated::<u64>::decode_batch_into(&encoded(&[2u64, 3]), &mut into).unwrap();
        assert_eq!(into, [Abomonated(1), Abomonated(2), Abomonated(3)]);
        let mut into = vec![Abomonated(String::from("a"))];
        Abomonated::<String>::decode_batch_into(&encoded(&[String::from("b")]), &mut into).unwrap();
        assert_eq!(into, [Abomonated(String::from("a")), Abomonated(String::from("b"))]);
    }

    fn encoded<T: Plain>(records: &[T]) -> Vec<u8> {
        let batch: Vec<Abomonated<T>> = records.iter().cloned().map(Abomonated).collect();
        let mut bytes = Vec::new();
        Abomonated::encode_batch(&batch, &mut bytes);
        bytes
    }

    /// Round trip, then every strict prefix and one trailing byte must be errors.
    fn check<T: Plain + PartialEq + std::fmt::Debug>(records: Vec<T>) {
        let bytes = encoded(&records);
        let decoded = Abomonated::<T>::decode_batch(&bytes).expect("round trip");
        assert_eq!(decoded.into_iter().map(Abomonated::into_inner).collect::<Vec<_>>(), records);
        for cut in 0..bytes.len() {
            assert!(Abomonated::<T>::decode_batch(&bytes[..cut]).is_err(), "{cut} of {} bytes", bytes.len());
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Abomonated::<T>::decode_batch(&longer).is_err(), "a trailing byte");
    }

    #[test]
    fn audited_types_round_trip_and_reject_truncation() {
        check(vec![0u64, 1, u64::MAX, 42]);
        check(vec![(1u64, 2u64), (u64::MAX, 0)]);
        check(vec![vec![1u64, 2, 3], vec![], vec![u64::MAX]]);
        check(vec![String::from("timely"), String::new(), String::from("données"), String::from("x")]);
        check(vec![[1u32, 2, 3], [4, 5, 6]]);
        check(vec![(1u8, 2u8, 3u8, 4u8), (5, 6, 7, 8)]);
        check(vec![vec![1u16, 2, 3], vec![4]]);
        check(vec![-1.5f64, f64::INFINITY]);
        check(Vec::<u64>::new());
    }

    #[test]
    fn odd_lengths_keep_later_records_aligned() {
        // Strings of every length mod 8 followed by more strings; and through a message
        // whose header shifts the payload to an odd offset.
        let records: Vec<String> = (0..20).map(|n| "a".repeat(n)).collect();
        check(records.clone());
        let message = Message::new(7u64, records.into_iter().map(Abomonated).collect::<Vec<_>>(), 1);
        let mut bytes = Vec::new();
        message.encode(&mut bytes);
        let decoded = Message::<u64, Abomonated<String>>::decode(&bytes).expect("message");
        assert_eq!(decoded, message);
        for cut in 0..bytes.len() {
            assert!(
                Message::<u64, Abomonated<String>>::decode(&bytes[..cut]).is_err(),
                "message cut at {cut}"
            );
        }
    }

    #[test]
    fn malformed_counts_and_text_are_errors() {
        // A count far beyond the payload is refused before allocating.
        let mut bytes = u64::MAX.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[0; 16]);
        let error = Abomonated::<u64>::decode_batch(&bytes).unwrap_err().to_string();
        assert!(error.contains("in 16 bytes"), "{error}");
        // Bytes that are not UTF-8 in a string body are refused.
        let mut bytes = encoded(&[String::from("ab")]);
        let body = bytes.len() - 8; // the two bytes, then six of padding
        bytes[body] = 0xff;
        let error = Abomonated::<String>::decode_batch(&bytes).unwrap_err().to_string();
        assert!(error.contains("not a valid"), "{error}");
    }

    #[test]
    fn fixed_batches_are_abomonations_encoding() {
        let records: Vec<Abomonated<(u32, u32, u64)>> =
            (0..10).map(|i| Abomonated((i, i * 3, u64::from(i) << 40))).collect();
        let mut direct = Vec::new();
        Abomonated::encode_batch(&records, &mut direct);
        let mut each = (records.len() as u64).to_le_bytes().to_vec();
        encode_each(&records, &mut each);
        assert_eq!(direct, each);
        let mut decoded = Vec::new();
        decode_each::<(u32, u32, u64)>(records.len(), &each[8..], &mut decoded).unwrap();
        assert_eq!(decoded, records);
    }

    #[test]
    fn padding_is_detected() {
        const {
            assert!(<(u64, u64)>::PADDING_FREE);
            assert!(<(u32, u32, u64)>::PADDING_FREE);
            assert!(!<(u64, u32)>::PADDING_FREE);
            assert!(!<(u8, u16)>::PADDING_FREE);
            assert!(!<Vec<(u16, u8)>>::PADDING_FREE);
        }
    }
}
