//! The hook through which a process learns of the data frames its network threads move.
//!
//! This module owns the contract between the transport and whoever records network events
//! (the engine's trace): [`FrameObserver`], told of every data frame as the send thread starts
//! writing it and as the receive thread finishes reading it, with the frame's header and a
//! stamp of the process's trace clock ([`crate::clock::stamp`]). It must not record, buffer or
//! interpret anything itself: the transport calls the observer, the observer decides what to
//! keep.
//!
//! When the transport calls it:
//!
//! * **Sent.** The send thread reads the clock once before it writes a batch of buffers (one
//!   `writev` call in the common case) and, once the batch is written, reports every data frame
//!   in those buffers with that time: the time the frame's write started. Reporting after the
//!   write keeps the observer's work off the path of the bytes. The buffers hold whole frames
//!   only ([`super::ProcessSender`] ships a buffer between two messages, never inside one), so
//!   the send thread walks their headers without copying anything.
//! * **Received.** The receive thread reads the clock once after each socket read; every data
//!   frame that read completes is reported with that time, once, before it is handed to the
//!   local workers it targets (a frame for several workers is still reported once, with its
//!   target range; the observer expands it per worker if it wants).
//! * **Never** for control frames (goodbye, heartbeat, abort, clock probe and reply): they are
//!   written and read by the network threads themselves and carry nothing for workers.
//!
//! Cost: without an observer the send thread takes one branch per batch and the receive thread
//! one per read and one per delivered data frame; nothing is allocated either way. With one,
//! add a clock reading per batch or read and one call per frame, on the network thread.

use std::fmt;

use super::MessageHeader;

/// Which way a frame went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameDirection {
    /// Written by this process's send thread to another process.
    Sent,
    /// Read by this process's receive thread from another process.
    Received,
}

/// Told of every data frame this process's network threads write or read (never of control
/// frames: goodbye, heartbeat, abort, clock probe/reply). Called on the network threads, so it
/// must be cheap and must not block for long: a slow observer holds back the connection it is
/// called from.
///
/// Set one per process in [`crate::initialize::ClusterConfig::frames`], or give it to
/// [`super::Transport::start`].
pub trait FrameObserver: Send + Sync + 'static {
    /// `Sent`: the send thread started writing the frame at `stamp` (reported once the batch
    /// of buffers holding it is written); `Received`: the receive thread had read the whole
    /// frame at `stamp` (reported before the frame is handed to a worker). `header` is the
    /// frame's header as on the wire (channel, source, target range, payload length, seqno;
    /// see [`super::framing`] for what `seqno` counts). Stamps are the process's trace
    /// clock's, [`crate::clock::stamp`] (nanoseconds through [`crate::clock::stamps_to_ns`]).
    fn frame(&self, direction: FrameDirection, stamp: i64, header: &MessageHeader);
}

/// Lets configurations that hold an observer derive `Debug`: it prints as `FrameObserver`.
impl fmt::Debug for dyn FrameObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FrameObserver")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    struct Silent;

    impl FrameObserver for Silent {
        fn frame(&self, _: FrameDirection, _: i64, _: &MessageHeader) {}
    }

    #[test]
    fn an_observer_in_a_config_prints_as_its_trait() {
        let frames: Option<Arc<dyn FrameObserver>> = Some(Arc::new(Silent));
        assert_eq!(format!("{frames:?}"), "Some(FrameObserver)");
    }
}
