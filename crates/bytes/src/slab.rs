//! [`BytesSlab`]: receive bytes into large buffers, hand out message-sized [`Bytes`].
//!
//! Safe code only: everything unsafe is behind [`Bytes`].

use std::fmt;

use crate::bytes::Bytes;

/// Receives bytes into large buffers and hands out message-sized [`Bytes`] without copying.
///
/// A network receive thread uses it in a loop:
///
/// 1. parse message headers in [`valid`](Self::valid) and [`extract`](Self::extract) every
///    complete message (each becomes an owned [`Bytes`] that can travel to any thread);
/// 2. call [`ensure_capacity`](Self::ensure_capacity) with at least the number of bytes the
///    incomplete message at the front of `valid()` still lacks (or the size of a header, when
///    its length is not known yet);
/// 3. `read()` from the socket into [`empty`](Self::empty), and pass the count read to
///    [`make_valid`](Self::make_valid).
///
/// # Buffers and recycling
///
/// Buffers hold `1 << log2_capacity` bytes by default, or the next power of two of a message
/// that does not fit in one. When the current buffer is too full, the slab moves on to another
/// one and keeps the old one aside until every [`Bytes`] handed out from it has been dropped
/// (anywhere, on any thread); then the buffer is reused as it is. The current buffer itself is
/// reused in place when nothing handed out from it is alive any more. The slab allocates only
/// when no kept buffer is free and large enough, so a receiver whose consumers drop their
/// messages allocates nothing in steady state. Kept buffers are never given back by
/// themselves, so the slab's memory is its high-water mark; see
/// [`release_spare_buffers`](Self::release_spare_buffers).
///
/// # Copying
///
/// Bytes are copied only inside `ensure_capacity`, and only when it must switch buffers (or
/// move to the start of the current one); it then copies exactly the `valid()` bytes, once, to
/// the front of the new buffer. With the loop above, those are the received part of one
/// incomplete message whose tail straddled the end of the buffer, and the new buffer is large
/// enough for all of the message that `ensure_capacity` was told about, so none of its bytes is
/// copied again. The one exception: bytes received *before* the message's length was known (a
/// partial header) are copied a second time if the message turns out to be larger than the
/// free space of the buffer they were moved to. Complete messages are never copied; the
/// statistics count every byte copied ([`SlabStats::bytes_copied`]).
///
/// # Example
///
/// ```
/// use std::io::Read;
/// use timely_bytes::BytesSlab;
///
/// // A stream of messages, each preceded by its length in one byte.
/// let bodies: [&[u8]; 3] = [b"hello", b"slab", b"!"];
/// let stream: Vec<u8> = bodies
///     .iter()
///     .flat_map(|m| std::iter::once(m.len() as u8).chain(m.iter().copied()))
///     .collect();
/// let mut socket = &stream[..]; // anything that implements `Read`
///
/// let mut slab = BytesSlab::new(3); // tiny 8-byte buffers, so that messages straddle them
/// let mut messages = Vec::new();
/// loop {
///     // 1. Hand out every complete message at the front of `valid()`.
///     while let Some(&len) = slab.valid().first() {
///         let len = usize::from(len);
///         if slab.valid().len() < 1 + len {
///             break;
///         }
///         let _length = slab.extract(1);
///         messages.push(slab.extract(len));
///     }
///     // 2. Make room for the rest of the incomplete message (or for a length byte).
///     let missing = match slab.valid().first() {
///         Some(&len) => 1 + usize::from(len) - slab.valid().len(),
///         None => 1,
///     };
///     slab.ensure_capacity(missing);
///     // 3. Read.
///     let read = socket.read(slab.empty()).unwrap();
///     if read == 0 {
///         break;
///     }
///     slab.make_valid(read);
/// }
/// let received: Vec<&[u8]> = messages.iter().map(|m| &m[..]).collect();
/// assert_eq!(received, bodies);
/// ```
pub struct BytesSlab {
    /// The current buffer, from its first valid byte to the end of its allocation.
    buffer: Bytes,
    /// How many bytes at the front of `buffer` are valid (received, not handed out).
    valid: usize,
    /// Size of a new buffer unless a message needs more.
    default_size: usize,
    /// Buffers left behind that still have handed-out `Bytes` alive: the rest of each.
    pending: Vec<Bytes>,
    /// Buffers free for reuse, each covering its whole allocation.
    spare: Vec<Bytes>,
    /// Counters (the gauges of `SlabStats` are filled in by `stats()`).
    stats: SlabStats,
}

