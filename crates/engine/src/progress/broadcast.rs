//! The progcaster: exchange of progress batches between the workers of one scope.
//!
//! Every worker broadcasts its scope's progress updates as atomic batches of
//! `((location, time), delta)`, each stamped with the sender's index and a per-sender
//! sequence number. Receivers accept batches in any order across senders; a missing or
//! repeated sequence number from one sender is a protocol error and is reported, never
//! ignored. Its [`Ledger`] keeps the compacted accumulation of every batch it received
//! (its own included) and the next expected sequence number per sender: the progress
//! state a joining worker is bootstrapped from. Workers that join are added to the broadcast
//! at the next send.
//!
//! Batches from the wire are checked before anything of them is applied: the sender a batch
//! names must be the worker whose message carried it (checked as it is decoded), every
//! location must be a port of the scope ([`ScopePorts`]), the deltas the worker received must
//! add up to no more than [`super::magnitude::MAX_RECEIVED_MAGNITUDE`] (so that no count
//! overflows), and sequence numbers must follow on ([`super::batch_check::OutOfSequence`]). A violation, or a batch the channel dropped as
//! undecodable, ends the run with a [`crate::ClusterFailure`] naming the sending process
//! before the scope propagates anything.
//!
//! This module owns the wire shape of progress batches and their bookkeeping; it does not
//! interpret the updates (that is the tracker's job).

use std::cell::RefCell;
use std::rc::Rc;

use super::batch_check::ScopePorts;
use super::change_batch::ChangeBatch;
use super::ledger::{Ledger, Released};
use super::location::Location;
use super::magnitude::ReceivedMagnitude;
use super::timestamp::Timestamp;
use crate::cluster_failure::{stop_for_violation, stop_if_failed};
use crate::logging::{self, Event, Logger};
use timely_communication::exchangeable::{
    bincode_decode, bincode_decode_extend, bincode_encode, DecodeError,
};
use timely_communication::{Allocator, FanOut, JoinedPushers, Pull, Push};
use timely_communication::{Exchangeable, ProtocolViolations};

/// One atomic batch of progress updates from one worker.
#[derive(Debug, PartialEq, Eq)]
pub struct ProgressBatch<T> {
    /// The sending worker.
    pub source: usize,
    /// The sender's sequence number (0, 1, 2, ... per scope).
    pub sequence: u64,
    /// On the first batch of a worker that joined: `(server, sequence)` of the server's batch
    /// that announced the capabilities it handed over. Receivers apply that batch first, so
    /// the joiner's release of those capabilities never overtakes their announcement.
    pub after: Option<(usize, u64)>,
    /// The updates, compacted.
    pub updates: Vec<((Location, T), i64)>,
}

/// The bytes of a batch's header: source, sequence, after's server plus one (0: none), after's
/// sequence.
const HEADER: usize = 32;

/// A batch as bytes: the header (four `u64`s, bincode), then the updates (bincode).
/// Decoding into a batch no longer used reuses its update buffer.
impl<T: Timestamp> Exchangeable for ProgressBatch<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        let (server, seq) = self.after.map_or((0, 0), |(server, seq)| (server as u64 + 1, seq));
        bincode_encode(&(self.source as u64, self.sequence, server, seq), out);
        bincode_encode(&self.updates, out);
    }

    fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut batch = ProgressBatch { source: 0, sequence: 0, after: None, updates: Vec::new() };
        Self::decode_into(bytes, &mut batch)?;
        Ok(batch)
    }

    fn decode_into(bytes: &[u8], target: &mut Self) -> Result<(), DecodeError> {
        const WHAT: &str = "a progress batch";
        let header = bytes.get(..HEADER).ok_or(DecodeError::Short { what: WHAT, part: "header" })?;
        let (source, sequence, server, seq): (u64, u64, u64, u64) = bincode_decode(header)?;
        let worker =
            |index: u64| usize::try_from(index).map_err(|_| DecodeError::WorkerIndex { what: WHAT, index });
        target.source = worker(source)?;
        target.sequence = sequence;
        target.after = match server {
            0 => None,
            server => Some((worker(server - 1)?, seq)),
        };
        target.updates.clear();
        bincode_decode_extend(&bytes[HEADER..], &mut target.updates)
    }

    fn check_sender(&self, worker: usize) -> Result<(), DecodeError> {
        match self.source == worker {
            true => Ok(()),
            false => Err(DecodeError::WrongSender { what: "a progress batch", claimed: self.source }),
        }
    }
}

