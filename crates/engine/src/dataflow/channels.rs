//! Data channels between operators.
//!
//! A `Message` is a batch of records at one time. A `Tee` fans an output's messages out to
//! every consumer. A parallelization contract (`Pact`) decides how an edge moves messages:
//! `Pipeline` keeps them on this worker (an in-memory queue, no copies); the exchanging
//! contracts, which route records to other workers through the allocator, are `exchange`'s.
//! Pushing to a consumer activates it. Sends and receives are numbered per channel and
//! target, and logged when a logger is installed.
//!
//! This module owns how records travel; it does not count progress (operator ports do).

use super::Scope;
use crate::logging::{Event, Logger};
use crate::progress::Timestamp;
use crate::scheduling::Activator;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::cell::RefCell;
use std::rc::Rc;
use timely_communication::exchangeable::{
    bincode_decode, bincode_decode_extend, bincode_encode, DecodeError,
};
use timely_communication::{Exchangeable, FanOut, Pull, Push, SharedQueue};

/// Records that can flow on a pipeline edge.
pub trait Data: Clone + 'static {}
impl<D: Clone + 'static> Data for D {}

/// Records that can be exchanged between workers, also across processes.
///
/// Records travel in batches, so a batch is the unit of encoding: a type whose encoding has a
/// per-batch cost (Python objects, which need the interpreter) pays it once per batch. Every
/// serde type is `ExchangeData` through bincode; other types implement the two methods.
pub trait ExchangeData: Data + Send {
    /// Appends the encoding of `batch` to `out`.
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>);
    /// Reads a batch from exactly the bytes `encode_batch` wrote.
    ///
    /// # Errors
    ///
    /// Bytes that are not such an encoding; they come from another process and must never
    /// make decoding panic.
    fn decode_batch(bytes: &[u8]) -> Result<Vec<Self>, DecodeError>;
    /// Like [`ExchangeData::decode_batch`], appending to `into` (whose capacity a type can
    /// reuse, so that receiving allocates nothing). On error `into` may hold some records.
    ///
    /// # Errors
    ///
    /// As [`ExchangeData::decode_batch`].
    fn decode_batch_into(bytes: &[u8], into: &mut Vec<Self>) -> Result<(), DecodeError> {
        into.extend(Self::decode_batch(bytes)?);
        Ok(())
    }
}

impl<D: Data + Send + Serialize + DeserializeOwned> ExchangeData for D {
    fn encode_batch(batch: &[Self], out: &mut Vec<u8>) {
        bincode_encode(batch, out);
    }

    fn decode_batch(bytes: &[u8]) -> Result<Vec<Self>, DecodeError> {
        bincode_decode(bytes)
    }

    fn decode_batch_into(bytes: &[u8], into: &mut Vec<Self>) -> Result<(), DecodeError> {
        bincode_decode_extend(bytes, into)
    }
}

/// A batch of records at one time.
#[derive(Debug, PartialEq, Eq)]
pub struct Message<T, D> {
    /// The records' timestamp.
    pub time: T,
    /// The records.
    pub data: Vec<D>,
    /// The sending worker.
    pub from: usize,
    /// Sequence number of this message on its (channel, sender, receiver).
    pub seq: u64,
}

impl<T: Clone, D: Clone> Clone for Message<T, D> {
    fn clone(&self) -> Self {
        Message { time: self.time.clone(), data: self.data.clone(), from: self.from, seq: self.seq }
    }

    /// Copies `source` into this message, keeping the capacity of its buffer.
    fn clone_from(&mut self, source: &Self) {
        self.time.clone_from(&source.time);
        self.data.clone_from(&source.data);
        self.from = source.from;
        self.seq = source.seq;
    }
}

impl<T, D> Message<T, D> {
    /// A message from worker `from`; the sequence number is assigned when it is sent.
    pub fn new(time: T, data: Vec<D>, from: usize) -> Self {
        Message { time, data, from, seq: 0 }
    }
}

/// The `(time, from, seq)` that an encoded message starts with.
type Envelope<T> = (T, usize, u64);

