//! Feeding data into dataflows from outside: `InputHandle`, `to_stream`.
//!
//! An `InputHandle` is created before the dataflow, attached with `Scope::input_from`, and
//! then driven by the worker's program: `send` records at the handle's current time,
//! `advance_to` a later time (promising nothing more at earlier times), `close` when done.
//! Dropping the handle closes it. Records are handed to the dataflow when the input
//! operator runs at the next step. When the worker leaves the cluster, its leave releases
//! every handle (`docs/rescaling.md`, "Leaving a running cluster"): the handle then holds
//! nothing and refuses records.

use super::builder::OperatorBuilder;
use super::capability::Capability;
use super::output::OutputPort;
use crate::dataflow::channels::Data;
use crate::dataflow::{Scope, Stream};
use crate::progress::Timestamp;
use crate::rescale::leave::ReleaseOnLeave;
use crate::scheduling::Activator;
use std::cell::{Cell, RefCell, RefMut};
use std::fmt;
use std::rc::{Rc, Weak};

/// Misuse of an input handle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputError {
    /// `advance_to` was given a time not greater or equal to the current time.
    TimeNotAdvancing {
        /// The handle's time.
        current: String,
        /// The time asked for.
        requested: String,
    },
    /// The handle was closed.
    Closed,
    /// The handle's worker is leaving the cluster: the handle handed on what it had accepted
    /// and accepts nothing more (the record was not accepted).
    Leaving,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::TimeNotAdvancing { current, requested } => write!(
                f,
                "cannot advance input to time {}: it is already at time {} and times only move forward",
                requested, current
            ),
            InputError::Closed => write!(f, "the input is closed"),
            InputError::Leaving => write!(
                f,
                "this worker is leaving the cluster: its input accepts no more records, and this was not accepted"
            ),
        }
    }
}

impl std::error::Error for InputError {}

struct Attachment<T: Timestamp, D: Data> {
    output: OutputPort<T, D>,
    capability: Capability<T>,
    activator: Activator,
}

/// Feeds records into one or more dataflow inputs.
///
/// # When its worker leaves the cluster
///
/// From the moment its worker is leaving (`Worker::is_leaving`: `Worker::leave` was called
/// on a worker of its process, or the leave's notice was handled at the start of a step), the
/// handle is *released*: every record it accepted before is handed on at its time and
/// delivered like any other, and it holds no capability any more, as after [`close`]. The
/// frontier of its inputs is then decided by the other workers' handles alone (each worker
/// feeds its own instance of every input). A released handle accepts no record: [`try_send`]
/// and [`try_send_batch`] return [`InputError::Leaving`] (nothing of the batch is taken),
/// [`send`] and [`send_batch`] panic; [`advance_to`] is harmless (it moves [`time`] and
/// nothing else). So a program that goes on feeding while its worker leaves does not keep the
/// worker from going, and loses nothing it was told was accepted.
///
/// [`close`]: InputHandle::close
/// [`try_send`]: InputHandle::try_send
/// [`try_send_batch`]: InputHandle::try_send_batch
/// [`send`]: InputHandle::send
/// [`send_batch`]: InputHandle::send_batch
/// [`advance_to`]: InputHandle::advance_to
/// [`time`]: InputHandle::time
pub struct InputHandle<T: Timestamp, D: Data> {
    now: T,
    shared: Rc<Shared<T, D>>,
}

/// What a handle shares with its worker's leave ([`ReleaseOnLeave`]).
struct Shared<T: Timestamp, D: Data> {
    feed: RefCell<Feed<T, D>>,
    /// Set by a leave that found the feed in use (the worker left from inside a `send`, while
    /// a record was being encoded): the handle is released at its next use.
    release_pending: Cell<bool>,
}

/// The handle's attachments and whether it still accepts records.
struct Feed<T: Timestamp, D: Data> {
    attachments: Vec<Attachment<T, D>>,
    closed: bool,
    released: bool,
}

impl<T: Timestamp, D: Data> Default for InputHandle<T, D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Timestamp, D: Data> InputHandle<T, D> {
    /// A handle at the minimum time, not yet attached to a dataflow.
    pub fn new() -> Self {
        let feed = Feed { attachments: Vec::new(), closed: false, released: false };
        let shared = Rc::new(Shared { feed: RefCell::new(feed), release_pending: Cell::new(false) });
        InputHandle { now: T::minimum(), shared }
    }