impl<T: Clone> Clone for ProgressBatch<T> {
    fn clone(&self) -> Self {
        ProgressBatch {
            source: self.source,
            sequence: self.sequence,
            after: self.after,
            updates: self.updates.clone(),
        }
    }

    /// Copies `source` into this batch, keeping the capacity of its update buffer.
    fn clone_from(&mut self, source: &Self) {
        self.source = source.source;
        self.sequence = source.sequence;
        self.after = source.after;
        self.updates.clone_from(&source.updates);
    }
}

/// Broadcasts and receives progress batches for one scope.
pub struct Progcaster<T: Timestamp> {
    /// Gives every worker (this one included) each batch; once per process across processes.
    pusher: FanOut<ProgressBatch<T>>,
    /// Pushers to processes that joined, added to `pusher` at the next send.
    joined: JoinedPushers<ProgressBatch<T>>,
    puller: Box<dyn Pull<ProgressBatch<T>>>,
    worker: usize,
    channel: usize,
    ledger: Rc<RefCell<Ledger<T>>>,
    address: &'static [usize],
    logger: Option<Logger>,
    /// An emptied update buffer given back by the channel, for the next batch.
    spare: Vec<((Location, T), i64)>,
    /// Batches the ledger released when a joining worker's bootstrap completed.
    released: Vec<Released<T>>,
    /// Set once the ledger held a batch back: from then on every `recv` asks it for batches
    /// to release. Until then (on a worker that never joined, in a cluster where no batch
    /// had to wait) it holds nothing, and `recv` skips the asking.
    held_back: bool,
    /// The ports of the scope, which every received location must be one of.
    ports: ScopePorts,
    /// Where batches that break the protocol are reported.
    violations: ProtocolViolations,
    /// What the deltas received by this worker, in every scope, add up to.
    magnitude: ReceivedMagnitude,
}

impl<T: Timestamp> Progcaster<T> {
    /// Allocates the progress channel `channel` for the scope at `address`; received batches
    /// are charged to `magnitude`, the worker's total.
    pub fn new(
        allocator: &mut Allocator,
        channel: usize,
        address: Vec<usize>,
        logger: Option<Logger>,
        magnitude: ReceivedMagnitude,
    ) -> Self {
        let (pusher, puller, joined) = allocator.broadcast::<ProgressBatch<T>>(channel);
        Progcaster {
            pusher,
            joined,
            puller,
            worker: allocator.index(),
            channel,
            ledger: Rc::new(RefCell::new(Ledger::new(allocator.peers()))),
            address: logging::intern_address(&address),
            logger,
            spare: Vec::new(),
            released: Vec::new(),
            held_back: false,
            ports: ScopePorts::default(),
            violations: allocator.violations(),
            magnitude,
        }
    }

    /// Sets the ports of the scope, once it is built: received batches may name only those.
    pub fn set_ports(&mut self, ports: ScopePorts) {
        self.ports = ports;
    }

    /// The progress channel's identifier.
    pub fn channel(&self) -> usize {
        self.channel
    }

    /// The ledger, shared with the worker's rescaling code.
    pub fn ledger(&self) -> &Rc<RefCell<Ledger<T>>> {
        &self.ledger
    }

    /// True once this scope's operators may run (always, except on a worker that is joining).
    pub fn ready(&self) -> bool {
        self.ledger.borrow().ready()
    }