/// Statistics of a [`BytesSlab`], from [`BytesSlab::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlabStats {
    /// Buffers allocated since the slab was made (the first one included).
    pub buffers_allocated: usize,
    /// Total size in bytes of the buffers allocated.
    pub bytes_allocated: usize,
    /// Total size in bytes of the buffers freed by [`BytesSlab::release_spare_buffers`].
    pub bytes_released: usize,
    /// Times the slab moved to a buffer it already had instead of allocating one.
    pub buffers_reused: usize,
    /// Bytes copied when moving valid bytes to another buffer or to the start of one.
    pub bytes_copied: usize,
    /// Buffers left behind whose handed-out [`Bytes`] are not all dropped yet (a gauge).
    pub buffers_pending: usize,
    /// Buffers free for reuse (a gauge).
    pub buffers_spare: usize,
}

impl BytesSlab {
    /// Makes a slab whose buffers hold `1 << log2_capacity` bytes by default (20 gives 1 MiB),
    /// and allocates its first buffer.
    ///
    /// # Panics
    ///
    /// If `1 << log2_capacity` does not fit in a `usize`, or cannot be allocated.
    ///
    /// ```
    /// let slab = timely_bytes::BytesSlab::new(20);
    /// assert_eq!(slab.buffers_allocated(), 1);
    /// ```
    #[must_use]
    pub fn new(log2_capacity: usize) -> Self {
        assert!(
            log2_capacity < usize::BITS as usize,
            "BytesSlab::new: 1 << {log2_capacity} does not fit in a usize"
        );
        let default_size = 1usize << log2_capacity;
        let mut slab = BytesSlab {
            buffer: Bytes::from(Vec::new()),
            valid: 0,
            default_size,
            pending: Vec::new(),
            spare: Vec::new(),
            stats: SlabStats::default(),
        };
        slab.buffer = slab.allocate(default_size);
        slab
    }

    /// The free space after the valid bytes, to be written into (e.g. by `read()`), then
    /// declared with [`make_valid`](Self::make_valid).
    ///
    /// It can be empty: call [`ensure_capacity`](Self::ensure_capacity) before each read (a
    /// `read` into an empty slice returns 0, which looks like the end of the stream). Its
    /// contents are stale bytes, not zeros.
    pub fn empty(&mut self) -> &mut [u8] {
        let valid = self.valid;
        &mut self.buffer[valid..]
    }

    /// Declares the first `bytes` bytes of [`empty`](Self::empty) written: they become the
    /// last bytes of [`valid`](Self::valid).
    ///
    /// # Panics
    ///
    /// If `bytes` is larger than `empty().len()`.
    ///
    /// ```
    /// let mut slab = timely_bytes::BytesSlab::new(4);
    /// slab.empty()[..2].copy_from_slice(b"hi");
    /// slab.make_valid(2);
    /// assert_eq!(slab.valid(), b"hi");
    /// ```
    pub fn make_valid(&mut self, bytes: usize) {
        let empty = self.buffer.len() - self.valid;
        assert!(bytes <= empty, "BytesSlab::make_valid: {bytes} bytes declared but empty() has only {empty}");
        self.valid += bytes;
    }

    /// The bytes received and not yet handed out, oldest first.
    #[must_use]
    pub fn valid(&self) -> &[u8] {
        &self.buffer[..self.valid]
    }

    /// Hands out the first `bytes` bytes of [`valid`](Self::valid) as an owned [`Bytes`],
    /// without copying them.
    ///
    /// # Panics
    ///
    /// If `bytes` is larger than `valid().len()`.
    ///
    /// ```
    /// let mut slab = timely_bytes::BytesSlab::new(4);
    /// slab.empty()[..5].copy_from_slice(b"hello");
    /// slab.make_valid(5);
    /// let he = slab.extract(2);
    /// assert_eq!((&he[..], slab.valid()), (&b"he"[..], &b"llo"[..]));
    /// ```
    pub fn extract(&mut self, bytes: usize) -> Bytes {
        assert!(
            bytes <= self.valid,
            "BytesSlab::extract: {bytes} bytes requested but only {} are valid",
            self.valid
        );
        self.valid -= bytes;
        self.buffer.extract_to(bytes)
    }

