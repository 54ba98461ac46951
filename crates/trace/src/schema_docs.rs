//! What each column and event kind of a trace means, in the words of `docs/trace-format.md`,
//! whose tables are generated from here (`scripts/trace_format_tables.py`; a test fails when
//! they drift). This module owns only the prose; the columns and kinds are `crate::schema`'s.

use crate::schema::Kind;

/// Each column's unit or values, by name, in the schema's order.
pub const COLUMN_DESCRIPTIONS: [(&str, &str); 19] = [
    ("time_ns", "nanoseconds since the Unix epoch, on the writing process's clock (see \"Clocks\")"),
    ("kind", "the event kind, table below"),
    ("operator", "operator id, unique per worker and the same on every worker (same program)"),
    ("address", "`operator_created`: the operator's address (indices of its enclosing scopes, then its own); `channel_created`, `progress_*`: the scope's address"),
    ("name", "`operator_created`: the operator's name; `activity_*`: the activity's name"),
    ("channel", "`channel_created`, `message_*`: dataflow channel id; `progress_*`: progress channel id; `network_*`: the channel id in the frame header (equal to the dataflow or progress channel it carries)"),
    ("channel_kind", "`channel_created`, `network_*`: `data` or `progress`"),
    ("source_worker", "global index of the sending worker"),
    ("target_worker", "global index of the receiving worker"),
    ("source_operator", "`channel_created`: index of the sending operator in its scope (0 = the scope's own inputs)"),
    ("source_port", "`channel_created`: output port of the sender"),
    ("target_operator", "`channel_created`: index of the receiving operator in its scope (0 = the scope's own outputs)"),
    ("target_port", "`channel_created`: input port of the receiver"),
    ("seq", "sequence number, see \"Linking\""),
    ("records", "`message_*`: records in the message; `progress_*`: `(pointstamp, delta)` updates in the batch"),
    ("bytes", "`network_*`: payload bytes of the frame"),
    ("useful", "`schedule_stop`: whether the operator did useful work (see below)"),
    ("duration_ns", "`park`: the longest the worker would sleep (null: until woken); `trace_wait`: how long the worker waited for the trace writer"),
    ("wake", "`unpark`: what woke the worker: `data`, `progress`, `activation`, `timeout`"),
];

impl Kind {
    /// When an event of this kind is recorded.
    pub fn when(self) -> &'static str {
        match self {
            Kind::OperatorCreated => "an operator (or scope) is built",
            Kind::ChannelCreated => "a dataflow channel (an edge) or a scope's progress channel is allocated",
            Kind::ScheduleStart => "the worker starts running an operator",
            Kind::ScheduleStop => "the operator returns",
            Kind::MessageSend => "a batch of records is pushed into a channel, to one target worker",
            Kind::MessageRecv => "an operator pulls a batch of records from a channel",
            Kind::ProgressSend => "a scope broadcasts a batch of progress updates",
            Kind::ProgressRecv => "the worker reads a progress batch",
            Kind::ProgressPush => "new frontier information is handed to an operator",
            Kind::NetworkSendStart => "a process's send thread starts writing a frame to the socket",
            Kind::NetworkRecvEnd => "a process's receive thread has read a whole frame",
            Kind::Park => "the worker goes to sleep because it has nothing to do",
            Kind::Unpark => "the worker wakes up",
            Kind::ActivityStart => "a user activity begins (`worker.activity(name)`)",
            Kind::ActivityStop => "it ends",
            Kind::OperatorShutdown => "an operator has completed and is dropped",
            Kind::TraceWait => "the worker waited for the trace writer (its buffer was full)",
        }
    }

    /// The columns an event of this kind fills.
    pub fn columns(self) -> &'static str {
        match self {
            Kind::OperatorCreated => "`operator`, `address`, `name`",
            Kind::ChannelCreated => "`channel`, `channel_kind`, `address`; for data channels `source_operator`, `source_port`, `target_operator`, `target_port`",
            Kind::ScheduleStart => "`operator`",
            Kind::ScheduleStop => "`operator`, `useful`",
            Kind::MessageSend => "`channel`, `source_worker`, `target_worker`, `seq`, `records`",
            Kind::MessageRecv => "`channel`, `source_worker`, `target_worker`, `seq`, `records`",
            Kind::ProgressSend => "`channel`, `address`, `source_worker`, `seq`, `records`",
            Kind::ProgressRecv => "`channel`, `address`, `source_worker`, `target_worker`, `seq`, `records`",
            Kind::ProgressPush => "`operator`",
            Kind::NetworkSendStart => "`channel`, `channel_kind`, `source_worker`, `target_worker`, `seq`, `bytes`",
            Kind::NetworkRecvEnd => "`channel`, `channel_kind`, `source_worker`, `target_worker`, `seq`, `bytes`",
            Kind::Park => "`duration_ns`",
            Kind::Unpark => "`wake`",
            Kind::ActivityStart => "`name`",
            Kind::ActivityStop => "`name`",
            Kind::OperatorShutdown => "`operator`",
            Kind::TraceWait => "`duration_ns`",
        }
    }
}

// The columns are the Arrow schema's, which comes with the trace files.
#[cfg(all(test, feature = "files"))]
mod tests {
    use super::*;
    use crate::schema::schema;

    #[test]
    fn every_column_is_described_once_in_the_schemas_order() {
        let described: Vec<&str> = COLUMN_DESCRIPTIONS.iter().map(|(name, _)| *name).collect();
        let columns: Vec<String> = schema().fields().iter().map(|field| field.name().clone()).collect();
        assert_eq!(described, columns);
        assert!(Kind::ALL.iter().all(|kind| !kind.when().is_empty() && !kind.columns().is_empty()));
    }
}