/// Reads the `(time, from, seq)` of an encoded message; returns them and the records' bytes.
fn split_message<T: Timestamp>(bytes: &[u8]) -> Result<(Envelope<T>, &[u8]), DecodeError> {
    let short = |part| DecodeError::Short { what: "a message", part };
    let length = bytes.get(..4).ok_or(short("header length"))?;
    let length = u32::from_le_bytes(length.try_into().expect("four bytes")) as usize;
    let header = bytes.get(4..4 + length).ok_or(short("header"))?;
    let (time, from, seq): (T, u64, u64) = bincode_decode(header)?;
    let from =
        usize::try_from(from).map_err(|_| DecodeError::WorkerIndex { what: "a message", index: from })?;
    Ok(((time, from, seq), &bytes[4 + length..]))
}

/// A message as bytes: the length of the encoded `(time, from, seq)` as a little-endian `u32`,
/// those bytes (bincode), then the records (`ExchangeData::encode_batch`).
impl<T: Timestamp, D: ExchangeData> Exchangeable for Message<T, D> {
    fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        bincode_encode(&(&self.time, self.from as u64, self.seq), out);
        let header = u32::try_from(out.len() - start - 4).expect("a message header is small");
        out[start..start + 4].copy_from_slice(&header.to_le_bytes());
        D::encode_batch(&self.data, out);
    }

    fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let ((time, from, seq), records) = split_message::<T>(bytes)?;
        Ok(Message { time, data: D::decode_batch(records)?, from, seq })
    }

    fn decode_into(bytes: &[u8], target: &mut Self) -> Result<(), DecodeError> {
        let ((time, from, seq), records) = split_message::<T>(bytes)?;
        (target.time, target.from, target.seq) = (time, from, seq);
        target.data.clear();
        D::decode_batch_into(records, &mut target.data)
    }

    /// Every channel's pusher stamps the message with the pushing worker ([`LogPusher`]).
    fn check_sender(&self, worker: usize) -> Result<(), DecodeError> {
        match self.from == worker {
            true => Ok(()),
            false => Err(DecodeError::WrongSender { what: "a message", claimed: self.from }),
        }
    }
}

/// Boxed pusher of messages.
pub type MessagePusher<T, D> = Box<dyn Push<Message<T, D>>>;
/// Boxed puller of messages.
pub type MessagePuller<T, D> = Box<dyn Pull<Message<T, D>>>;

/// The consumers of one output; pushing a message gives every consumer a copy (see
/// [`FanOut`]: copies reuse the buffers consumers gave back, and the last consumer's given-back
/// message, or the message itself when nothing consumes the output, returns to the sender).
pub struct Tee<T, D> {
    consumers: Rc<RefCell<FanOut<Message<T, D>>>>,
}

impl<T, D> Clone for Tee<T, D> {
    fn clone(&self) -> Self {
        Tee { consumers: self.consumers.clone() }
    }
}

impl<T, D> Default for Tee<T, D> {
    fn default() -> Self {
        Tee { consumers: Rc::new(RefCell::new(FanOut::new(Vec::new()))) }
    }
}

impl<T, D> Tee<T, D> {
    /// Adds a consumer.
    pub fn add_pusher(&self, pusher: MessagePusher<T, D>) {
        self.consumers.borrow_mut().add(pusher);
    }

    /// True when nothing consumes the output.
    pub fn is_empty(&self) -> bool {
        self.consumers.borrow().is_empty()
    }
}

impl<T: Clone, D: Clone> Push<Message<T, D>> for Tee<T, D> {
    fn push(&mut self, element: &mut Option<Message<T, D>>) {
        self.consumers.borrow_mut().push(element);
    }
}

/// How an edge moves records between workers.
pub trait Pact<T: Timestamp, D: Data> {
    /// Creates the channel `identifier` into an operator activated by `activator`; returns
    /// the sending end (for the upstream tee) and the receiving end (for the operator).
    fn connect(
        self,
        scope: &Scope<T>,
        identifier: usize,
        activator: Activator,
    ) -> (MessagePusher<T, D>, MessagePuller<T, D>);
}

/// Keeps records on the worker that produced them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pipeline;

impl<T: Timestamp, D: Data> Pact<T, D> for Pipeline {
    fn connect(
        self,
        scope: &Scope<T>,
        identifier: usize,
        activator: Activator,
    ) -> (MessagePusher<T, D>, MessagePuller<T, D>) {
        let queue = SharedQueue::default();
        let pusher = QueuePusher { queue: queue.clone(), activator };
        let puller = QueuePuller { queue, current: None };
        let index = scope.index();
        let logger = scope.logger();
        (
            Box::new(LogPusher::new(pusher, identifier, index, index, logger.clone())),
            Box::new(LogPuller::new(puller, identifier, index, logger)),
        )
    }
}

