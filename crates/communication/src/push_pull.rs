//! The two ends of a channel as a worker sees them: [`Push`] sends towards one worker,
//! [`Pull`] receives what was sent to this one. Every allocator's endpoints implement them;
//! this module owns only the traits.

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
    ///
    /// Pullers that hold their elements in a queue override it to return the element
    /// straight from the queue: going through [`Pull::pull`]'s slot writes the element and
    /// reads it back at once, which stalls the processor on every element (the read cannot
    /// be served from the pending writes of the slot's fields).
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
    #[inline]
    fn recv(&mut self) -> Option<T> {
        (**self).recv()
    }
    fn recycle(&mut self, element: T) {
        (**self).recycle(element)
    }
}
