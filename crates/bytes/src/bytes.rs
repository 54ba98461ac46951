//! [`Bytes`]: owned handles to disjoint regions of one shared allocation.
//!
//! This is the only module of the crate with `unsafe` code. It is sound because of these
//! invariants, which every function here keeps:
//!
//! 1. An `Allocation` owns the heap buffer of a `Vec<u8>` taken apart into its raw parts
//!    (pointer, length, capacity); its `len` bytes are initialized. The buffer is released
//!    exactly once: by `Allocation::drop`, or by `Allocation::into_vec`, which hands the parts
//!    back to a `Vec` and skips the drop.
//! 2. An `Allocation` never reads or writes its bytes; only [`Bytes`] handles do. Besides its
//!    drop and `into_vec` (both of which need the allocation by value, i.e. no handle is left),
//!    it is used only to compare addresses.
//! 3. Every [`Bytes`] holds an `Arc` of its allocation, so the buffer outlives the handle, and
//!    its region `ptr .. ptr + len` lies inside the allocation's `0 .. len`.
//! 4. The regions of the live [`Bytes`] of one allocation are pairwise disjoint. `From<Vec<u8>>`
//!    makes one handle covering everything; [`Bytes::extract_to`] cuts one region into two;
//!    [`Bytes::try_merge`] joins two adjacent regions and consumes one of the handles;
//!    [`Bytes::try_reclaim`] widens a region to the whole allocation only when its handle is the
//!    only one; [`Bytes::try_recover`] consumes the only handle. `Bytes` is not `Clone`.
//! 5. Uniqueness is decided by `Arc::get_mut` and `Arc::try_unwrap`, which synchronize with the
//!    release of every other handle (on any thread): whatever was written through those handles
//!    happens-before the single remaining owner touches the whole allocation.
//!
//! By 3 and 4, `&Bytes` lends a `&[u8]` and `&mut Bytes` a `&mut [u8]` that alias nothing else,
//! exactly like a `Box<[u8]>`; this is why `Bytes` may be `Send`, `Sync`, `Deref` and
//! `DerefMut`.
//!
//! Miri is not available on the project's machines (see the crate documentation), so these
//! invariants are checked by review and by the tests, not by Miri.

#![allow(unsafe_code)]

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;

/// The heap buffer of a `Vec<u8>`, held as raw parts so that no `Vec` (and no reference into
/// the buffer) exists while [`Bytes`] handles write to it.
struct Allocation {
    ptr: NonNull<u8>,
    len: usize,
    capacity: usize,
}

// SAFETY: an `Allocation` owns its buffer like a `Vec<u8>` does and touches it only when
// dropped or turned back into a `Vec`, both of which require sole ownership (invariant 2).
unsafe impl Send for Allocation {}
// SAFETY: a shared `&Allocation` gives no access to the bytes at all, only to their address.
unsafe impl Sync for Allocation {}

impl Allocation {
    fn new(vec: Vec<u8>) -> Self {
        let mut vec = ManuallyDrop::new(vec);
        // `as_mut_ptr` does not create a reference to the contents and is never null (it is
        // dangling but non-null for an empty vector).
        let ptr = NonNull::new(vec.as_mut_ptr()).expect("Vec::as_mut_ptr is never null");
        Allocation { ptr, len: vec.len(), capacity: vec.capacity() }
    }

    fn into_vec(self) -> Vec<u8> {
        let this = ManuallyDrop::new(self);
        // SAFETY: the parts come from a `Vec<u8>` (see `new`) and have not been given back yet;
        // `ManuallyDrop` keeps `Allocation::drop` from running, so the buffer changes owner once.
        unsafe { Vec::from_raw_parts(this.ptr.as_ptr(), this.len, this.capacity) }
    }

    fn start(&self) -> usize {
        self.ptr.as_ptr() as usize
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        // SAFETY: as in `into_vec`: the parts come from a `Vec<u8>`, and this drop runs at most
        // once and only for an allocation that `into_vec` did not take.
        drop(unsafe { Vec::from_raw_parts(self.ptr.as_ptr(), self.len, self.capacity) });
    }
}

