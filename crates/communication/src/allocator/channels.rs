//! What every allocator variant hands out and keeps: a channel's endpoints
//! ([`ChannelEndpoints`]), the record of a worker's allocations ([`ChannelRecord`],
//! `Allocations`), the list of channels that received data (`Events`), and [`FanOut`], which
//! pushes one element to several pushers. It must not know the variants.

use std::cell::RefCell;
use std::rc::Rc;

use crate::{Pull, Push};

/// What allocating a channel gives a worker: one pusher per worker (index `i` sends to worker `i`)
/// and this worker's puller.
pub type ChannelEndpoints<T> = (Vec<Box<dyn Push<T>>>, Box<dyn Pull<T>>);

/// Channel identifiers that received data, shared between an allocator and its pushers.
pub(crate) type Events = Rc<RefCell<Vec<usize>>>;

/// One channel allocation, kept so that channels can be back-filled when workers join.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelRecord {
    /// The channel identifier passed to [`Allocator::allocate`].
    pub identifier: usize,
    /// The element type of the channel, as given by [`std::any::type_name`].
    pub type_name: &'static str,
}

/// The allocations of one worker, in order; shared bookkeeping of every allocator variant.
#[derive(Default)]
pub(crate) struct Allocations(Vec<ChannelRecord>);

impl Allocations {
    /// Records that channel `identifier` was allocated with elements of type `T`.
    ///
    /// Panics if this worker allocated `identifier` before: each channel has one set of endpoints.
    pub(crate) fn record<T>(&mut self, identifier: usize) {
        let type_name = std::any::type_name::<T>();
        if let Some(previous) = self.0.iter().find(|record| record.identifier == identifier) {
            panic!(
                "channel {identifier} allocated twice by the same worker (as {} and as {type_name})",
                previous.type_name
            );
        }
        self.0.push(ChannelRecord { identifier, type_name });
    }

    /// Every allocation recorded so far, in order.
    pub(crate) fn as_slice(&self) -> &[ChannelRecord] {
        &self.0
    }
}

/// Gives every one of several pushers each element: copies to all but the last, which gets
/// the element itself.
///
/// Copies are made into the emptied elements the pushers gave back where there are some
/// (`Clone::clone_from`, which keeps their buffers), and what the last pusher gives back goes
/// to the caller, so that fanning out allocates nothing in steady state.
pub struct FanOut<T> {
    pushers: Vec<Box<dyn Push<T>>>,
    /// Per pusher but the last, an element it gave back, to copy the next element into.
    spares: Vec<Option<T>>,
}

impl<T> FanOut<T> {
    /// A pusher that pushes to all of `pushers`.
    pub fn new(pushers: Vec<Box<dyn Push<T>>>) -> Self {
        let spares = pushers.iter().map(|_| None).collect();
        FanOut { pushers, spares }
    }

    /// Adds a pusher.
    pub fn add(&mut self, pusher: Box<dyn Push<T>>) {
        self.pushers.push(pusher);
        self.spares.push(None);
    }

    /// True without pushers.
    pub fn is_empty(&self) -> bool {
        self.pushers.is_empty()
    }
}

impl<T: Clone> Push<T> for FanOut<T> {
    /// With no pushers, the element stays with the caller (as if given back).
    fn push(&mut self, element: &mut Option<T>) {
        let Some((last, rest)) = self.pushers.split_last_mut() else {
            return;
        };
        match element.as_ref() {
            Some(item) => {
                for (pusher, spare) in rest.iter_mut().zip(self.spares.iter_mut()) {
                    let copy = match spare.take() {
                        Some(mut copy) => {
                            copy.clone_from(item);
                            copy
                        }
                        None => item.clone(),
                    };
                    *spare = Some(copy);
                    pusher.push(spare);
                }
                last.push(element);
            }
            None => {
                rest.iter_mut().for_each(|pusher| pusher.done());
                last.done();
            }
        }
    }
}