    /// Makes sure that [`empty`](Self::empty) has at least `capacity` bytes.
    ///
    /// If the current buffer lacks room, the valid bytes are copied (once) to the front of
    /// another buffer of at least `valid().len() + capacity` bytes: the current buffer itself
    /// if nothing handed out from it is still alive and it is large enough, else the smallest
    /// free kept buffer that is large enough, else a new one (see the type's documentation on
    /// recycling and copying).
    ///
    /// # Panics
    ///
    /// If `valid().len() + capacity` overflows a `usize` or cannot be allocated.
    ///
    /// ```
    /// let mut slab = timely_bytes::BytesSlab::new(4); // 16-byte buffers
    /// slab.ensure_capacity(100);                     // grows to a 128-byte buffer
    /// assert!(slab.empty().len() >= 100);
    /// ```
    pub fn ensure_capacity(&mut self, capacity: usize) {
        if self.buffer.len() - self.valid >= capacity {
            return;
        }
        let needed = self
            .valid
            .checked_add(capacity)
            .expect("BytesSlab::ensure_capacity: valid bytes plus capacity overflow a usize");
        self.switch_buffer(needed);
    }

    /// Buffers allocated since the slab was made (the first one included). Constant in
    /// steady state.
    #[must_use]
    pub fn buffers_allocated(&self) -> usize {
        self.stats.buffers_allocated
    }

    /// All the statistics of the slab.
    #[must_use]
    pub fn stats(&self) -> SlabStats {
        SlabStats { buffers_pending: self.pending.len(), buffers_spare: self.spare.len(), ..self.stats }
    }

    /// Frees the kept buffers that are free for reuse (after checking which left-behind buffers
    /// have become free), to give memory back after a burst. The current buffer and buffers
    /// with handed-out [`Bytes`] still alive are kept.
    pub fn release_spare_buffers(&mut self) {
        self.collect_pending();
        self.stats.bytes_released += self.spare.iter().map(|buffer| buffer.len()).sum::<usize>();
        self.spare = Vec::new();
    }

    /// Bytes of the buffers the slab holds: the current one, those left behind with handed-out
    /// [`Bytes`] alive, and the spare ones.
    #[must_use]
    pub fn held_bytes(&self) -> usize {
        self.stats.bytes_allocated - self.stats.bytes_released
    }

    /// Moves the valid bytes to the front of a buffer of at least `needed` bytes.
    fn switch_buffer(&mut self, needed: usize) {
        let valid = self.valid;
        let old_len = self.buffer.len();
        // Where the valid bytes start in `self.buffer`: 0 unless it was widened below.
        let mut from = 0;
        if self.buffer.try_reclaim() {
            // Nothing handed out from the current buffer is alive: it now covers its whole
            // allocation, and the valid bytes sit at the offset it had reached.
            from = self.buffer.len() - old_len;
            if self.buffer.len() >= needed {
                self.buffer.copy_within(from..from + valid, 0);
                self.stats.bytes_copied += valid;
                self.stats.buffers_reused += 1;
                return;
            }
        }
        self.collect_pending();
        let mut next = match self.take_spare(needed) {
            Some(spare) => spare,
            None => {
                self.allocate(self.default_size.max(needed.checked_next_power_of_two().unwrap_or(needed)))
            }
        };
        next[..valid].copy_from_slice(&self.buffer[from..from + valid]);
        self.stats.bytes_copied += valid;
        let mut old = std::mem::replace(&mut self.buffer, next);
        if old.try_reclaim() {
            self.spare.push(old);
        } else {
            self.pending.push(old);
        }
    }

    /// Moves the left-behind buffers whose handed-out `Bytes` are all dropped to `spare`.
    fn collect_pending(&mut self) {
        let mut index = 0;
        while index < self.pending.len() {
            if self.pending[index].try_reclaim() {
                let free = self.pending.swap_remove(index);
                self.spare.push(free);
            } else {
                index += 1;
            }
        }
    }

    /// Takes the smallest spare buffer of at least `needed` bytes, if any.
    fn take_spare(&mut self, needed: usize) -> Option<Bytes> {
        let best = (0..self.spare.len())
            .filter(|&index| self.spare[index].len() >= needed)
            .min_by_key(|&index| self.spare[index].len())?;
        self.stats.buffers_reused += 1;
        Some(self.spare.swap_remove(best))
    }

