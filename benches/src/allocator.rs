//! A global allocator that counts heap allocations, and can say where one was made.
//!
//! Binaries and tests that install [`CountingAllocator`] read the count of the whole process
//! with [`allocations`] and that of the calling thread with [`thread_allocations`]. A thread
//! that should allocate nothing can run in [`watching_allocations`]; when a count says
//! otherwise, [`take_watched_allocation`] gives the thread and the stack of the first
//! allocation a watching thread made.

use std::alloc::{GlobalAlloc, Layout, System};
use std::backtrace::Backtrace;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The system allocator, counting allocations (a `realloc` counts as one). A binary that
/// installs it (`#[global_allocator] static A: CountingAllocator = CountingAllocator;`)
/// makes [`allocations`] and `Segment::allocations` report its heap allocations.
pub struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static WATCHED: Mutex<Option<(String, Backtrace)>> = Mutex::new(None);

thread_local! {
    /// This thread's allocations.
    static THREAD_ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    /// Set while this thread watches for its next allocation; cleared before recording it,
    /// so that the recording's own allocations (the stack's frames) are not watched.
    static WATCHING: Cell<bool> = const { Cell::new(false) };
}

/// Heap allocations of this process so far (0 unless [`CountingAllocator`] is installed).
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Heap allocations of the calling thread so far.
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCATIONS.with(Cell::get)
}

/// Runs `work`, recording the first allocation the calling thread makes in it (unless a
/// thread recorded one that was not taken yet).
pub fn watching_allocations<R>(work: impl FnOnce() -> R) -> R {
    WATCHING.with(|watching| watching.set(true));
    let result = work();
    WATCHING.with(|watching| watching.set(false));
    result
}

/// The thread and stack of the first allocation recorded by a watching thread since the
/// last call, if there was one.
pub fn take_watched_allocation() -> Option<String> {
    let watched = WATCHED.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
    watched.map(|(thread, stack)| format!("on thread {thread}:\n{stack}"))
}

/// Counts one allocation and records it if this thread watches for it.
fn count() {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    THREAD_ALLOCATIONS.with(|count| count.set(count.get() + 1));
    if WATCHING.with(|watching| watching.replace(false)) {
        let thread = std::thread::current().name().unwrap_or("unnamed").to_string();
        let stack = Backtrace::force_capture();
        let mut watched = WATCHED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        watched.get_or_insert((thread, stack));
    }
}

// SAFETY: every method forwards to the system allocator with the same arguments; counting
// touches no memory the allocator hands out, and recording a watched allocation clears the
// thread's flag first, so that its own allocations through this allocator do not recurse.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}
