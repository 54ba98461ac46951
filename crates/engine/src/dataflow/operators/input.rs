//! Feeding data into dataflows from outside: `InputHandle`, `to_stream`.
//!
//! An `InputHandle` is created before the dataflow, attached with `Scope::input_from`, and
//! then driven by the worker's program: `send` records at the handle's current time,
//! `advance_to` a later time (promising nothing more at earlier times), `close` when done.
//! Dropping the handle closes it. Records are handed to the dataflow when the input
//! operator runs at the next step.

use super::builder::{OperatorBuilder, OutputPort};
use super::capability::Capability;
use crate::dataflow::channels::Data;
use crate::dataflow::{Scope, Stream};
use crate::progress::Timestamp;
use crate::scheduling::Activator;
use std::fmt;

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
pub struct InputHandle<T: Timestamp, D: Data> {
    attachments: Vec<Attachment<T, D>>,
    now: T,
    closed: bool,
}

impl<T: Timestamp, D: Data> Default for InputHandle<T, D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Timestamp, D: Data> InputHandle<T, D> {
    /// A handle at the minimum time, not yet attached to a dataflow.
    pub fn new() -> Self {
        InputHandle { attachments: Vec::new(), now: T::minimum(), closed: false }
    }

    /// The time at which records are sent now.
    pub fn time(&self) -> &T {
        &self.now
    }

    /// True once closed.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Sends one record at the current time.
    pub fn send(&mut self, datum: D) {
        self.try_send(datum).unwrap_or_else(|e| panic!("{}", e))
    }

    /// Like `send`, but returns an error if the handle is closed.
    pub fn try_send(&mut self, datum: D) -> Result<(), InputError> {
        if self.closed {
            return Err(InputError::Closed);
        }
        if let Some((last, rest)) = self.attachments.split_last_mut() {
            for attachment in rest {
                attachment.output.session(&attachment.capability).give(datum.clone());
                attachment.activator.activate();
            }
            last.output.session(&last.capability).give(datum);
            last.activator.activate();
        }
        Ok(())
    }

    /// Sends every record of `data` at the current time, leaving it empty.
    pub fn send_batch(&mut self, data: &mut Vec<D>) {
        self.try_send_batch(data).unwrap_or_else(|e| panic!("{}", e))
    }

    /// Like `send_batch`, but returns an error if the handle is closed.
    pub fn try_send_batch(&mut self, data: &mut Vec<D>) -> Result<(), InputError> {
        if self.closed {
            return Err(InputError::Closed);
        }
        if data.is_empty() {
            return Ok(());
        }
        if let Some((last, rest)) = self.attachments.split_last_mut() {
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

    /// Moves to time `time`: no more records will be sent at earlier times.
    pub fn advance_to(&mut self, time: T) {
        self.try_advance_to(time).unwrap_or_else(|e| panic!("{}", e))
    }

    /// Like `advance_to`, but returns an error if `time` is earlier than the current time
    /// or the handle is closed.
    pub fn try_advance_to(&mut self, time: T) -> Result<(), InputError> {
        if self.closed {
            return Err(InputError::Closed);
        }
        if !self.now.less_equal(&time) {
            return Err(InputError::TimeNotAdvancing {
                current: format!("{:?}", self.now),
                requested: format!("{:?}", time),
            });
        }
        if time != self.now {
            for attachment in self.attachments.iter_mut() {
                attachment.output.flush();
                attachment.capability.downgrade(&time);
                attachment.activator.activate();
            }
            self.now = time;
        }
        Ok(())
    }

    /// Sends what is buffered now rather than at the next step.
    pub fn flush(&mut self) {
        for attachment in self.attachments.iter_mut() {
            attachment.output.flush();
            attachment.activator.activate();
        }
    }

    /// Closes the input: no more records will be sent. Idempotent.
    pub fn close(&mut self) {
        if !self.closed {
            self.closed = true;
            for attachment in self.attachments.drain(..) {
                let Attachment { mut output, capability, activator } = attachment;
                output.flush();
                drop(capability);
                activator.activate();
            }
        }
    }

    /// Attaches an input operator. On a worker that joined a running cluster the operator may
    /// start later than the handle's time (the handle moves up to it), or without a
    /// capability (the input is closed: its bootstrap server had closed it).
    fn attach(&mut self, mut output: OutputPort<T, D>, mut capability: Capability<T>, activator: Activator) {
        if capability.is_detached() {
            // Its bootstrap server had closed this input: so is it here, and sending fails.
            self.closed = true;
        }
        if self.closed {
            return;
        }
        if self.now.less_equal(capability.time()) && *capability.time() != self.now {
            let later = capability.time().clone();
            self.try_advance_to(later).expect("the handle is open and the time advances");
        }
        capability.downgrade(&self.now);
        output.flush();
        self.attachments.push(Attachment { output, capability, activator });
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
        builder.build(move |capability| {
            handle.attach(output, capability, activator);
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
    /// (SPMD: each worker sends its own copy; filter by worker index to split work).
    pub fn to_stream<D: Data, I>(&self, iter: I) -> Stream<T, D>
    where
        I: IntoIterator<Item = D> + 'static,
    {
        let mut items = Some(iter.into_iter());
        self.source("ToStream", move |capability, info| {
            let mut capability = Some(capability);
            move |output| {
                if let (Some(iter), Some(cap)) = (items.as_mut(), capability.as_ref()) {
                    let mut session = output.session(cap);
                    let mut sent = 0;
                    for item in iter.by_ref() {
                        session.give(item);
                        sent += 1;
                        if sent == super::builder::BUFFER_SIZE * 16 {
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
