//! The wait-state analysis per worker (thesis 5.1): `timely_py.analysis.waits` in Rust.
//!
//! This module owns deciding when one worker was waiting and what ended each wait
//! ([`find_waits`]), and the kernel [`worker_activities`] that turns one worker's rows
//! (`WORKER_ROWS`, read by [`crate::worker_rows`]) into its activities (`ACTIVITIES`) through
//! [`crate::precedence::overlay`].
//! It must not slice time or follow paths across workers ([`crate::critical_path`] does).
//!
//! The rules (`docs/critical-path.md`, "Waiting"): *productive* are useful operator runs and
//! progress instants; between two productive moments lies a *stretch*. A stretch is a wait
//! when the worker parked in it or ran a whole step in it, unless a message was buffered
//! (arrived, not yet read) when it began. The wait ends at the arrival of the first message
//! arriving in it (`waiting`), else where the next productive work starts
//! (`waiting_for_input`), unless a message read in that work has an unknown arrival, or the
//! last park woke by `data`/`progress` and a message was read in that work (then `waiting`,
//! ended by it). The stretch after the last productive moment is no wait: its parks stay
//! `parked`. Where none of these, no user activity and no operator run covers a moment, the
//! background of [`crate::background`] does (scope runs, the program between steps, before
//! the worker started and after it finished).

use crate::background::{background, is_background_row};
use crate::columns::{check, KernelError};
use crate::precedence::{overlay, Kind, Segment, Span};
use crate::schemas::{schema, ACTIVITIES, WORKER_ROWS};
use crate::worker_rows::{read_rows, Delivery, Own};
use arrow_array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::Schema;
use std::sync::Arc;

/// `activity_id = worker << ID_BITS | index of the activity on its worker`.
pub const ID_BITS: u32 = 40;

/// A wait: `[start, end)`, `Waiting` with the message that ended it or `WaitingForInput`.
#[derive(Clone, Copy, Debug)]
pub struct Wait<'a> {
    pub kind: Kind,
    pub start: i64,
    pub end: i64,
    pub message: Option<Delivery<'a>>,
}

/// The messages a worker received, indexed for the questions the stretches ask.
struct Deliveries<'a> {
    by_arrival: Vec<Delivery<'a>>,
    /// The latest read among `by_arrival[..=i]`.
    max_read: Vec<i64>,
    by_read: Vec<Delivery<'a>>,
}

impl<'a> Deliveries<'a> {
    fn new(rows: &[Delivery<'a>]) -> Self {
        let mut by_arrival = rows.to_vec();
        by_arrival.sort_by_key(|d| (d.arrival, d.comm_id));
        let max_read = by_arrival
            .iter()
            .scan(i64::MIN, |latest, d| {
                *latest = (*latest).max(d.read);
                Some(*latest)
            })
            .collect();
        let mut by_read = rows.to_vec();
        by_read.sort_by_key(|d| (d.read, d.comm_id));
        Deliveries { by_arrival, max_read, by_read }
    }

    /// Whether some message had arrived by `time` and was read after it.
    fn buffered_at(&self, time: i64) -> bool {
        let index = self.by_arrival.partition_point(|d| d.arrival <= time);
        index > 0 && self.max_read[index - 1] > time
    }

    /// The earliest message arriving in `(after, until]`.
    fn first_arrival(&self, after: i64, until: i64) -> Option<Delivery<'a>> {
        let index = self.by_arrival.partition_point(|d| d.arrival <= after);
        self.by_arrival.get(index).filter(|d| d.arrival <= until).copied()
    }

    /// The first message read in `[start, end]` sent by `sent_by` (with an unknown arrival).
    fn first_read(&self, start: i64, end: i64, sent_by: i64, unknown_only: bool) -> Option<Delivery<'a>> {
        let from = self.by_read.partition_point(|d| d.read < start);
        self.by_read[from..]
            .iter()
            .take_while(|d| d.read <= end)
            .find(|d| d.send <= sent_by && !(unknown_only && d.arrival_known))
            .copied()
    }
}

/// The rows (sorted by start) lying wholly inside `[left, right]`.
fn contained<'r, 'a>(rows: &'r [Own<'a>], left: i64, right: i64) -> impl Iterator<Item = &'r Own<'a>> {
    let from = rows.partition_point(|r| r.start < left);
    rows[from..].iter().take_while(move |r| r.start <= right).filter(move |r| r.end <= right)
}

/// Merged productive intervals: useful operator runs and progress instants.
fn productive(own: &[Own]) -> Vec<(i64, i64)> {
    let mut spans: Vec<(i64, i64)> = own
        .iter()
        .filter(|r| {
            r.row_type == Some("instant") || (r.row_type == Some("operator") && r.useful == Some(true))
        })
        .map(|r| (r.start, r.end))
        .collect();
    spans.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// The rows of type `row_type`, sorted by start (stably: ties keep input order).
fn of_type<'a>(own: &[Own<'a>], row_type: &str) -> Vec<Own<'a>> {
    let mut rows: Vec<Own<'a>> = own.iter().filter(|r| r.row_type == Some(row_type)).copied().collect();
    rows.sort_by_key(|r| r.start);
    rows
}