    /// Allocates a new buffer of `size` bytes.
    fn allocate(&mut self, size: usize) -> Bytes {
        self.stats.buffers_allocated += 1;
        self.stats.bytes_allocated += size;
        Bytes::from(vec![0u8; size])
    }
}

impl fmt::Debug for BytesSlab {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BytesSlab")
            .field("valid", &self.valid)
            .field("empty", &(self.buffer.len() - self.valid))
            .field("default_size", &self.default_size)
            .field("stats", &self.stats())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::BytesSlab;

    /// Writes `data` into the slab, making room first.
    fn receive(slab: &mut BytesSlab, data: &[u8]) {
        slab.ensure_capacity(data.len());
        slab.empty()[..data.len()].copy_from_slice(data);
        slab.make_valid(data.len());
    }

    #[test]
    fn extract_hands_out_in_order() {
        let mut slab = BytesSlab::new(4);
        receive(&mut slab, b"abcdefg");
        let ab = slab.extract(2);
        let empty = slab.extract(0);
        let cde = slab.extract(3);
        assert_eq!((&ab[..], &empty[..], &cde[..]), (&b"ab"[..], &b""[..], &b"cde"[..]));
        assert_eq!(slab.valid(), b"fg");
    }

    #[test]
    fn straddling_tail_moves_once() {
        let mut slab = BytesSlab::new(3); // 8 bytes
        receive(&mut slab, b"12345678");
        let first = slab.extract(5);
        slab.ensure_capacity(4); // "678" must move: 3 bytes copied
        assert_eq!(slab.valid(), b"678");
        assert_eq!(slab.stats().bytes_copied, 3);
        assert_eq!(slab.buffers_allocated(), 2, "`first` pins the first buffer");
        assert_eq!(&first[..], b"12345");
        assert_eq!(slab.stats().buffers_pending, 1);
    }

    #[test]
    fn current_buffer_reused_in_place() {
        let mut slab = BytesSlab::new(3);
        receive(&mut slab, b"12345678");
        drop(slab.extract(5));
        slab.ensure_capacity(4);
        assert_eq!(slab.valid(), b"678");
        assert_eq!(slab.buffers_allocated(), 1);
        assert_eq!(slab.stats().buffers_reused, 1);
    }

    #[test]
    fn grows_for_large_messages() {
        let mut slab = BytesSlab::new(3);
        receive(&mut slab, b"xy");
        slab.ensure_capacity(30); // needs 32
        assert_eq!(slab.valid(), b"xy");
        assert_eq!(slab.empty().len(), 30);
        assert_eq!(slab.stats().bytes_allocated, 8 + 32);
    }

    #[test]
    fn ensure_capacity_is_a_no_op_when_room_suffices() {
        let mut slab = BytesSlab::new(5);
        receive(&mut slab, b"abc");
        slab.ensure_capacity(29);
        assert_eq!(slab.stats().bytes_copied, 0);
        assert_eq!(slab.buffers_allocated(), 1);
    }

    #[test]
    #[should_panic(expected = "3 bytes requested but only 2 are valid")]
    fn extract_more_than_valid_panics() {
        let mut slab = BytesSlab::new(3);
        receive(&mut slab, b"ab");
        let _ = slab.extract(3);
    }

    #[test]
    #[should_panic(expected = "9 bytes declared but empty() has only 8")]
    fn make_valid_beyond_empty_panics() {
        let mut slab = BytesSlab::new(3);
        slab.make_valid(9);
    }

    #[test]
    fn release_spare_buffers_frees_only_free_ones() {
        let mut slab = BytesSlab::new(3);
        receive(&mut slab, b"12345678");
        let held = slab.extract(8);
        slab.ensure_capacity(8); // second buffer; the first is pending
        receive(&mut slab, b"abcdefgh");
        drop(slab.extract(8));
        slab.ensure_capacity(8); // reused in place
        assert_eq!(slab.stats().buffers_pending, 1);
        slab.release_spare_buffers();
        assert_eq!(slab.stats().buffers_pending, 1);
        drop(held);
        slab.release_spare_buffers();
        let stats = slab.stats();
        assert_eq!((stats.buffers_pending, stats.buffers_spare), (0, 0));
        assert!(format!("{slab:?}").contains("BytesSlab"));
    }
}
