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
//! This module owns the event vocabulary and the buffering logger; writing trace files is
//! someone else's job (the action installed with the logger, see `crate::trace`).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use timely_communication::clock;
pub use timely_trace::Wake;

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
        /// Address of the scope.
        address: Vec<usize>,
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

/// A timestamped event: nanoseconds since the Unix epoch.
pub type Timestamped = (i64, Event);

type Action = Box<dyn FnMut(usize, &mut Vec<Timestamped>)>;

struct LoggerState {
    worker: usize,
    buffer: Vec<Timestamped>,
    action: Action,
}

/// A cloneable handle that buffers a worker's events and hands them to an action.
#[derive(Clone)]
pub struct Logger {
    state: Rc<RefCell<LoggerState>>,
}

const FLUSH_AT: usize = 1024;

impl Logger {
    /// A logger for `worker` that passes batches of events to `action(worker, events)`;
    /// the action may drain the vector.
    pub fn new<F: FnMut(usize, &mut Vec<Timestamped>) + 'static>(worker: usize, action: F) -> Self {
        let state = LoggerState { worker, buffer: Vec::new(), action: Box::new(action) };
        Logger { state: Rc::new(RefCell::new(state)) }
    }

    /// Records `event` now.
    pub fn log(&self, event: Event) {
        let mut state = self.state.borrow_mut();
        state.buffer.push((clock::now_ns(), event));
        if state.buffer.len() >= FLUSH_AT {
            Self::flush_state(&mut state);
        }
    }

    /// Hands buffered events to the action.
    pub fn flush(&self) {
        Self::flush_state(&mut self.state.borrow_mut());
    }

    fn flush_state(state: &mut LoggerState) {
        if !state.buffer.is_empty() {
            let LoggerState { worker, buffer, action, .. } = state;
            action(*worker, buffer);
            buffer.clear();
        }
    }
}

impl Drop for LoggerState {
    fn drop(&mut self) {
        Logger::flush_state(self);
    }
}

/// Logs `event` if a logger is installed; the event is built only then.
#[inline]
pub fn log(logger: &Option<Logger>, event: impl FnOnce() -> Event) {
    if let Some(logger) = logger {
        logger.log(event());
    }
}