/// The waits of one worker (its own rows and its deliveries), in time order. The rows only
/// [`crate::background`] reads play no part.
pub fn find_waits<'a>(own: &[Own<'a>], deliveries: &[Delivery<'a>]) -> Vec<Wait<'a>> {
    let starts = own.iter().filter(|r| !is_background_row(r)).map(|r| r.start);
    let Some(mut begin) = starts.min() else { return Vec::new() };
    let deliveries = Deliveries::new(deliveries);
    let (parks, steps) = (of_type(own, "park"), of_type(own, "step"));
    let mut waits = Vec::new();
    for (start, end) in productive(own) {
        if start > begin && !deliveries.buffered_at(begin) {
            let last_park = contained(&parks, begin, start).last();
            if last_park.is_some() || contained(&steps, begin, start).next().is_some() {
                waits.push(classify(begin, start, end, last_park, &deliveries));
            }
        }
        begin = begin.max(end);
    }
    waits.retain(|w| w.end > w.start);
    waits
}

/// The wait over the stretch `[begin, start]` before productive work `[start, end]`.
fn classify<'a>(
    begin: i64,
    start: i64,
    end: i64,
    last_park: Option<&Own>,
    deliveries: &Deliveries<'a>,
) -> Wait<'a> {
    if let Some(message) = deliveries.first_arrival(begin, start) {
        return Wait { kind: Kind::Waiting, start: begin, end: message.arrival, message: Some(message) };
    }
    let mut message = deliveries.first_read(start, end, start, true);
    let woken_by_message = last_park.is_some_and(|p| matches!(p.wake, Some("data" | "progress")));
    if message.is_none() && woken_by_message {
        message = deliveries.first_read(start, end, start, false);
    }
    let kind = if message.is_some() { Kind::Waiting } else { Kind::WaitingForInput };
    Wait { kind, start: begin, end: start, message }
}

/// An activity before precedence: its type, span and columns.
struct Item<'a> {
    kind: Kind,
    row: Own<'a>,
    message: Option<Delivery<'a>>,
}

/// Waits, then operator runs, user activities and the parks no wait covers (input order),
/// then the background.
fn items<'a>(own: &[Own<'a>], waits: &[Wait<'a>]) -> Vec<Item<'a>> {
    let mut items: Vec<Item<'a>> = waits
        .iter()
        .map(|w| Item {
            kind: w.kind,
            row: Own { start: w.start, end: w.end, ..Own::default() },
            message: w.message,
        })
        .collect();
    for (row_type, kind) in [("operator", Kind::Operator), ("user", Kind::User), ("park", Kind::Parked)] {
        let rows = own.iter().filter(|r| r.row_type == Some(row_type));
        let kept = rows.filter(|r| kind != Kind::Parked || !inside_a_wait(r, waits));
        items.extend(kept.map(|r| Item { kind, row: *r, message: None }));
    }
    items.extend(background(own).into_iter().map(|(kind, row)| Item { kind, row, message: None }));
    items
}

/// Whether `row` lies inside one of `waits` (sorted and disjoint, so only the last one
/// starting at or before it can hold it).
fn inside_a_wait(row: &Own, waits: &[Wait]) -> bool {
    let index = waits.partition_point(|w| w.start <= row.start);
    index > 0 && row.end <= waits[index - 1].end
}

/// The kernel: one worker's `WORKER_ROWS` (the batches of one table with schema `input`) to
/// its `ACTIVITIES`, each moment given to one activity.
pub fn worker_activities(input: &Schema, batches: &[RecordBatch]) -> Result<RecordBatch, KernelError> {
    check(input, WORKER_ROWS)?;
    let (worker, own, deliveries) = read_rows(batches)?;
    let Some(worker) = worker else { return Ok(RecordBatch::new_empty(schema(ACTIVITIES))) };
    let waits = find_waits(&own, &deliveries);
    let items = items(&own, &waits);
    let spans: Vec<Span> = items
        .iter()
        .map(|i| Span { start: i.row.start, end: i.row.end, priority: i.kind.priority(i.row.depth) })
        .collect();
    let segments = overlay(&spans);
    Ok(activities_batch(worker, &segments, &items))
}

fn activities_batch(worker: i64, segments: &[Segment], items: &[Item]) -> RecordBatch {
    let ints = |f: &dyn Fn(usize, &Segment) -> Option<i64>| -> ArrayRef {
        Arc::new(segments.iter().enumerate().map(|(i, s)| f(i, s)).collect::<Int64Array>())
    };
    let item = |s: &Segment| &items[s.2];
    let columns: Vec<ArrayRef> = vec![
        ints(&|_, _| Some(worker)),
        ints(&|i, _| Some((worker << ID_BITS) | i as i64)),
        Arc::new(segments.iter().map(|s| Some(item(s).kind.name())).collect::<StringArray>()),
        ints(&|_, s| Some(s.0)),
        ints(&|_, s| Some(s.1)),
        ints(&|_, s| item(s).row.operator),
        Arc::new(segments.iter().map(|s| item(s).row.name).collect::<StringArray>()),
        ints(&|_, s| item(s).row.depth),
        Arc::new(segments.iter().map(|s| item(s).row.useful).collect::<BooleanArray>()),
        ints(&|_, s| item(s).message.map(|m| m.comm_id)),
        Arc::new(segments.iter().map(|s| item(s).message.and_then(|m| m.comm_type)).collect::<StringArray>()),
        ints(&|_, s| item(s).message.and_then(|m| m.source_worker)),
        ints(&|_, s| item(s).message.map(|m| m.send)),
    ];
    RecordBatch::try_new(schema(ACTIVITIES), columns).expect("the columns follow ACTIVITIES")
}