    /// The handle's attachments, released first if its worker left while they were in use.
    fn feed(&self) -> RefMut<'_, Feed<T, D>> {
        let mut feed = self.shared.feed.borrow_mut();
        if self.shared.release_pending.replace(false) {
            feed.release();
        }
        feed
    }

    /// The time at which records are sent now.
    pub fn time(&self) -> &T {
        &self.now
    }

    /// True once closed.
    pub fn is_closed(&self) -> bool {
        self.feed().closed
    }

    /// True once released because its worker is leaving the cluster (see the type's docs): it
    /// accepts no more records.
    pub fn is_released(&self) -> bool {
        self.feed().released
    }

    /// Sends one record at the current time.
    ///
    /// # Panics
    ///
    /// If the handle is closed, or released because its worker is leaving the cluster (the
    /// record is not accepted); [`InputHandle::try_send`] returns these as errors.
    pub fn send(&mut self, datum: D) {
        self.try_send(datum).unwrap_or_else(|e| panic!("{}", e))
    }

    /// Like `send`, but returns an error, and does not take the record, if the handle is
    /// closed ([`InputError::Closed`]) or released because its worker is leaving
    /// ([`InputError::Leaving`]).
    pub fn try_send(&mut self, datum: D) -> Result<(), InputError> {
        let mut feed = self.feed();
        feed.open()?;
        if let Some((last, rest)) = feed.attachments.split_last_mut() {
            for attachment in rest {
                attachment.give(datum.clone());
            }
            last.give(datum);
        }
        Ok(())
    }

    /// Sends every record of `data` at the current time, leaving it empty.
    ///
    /// # Panics
    ///
    /// As [`InputHandle::send`].
    pub fn send_batch(&mut self, data: &mut Vec<D>) {
        self.try_send_batch(data).unwrap_or_else(|e| panic!("{}", e))
    }

    /// Like `send_batch`, but returns an error, and takes none of the records, if the handle
    /// is closed or released (as [`InputHandle::try_send`]).
    pub fn try_send_batch(&mut self, data: &mut Vec<D>) -> Result<(), InputError> {
        let mut feed = self.feed();
        feed.open()?;
        if data.is_empty() {
            return Ok(());
        }
        if let Some((last, rest)) = feed.attachments.split_last_mut() {
            for attachment in rest {
                attachment.output.session(&attachment.capability).give_iterator(data.iter().cloned());
                attachment.activator.activate();
            }
            last.output.session(&last.capability).give_vec(data);
            last.activator.activate();
        }
        data.clear();
        Ok(())
    }

    /// Moves to time `time`: no more records will be sent at earlier times. On a handle
    /// released because its worker is leaving, it only moves [`InputHandle::time`].
    ///
    /// # Panics
    ///
    /// If `time` is earlier than the current time, or the handle is closed.
    pub fn advance_to(&mut self, time: T) {
        self.try_advance_to(time).unwrap_or_else(|e| panic!("{}", e))
    }

    /// Like `advance_to`, but returns an error if `time` is earlier than the current time
    /// or the handle is closed.
    pub fn try_advance_to(&mut self, time: T) -> Result<(), InputError> {
        let mut feed = self.feed();
        if feed.closed {
            return Err(InputError::Closed);
        }
        if !self.now.less_equal(&time) {
            return Err(InputError::TimeNotAdvancing {
                current: format!("{:?}", self.now),
                requested: format!("{:?}", time),
            });
        }
        if time != self.now {
            for attachment in feed.attachments.iter_mut() {
                attachment.output.flush();
                attachment.capability.downgrade(&time);
                attachment.activator.activate();
            }
            drop(feed);
            self.now = time;
        }
        Ok(())
    }

    /// Sends what is buffered now rather than at the next step.
    pub fn flush(&mut self) {
        for attachment in self.feed().attachments.iter_mut() {
            attachment.output.flush();
            attachment.activator.activate();
        }
    }

    /// Closes the input: no more records will be sent. Idempotent.
    pub fn close(&mut self) {
        let mut feed = self.feed();
        if !feed.closed {
            feed.closed = true;
            feed.let_go();
        }
    }

    /// Attaches an input operator. On a worker that joined a running cluster the operator may
    /// start later than the handle's time (the handle moves up to it), or without a
    /// capability (the input is closed: its bootstrap server had closed it).
    fn attach(&mut self, mut output: OutputPort<T, D>, mut capability: Capability<T>, activator: Activator) {
        {
            let mut feed = self.feed();
            if capability.is_detached() {
                // Its bootstrap server had closed this input: so is it here, and sending fails.
                feed.closed = true;
            }
            if feed.closed || feed.released {
                return;
            }
        }
        if self.now.less_equal(capability.time()) && *capability.time() != self.now {
            let later = capability.time().clone();
            self.try_advance_to(later).expect("the handle is open and the time advances");
        }
        capability.downgrade(&self.now);
        output.flush();
        self.feed().attachments.push(Attachment { output, capability, activator });
    }
}

