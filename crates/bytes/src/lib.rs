//! Shared, sliceable, recoverable byte buffers: the lowest crate of `timely_py`.
//!
//! # What this crate owns
//!
//! * [`Bytes`]: an owned, thread-safe handle to a *disjoint* region of a shared allocation.
//!   Splitting a region ([`Bytes::extract_to`]) copies nothing; the pieces can be written,
//!   sent to other threads and dropped independently, re-joined ([`Bytes::try_merge`]), and the
//!   allocation can be taken back for reuse once a single handle is left
//!   ([`Bytes::try_recover`], [`Bytes::try_reclaim`]).
//! * [`BytesSlab`]: the receive side of the data plane. A network thread reads from a socket
//!   straight into a large buffer and hands out message-sized [`Bytes`] without copying them;
//!   buffers whose messages have all been dropped are recycled, so a slab in steady state
//!   allocates nothing.
//!
//! # What it must not do
//!
//! It knows nothing of the rest of the system: no sockets or other I/O, no message framing or
//! serialization, no timestamps, operators, workers or Python, no threads, locks or channels of
//! its own. It has no runtime dependencies and no other crate of the workspace may become one.
//!
//! # Where the `unsafe` is
//!
//! All `unsafe` code of the crate lives in the private module behind [`Bytes`] (the crate
//! denies `unsafe_code` everywhere else); that module's documentation states the invariants that
//! make it sound. [`BytesSlab`] is written in safe code on top of [`Bytes`].
//!
//! Miri (`cargo miri test`) is not installed for the stable toolchain on the project's machines,
//! so the crate has not been run under Miri; soundness rests on the invariants, review, and the
//! unit, integration and property tests (`cargo test -p timely-bytes`). Running
//! `cargo +nightly miri test -p timely-bytes` where Miri is available is a worthwhile check.
//!
//! # Example
//!
//! ```
//! use timely_bytes::{Bytes, BytesSlab};
//!
//! // Receive two messages of 3 and 2 bytes that arrived in one read.
//! let mut slab = BytesSlab::new(10);
//! slab.ensure_capacity(5);
//! slab.empty()[..5].copy_from_slice(b"abcde");
//! slab.make_valid(5);
//! let first: Bytes = slab.extract(3);
//! let second: Bytes = slab.extract(2);
//! assert_eq!((&first[..], &second[..]), (&b"abc"[..], &b"de"[..]));
//! ```

#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]
#![warn(missing_debug_implementations)]

mod bytes;
mod slab;

pub use crate::bytes::Bytes;
pub use crate::slab::{BytesSlab, SlabStats};
