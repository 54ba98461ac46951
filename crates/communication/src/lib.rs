//! Communication between timely_py workers.
//!
//! This crate owns the movement of typed data between workers: the [`Push`] and [`Pull`]
//! endpoints, the allocators that create them for each channel (one worker thread, or several
//! threads of one process), the setup of worker threads ([`initialize()`]), and the transport
//! between processes of a cluster ([`networking`]: hostfiles, authenticated connections,
//! framing, network threads).
//!
//! It must not know about timestamps, operators, progress tracking or Python: a channel is an
//! identifier and an element type, nothing more. Engines built on top decide what travels.
//!
//! Designed for rescaling: the number of workers is read through [`Allocator::peers`] every time
//! it is needed, and every allocation is recorded ([`Allocator::allocations`]) so that channels
//! can later be back-filled with endpoints to workers that join.

pub mod allocator;
pub mod clock;
pub mod diagnostics;
pub mod exchangeable;
pub mod initialize;
pub mod largest_allocation;
pub mod networking;
pub mod queue;
pub mod violations;
pub mod workers;

pub use allocator::joined::JoinedPushers;
pub use allocator::thread::{LocalQueue, SharedQueue};
pub use allocator::{Allocator, AllocatorBuilder, ChannelEndpoints, ChannelRecord, FanOut};
pub use exchangeable::Exchangeable;
pub use initialize::{initialize, Config};
pub use networking::{FrameDirection, FrameObserver};
pub use violations::ProtocolViolations;
pub use workers::{initialize_from, WorkerGuards};

/// Sends elements of type `T` towards one destination.
///
/// Pushing `Some(element)` sends it; pushing `None` asks the implementation to flush anything it
/// buffered. After a push an implementation may leave an element in `element` for the caller to
/// reuse (one given back by a receiver, or the pushed element itself once it has been encoded),
/// or leave `None`. What is left is stale: a caller that reuses it clears or overwrites it.
pub trait Push<T> {
    /// Sends `Some` contents of `element`, or flushes when `element` is `None`.
    fn push(&mut self, element: &mut Option<T>);
    /// Sends `element`, discarding any recycled buffer.
    #[inline]
    fn send(&mut self, element: T) {
        self.push(&mut Some(element));
    }
    /// Flushes anything buffered.
    #[inline]
    fn done(&mut self) {
        self.push(&mut None);
    }
}

/// Receives elements of type `T` sent to this worker on one channel.
pub trait Pull<T> {
    /// Returns a slot that is `Some` while an element arrived; the caller takes from it.
    /// `None` means nothing is available right now.
    fn pull(&mut self) -> &mut Option<T>;
    /// Takes the next available element, if any.
    fn recv(&mut self) -> Option<T> {
        self.pull().take()
    }
    /// Gives back an element this puller returned, once its contents are used up, so that the
    /// channel's pusher can hand it to the sender for reuse (its buffers keep their capacity).
    /// Channels that cannot reuse it drop it.
    fn recycle(&mut self, element: T) {
        drop(element);
    }
}

impl<T, P: Push<T> + ?Sized> Push<T> for Box<P> {
    fn push(&mut self, element: &mut Option<T>) {
        (**self).push(element);
    }
}

impl<T, P: Pull<T> + ?Sized> Pull<T> for Box<P> {
    fn pull(&mut self) -> &mut Option<T> {
        (**self).pull()
    }
    fn recycle(&mut self, element: T) {
        (**self).recycle(element)
    }
}
