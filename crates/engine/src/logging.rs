//! Trace event points.
//!
//! The engine calls a per-worker `Logger` at the places where the events of Sager's
//! instrumentation (thesis section 4.2) happen: operators and channels created, operators
//! scheduled (with whether they did useful work), data messages sent and received, progress
//! messages sent and received, progress pushed to an operator, the worker parking and
//! waking (and what woke it), and user activities. Each event gets a nanosecond Unix-epoch
//! timestamp from the process's trace clock (`timely_communication::clock`). When no logger
//! is installed the engine holds `None` and pays one branch.
//!
//! This module owns the event vocabulary, the buffering logger and the [`Activity`] guard that
//! records a user activity; writing trace files is someone else's job (the action installed
//! with the logger, see `crate::trace`).

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Mutex;
use std::time::Duration;

use timely_communication::clock;
pub use timely_trace::{EventClasses, Kind, Wake};

/// One trace event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// An operator was created.
    Operates {
        /// Worker-unique operator identifier.
        id: usize,
        /// Position in the dataflow: the indices of its enclosing scopes, then its own.
        address: Vec<usize>,
        /// Descriptive name.
        name: String,
    },
    /// A scope's progress channel was created.
    ProgressChannel {
        /// Channel identifier (the same on every worker).
        id: usize,
        /// Address of the scope.
        scope_address: Vec<usize>,
    },
    /// A dataflow channel was created.
    Channels {
        /// Worker-unique channel identifier (the same on every worker).
        id: usize,
        /// Address of the scope the channel lives in.
        scope_address: Vec<usize>,
        /// `(operator index, output port)` of the sender.
        source: (usize, usize),
        /// `(operator index, input port)` of the receiver.
        target: (usize, usize),
    },
    /// An operator started (`start`) or stopped running.
    Schedule {
        /// Operator identifier.
        id: usize,
        /// True at the start, false at the stop.
        start: bool,
        /// At the stop: whether it consumed, produced or changed capabilities, or saw input.
        useful: bool,
    },
    /// A batch of records was sent into, or received from, a channel.
    Messages {
        /// True for a send, false for a receive.
        send: bool,
        /// Channel identifier.
        channel: usize,
        /// Sending worker.
        source: usize,
        /// Receiving worker.
        target: usize,
        /// Per-(channel, source, target) sequence number.
        sequence: u64,
        /// Number of records.
        length: usize,
    },
    /// A progress batch was sent or received.
    Progress {
        /// True for a send, false for a receive.
        send: bool,
        /// Worker that sent the batch.
        source: usize,
        /// Progress channel identifier.
        channel: usize,
        /// The sender's sequence number for this scope.
        sequence: u64,
        /// Address of the scope ([`intern_address`]: no copy and no reference count, so
        /// that neither the worker nor the trace writer touches a counter per event).
        address: &'static [usize],
        /// Number of `(pointstamp, delta)` updates.
        updates: usize,
    },
    /// New frontier information was handed to an operator.
    PushProgress {
        /// Operator identifier.
        id: usize,
    },
    /// The worker parked waiting for work (`timeout` None: indefinitely).
    Park {
        /// The longest the worker would sleep.
        timeout: Option<Duration>,
    },
    /// The worker woke from parking.
    Unpark {
        /// What woke it.
        wake: Wake,
    },
    /// A user activity started or stopped.
    Activity {
        /// The activity's name.
        name: String,
        /// True at the start, false at the stop.
        start: bool,
    },
    /// An operator completed and was dropped.
    Shutdown {
        /// Operator identifier.
        id: usize,
    },
}

impl Event {
    /// The kind of row the event becomes in a trace.
    pub fn kind(&self) -> Kind {
        match self {
            Event::Operates { .. } => Kind::OperatorCreated,
            Event::ProgressChannel { .. } | Event::Channels { .. } => Kind::ChannelCreated,
            Event::Schedule { start: true, .. } => Kind::ScheduleStart,
            Event::Schedule { start: false, .. } => Kind::ScheduleStop,
            Event::Messages { send: true, .. } => Kind::MessageSend,
            Event::Messages { send: false, .. } => Kind::MessageRecv,
            Event::Progress { send: true, .. } => Kind::ProgressSend,
            Event::Progress { send: false, .. } => Kind::ProgressRecv,
            Event::PushProgress { .. } => Kind::ProgressPush,
            Event::Park { .. } => Kind::Park,
            Event::Unpark { .. } => Kind::Unpark,
            Event::Activity { start: true, .. } => Kind::ActivityStart,
            Event::Activity { start: false, .. } => Kind::ActivityStop,
            Event::Shutdown { .. } => Kind::OperatorShutdown,
        }
    }
}

