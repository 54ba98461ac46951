//! The rows of the engine's events: how each [`Event`] fills the columns of
//! `docs/trace-format.md`. Called on the trace writer's thread. This module must not decide
//! when events happen or where rows go.

use timely_trace::{ChannelKind, Kind, Row};

use crate::logging::{Event, Timestamped};

/// The trace row (`docs/trace-format.md`) of a timestamped event that `worker` recorded.
/// The trace writer calls it on its own thread.
pub fn event_row(worker: usize, (time, event): &Timestamped) -> Row<'_> {
    row(worker, *time, event)
}

/// The row of `event`, which happened on `worker` at `time`.
fn row(worker: usize, time: i64, event: &Event) -> Row<'_> {
    let worker = worker as i64;
    let int = |value: usize| Some(value as i64);
    match event {
        Event::Operates { id, address, name } => Row {
            operator: int(*id),
            address: Some(address),
            name: Some(name),
            ..Row::new(time, Kind::OperatorCreated)
        },
        Event::ProgressChannel { id, scope_address } => Row {
            channel: int(*id),
            channel_kind: Some(ChannelKind::Progress),
            address: Some(scope_address),
            ..Row::new(time, Kind::ChannelCreated)
        },
        Event::Channels { id, scope_address, source, target } => Row {
            channel: int(*id),
            channel_kind: Some(ChannelKind::Data),
            address: Some(scope_address),
            source_operator: int(source.0),
            source_port: int(source.1),
            target_operator: int(target.0),
            target_port: int(target.1),
            ..Row::new(time, Kind::ChannelCreated)
        },
        Event::Schedule { id, start: true, .. } => {
            Row { operator: int(*id), ..Row::new(time, Kind::ScheduleStart) }
        }
        Event::Schedule { id, start: false, useful } => {
            Row { operator: int(*id), useful: Some(*useful), ..Row::new(time, Kind::ScheduleStop) }
        }
        Event::Messages { send, channel, source, target, sequence, length } => Row {
            channel: int(*channel),
            source_worker: int(*source),
            target_worker: int(*target),
            seq: Some(*sequence as i64),
            records: int(*length),
            ..Row::new(time, if *send { Kind::MessageSend } else { Kind::MessageRecv })
        },
        Event::Progress { send, source, channel, sequence, address, updates } => Row {
            channel: int(*channel),
            address: Some(address),
            source_worker: int(*source),
            target_worker: if *send { None } else { Some(worker) },
            seq: Some(*sequence as i64),
            records: int(*updates),
            ..Row::new(time, if *send { Kind::ProgressSend } else { Kind::ProgressRecv })
        },
        Event::PushProgress { id } => Row { operator: int(*id), ..Row::new(time, Kind::ProgressPush) },
        Event::Park { timeout } => {
            Row { duration_ns: timeout.map(|t| t.as_nanos() as i64), ..Row::new(time, Kind::Park) }
        }
        Event::Unpark { wake } => Row { wake: Some(*wake), ..Row::new(time, Kind::Unpark) },
        Event::Activity { name, start } => Row {
            name: Some(name),
            ..Row::new(time, if *start { Kind::ActivityStart } else { Kind::ActivityStop })
        },
        Event::Shutdown { id } => Row { operator: int(*id), ..Row::new(time, Kind::OperatorShutdown) },
    }
}