    /// Sends the updates in `changes` (and any capability announcements for joining workers)
    /// to every worker as one batch, leaving `changes` empty.
    pub fn send(&mut self, changes: &mut ChangeBatch<(Location, T)>) {
        if let Some(joined) = self.joined.take() {
            joined.into_iter().for_each(|(_, pusher)| self.pusher.add(pusher));
        }
        let mut ledger = self.ledger.borrow_mut();
        if changes.is_empty() && !ledger.has_announcements() {
            return;
        }
        let mut updates = std::mem::take(&mut self.spare);
        updates.extend(changes.drain());
        let (sequence, after) = ledger.next_batch(&mut updates);
        drop(ledger);
        logging::log(&self.logger, || Event::Progress {
            send: true,
            source: self.worker,
            channel: self.channel,
            sequence,
            address: self.address,
            updates: updates.len(),
        });
        let mut slot = Some(ProgressBatch { source: self.worker, sequence, after, updates });
        self.pusher.push(&mut slot);
        self.pusher.done();
        if let Some(recycled) = slot {
            self.spare = recycled.updates;
            self.spare.clear();
        }
    }

    /// Moves the updates of every received batch into `changes` (on a joining worker, only
    /// once its bootstrap is complete: until then batches are held back).
    ///
    /// Unwinds with [`crate::ClusterFailure`] naming the sender of a batch that breaks the
    /// protocol (a location outside the scope, deltas past the worker's bound, naming the
    /// worker whose deltas take up most of it, a sequence number out of order), or when the
    /// network failed (a batch that did not decode was dropped): nothing is applied then.
    pub fn recv(&mut self, changes: &mut ChangeBatch<(Location, T)>) {
        let mut ledger = self.ledger.borrow_mut();
        while let Some(mut batch) = self.puller.recv() {
            if let Err(reason) = self.ports.check_all(&batch.updates) {
                let reason = format!("a progress batch of channel {} names {reason}", self.channel);
                stop_for_violation(&self.violations, batch.source, &reason);
            }
            if let Err(error) = self.magnitude.charge(batch.source, &batch.updates) {
                let reason = format!("a progress batch of channel {} brings {error}", self.channel);
                stop_for_violation(&self.violations, error.sender, &reason);
            }
            match ledger.admit(batch.source, batch.sequence, batch.after, &batch.updates) {
                Ok(true) => {
                    self.log_received(batch.source, batch.sequence, batch.updates.len());
                    changes.extend(batch.updates.drain(..));
                }
                Ok(false) => self.held_back = true,
                Err(error) => stop_for_violation(&self.violations, error.source, &error.to_string()),
            }
            self.puller.recycle(batch);
        }
        stop_if_failed(&self.violations);
        // A ledger that never held a batch back and is not joining has nothing to release.
        if self.held_back || !ledger.ready() {
            // What the server sent is checked whole before anything of it is applied.
            if let Err((server, reason)) =
                ledger.check_bootstrap(|updates| self.ports.check_bootstrap(updates))
            {
                let reason = format!(
                    "worker {server} sent a progress state or range of channel {} with {reason}",
                    self.channel
                );
                stop_for_violation(&self.violations, server, &reason);
            }
            let released = ledger
                .try_finish_joining(&mut self.released)
                .and_then(|()| ledger.release_held(&mut self.released));
            if let Err(error) = released {
                stop_for_violation(&self.violations, error.source, &error.to_string());
            }
        }
        ledger.take_local(&mut self.released);
        drop(ledger);
        for (origin, updates) in std::mem::take(&mut self.released) {
            if let Some((source, sequence)) = origin {
                self.log_received(source, sequence, updates.len());
            }
            changes.extend(updates);
        }
    }

    fn log_received(&self, source: usize, sequence: u64, updates: usize) {
        logging::log(&self.logger, || Event::Progress {
            send: false,
            source,
            channel: self.channel,
            sequence,
            address: self.address,
            updates,
        });
    }
}