/// An owned, thread-safe handle to a region of a shared byte allocation.
///
/// A `Bytes` dereferences to the bytes of its region, mutably too: no two live handles of
/// an allocation ever overlap, so writing through one never changes another. Splitting a region
/// with [`extract_to`](Bytes::extract_to) copies nothing. When every other handle of an
/// allocation has been dropped (on any thread), the last one can give the whole allocation back
/// with [`try_recover`](Bytes::try_recover) or take all of it over with
/// [`try_reclaim`](Bytes::try_reclaim), which is how receive buffers are recycled.
///
/// `Bytes` is deliberately not `Clone`: a second handle to the same bytes would break the
/// disjointness that makes mutable access safe.
///
/// # Example
///
/// ```
/// use timely_bytes::Bytes;
///
/// let mut rest = Bytes::from(b"headerpayload".to_vec());
/// let mut header = rest.extract_to(6);
/// assert_eq!(&header[..], b"header");
/// assert_eq!(&rest[..], b"payload");
///
/// header[0] = b'H'; // the regions are disjoint: `rest` is unaffected
/// assert_eq!(&rest[..], b"payload");
///
/// // While `rest` lives, `header` is not the only handle, so nothing can be recovered.
/// let mut header = header.try_recover().unwrap_err();
/// // Adjacent regions merge back into one ...
/// header.try_merge(rest).unwrap();
/// // ... which now is the only handle, so the original vector comes back.
/// assert_eq!(header.try_recover().unwrap(), b"Headerpayload".to_vec());
/// ```
pub struct Bytes {
    /// First byte of the region (invariant 3: inside `allocation`).
    ptr: NonNull<u8>,
    /// Length of the region.
    len: usize,
    /// Keeps the buffer alive; shared by all handles into it.
    allocation: Arc<Allocation>,
}

// SAFETY: a `Bytes` is the only way to reach its region (invariant 4) and keeps the buffer alive
// (invariant 3), so it behaves like a `Box<[u8]>`, which is `Send`; the `Arc<Allocation>` it
// holds is `Send` as well.
unsafe impl Send for Bytes {}
// SAFETY: `&Bytes` only lends `&[u8]` to its own region, which nobody else can write (invariant 4),
// like `&Box<[u8]>`.
unsafe impl Sync for Bytes {}

impl From<Vec<u8>> for Bytes {
    /// Takes ownership of the vector; the new handle covers its `len()` bytes (spare capacity is
    /// kept but not exposed, and comes back with [`try_recover`](Bytes::try_recover)).
    fn from(vec: Vec<u8>) -> Self {
        let allocation = Allocation::new(vec);
        Bytes { ptr: allocation.ptr, len: allocation.len, allocation: Arc::new(allocation) }
    }
}

impl Bytes {
    /// Makes a handle covering all of `boxed`.
    ///
    /// ```
    /// let bytes = timely_bytes::Bytes::from_boxed(vec![7u8; 4].into_boxed_slice());
    /// assert_eq!(&bytes[..], &[7, 7, 7, 7]);
    /// ```
    #[must_use]
    pub fn from_boxed(boxed: Box<[u8]>) -> Self {
        Bytes::from(Vec::from(boxed))
    }

    /// The number of bytes in this handle's region.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether this handle's region is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Splits off the first `index` bytes of the region and returns them as a new handle;
    /// `self` keeps the remaining `len() - index` bytes. Nothing is copied.
    ///
    /// # Panics
    ///
    /// If `index > self.len()`.
    ///
    /// ```
    /// let mut bytes = timely_bytes::Bytes::from(vec![1, 2, 3, 4, 5]);
    /// let front = bytes.extract_to(2);
    /// assert_eq!((&front[..], &bytes[..]), (&[1, 2][..], &[3, 4, 5][..]));
    /// ```
    #[must_use = "the extracted bytes are gone from `self`; drop them explicitly to discard them"]
    pub fn extract_to(&mut self, index: usize) -> Bytes {
        assert!(
            index <= self.len,
            "Bytes::extract_to: index {index} is past the end of a region of {} bytes",
            self.len
        );
        let front = Bytes { ptr: self.ptr, len: index, allocation: Arc::clone(&self.allocation) };
        // SAFETY: `index <= self.len`, so the new start is inside the region or one past its end,
        // which stays within (or one past) the allocation (invariant 3). The two regions
        // `[ptr, ptr + index)` and `[ptr + index, ptr + len)` are disjoint (invariant 4).
        self.ptr = unsafe { NonNull::new_unchecked(self.ptr.as_ptr().add(index)) };
        self.len -= index;
        front
    }

