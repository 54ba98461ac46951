//! Where recorders put their events: a worker's [`WorkerSink`] and the process's
//! [`NetworkSink`].
//!
//! A worker keeps its events in its own form (the engine's event enum, say) and hands whole
//! vectors of them to its sink; the sink ships each vector to the writer thread untouched,
//! and gets back an emptied vector to fill next. The events say themselves how they become
//! rows ([`TraceEvent`]): on the writer thread, each writes its cells straight into the
//! columns being gathered. So the worker pays for a push into a vector per event, and the
//! writer thread for the columns and the files. A full queue makes the worker wait, and the wait is
//! recorded (a `trace_wait` row). The network threads of a process share one [`NetworkSink`].
//! This module must not decide what events mean, nor write files.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};

use crate::batch::{EventBatch, Int};
use crate::metadata::{ClockSample, Status};
use crate::schema::{ChannelKind, EventClasses, Kind};

/// What the writer thread receives: from the sinks, and from its handle.
pub(crate) enum Command {
    /// A worker's events, the waits for the writer it recorded since its last hand-over, and
    /// whether the worker is done.
    Events {
        worker: usize,
        events: Box<dyn PendingEvents>,
        waits: Vec<(i64, i64)>,
        last: bool,
    },
    Clock(ClockSample),
    Finish {
        status: Status,
        end_time_ns: i64,
    },
}

/// An event a recorder hands to its [`WorkerSink`], as the writer thread reads it.
pub trait TraceEvent: Send + 'static {
    /// When it happened: a stamp of the trace clock (`crate::writer::TraceClock`).
    fn stamp(&self) -> i64;
    /// What happened (events of classes not recorded are left out).
    fn kind(&self) -> Kind;
    /// Appends the event's row to `batch` (`EventBatch::row`, then its cells); `worker` is
    /// the global index of the worker whose sink received the event.
    fn write(&self, worker: usize, batch: &mut EventBatch);
}

/// Empty vectors a worker may keep for its next events.
const SPARE_VECTORS: usize = 4;

/// A worker's events on their way to the writer thread.
pub(crate) trait PendingEvents: Send {
    /// Appends the rows of the events of recorded classes to `batch`, in order, each wait
    /// for the writer `(start, duration)` of `waits` (oldest first) before the first event
    /// stamped after its start. Returns how many of `waits` were written.
    fn write(&self, batch: &mut EventBatch, classes: EventClasses, waits: &[(i64, i64)]) -> usize;
    /// Gives the emptied vector back to its worker.
    fn recycle(self: Box<Self>);
}

struct Pending<E> {
    worker: usize,
    events: Vec<E>,
    spares: Sender<Vec<E>>,
}

impl<E: TraceEvent> PendingEvents for Pending<E> {
    fn write(&self, batch: &mut EventBatch, classes: EventClasses, waits: &[(i64, i64)]) -> usize {
        let every = classes == EventClasses::all();
        let mut written = 0;
        for event in &self.events {
            if written < waits.len() {
                let time = event.stamp();
                while written < waits.len() && waits[written].0 <= time {
                    write_wait(batch, waits[written]);
                    written += 1;
                }
            }
            if every || classes.records(event.kind()) {
                event.write(self.worker, batch);
            }
        }
        written
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
    hand_over_every: Duration,
    last_handed_over: Instant,
    clock: fn() -> i64,
    /// Waits for the writer, `(start, duration)`, not yet shipped.
    waits: Vec<(i64, i64)>,
    spares: (Sender<Vec<E>>, Receiver<Vec<E>>),
}

impl<E: TraceEvent> WorkerSink<E> {
    pub(crate) fn new(
        worker: usize,
        sender: Sender<Command>,
        hand_over_every: Duration,
        clock: fn() -> i64,
    ) -> Self {
        WorkerSink {
            worker,
            sender,
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
        let pending = Pending { worker: self.worker, events, spares: self.spares.0.clone() };
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
    fn write(&self, _batch: &mut EventBatch, _classes: EventClasses, _waits: &[(i64, i64)]) -> usize {
        0
    }
    fn recycle(self: Box<Self>) {}
}

/// Appends the row of a wait for the writer, `(start, duration)` in stamps (turned into
/// nanoseconds with the row's time, `EventBatch::stamps_to_ns`).
pub(crate) fn write_wait(batch: &mut EventBatch, (started, waited): (i64, i64)) {
    batch.row(started, Kind::TraceWait).int(Int::DurationNs, waited);
}

/// A frame that went over the network, as one of the process's network threads saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetworkEvent {
    /// When it happened: a stamp of the process's trace clock.
    pub stamp: i64,
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
    /// Appends the event's row to `batch`, for a channel that carries `channel_kind`.
    pub fn write(&self, channel_kind: Option<ChannelKind>, batch: &mut EventBatch) {
        let cells = batch.row(self.stamp, self.kind);
        let cells = match channel_kind {
            Some(kind) => cells.channel_kind(kind),
            None => cells,
        };
        cells
            .int(Int::Channel, self.channel)
            .int(Int::SourceWorker, self.source_worker)
            .int(Int::TargetWorker, self.target_worker)
            .int(Int::Seq, self.seq)
            .int(Int::Bytes, self.bytes);
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