/// An event with when it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timestamped {
    /// When it happened: a stamp of the process's trace clock ([`clock::stamp`]; nanoseconds
    /// since the Unix epoch through [`clock::stamps_to_ns`]).
    pub stamp: i64,
    /// What happened.
    pub event: Event,
}

/// Why a logger calls its action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flush {
    /// The buffer is full: the action must take every event.
    Full,
    /// The worker finished a step: the action may take the events or leave them for later.
    Step,
    /// The logger is being dropped: the action must take every event.
    Last,
}

/// What a logger does with its buffer: take the events (leaving the vector empty) or, for
/// [`Flush::Step`], leave them for a later call.
pub type Action = Box<dyn FnMut(usize, &mut Vec<Timestamped>, Flush)>;

struct LoggerState {
    worker: usize,
    buffer: Vec<Timestamped>,
    classes: EventClasses,
    /// Whether every class is recorded (the common case: no check per event).
    every: bool,
    action: Action,
}

/// A cloneable handle that buffers a worker's events and hands them to an action.
#[derive(Clone)]
pub struct Logger {
    state: Rc<RefCell<LoggerState>>,
}

/// Events a logger buffers before its action must take them.
pub const FLUSH_AT: usize = 4096;

impl Logger {
    /// A logger for `worker` that records the events of `classes` and passes its buffer to
    /// `action(worker, events, why)`.
    pub fn new<F>(worker: usize, classes: EventClasses, action: F) -> Self
    where
        F: FnMut(usize, &mut Vec<Timestamped>, Flush) + 'static,
    {
        let every = classes == EventClasses::all();
        let state = LoggerState { worker, buffer: Vec::new(), classes, every, action: Box::new(action) };
        Logger { state: Rc::new(RefCell::new(state)) }
    }

    /// Records `event` now, if its class is recorded.
    pub fn log(&self, event: Event) {
        let mut state = self.state.borrow_mut();
        if state.every || state.classes.records(event.kind()) {
            state.buffer.push(Timestamped { stamp: clock::stamp(), event });
            if state.buffer.len() >= FLUSH_AT {
                state.flush_full();
            }
        }
    }

    /// Records `event` at `stamp` (a [`clock::stamp`] taken earlier), if its class is
    /// recorded: for what happened before the worker could log it. Callers keep the worker's
    /// events in time order.
    pub fn log_at(&self, stamp: i64, event: Event) {
        let mut state = self.state.borrow_mut();
        if state.every || state.classes.records(event.kind()) {
            state.buffer.push(Timestamped { stamp, event });
        }
    }

    /// Offers the buffered events to the action at the end of a step.
    pub fn flush(&self) {
        self.state.borrow_mut().flush(Flush::Step);
    }
}

impl LoggerState {
    /// Hands over a full buffer: apart from the rest of [`Logger::log`], which runs for
    /// every event.
    #[cold]
    #[inline(never)]
    fn flush_full(&mut self) {
        self.flush(Flush::Full);
    }

    fn flush(&mut self, why: Flush) {
        if !self.buffer.is_empty() {
            (self.action)(self.worker, &mut self.buffer, why);
            if why != Flush::Step {
                self.buffer.clear();
            }
        }
    }
}

impl Drop for LoggerState {
    fn drop(&mut self) {
        self.flush(Flush::Last);
    }
}

/// The process's one copy of the scope address `address`, kept for the process's lifetime:
/// progress events carry it. A process has few distinct scope addresses (dataflows built
/// again reuse theirs), so the copies stay few.
pub fn intern_address(address: &[usize]) -> &'static [usize] {
    static ADDRESSES: Mutex<Option<HashSet<&'static [usize]>>> = Mutex::new(None);
    let mut addresses = ADDRESSES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let addresses = addresses.get_or_insert_with(HashSet::new);
    match addresses.get(address) {
        Some(interned) => interned,
        None => {
            let interned: &'static [usize] = Box::leak(address.into());
            addresses.insert(interned);
            interned
        }
    }
}

/// Logs `event` if a logger is installed; the event is built only then.
#[inline]
pub fn log(logger: &Option<Logger>, event: impl FnOnce() -> Event) {
    if let Some(logger) = logger {
        logger.log(event());
    }
}

/// A user activity in progress; it ends (and is recorded as ended) when dropped.
#[must_use = "the activity ends when this guard is dropped"]
pub struct Activity {
    logger: Option<Logger>,
    name: String,
}

impl Activity {
    /// Records the start of activity `name` in `logger`'s trace (nothing without a logger);
    /// its stop is recorded when the returned guard is dropped.
    pub fn begin(logger: Option<Logger>, name: &str) -> Activity {
        log(&logger, || Event::Activity { name: name.to_owned(), start: true });
        Activity { logger, name: name.to_owned() }
    }
}

impl Drop for Activity {
    fn drop(&mut self) {
        log(&self.logger, || Event::Activity { name: self.name.clone(), start: false });
    }
}