    /// Appends `other` to `self` if `other`'s region immediately follows `self`'s in the same
    /// allocation; otherwise hands `other` back unchanged.
    ///
    /// The order matters: `x.try_merge(y)` succeeds when `y` starts where `x` ends.
    ///
    /// # Errors
    ///
    /// Returns `other`, unchanged, if it belongs to another allocation or does not start
    /// exactly where `self` ends; `self` is unchanged then too.
    ///
    /// ```
    /// let mut rest = timely_bytes::Bytes::from(vec![1, 2, 3, 4]);
    /// let front = rest.extract_to(2); // front = [1, 2], rest = [3, 4]
    /// let mut front = rest.try_merge(front).unwrap_err(); // [3, 4] is not followed by [1, 2]
    /// front.try_merge(rest).unwrap();
    /// assert_eq!(&front[..], &[1, 2, 3, 4]);
    /// ```
    pub fn try_merge(&mut self, other: Bytes) -> Result<(), Bytes> {
        let adjacent = Arc::ptr_eq(&self.allocation, &other.allocation)
            && (self.ptr.as_ptr() as usize).wrapping_add(self.len) == other.ptr.as_ptr() as usize;
        if adjacent {
            // Both regions are disjoint parts of one allocation and touch, so their union is a
            // region of that allocation too; `other` is dropped, so the union is owned by
            // `self` alone and invariant 4 still holds.
            self.len += other.len;
            Ok(())
        } else {
            Err(other)
        }
    }

    /// Gives back the whole allocation as the `Vec<u8>` it was made from (same length and
    /// capacity, current contents) if `self` is its only remaining handle; otherwise returns
    /// `self` unchanged.
    ///
    /// Handles dropped on other threads count as gone, and what they wrote is visible in the
    /// returned vector.
    ///
    /// # Errors
    ///
    /// Returns `self`, unchanged, if another handle of the allocation is still alive.
    ///
    /// ```
    /// let mut bytes = timely_bytes::Bytes::from(vec![1, 2, 3]);
    /// let front = bytes.extract_to(1);
    /// let bytes = bytes.try_recover().unwrap_err(); // `front` is still alive
    /// drop(front);
    /// assert_eq!(bytes.try_recover().unwrap(), vec![1, 2, 3]);
    /// ```
    pub fn try_recover(self) -> Result<Vec<u8>, Bytes> {
        let Bytes { ptr, len, allocation } = self;
        match Arc::try_unwrap(allocation) {
            Ok(allocation) => Ok(allocation.into_vec()),
            Err(allocation) => Err(Bytes { ptr, len, allocation }),
        }
    }

    /// Widens `self` to cover its whole allocation if it is the only remaining handle, and
    /// returns whether it did. The contents are kept as they are.
    ///
    /// This recycles a buffer in place, without giving the allocation back and building a new
    /// handle (which would allocate a new reference count): it is what [`crate::BytesSlab`]
    /// uses.
    ///
    /// ```
    /// let mut bytes = timely_bytes::Bytes::from(vec![1, 2, 3]);
    /// let front = bytes.extract_to(1);
    /// assert!(!bytes.try_reclaim()); // `front` is still alive
    /// drop(front);
    /// assert!(bytes.try_reclaim());
    /// assert_eq!(&bytes[..], &[1, 2, 3]);
    /// ```
    pub fn try_reclaim(&mut self) -> bool {
        match Arc::get_mut(&mut self.allocation) {
            Some(allocation) => {
                // `self` is the only handle (invariant 5), so the whole allocation is disjoint
                // from every other live region: there are none.
                self.ptr = allocation.ptr;
                self.len = allocation.len;
                true
            }
            None => false,
        }
    }

