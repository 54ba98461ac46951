//! Where recorders put their events: a worker's [`WorkerSink`] and the process's
//! [`NetworkSink`].
//!
//! A worker keeps its events in its own form (the engine's event enum, say) and hands whole
//! vectors of them to its sink; the sink ships each vector to the writer thread untouched,
//! with the function that turns one event into a [`Row`], and gets back an emptied vector to
//! fill next. So the worker pays for a push into a vector per event, and the writer thread
//! for the columns and the files. A full queue makes the worker wait, and the wait is
//! recorded (a `trace_wait` row). The network threads of a process share one [`NetworkSink`].
//! This module must not decide what events mean, nor write files.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};

use crate::batch::Row;
use crate::schema::{ChannelKind, Kind};
use crate::writer::Command;

/// Turns one of a recorder's events into its row; the first argument is the global index of
/// the worker whose sink received the event.
pub type ToRow<E> = for<'a> fn(usize, &'a E) -> Row<'a>;

/// Empty vectors a worker may keep for its next events.
const SPARE_VECTORS: usize = 4;

/// A worker's events on their way to the writer thread.
pub(crate) trait PendingEvents: Send {
    /// Calls `row` with the row of each event, in order.
    fn rows(&self, row: &mut dyn FnMut(&Row<'_>));
    /// Gives the emptied vector back to its worker.
    fn recycle(self: Box<Self>);
}

struct Pending<E> {
    worker: usize,
    events: Vec<E>,
    to_row: ToRow<E>,
    spares: Sender<Vec<E>>,
}

impl<E: Send + 'static> PendingEvents for Pending<E> {
    fn rows(&self, row: &mut dyn FnMut(&Row<'_>)) {
        for event in &self.events {
            row(&(self.to_row)(self.worker, event));
        }
    }

    fn recycle(self: Box<Self>) {
        let Pending { mut events, spares, .. } = *self;
        events.clear();
        let _ = spares.try_send(events);
    }
}

/// A worker's way to the writer thread: hands over vectors of events, and records how long
/// it waited when the writer's queue was full.
pub struct WorkerSink<E> {
    worker: usize,
    sender: Sender<Command>,
    to_row: ToRow<E>,
    hand_over_every: Duration,
    last_handed_over: Instant,
    clock: fn() -> i64,
    /// Waits for the writer, `(start, duration)`, not yet shipped.
    waits: Vec<(i64, i64)>,
    spares: (Sender<Vec<E>>, Receiver<Vec<E>>),
}

impl<E: Send + 'static> WorkerSink<E> {
    pub(crate) fn new(
        worker: usize,
        sender: Sender<Command>,
        to_row: ToRow<E>,
        hand_over_every: Duration,
        clock: fn() -> i64,
    ) -> Self {
        WorkerSink {
            worker,
            sender,
            to_row,
            hand_over_every,
            last_handed_over: Instant::now(),
            clock,
            waits: Vec::new(),
            spares: crossbeam_channel::bounded(SPARE_VECTORS),
        }
    }

    /// The global index of the worker.
    pub fn worker(&self) -> usize {
        self.worker
    }

    /// Whether events have waited half the flush interval since the last hand-over, so that
    /// files can be closed on time; the recorder should then hand over what it holds.
    pub fn is_due(&self) -> bool {
        self.has_waited(self.hand_over_every)
    }

    /// Whether the last hand-over is at least `wait` ago.
    pub fn has_waited(&self, wait: Duration) -> bool {
        self.last_handed_over.elapsed() >= wait
    }

    /// Ships `events` (in time order) to the writer and leaves `events` empty, with the
    /// capacity of a vector the writer has finished with when there is one. If the writer's
    /// queue is full, waits, and ships the wait (a `trace_wait` row) with the next events.
    pub fn hand_over(&mut self, events: &mut Vec<E>) {
        self.last_handed_over = Instant::now();
        if events.is_empty() && self.waits.is_empty() {
            return;
        }
        let spare = self.spares.1.try_recv().unwrap_or_else(|_| Vec::with_capacity(events.capacity()));
        let events = std::mem::replace(events, spare);
        let pending =
            Pending { worker: self.worker, events, to_row: self.to_row, spares: self.spares.0.clone() };
        self.ship(Box::new(pending), false);
    }
}

impl<E> WorkerSink<E> {
    /// Sends `events` with the waits not yet shipped; records a wait if the queue is full.
    fn ship(&mut self, events: Box<dyn PendingEvents>, last: bool) {
        let waits = std::mem::take(&mut self.waits);
        let command = Command::Events { worker: self.worker, events, waits, last };
        let command = match self.sender.try_send(command) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => return,
            Err(TrySendError::Full(command)) => command,
        };
        let started = (self.clock)();
        let _ = self.sender.send(command);
        self.waits.push((started, (self.clock)() - started));
    }
}

impl<E> Drop for WorkerSink<E> {
    /// Ships the waits not yet shipped (a wait for this last shipment cannot be recorded),
    /// and tells the writer this worker is done.
    fn drop(&mut self) {
        self.ship(Box::new(NoEvents), true);
    }
}

/// The last shipment of a worker: its remaining waits only.
struct NoEvents;

impl PendingEvents for NoEvents {
    fn rows(&self, _row: &mut dyn FnMut(&Row<'_>)) {}
    fn recycle(self: Box<Self>) {}
}

/// A frame that went over the network, as one of the process's network threads saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetworkEvent {
    /// Nanoseconds since the Unix epoch on this process's clock.
    pub time_ns: i64,
    /// `NetworkSendStart` or `NetworkRecvEnd`.
    pub kind: Kind,
    /// The worker whose partition holds the event: the sender of a sent frame, a receiver of
    /// a received one.
    pub worker: usize,
    /// The channel in the frame's header.
    pub channel: i64,
    /// The sending worker.
    pub source_worker: i64,
    /// The receiving worker (for a frame sent to several workers of a process, the lowest of
    /// them on the sending side).
    pub target_worker: i64,
    /// The frame's sequence number.
    pub seq: i64,
    /// Payload bytes.
    pub bytes: i64,
}

impl NetworkEvent {
    /// The event's row, for a channel that carries `channel_kind`.
    pub fn row(&self, channel_kind: Option<ChannelKind>) -> Row<'static> {
        Row {
            channel: Some(self.channel),
            channel_kind,
            source_worker: Some(self.source_worker),
            target_worker: Some(self.target_worker),
            seq: Some(self.seq),
            bytes: Some(self.bytes),
            ..Row::new(self.time_ns, self.kind)
        }
    }
}

/// Where a process's network threads record frames; any thread may hold a clone. The writer
/// thread collects the events at least every half flush interval.
#[derive(Clone, Default)]
pub struct NetworkSink {
    events: Arc<Mutex<Vec<NetworkEvent>>>,
}

impl NetworkSink {
    /// Records `events`, taking the lock once.
    pub fn record(&self, events: impl IntoIterator<Item = NetworkEvent>) {
        self.events.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).extend(events);
    }

    /// Takes every event recorded so far.
    pub(crate) fn take(&self) -> Vec<NetworkEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }
}
