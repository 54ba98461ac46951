//! One worker's pieces from its clock-corrected events: `timely_py.analysis.activities.pieces`
//! shaped by `timely_py.analysis.waits.worker_rows`, in Rust, in one pass.
//!
//! This module owns the kernel [`worker_pieces`]: one worker's events (the columns of
//! [`EVENTS_READ`], in any order: it sorts them by `t`, then `ord`) to the rows of
//! `WORKER_ROWS` that the Spark queries of `activities.pieces` give that worker, everything
//! but the deliveries (the communications are a join across workers and stay in Spark):
//!
//! * `operator`, `step`, `scope`: a `schedule_start` followed by a `schedule_stop` among the
//!   same operator's schedule events (`useful` the stop's, false when null; a root scope's
//!   run is a `step`, a nested scope's a `scope` with its depth, from [`Catalogue::depths`]);
//! * `user`: an `activity_start` followed, among the marks of its nesting depth (the running
//!   count of open activities), by an `activity_stop` (name the start's);
//! * `park`: a `park` followed by an `unpark` (wake the unpark's);
//! * `instant`: every `progress_send`, `progress_recv`, `progress_push`;
//! * `input`: every `message_send` on a channel of [`Catalogue::input_channels`];
//! * `lifetime`: the first and last `t` of the worker's events but the network threads';
//! * `trace`: the trace's bounds ([`Catalogue::origin`], [`Catalogue::end`]).
//!
//! A null `t` or `ord` of an event with a kind is a [`KernelError`]. It must not decide what
//! is waiting ([`crate::waits`]) nor what covers a gap ([`crate::background`]); it must know
//! nothing of other workers.

use crate::columns::{check, Batch, KernelError};
use crate::schemas::{schema, Kind, WORKER_ROWS};
use crate::worker_rows::Own;
use arrow_array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::Schema;
use std::collections::HashMap;
use std::sync::Arc;

/// The columns of one worker's events the kernel reads (others are ignored).
pub const EVENTS_READ: &[(&str, Kind)] = &[
    ("worker", Kind::Int),
    ("kind", Kind::Str),
    ("t", Kind::Int),
    ("ord", Kind::Int),
    ("operator", Kind::Int),
    ("useful", Kind::Bool),
    ("wake", Kind::Str),
    ("name", Kind::Str),
    ("channel", Kind::Int),
];

/// What the kernel must know of the trace as a whole (`activities.Catalogue`).
#[derive(Clone, Debug, Default)]
pub struct Catalogue {
    /// `scope -> depth` (`activities.scope_depths`): 0 for a dataflow's root scope.
    pub depths: HashMap<i64, i64>,
    /// `data channel -> the Input operator that sends on it`.
    pub input_channels: HashMap<i64, i64>,
    /// The trace's first and last `t`.
    pub origin: Option<i64>,
    pub end: Option<i64>,
}

/// The event kinds the pairings and instants read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    ScheduleStart,
    ScheduleStop,
    ActivityStart,
    ActivityStop,
    Park,
    Unpark,
    Instant,
    Send,
}

fn mark(kind: &str) -> Option<Mark> {
    Some(match kind {
        "schedule_start" => Mark::ScheduleStart,
        "schedule_stop" => Mark::ScheduleStop,
        "activity_start" => Mark::ActivityStart,
        "activity_stop" => Mark::ActivityStop,
        "park" => Mark::Park,
        "unpark" => Mark::Unpark,
        "progress_send" | "progress_recv" | "progress_push" => Mark::Instant,
        "message_send" => Mark::Send,
        _ => return None,
    })
}

/// Whether `kind` is the network threads' (stored with a worker, not the worker's doing).
fn is_network(kind: &str) -> bool {
    matches!(kind, "network_send_start" | "network_recv_end")
}

/// One event the pairings read.
#[derive(Clone, Copy, Debug)]
struct Event<'a> {
    mark: Mark,
    t: i64,
    ord: i64,
    operator: Option<i64>,
    useful: Option<bool>,
    wake: Option<&'a str>,
    name: Option<&'a str>,
    channel: Option<i64>,
}

/// One worker's events: the worker, the marks, and its first and last own `t`.
struct Events<'a> {
    worker: Option<i64>,
    marks: Vec<Event<'a>>,
    lifetime: Option<(i64, i64)>,
}

fn read_events(batches: &[RecordBatch]) -> Result<Events<'_>, KernelError> {
    let mut events = Events { worker: None, marks: Vec::new(), lifetime: None };
    for batch in Batch::all(batches).iter().filter(|b| !b.is_empty()) {
        let (workers, kind, t, ord) =
            (batch.ints("worker")?, batch.strs("kind")?, batch.ints("t")?, batch.ints("ord")?);
        let (operator, useful, wake) = (batch.ints("operator")?, batch.bools("useful")?, batch.strs("wake")?);
        let (name, channel) = (batch.strs("name")?, batch.ints("channel")?);
        if events.worker.is_none() {
            events.worker = Some(workers.need(0)?);
        }
        for i in 0..batch.len() {
            let Some(kind) = kind.get(i) else { continue };
            let time = t.need(i)?;
            if !is_network(kind) {
                let (first, last) = events.lifetime.unwrap_or((time, time));
                events.lifetime = Some((first.min(time), last.max(time)));
            }
            let Some(mark) = mark(kind) else { continue };
            events.marks.push(Event {
                mark,
                t: time,
                ord: ord.need(i)?,
                operator: operator.get(i),
                useful: useful.get(i),
                wake: wake.get(i),
                name: name.get(i),
                channel: channel.get(i),
            });
        }
    }
    events.marks.sort_unstable_by_key(|e| (e.t, e.ord));
    Ok(events)
}