    /// Offset of this region from the start of its allocation (for `Debug`).
    fn offset(&self) -> usize {
        self.ptr.as_ptr() as usize - self.allocation.start()
    }
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the region is initialized memory inside a live allocation (invariants 1, 3)
        // that no other handle can write (invariant 4), and `ptr` is non-null and trivially
        // aligned for `u8`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for Bytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; in addition no other handle can read or write the region
        // (invariant 4) and `&mut self` excludes other borrows of this handle, so the mutable
        // slice is unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl AsMut<[u8]> for Bytes {
    fn as_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl fmt::Debug for Bytes {
    /// Shows the region's place in its allocation and at most its first 16 bytes (regions can be
    /// megabytes long).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 16;
        let head = &self[..self.len.min(SHOWN)];
        f.debug_struct("Bytes")
            .field("len", &self.len)
            .field("offset", &self.offset())
            .field("allocation_len", &self.allocation.len)
            .field("head", &head)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::Bytes;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn is_send_and_sync() {
        assert_send_sync::<Bytes>();
    }

    #[test]
    fn extract_to_splits_without_overlap() {
        let mut rest = Bytes::from((0u8..10).collect::<Vec<_>>());
        let mut a = rest.extract_to(3);
        let mut b = rest.extract_to(0);
        assert_eq!((a.len(), b.len(), rest.len()), (3, 0, 7));
        assert!(b.is_empty());
        a.iter_mut().for_each(|x| *x = 0xAA);
        rest.iter_mut().for_each(|x| *x = 0xBB);
        b.iter_mut().for_each(|x| *x = 0xCC); // writes nothing
        assert_eq!(&a[..], &[0xAA; 3]);
        assert_eq!(&rest[..], &[0xBB; 7]);
        drop((a, b));
        assert_eq!(rest.try_recover().unwrap(), [[0xAA; 3].as_slice(), &[0xBB; 7]].concat());
    }

    #[test]
    fn extract_whole_region_leaves_empty_rest() {
        let mut rest = Bytes::from(vec![1, 2]);
        let all = rest.extract_to(2);
        assert_eq!(&all[..], &[1, 2]);
        assert!(rest.is_empty());
    }

    #[test]
    #[should_panic(expected = "index 4 is past the end of a region of 3 bytes")]
    fn extract_past_end_panics() {
        let mut bytes = Bytes::from(vec![0; 3]);
        let _ = bytes.extract_to(4);
    }

    #[test]
    fn recover_only_when_unique() {
        let mut rest = Bytes::from(vec![5; 8]);
        let front = rest.extract_to(4);
        let rest = rest.try_recover().expect_err("front is alive");
        let front = front.try_recover().expect_err("rest is alive");
        drop(rest);
        assert_eq!(front.try_recover().unwrap(), vec![5; 8]);
    }

    #[test]
    fn recover_keeps_capacity() {
        let mut vec = Vec::with_capacity(64);
        vec.extend_from_slice(b"abc");
        let recovered = Bytes::from(vec).try_recover().unwrap();
        assert_eq!(recovered, b"abc");
        assert_eq!(recovered.capacity(), 64);
    }

    #[test]
    fn merge_adjacent_in_order_only() {
        let mut c = Bytes::from(vec![1, 2, 3, 4, 5, 6]);
        let mut a = c.extract_to(2);
        let mut b = c.extract_to(2);
        // a = [1, 2], b = [3, 4], c = [5, 6]
        let c = a.try_merge(c).expect_err("a and c are not adjacent");
        let mut c = c;
        let b_back = c.try_merge(b).expect_err("c does not precede b");
        b = b_back;
        a.try_merge(b).unwrap();
        assert_eq!(&a[..], &[1, 2, 3, 4]);
        a.try_merge(c).unwrap();
        assert_eq!(a.try_recover().unwrap(), vec![1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn merge_refuses_other_allocation() {
        // Two vectors whose buffers could be adjacent in memory must still not merge.
        let mut a = Bytes::from(vec![1, 2]);
        let b = Bytes::from(vec![3, 4]);
        let b = a.try_merge(b).expect_err("different allocations");
        assert_eq!(&b[..], &[3, 4]);
        assert_eq!(&a[..], &[1, 2]);
    }

    #[test]
    fn reclaim_widens_to_whole_allocation() {
        let mut rest = Bytes::from(vec![1, 2, 3, 4]);
        let mut front = rest.extract_to(3);
        front[0] = 9;
        assert!(!rest.try_reclaim());
        assert_eq!(&rest[..], &[4]);
        drop(front);
        assert!(rest.try_reclaim());
        assert_eq!(&rest[..], &[9, 2, 3, 4]);
    }

    #[test]
    fn empty_vec_and_boxed() {
        let mut empty = Bytes::from(Vec::new());
        assert!(empty.is_empty());
        let nothing = empty.extract_to(0);
        empty.try_merge(nothing).unwrap();
        assert_eq!(empty.try_recover().unwrap(), Vec::<u8>::new());
        let boxed = Bytes::from_boxed(Box::new([1u8, 2, 3]));
        assert_eq!(boxed.as_ref(), &[1, 2, 3]);
    }

    #[test]
    fn debug_shows_place_and_head() {
        let mut rest = Bytes::from((0u8..40).collect::<Vec<_>>());
        let _front = rest.extract_to(2);
        let text = format!("{rest:?}");
        assert!(text.contains("len: 38"), "{text}");
        assert!(text.contains("offset: 2"), "{text}");
        assert!(text.contains("allocation_len: 40"), "{text}");
        assert!(text.contains("head: [2, 3,"), "{text}");
        assert!(!text.contains("18,"), "only 16 bytes are shown: {text}");
    }
}
