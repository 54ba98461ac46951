//! The progcaster: exchange of progress batches between the workers of one scope.
//!
//! Every worker broadcasts its scope's progress updates as atomic batches of
//! `((location, time), delta)`, each stamped with the sender's index and a per-sender
//! sequence number. Receivers accept batches in any order across senders; a missing or
//! repeated sequence number from one sender is a protocol error and is reported, never
//! ignored. The progcaster keeps the compacted accumulation of every batch it received
//! (its own included) and the next expected sequence number per sender: the progress
//! state a joining worker is bootstrapped from.
//!
//! This module owns the wire shape of progress batches and their bookkeeping; it does not
//! interpret the updates (that is the tracker's job).

use std::sync::Arc;

use super::change_batch::ChangeBatch;
use super::location::Location;
use super::timestamp::Timestamp;
use crate::logging::{self, Event, Logger};
use timely_communication::exchangeable::{bincode_decode, bincode_decode_extend, bincode_encode};
use timely_communication::Exchangeable;
use timely_communication::{Allocator, Pull, Push};

/// One atomic batch of progress updates from one worker.
#[derive(Debug, PartialEq, Eq)]
pub struct ProgressBatch<T> {
    /// The sending worker.
    pub source: usize,
    /// The sender's sequence number (0, 1, 2, ... per scope).
    pub sequence: u64,
    /// The updates, compacted.
    pub updates: Vec<((Location, T), i64)>,
}

/// A batch as bytes: `(source, sequence)` (16 bytes, bincode), then the updates (bincode).
/// Decoding into a batch no longer used reuses its update buffer.
impl<T: Timestamp> Exchangeable for ProgressBatch<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        bincode_encode(&(self.source as u64, self.sequence), out);
        bincode_encode(&self.updates, out);
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut batch = ProgressBatch { source: 0, sequence: 0, updates: Vec::new() };
        Self::decode_into(bytes, &mut batch)?;
        Ok(batch)
    }

    fn decode_into(bytes: &[u8], target: &mut Self) -> Result<(), String> {
        let header = bytes.get(..16).ok_or("a progress batch shorter than its header")?;
        let (source, sequence): (u64, u64) = bincode_decode(header)?;
        target.source =
            usize::try_from(source).map_err(|_| format!("a progress batch from worker {source}"))?;
        target.sequence = sequence;
        target.updates.clear();
        bincode_decode_extend(&bytes[16..], &mut target.updates)
    }
}

impl<T: Clone> Clone for ProgressBatch<T> {
    fn clone(&self) -> Self {
        ProgressBatch { source: self.source, sequence: self.sequence, updates: self.updates.clone() }
    }

    /// Copies `source` into this batch, keeping the capacity of its update buffer.
    fn clone_from(&mut self, source: &Self) {
        self.source = source.source;
        self.sequence = source.sequence;
        self.updates.clone_from(&source.updates);
    }
}

/// The progress state a joining worker needs: the accumulation of all batches received and,
/// per sender, the sequence number of the next batch not included.
#[derive(Clone, Debug)]
pub struct ProgressState<T: Timestamp> {
    /// Accumulated updates.
    pub accumulated: Vec<((Location, T), i64)>,
    /// Per sender: the next sequence number not included.
    pub next_sequence: Vec<u64>,
}

/// Broadcasts and receives progress batches for one scope.
pub struct Progcaster<T: Timestamp> {
    /// Gives every worker (this one included) each batch; once per process across processes.
    pusher: Box<dyn Push<ProgressBatch<T>>>,
    puller: Box<dyn Pull<ProgressBatch<T>>>,
    worker: usize,
    channel: usize,
    next_send: u64,
    next_receive: Vec<u64>,
    accumulated: ChangeBatch<(Location, T)>,
    address: Arc<[usize]>,
    logger: Option<Logger>,
    /// An emptied update buffer given back by the channel, for the next batch.
    spare: Vec<((Location, T), i64)>,
}

impl<T: Timestamp> Progcaster<T> {
    /// Allocates the progress channel `channel` for the scope at `address`.
    pub fn new(
        allocator: &mut Allocator,
        channel: usize,
        address: Vec<usize>,
        logger: Option<Logger>,
    ) -> Self {
        let (pusher, puller) = allocator.broadcast::<ProgressBatch<T>>(channel);
        Progcaster {
            pusher,
            puller,
            worker: allocator.index(),
            channel,
            next_send: 0,
            next_receive: vec![0; allocator.peers()],
            accumulated: ChangeBatch::new(),
            address: address.into(),
            logger,
            spare: Vec::new(),
        }
    }

    /// The progress channel's identifier.
    pub fn channel(&self) -> usize {
        self.channel
    }

    /// Sends the updates in `changes` to every worker as one batch, leaving it empty.
    pub fn send(&mut self, changes: &mut ChangeBatch<(Location, T)>) {
        if changes.is_empty() {
            return;
        }
        let mut updates = std::mem::take(&mut self.spare);
        updates.extend(changes.drain());
        let sequence = self.next_send;
        self.next_send += 1;
        logging::log(&self.logger, || Event::Progress {
            send: true,
            source: self.worker,
            channel: self.channel,
            sequence,
            address: self.address.clone(),
            updates: updates.len(),
        });
        let mut slot = Some(ProgressBatch { source: self.worker, sequence, updates });
        self.pusher.push(&mut slot);
        self.pusher.done();
        if let Some(recycled) = slot {
            self.spare = recycled.updates;
            self.spare.clear();
        }
    }

    /// Moves the updates of every received batch into `changes`.
    ///
    /// Panics with a protocol error if a sender's batches arrive out of sequence.
    pub fn recv(&mut self, changes: &mut ChangeBatch<(Location, T)>) {
        while let Some(mut batch) = self.puller.recv() {
            let expected = self.next_receive.get(batch.source).copied();
            if expected != Some(batch.sequence) {
                panic!(
                    "progress protocol error in scope {:?}: worker {} expected batch {:?} from worker {} but received batch {}",
                    self.address, self.worker, expected, batch.source, batch.sequence
                );
            }
            self.next_receive[batch.source] += 1;
            logging::log(&self.logger, || Event::Progress {
                send: false,
                source: batch.source,
                channel: self.channel,
                sequence: batch.sequence,
                address: self.address.clone(),
                updates: batch.updates.len(),
            });
            self.accumulated.extend(batch.updates.iter().cloned());
            changes.extend(batch.updates.drain(..));
            self.puller.recycle(batch);
        }
    }

    /// The compacted accumulation of all received batches and the next expected sequence
    /// number per sender.
    pub fn state(&mut self) -> ProgressState<T> {
        ProgressState {
            accumulated: self.accumulated.iter().cloned().collect(),
            next_sequence: self.next_receive.clone(),
        }
    }
}