fn row<'a>(row_type: &'static str, start: i64, end: i64) -> Own<'a> {
    Own { row_type: Some(row_type), start, end, ..Own::default() }
}

/// The rows of one worker's marks, sorted by time, in one pass: each pairing remembers the
/// previous mark of its group (an operator's schedule events, a depth's activity marks, the
/// parks), which is what the Spark queries' `lead` over the group's window reads.
fn pieces<'a>(marks: &[Event<'a>], known: &Catalogue) -> Vec<Own<'a>> {
    let mut rows = Vec::new();
    let mut schedules: HashMap<Option<i64>, Event<'a>> = HashMap::new();
    let mut activities: HashMap<i64, Event<'a>> = HashMap::new();
    let (mut open, mut park): (i64, Option<Event<'a>>) = (0, None);
    for &event in marks {
        match event.mark {
            Mark::ScheduleStart | Mark::ScheduleStop => {
                let previous = schedules.insert(event.operator, event);
                if let Some(start) = previous.filter(|p| p.mark == Mark::ScheduleStart) {
                    if event.mark == Mark::ScheduleStop {
                        rows.push(execution(start, event, known));
                    }
                }
            }
            Mark::ActivityStart | Mark::ActivityStop => {
                let depth = if event.mark == Mark::ActivityStart {
                    open += 1;
                    open - 1
                } else {
                    open -= 1;
                    open
                };
                let previous = activities.insert(depth, event);
                if let Some(start) = previous.filter(|p| p.mark == Mark::ActivityStart) {
                    if event.mark == Mark::ActivityStop {
                        rows.push(Own {
                            name: start.name,
                            depth: Some(depth),
                            ..row("user", start.t, event.t)
                        });
                    }
                }
            }
            Mark::Park | Mark::Unpark => {
                if let Some(start) = park.filter(|p| p.mark == Mark::Park) {
                    if event.mark == Mark::Unpark {
                        rows.push(Own { wake: event.wake, ..row("park", start.t, event.t) });
                    }
                }
                park = Some(event);
            }
            Mark::Instant => rows.push(row("instant", event.t, event.t)),
            Mark::Send => {
                if let Some(&input) = event.channel.and_then(|c| known.input_channels.get(&c)) {
                    rows.push(Own { operator: Some(input), ..row("input", event.t, event.t) });
                }
            }
        }
    }
    rows
}

/// The run from `start` to `stop` of one operator: an `operator`, a `step` (a root scope's) or
/// a `scope` (a nested scope's, with its depth).
fn execution<'a>(start: Event<'a>, stop: Event<'a>, known: &Catalogue) -> Own<'a> {
    let depth = start.operator.and_then(|op| known.depths.get(&op).copied());
    let (row_type, depth) = match depth {
        Some(0) => ("step", None),
        Some(depth) => ("scope", Some(depth)),
        None => ("operator", None),
    };
    let useful = Some(stop.useful.unwrap_or(false));
    Own { operator: start.operator, useful, depth, ..row(row_type, start.t, stop.t) }
}

/// The kernel: one worker's events (the batches of one table with schema `input`, holding
/// [`EVENTS_READ`]) to its `WORKER_ROWS`, deliveries aside.
pub fn worker_pieces(
    input: &Schema,
    batches: &[RecordBatch],
    known: &Catalogue,
) -> Result<RecordBatch, KernelError> {
    check(input, EVENTS_READ)?;
    let events = read_events(batches)?;
    let Some(worker) = events.worker else { return Ok(RecordBatch::new_empty(schema(WORKER_ROWS))) };
    let mut rows = pieces(&events.marks, known);
    if let Some((first, last)) = events.lifetime {
        rows.push(row("lifetime", first, last));
    }
    rows.push(Own { row_type: Some("trace"), ..Own::default() });
    Ok(rows_batch(worker, &rows, (known.origin, known.end)))
}

/// The trace's first and last `t`.
type Bounds = (Option<i64>, Option<i64>);

/// `rows` as `WORKER_ROWS`; the last row is the `trace` row, whose bounds are `trace`'s.
fn rows_batch<'a>(worker: i64, rows: &[Own<'a>], trace: Bounds) -> RecordBatch {
    let last = rows.len() - 1;
    let ints = |f: &dyn Fn(&Own) -> Option<i64>| -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<Int64Array>())
    };
    let strs = |f: &dyn Fn(&Own<'a>) -> Option<&'a str>| -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<StringArray>())
    };
    let bounds = |pick: fn(Bounds) -> Option<i64>, own: fn(&Own) -> i64| -> ArrayRef {
        let values = rows.iter().enumerate().map(|(i, r)| if i == last { pick(trace) } else { Some(own(r)) });
        Arc::new(values.collect::<Int64Array>())
    };
    let none_int = || -> ArrayRef { Arc::new(Int64Array::new_null(rows.len())) };
    let columns: Vec<ArrayRef> = vec![
        strs(&|r| r.row_type),
        ints(&|_| Some(worker)),
        bounds(|t| t.0, |r| r.start),
        bounds(|t| t.1, |r| r.end),
        ints(&|r| r.operator),
        Arc::new(rows.iter().map(|r| r.useful).collect::<BooleanArray>()),
        strs(&|r| r.wake),
        strs(&|r| r.name),
        ints(&|r| r.depth),
        none_int(),
        Arc::new(StringArray::new_null(rows.len())),
        none_int(),
        none_int(),
        none_int(),
        none_int(),
        Arc::new(BooleanArray::new_null(rows.len())),
    ];
    RecordBatch::try_new(schema(WORKER_ROWS), columns).expect("the columns follow WORKER_ROWS")
}
