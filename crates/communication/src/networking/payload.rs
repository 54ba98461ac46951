//! The payload of a received message, wherever it waits until its worker takes it.
//!
//! This module owns [`Payload`]: a slice of a receive buffer (never copied), or, once the
//! process's receive buffers hold more than its budget, a region of a spill file
//! ([`super::spill_file`]) read back when the worker decodes it. It must not
//! decide where a payload goes (the receive thread does) nor interpret its bytes.

use std::fmt;
use std::sync::Arc;

use timely_bytes::Bytes;

use super::spill_file::SpilledRegion;

/// The payload of a received message.
///
/// A message for one local worker owns its bytes. A message for several local workers (a
/// broadcast) is shared through an [`Arc`]: a `Bytes` cannot be cloned (its region is
/// mutable), copying the payload per worker would cost as much as the payload, and one small
/// `Arc` allocation per broadcast is cheap next to that.
pub enum Payload {
    /// The only copy, for a message to one worker.
    Owned(Bytes),
    /// Shared by the workers a message was broadcast to.
    Shared(Arc<Bytes>),
    /// Written to a spill file because the receive budget was spent; shared by the workers a
    /// broadcast went to.
    Spilled(Arc<SpilledRegion>),
}

impl From<Bytes> for Payload {
    /// A payload in memory, for one worker.
    fn from(bytes: Bytes) -> Payload {
        Payload::Owned(bytes)
    }
}

impl Payload {
    /// The payload's length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Payload::Owned(held) => held.len(),
            Payload::Shared(held) => held.len(),
            Payload::Spilled(region) => region.len(),
        }
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, if they are in memory.
    pub fn in_memory(&self) -> Option<&[u8]> {
        match self {
            Payload::Owned(held) => Some(held),
            Payload::Shared(held) => Some(held),
            Payload::Spilled(_) => None,
        }
    }

    /// The bytes: in memory, or read back from the spill file into `scratch`.
    ///
    /// # Errors
    ///
    /// The spill file could not be read (a local disk failure).
    pub fn read<'a>(&'a self, scratch: &'a mut Vec<u8>) -> std::io::Result<&'a [u8]> {
        match self {
            Payload::Owned(held) => Ok(held),
            Payload::Shared(held) => Ok(held),
            Payload::Spilled(region) => {
                region.read_into(scratch)?;
                Ok(scratch.as_slice())
            }
        }
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            Payload::Owned(_) => "Owned",
            Payload::Shared(_) => "Shared",
            Payload::Spilled(_) => "Spilled",
        };
        write!(f, "Payload::{kind}({} bytes)", self.len())
    }
}

/// A payload handed to several local workers (a broadcast): each gets a [`Payload`] sharing it.
pub(crate) enum Broadcast {
    /// In memory.
    InMemory(Arc<Bytes>),
    /// In a spill file.
    Spilled(Arc<SpilledRegion>),
}

impl Payload {
    /// This payload, to be shared by several workers.
    pub(crate) fn into_broadcast(self) -> Broadcast {
        match self {
            Payload::Owned(held) => Broadcast::InMemory(Arc::new(held)),
            Payload::Shared(held) => Broadcast::InMemory(held),
            Payload::Spilled(region) => Broadcast::Spilled(region),
        }
    }
}

impl Broadcast {
    /// One worker's share.
    pub(crate) fn payload(&self) -> Payload {
        match self {
            Broadcast::InMemory(held) => Payload::Shared(Arc::clone(held)),
            Broadcast::Spilled(region) => Payload::Spilled(Arc::clone(region)),
        }
    }
}
