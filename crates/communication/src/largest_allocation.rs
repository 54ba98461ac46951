//! A global allocator that records the largest single allocation, for the fuzzers and the
//! tests that check that bytes from the wire never make a process allocate what they claim.
//!
//! This module owns [`CountingAllocator`] (the system allocator plus a `fetch_max` per
//! allocation) and [`largest_allocation`]. A binary opts in with
//! `#[global_allocator] static A: CountingAllocator = CountingAllocator;`; elsewhere the
//! figure stays 0. It must not allocate itself.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static LARGEST: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, recording the size of the largest allocation (or reallocation).
pub struct CountingAllocator;

// SAFETY: every call is passed on to the system allocator unchanged; the only addition is an
// atomic update that neither allocates nor touches the memory.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `layout` is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: `pointer` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        LARGEST.fetch_max(size, Ordering::Relaxed);
        // SAFETY: as for `dealloc`, and `size` is the caller's.
        unsafe { System.realloc(pointer, layout, size) }
    }
}

/// The largest single allocation since the start or the last [`reset_largest_allocation`]
/// (0 unless [`CountingAllocator`] is the global allocator).
pub fn largest_allocation() -> usize {
    LARGEST.load(Ordering::Relaxed)
}

/// Starts recording afresh (after a setup whose allocations should not count).
pub fn reset_largest_allocation() {
    LARGEST.store(0, Ordering::Relaxed);
}
