//! The vocabulary of the trace format: event kinds, the classes that switch them on and off,
//! the values of the small string columns, and (feature `files`) the Arrow schema of every
//! trace file.
//!
//! Names here are the strings that appear in the files; `docs/trace-format.md` is the
//! reference and this module must agree with it.

use std::fmt;
#[cfg(feature = "files")]
use std::sync::{Arc, OnceLock};

#[cfg(feature = "files")]
use arrow_schema::{DataType, Field, Schema, SchemaRef};

/// The version of the trace format written by this crate (`format_version` in metadata).
pub const FORMAT_VERSION: u32 = 1;

/// What happened: the `kind` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// An operator (or scope) was built.
    OperatorCreated,
    /// A dataflow or progress channel was allocated.
    ChannelCreated,
    /// The worker started running an operator.
    ScheduleStart,
    /// The operator returned.
    ScheduleStop,
    /// A batch of records was pushed into a channel.
    MessageSend,
    /// An operator pulled a batch of records from a channel.
    MessageRecv,
    /// A scope broadcast a batch of progress updates.
    ProgressSend,
    /// The worker read a batch of progress updates.
    ProgressRecv,
    /// New frontier information was handed to an operator.
    ProgressPush,
    /// A send thread started writing a frame to its socket.
    NetworkSendStart,
    /// A receive thread finished reading a frame.
    NetworkRecvEnd,
    /// The worker went to sleep.
    Park,
    /// The worker woke up.
    Unpark,
    /// A user activity began.
    ActivityStart,
    /// A user activity ended.
    ActivityStop,
    /// An operator completed and was dropped.
    OperatorShutdown,
    /// The worker waited for the trace writer.
    TraceWait,
}

impl Kind {
    /// Every kind, in the order of their dictionary codes.
    pub const ALL: [Kind; 17] = [
        Kind::OperatorCreated,
        Kind::ChannelCreated,
        Kind::ScheduleStart,
        Kind::ScheduleStop,
        Kind::MessageSend,
        Kind::MessageRecv,
        Kind::ProgressSend,
        Kind::ProgressRecv,
        Kind::ProgressPush,
        Kind::NetworkSendStart,
        Kind::NetworkRecvEnd,
        Kind::Park,
        Kind::Unpark,
        Kind::ActivityStart,
        Kind::ActivityStop,
        Kind::OperatorShutdown,
        Kind::TraceWait,
    ];

    /// The name written in the `kind` column.
    pub fn name(self) -> &'static str {
        match self {
            Kind::OperatorCreated => "operator_created",
            Kind::ChannelCreated => "channel_created",
            Kind::ScheduleStart => "schedule_start",
            Kind::ScheduleStop => "schedule_stop",
            Kind::MessageSend => "message_send",
            Kind::MessageRecv => "message_recv",
            Kind::ProgressSend => "progress_send",
            Kind::ProgressRecv => "progress_recv",
            Kind::ProgressPush => "progress_push",
            Kind::NetworkSendStart => "network_send_start",
            Kind::NetworkRecvEnd => "network_recv_end",
            Kind::Park => "park",
            Kind::Unpark => "unpark",
            Kind::ActivityStart => "activity_start",
            Kind::ActivityStop => "activity_stop",
            Kind::OperatorShutdown => "operator_shutdown",
            Kind::TraceWait => "trace_wait",
        }
    }

    /// The dictionary code of the kind in the `kind` column.
    pub fn code(self) -> i8 {
        self as i8
    }

    /// The class that switches this kind on and off (`None`: always recorded).
    pub fn class(self) -> Option<EventClass> {
        Some(match self {
            Kind::OperatorCreated | Kind::ChannelCreated | Kind::OperatorShutdown => EventClass::Operators,
            Kind::ScheduleStart | Kind::ScheduleStop | Kind::ProgressPush => EventClass::Schedule,
            Kind::MessageSend | Kind::MessageRecv => EventClass::Messages,
            Kind::ProgressSend | Kind::ProgressRecv => EventClass::Progress,
            Kind::NetworkSendStart | Kind::NetworkRecvEnd => EventClass::Network,
            Kind::Park | Kind::Unpark => EventClass::Park,
            Kind::ActivityStart | Kind::ActivityStop => EventClass::Activities,
            Kind::TraceWait => return None,
        })
    }
}

/// A group of event kinds that is recorded or not as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventClass {
    /// `operator_created`, `channel_created`, `operator_shutdown`.
    Operators,
    /// `schedule_start`, `schedule_stop`, `progress_push`.
    Schedule,
    /// `message_send`, `message_recv`.
    Messages,
    /// `progress_send`, `progress_recv`.
    Progress,
    /// `network_send_start`, `network_recv_end`.
    Network,
    /// `park`, `unpark`.
    Park,
    /// `activity_start`, `activity_stop`.
    Activities,
}

impl EventClass {
    /// Every class.
    pub const ALL: [EventClass; 7] = [
        EventClass::Operators,
        EventClass::Schedule,
        EventClass::Messages,
        EventClass::Progress,
        EventClass::Network,
        EventClass::Park,
        EventClass::Activities,
    ];