struct QueuePusher<T, D> {
    queue: SharedQueue<Message<T, D>>,
    activator: Activator,
}

impl<T, D> Push<Message<T, D>> for QueuePusher<T, D> {
    fn push(&mut self, element: &mut Option<Message<T, D>>) {
        if element.is_some() {
            self.queue.borrow_mut().push(element);
            self.activator.activate();
        }
    }
}

struct QueuePuller<T, D> {
    queue: SharedQueue<Message<T, D>>,
    current: Option<Message<T, D>>,
}

impl<T, D> Pull<Message<T, D>> for QueuePuller<T, D> {
    fn pull(&mut self) -> &mut Option<Message<T, D>> {
        self.current = self.queue.borrow_mut().pop();
        &mut self.current
    }

    #[inline]
    fn recv(&mut self) -> Option<Message<T, D>> {
        self.queue.borrow_mut().pop()
    }

    fn recycle(&mut self, message: Message<T, D>) {
        self.queue.borrow_mut().recycle(message);
    }
}

/// Numbers the messages sent on a (channel, sender, receiver) and logs them.
pub(super) struct LogPusher<P> {
    pusher: P,
    channel: usize,
    source: usize,
    target: usize,
    next_seq: u64,
    logger: Option<Logger>,
}

impl<P> LogPusher<P> {
    pub(super) fn new(
        pusher: P,
        channel: usize,
        source: usize,
        target: usize,
        logger: Option<Logger>,
    ) -> Self {
        LogPusher { pusher, channel, source, target, next_seq: 0, logger }
    }
}

impl<T, D, P: Push<Message<T, D>>> Push<Message<T, D>> for LogPusher<P> {
    /// Stamps the sender (when the message does not already name it) and, with a logger,
    /// the sequence number, which only the log reads. Writing neither when nothing changes
    /// matters: the next pusher copies the message at once, and a copy right after writes
    /// to its fields stalls (the copy's wide reads cannot be served from the narrow writes).
    #[inline]
    fn push(&mut self, element: &mut Option<Message<T, D>>) {
        if let Some(message) = element.as_mut() {
            if message.from != self.source {
                message.from = self.source;
            }
            if let Some(logger) = &self.logger {
                message.seq = self.next_seq;
                self.next_seq += 1;
                logger.log(Event::Messages {
                    send: true,
                    channel: self.channel,
                    source: self.source,
                    target: self.target,
                    sequence: message.seq,
                    length: message.data.len(),
                });
            }
        }
        self.pusher.push(element);
    }
}

/// Logs the messages received on a channel.
pub(super) struct LogPuller<P> {
    puller: P,
    channel: usize,
    target: usize,
    logger: Option<Logger>,
}

impl<P> LogPuller<P> {
    pub(super) fn new(puller: P, channel: usize, target: usize, logger: Option<Logger>) -> Self {
        LogPuller { puller, channel, target, logger }
    }
}

/// Logs that `message` arrived on `channel` at `target`.
fn log_received<T, D>(logger: &Logger, channel: usize, target: usize, message: &Message<T, D>) {
    logger.log(Event::Messages {
        send: false,
        channel,
        source: message.from,
        target,
        sequence: message.seq,
        length: message.data.len(),
    });
}

impl<T, D, P: Pull<Message<T, D>>> Pull<Message<T, D>> for LogPuller<P> {
    #[inline]
    fn pull(&mut self) -> &mut Option<Message<T, D>> {
        let slot = self.puller.pull();
        if let (Some(logger), Some(message)) = (&self.logger, slot.as_ref()) {
            log_received(logger, self.channel, self.target, message);
        }
        slot
    }

    #[inline]
    fn recv(&mut self) -> Option<Message<T, D>> {
        let message = self.puller.recv();
        if let (Some(logger), Some(message)) = (&self.logger, message.as_ref()) {
            log_received(logger, self.channel, self.target, message);
        }
        message
    }

    fn recycle(&mut self, message: Message<T, D>) {
        self.puller.recycle(message);
    }
}
