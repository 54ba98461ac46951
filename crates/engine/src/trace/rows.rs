//! The rows of the engine's events: how each [`Event`] fills the columns of
//! `docs/trace-format.md`, written cell by cell into the trace writer's columns (no row value
//! in between). Called on the trace writer's thread. This module must not decide when events
//! happen or where rows go.

use timely_trace::{ChannelKind, EventBatch, Int, Kind, TraceEvent};

use crate::logging::{Event, Timestamped};

impl TraceEvent for Timestamped {
    fn stamp(&self) -> i64 {
        self.stamp
    }

    fn kind(&self) -> Kind {
        self.event.kind()
    }

    #[inline]
    fn write(&self, worker: usize, batch: &mut EventBatch) {
        write(worker, self.stamp, &self.event, batch);
    }
}

/// Appends the row of `event`, which happened on `worker` at the stamp `time`, to `batch`. Inlined
/// into the writer's loop over a hand-over's events.
#[inline]
fn write(worker: usize, time: i64, event: &Event, batch: &mut EventBatch) {
    let int = |value: usize| value as i64;
    match event {
        Event::Operates { id, address, name } => {
            batch.row(time, Kind::OperatorCreated).int(Int::Operator, int(*id)).address(address).name(name);
        }
        Event::ProgressChannel { id, scope_address } => {
            batch
                .row(time, Kind::ChannelCreated)
                .int(Int::Channel, int(*id))
                .channel_kind(ChannelKind::Progress)
                .address(scope_address);
        }
        Event::Channels { id, scope_address, source, target } => {
            batch
                .row(time, Kind::ChannelCreated)
                .int(Int::Channel, int(*id))
                .channel_kind(ChannelKind::Data)
                .address(scope_address)
                .int(Int::SourceOperator, int(source.0))
                .int(Int::SourcePort, int(source.1))
                .int(Int::TargetOperator, int(target.0))
                .int(Int::TargetPort, int(target.1));
        }
        Event::Schedule { id, start: true, .. } => {
            batch.row(time, Kind::ScheduleStart).int(Int::Operator, int(*id));
        }
        Event::Schedule { id, start: false, useful } => {
            batch.row(time, Kind::ScheduleStop).int(Int::Operator, int(*id)).useful(*useful);
        }
        Event::Messages { send, channel, source, target, sequence, length } => {
            batch
                .row(time, if *send { Kind::MessageSend } else { Kind::MessageRecv })
                .int(Int::Channel, int(*channel))
                .int(Int::SourceWorker, int(*source))
                .int(Int::TargetWorker, int(*target))
                .int(Int::Seq, *sequence as i64)
                .int(Int::Records, int(*length));
        }
        Event::Progress { send, source, channel, sequence, address, updates } => {
            let cells = batch
                .row(time, if *send { Kind::ProgressSend } else { Kind::ProgressRecv })
                .int(Int::Channel, int(*channel))
                .address(address)
                .int(Int::SourceWorker, int(*source))
                .int(Int::Seq, *sequence as i64)
                .int(Int::Records, int(*updates));
            if !*send {
                cells.int(Int::TargetWorker, int(worker));
            }
        }
        Event::PushProgress { id } => {
            batch.row(time, Kind::ProgressPush).int(Int::Operator, int(*id));
        }
        Event::Park { timeout } => {
            let cells = batch.row(time, Kind::Park);
            if let Some(timeout) = timeout {
                cells.int(Int::DurationNs, timeout.as_nanos() as i64);
            }
        }
        Event::Unpark { wake } => {
            batch.row(time, Kind::Unpark).wake(*wake);
        }
        Event::Activity { name, start } => {
            batch.row(time, if *start { Kind::ActivityStart } else { Kind::ActivityStop }).name(name);
        }
        Event::Shutdown { id } => {
            batch.row(time, Kind::OperatorShutdown).int(Int::Operator, int(*id));
        }
    }
}