    /// The class's name, as written in metadata and accepted on command lines.
    pub fn name(self) -> &'static str {
        match self {
            EventClass::Operators => "operators",
            EventClass::Schedule => "schedule",
            EventClass::Messages => "messages",
            EventClass::Progress => "progress",
            EventClass::Network => "network",
            EventClass::Park => "park",
            EventClass::Activities => "activities",
        }
    }

    /// The class named `name`.
    pub fn from_name(name: &str) -> Option<EventClass> {
        EventClass::ALL.into_iter().find(|class| class.name() == name)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of event classes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventClasses(u8);

impl EventClasses {
    /// Every class.
    pub fn all() -> Self {
        EventClass::ALL.into_iter().fold(EventClasses(0), |set, class| set.with(class))
    }

    /// No class.
    pub fn none() -> Self {
        EventClasses(0)
    }

    /// This set and `class`.
    pub fn with(self, class: EventClass) -> Self {
        EventClasses(self.0 | class.bit())
    }

    /// This set without `class`.
    pub fn without(self, class: EventClass) -> Self {
        EventClasses(self.0 & !class.bit())
    }

    /// Whether `class` is in the set.
    pub fn contains(self, class: EventClass) -> bool {
        self.0 & class.bit() != 0
    }

    /// Whether events of `kind` are recorded.
    pub fn records(self, kind: Kind) -> bool {
        kind.class().is_none_or(|class| self.contains(class))
    }

    /// The classes' names, in the order of [`EventClass::ALL`].
    pub fn names(self) -> Vec<&'static str> {
        EventClass::ALL.into_iter().filter(|c| self.contains(*c)).map(EventClass::name).collect()
    }

    /// Parses a comma-separated list: class names (`schedule,messages`), `all`, or `all`
    /// followed by classes to leave out (`all,-network,-park`).
    ///
    /// # Errors
    ///
    /// [`UnknownEventClass`] for a name that is not a class.
    pub fn parse(text: &str) -> Result<Self, UnknownEventClass> {
        let mut set = EventClasses::none();
        for item in text.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            let (remove, name) = match item.strip_prefix('-') {
                Some(name) => (true, name),
                None => (false, item),
            };
            if name == "all" && !remove {
                set = EventClasses::all();
                continue;
            }
            let class = EventClass::from_name(name).ok_or_else(|| UnknownEventClass(name.to_string()))?;
            set = if remove { set.without(class) } else { set.with(class) };
        }
        Ok(set)
    }
}

/// A name in a list of event classes that is not a class (written by hand: without the
/// `files` feature this crate has no dependency, `thiserror` included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownEventClass(pub String);

impl std::fmt::Display for UnknownEventClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known: Vec<_> = EventClass::ALL.iter().map(|c| c.name()).collect();
        write!(f, "unknown trace event class {:?}; known: all, {}", self.0, known.join(", "))
    }
}

impl std::error::Error for UnknownEventClass {}

impl Default for EventClasses {
    fn default() -> Self {
        EventClasses::all()
    }
}

impl fmt::Debug for EventClasses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

/// What a channel carries: the `channel_kind` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChannelKind {
    /// Records between operators.
    Data,
    /// A scope's progress batches.
    Progress,
}

impl ChannelKind {
    /// The value in the `channel_kind` column.
    pub fn name(self) -> &'static str {
        match self {
            ChannelKind::Data => "data",
            ChannelKind::Progress => "progress",
        }
    }
}

/// What woke a parked worker: the `wake` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wake {
    /// Records arrived on a channel.
    Data,
    /// Progress updates arrived.
    Progress,
    /// An operator was activated (by an input handle, a timer, another thread).
    Activation,
    /// The park's timeout passed with nothing to do.
    Timeout,
}

impl Wake {
    /// The value in the `wake` column.
    pub fn name(self) -> &'static str {
        match self {
            Wake::Data => "data",
            Wake::Progress => "progress",
            Wake::Activation => "activation",
            Wake::Timeout => "timeout",
        }
    }
}

/// The columns of every trace file, in order (`process` and `worker` come from the path).
#[cfg(feature = "files")]
pub fn schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let int = |name: &str| Field::new(name, DataType::Int64, true);
            let text = |name: &str| Field::new(name, DataType::Utf8, true);
            let kind = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8));
            let address = DataType::List(Arc::new(Field::new("item", DataType::Int64, false)));
            Arc::new(Schema::new(vec![
                Field::new("time_ns", DataType::Int64, false),
                Field::new("kind", kind, false),
                int("operator"),
                Field::new("address", address, true),
                text("name"),
                int("channel"),
                text("channel_kind"),
                int("source_worker"),
                int("target_worker"),
                int("source_operator"),
                int("source_port"),
                int("target_operator"),
                int("target_port"),
                int("seq"),
                int("records"),
                int("bytes"),
                Field::new("useful", DataType::Boolean, true),
                int("duration_ns"),
                text("wake"),
            ]))
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_codes_follow_all() {
        for (code, kind) in Kind::ALL.iter().enumerate() {
            assert_eq!(kind.code() as usize, code);
        }
    }

    #[test]
    fn classes_parse() {
        assert_eq!(EventClasses::parse("all").unwrap(), EventClasses::all());
        let some = EventClasses::parse("schedule, messages").unwrap();
        assert_eq!(some.names(), vec!["schedule", "messages"]);
        let most = EventClasses::parse("all,-network,-park").unwrap();
        assert!(!most.contains(EventClass::Network) && !most.contains(EventClass::Park));
        assert!(most.contains(EventClass::Schedule));
        assert!(EventClasses::none().records(Kind::TraceWait));
        assert!(!EventClasses::none().records(Kind::Park));
        let error = EventClasses::parse("schedul").unwrap_err();
        assert_eq!(error, UnknownEventClass("schedul".to_string()));
        let message = error.to_string();
        assert!(message.contains("\"schedul\"") && message.contains("schedule"), "{message}");
    }
}
