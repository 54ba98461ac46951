//! The sending end of an operator: `OutputPort` and its `Session`s, over a buffer that the
//! operator sends after each run (`builder`). A port counts what it sends as produced at its
//! time; it sends only with a capability of its own operator, and once its worker's leave
//! released that operator (a source) it refuses records: they are neither sent nor counted.

use super::capability::{CapabilityChanges, CapabilityError, CapabilityRef};
use crate::dataflow::channels::{Data, Message, Tee};
use crate::progress::{SharedProgress, Timestamp};
use std::cell::RefCell;
use std::rc::Rc;
use timely_communication::Push;

/// Records per message before an output port sends what it buffered.
pub const BUFFER_SIZE: usize = 1024;

/// What an output port buffers, shared with its operator (which sends it after each run).
pub(super) struct OutputBuffer<T: Timestamp, D> {
    pub(super) time: Option<T>,
    pub(super) data: Vec<D>,
    pub(super) tee: Tee<T, D>,
    pub(super) shared: Rc<RefCell<SharedProgress<T>>>,
    pub(super) port: usize,
    pub(super) worker: usize,
    /// True once its operator was released by its worker's leave and asked to send: what it
    /// is given from then on is dropped.
    pub(super) refusing: bool,
}

impl<T: Timestamp, D: Data> OutputBuffer<T, D> {
    fn set_time(&mut self, time: &T) {
        if self.time.as_ref() != Some(time) {
            self.flush();
            self.time = Some(time.clone());
        }
    }

    fn flush(&mut self) {
        if !self.data.is_empty() {
            if self.refusing {
                self.data.clear();
                return;
            }
            let time = self.time.clone().expect("buffered records have a time");
            let data = std::mem::take(&mut self.data);
            self.shared.borrow_mut().produceds[self.port].update(time.clone(), data.len() as i64);
            let mut slot = Some(Message::new(time, data, self.worker));
            self.tee.push(&mut slot);
            // A consumer may give an emptied buffer back; otherwise the next record allocates
            // one (`give`). Not allocating here matters when whole batches pass through
            // (`give_vec` swaps this buffer out): an eager allocation would be swapped into
            // the input, given back upstream, and mostly freed, once per batch and hop.
            self.data = match slot {
                Some(recycled) if recycled.data.capacity() > 0 => {
                    let mut data = recycled.data;
                    data.clear();
                    data
                }
                _ => Vec::new(),
            };
        }
    }

    #[inline]
    fn give(&mut self, datum: D) {
        if self.data.capacity() == 0 {
            self.data.reserve(BUFFER_SIZE);
        }
        self.data.push(datum);
        if self.data.len() >= BUFFER_SIZE {
            self.flush();
        }
    }

    fn give_vec(&mut self, data: &mut Vec<D>) {
        if self.data.is_empty() && data.len() >= BUFFER_SIZE / 4 {
            std::mem::swap(&mut self.data, data);
            self.flush();
        } else {
            for datum in data.drain(..) {
                self.give(datum);
            }
        }
    }

    /// Its operator was released by its worker's leave: sends what it was given before, and
    /// drops what it is given from now on.
    #[cold]
    fn refuse(&mut self) {
        if !self.refusing {
            self.flush();
            self.refusing = true;
        }
    }

    /// Sends everything buffered and flushes the channels (end of an operator's run).
    pub(super) fn cease(&mut self) {
        self.flush();
        self.tee.done();
    }
}

/// The sending end of an operator output.
pub struct OutputPort<T: Timestamp, D> {
    pub(super) buffer: Rc<RefCell<OutputBuffer<T, D>>>,
    pub(super) changes: CapabilityChanges<T>,
}

impl<T: Timestamp, D: Data> OutputPort<T, D> {
    /// A session for sending records at `capability`'s time (a `Capability`, or the
    /// `InputCapability` of records being processed). Panics if the capability belongs to
    /// another operator.
    ///
    /// Once the worker's leave released the operator's capabilities (a source, or an
    /// operator built with [`OperatorBuilder::release_on_leave`]), the session drops what it
    /// is given: the records are refused, neither sent nor counted, and everything given
    /// before the release is delivered. [`OutputPort::try_session`] says so instead
    /// ([`CapabilityError::Released`]).
    pub fn session<'a, C: CapabilityRef<T>>(&'a mut self, capability: &C) -> Session<'a, T, D> {
        if !capability.belongs_to(&self.changes) {
            panic!("{}", CapabilityError::WrongOperator);
        }
        let mut buffer = self.buffer.borrow_mut();
        if self.changes.is_released() {
            buffer.refuse();
        }
        buffer.set_time(capability.time());
        Session { buffer }
    }

    /// Like `session`, but returns an error for a capability of another operator
    /// ([`CapabilityError::WrongOperator`]), or of an operator that its worker's leave
    /// released ([`CapabilityError::Released`]: the operator should stop; nothing given now
    /// would be sent).
    pub fn try_session<'a, C: CapabilityRef<T>>(
        &'a mut self,
        capability: &C,
    ) -> Result<Session<'a, T, D>, CapabilityError> {
        if !capability.belongs_to(&self.changes) {
            return Err(CapabilityError::WrongOperator);
        }
        let mut buffer = self.buffer.borrow_mut();
        if self.changes.is_released() {
            buffer.refuse();
            return Err(CapabilityError::Released);
        }
        buffer.set_time(capability.time());
        Ok(Session { buffer })
    }

    /// Sends a whole batch at `capability`'s time.
    pub fn give_vec<C: CapabilityRef<T>>(&mut self, capability: &C, data: &mut Vec<D>) {
        self.session(capability).give_vec(data);
    }

    /// True when records given to this output wait in its buffer: the operator has not run
    /// (which sends them) since the first of them was given.
    pub(crate) fn has_buffered(&self) -> bool {
        !self.buffer.borrow().data.is_empty()
    }

    /// Sends what is buffered now rather than at the end of the operator's run.
    pub fn flush(&mut self) {
        self.buffer.borrow_mut().flush();
    }
}

/// Sends records at one time.
pub struct Session<'a, T: Timestamp, D: Data> {
    buffer: std::cell::RefMut<'a, OutputBuffer<T, D>>,
}

impl<T: Timestamp, D: Data> Session<'_, T, D> {
    /// Sends one record.
    #[inline]
    pub fn give(&mut self, datum: D) {
        self.buffer.give(datum);
    }

    /// Sends every record of `iter`.
    pub fn give_iterator<I: IntoIterator<Item = D>>(&mut self, iter: I) {
        for datum in iter {
            self.buffer.give(datum);
        }
    }

    /// Sends every record of `data`, leaving it empty (possibly swapping buffers).
    pub fn give_vec(&mut self, data: &mut Vec<D>) {
        self.buffer.give_vec(data);
    }
}