impl<T: Timestamp, D: Data> Attachment<T, D> {
    /// Gives one record to the input operator's output. The operator is activated by the
    /// first record into an empty buffer: until it runs (and sends the buffer) that one
    /// activation stands, so the records after it need none (one per record, alternating
    /// between two inputs, filled the scope's activation heap).
    fn give(&mut self, datum: D) {
        let waiting = self.output.has_buffered();
        self.output.session(&self.capability).give(datum);
        if !waiting {
            self.activator.activate();
        }
    }
}

impl<T: Timestamp, D: Data> Feed<T, D> {
    /// Ok while the handle accepts records.
    fn open(&self) -> Result<(), InputError> {
        match (self.closed, self.released) {
            (true, _) => Err(InputError::Closed),
            (false, true) => Err(InputError::Leaving),
            (false, false) => Ok(()),
        }
    }

    /// Hands on what is buffered, then drops every capability (the operators report both at
    /// their next run, which this schedules).
    fn let_go(&mut self) {
        for attachment in self.attachments.drain(..) {
            let Attachment { mut output, capability, activator } = attachment;
            output.flush();
            drop(capability);
            activator.activate();
        }
    }

    /// Its worker is leaving: lets go, and accepts nothing more. Idempotent.
    fn release(&mut self) {
        if !self.released {
            self.released = true;
            self.let_go();
        }
    }
}

impl<T: Timestamp, D: Data> ReleaseOnLeave for Shared<T, D> {
    fn release(&self) {
        match self.feed.try_borrow_mut() {
            Ok(mut feed) => feed.release(),
            Err(_) => self.release_pending.set(true),
        }
    }
}

impl<T: Timestamp, D: Data> Drop for InputHandle<T, D> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<T: Timestamp> Scope<T> {
    /// An input fed by `handle`. A closed handle yields an input that is closed at once.
    pub fn input_from<D: Data>(&self, handle: &mut InputHandle<T, D>) -> Stream<T, D> {
        let mut builder = OperatorBuilder::new("Input", self);
        builder.set_notify(false);
        let (output, stream) = builder.new_output();
        let activator = builder.info().activator.clone();
        let leaves = self.worker().rescaling().leaves();
        builder.build(move |capability| {
            handle.attach(output, capability, activator);
            leaves.release_on_leave(Rc::downgrade(&handle.shared) as Weak<dyn ReleaseOnLeave>);
            |_frontiers| false
        });
        stream
    }

    /// A new input and its handle.
    pub fn new_input<D: Data>(&self) -> (InputHandle<T, D>, Stream<T, D>) {
        let mut handle = InputHandle::new();
        let stream = self.input_from(&mut handle);
        (handle, stream)
    }

    /// A stream of the items of `iter`, all at the minimum time, produced by every worker
    /// (SPMD: each worker sends its own copy; filter by worker index to split work). It is a
    /// `source`: on a worker that leaves the cluster before it gave every item, it stops
    /// there (what it gave is delivered, the rest is not given).
    pub fn to_stream<D: Data, I>(&self, iter: I) -> Stream<T, D>
    where
        I: IntoIterator<Item = D> + 'static,
    {
        let mut items = Some(iter.into_iter());
        self.source("ToStream", move |capability, info| {
            let mut capability = Some(capability);
            move |output| {
                if let (Some(iter), Some(cap)) = (items.as_mut(), capability.as_ref()) {
                    let Ok(mut session) = output.try_session(cap) else {
                        // Released by this worker's leave: it stops.
                        items = None;
                        capability = None;
                        return;
                    };
                    let mut sent = 0;
                    for item in iter.by_ref() {
                        session.give(item);
                        sent += 1;
                        if sent == super::output::BUFFER_SIZE * 256 {
                            info.activator.activate();
                            return;
                        }
                    }
                }
                items = None;
                capability = None;
            }
        })
    }
}

/// `iterator.to_stream(&scope)`: any iterator's items as a stream, as `Scope::to_stream`
/// makes it (timely's `ToStream`).
pub trait ToStream<D: Data> {
    /// The items as a stream at the minimum time of `scope`, produced by every worker.
    fn to_stream<T: Timestamp>(self, scope: &Scope<T>) -> Stream<T, D>;
}

impl<I> ToStream<I::Item> for I
where
    I: IntoIterator + 'static,
    I::Item: Data,
{
    fn to_stream<T: Timestamp>(self, scope: &Scope<T>) -> Stream<T, I::Item> {
        scope.to_stream(self)
    }
}
