//! The critical path of one slice (thesis algorithm 1 and section 5.3):
//! `timely_py.analysis.critical_path` in Rust.
//!
//! This module owns following one slice's activities (`SLICED`) backwards from the slice's
//! end to its start, and the kernel [`slice_critical_path`] that returns the path's edges
//! (`CRITICAL_PATH`, latest first). It must not change activities or decide what is waiting
//! ([`crate::waits`] does).
//!
//! The walk: the snapshot spans from the slice's earliest to its latest activity (within the
//! slice's bounds). It starts at the end on the lowest running worker not waiting there (when
//! every running worker waits: on one whose wait's message was already sent). At time `t` on
//! worker `w` it takes the activity covering the moment before `t`: a worker activity is
//! added (clipped to `t` and the snapshot) and the walk moves to its start; a gap is added as
//! `unknown`; a `waiting` activity is never added: the walk crosses to the sender over the
//! communication that ended it (an edge from its send, clipped into `[start, t]`, to `t`) and
//! goes on on the sender at the send. A sender with no activity in the slice is one long gap.
//! `complete` is false when the walk could not reach the snapshot's start.

use crate::columns::{check, Batch, KernelError};
use crate::schemas::{schema, CRITICAL_PATH, SLICED_READ};
use arrow_array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::Schema;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The activity type the critical path never contains.
const WAITING: &str = "waiting";

/// Where an empty worker's "last activity before t" ends.
const NEVER: i64 = -(1 << 62);

/// One activity of the slice.
#[derive(Clone, Copy, Debug, Default)]
pub struct Activity<'a> {
    pub worker: i64,
    pub activity_id: Option<i64>,
    pub kind: Option<&'a str>,
    pub start: i64,
    pub end: i64,
    pub operator: Option<i64>,
    pub name: Option<&'a str>,
    pub ended_by: Option<i64>,
    pub ended_by_type: Option<&'a str>,
    pub ended_by_worker: Option<i64>,
    pub ended_by_send: Option<i64>,
}

impl Activity<'_> {
    fn is_wait(&self) -> bool {
        self.kind == Some(WAITING)
    }
}

/// One edge of the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge<'a> {
    pub kind: Option<&'a str>,
    pub worker: i64,
    pub source_worker: Option<i64>,
    pub operator: Option<i64>,
    pub name: Option<&'a str>,
    pub activity_id: Option<i64>,
    pub comm_id: Option<i64>,
    pub start: i64,
    pub end: i64,
}

/// The slice's bounds as the rows carry them (read from the first row).
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub slice: Option<i64>,
    pub start: i64,
    pub end: i64,
}

/// One worker's activities in a slice, sorted, for "what covers the moment before t".
struct Timeline<'a> {
    /// The non-empty activities by start; they never overlap.
    rows: Vec<Activity<'a>>,
    /// The latest end of any activity, empty ones included.
    last: i64,
}

impl<'a> Timeline<'a> {
    fn new(worker: i64, all: Vec<Activity<'a>>) -> Result<Self, KernelError> {
        let last = all.iter().map(|r| r.end).max().unwrap_or(NEVER);
        let mut rows: Vec<Activity<'a>> = all.into_iter().filter(|r| r.end > r.start).collect();
        rows.sort_by_key(|r| r.start);
        if let Some(pair) = rows.windows(2).find(|pair| pair[1].start < pair[0].end) {
            return Err(KernelError::Overlap { worker, at: pair[1].start });
        }
        Ok(Timeline { rows, last })
    }

    /// The activity covering `(t - 1, t)`, or else the end of the last one before `t`.
    fn before(&self, t: i64) -> Result<&Activity<'a>, i64> {
        let index = self.rows.partition_point(|r| r.end < t);
        match self.rows.get(index) {
            Some(row) if row.start < t => Ok(row),
            _ => Err(if index > 0 { self.rows[index - 1].end } else { NEVER }),
        }
    }
}

/// Where the walk starts: the lowest running worker not waiting at `end`, else the lowest
/// waiting one whose wait's message was already sent by `end`.
fn first_worker(timelines: &BTreeMap<i64, Timeline>, end: i64) -> Option<i64> {
    let running: Vec<(&i64, &Timeline)> = timelines.iter().filter(|(_, line)| line.last >= end).collect();
    let not_waiting = running.iter().find(|(_, line)| line.before(end).map_or(true, |row| !row.is_wait()));
    let sent = || {
        running.iter().find(|(_, line)| {
            line.before(end).is_ok_and(|row| row.ended_by_send.is_some_and(|send| send <= end))
        })
    };
    not_waiting.or_else(sent).map(|(worker, _)| **worker)
}

/// The path of one slice's activities, latest edge first, and whether it reached the start.
pub fn critical_path<'a>(
    rows: &[Activity<'a>],
    bounds: Bounds,
) -> Result<(Vec<Edge<'a>>, bool), KernelError> {
    let (Some(earliest), Some(latest)) =
        (rows.iter().map(|r| r.start).min(), rows.iter().map(|r| r.end).max())
    else {
        return Ok((Vec::new(), true));
    };
    let (start, end) = (bounds.start.max(earliest), bounds.end.min(latest));
    let mut by_worker: BTreeMap<i64, Vec<Activity<'a>>> = BTreeMap::new();
    for row in rows {
        by_worker.entry(row.worker).or_default().push(*row);
    }
    let mut timelines = BTreeMap::new();
    for (worker, rows) in by_worker {
        timelines.insert(worker, Timeline::new(worker, rows)?);
    }
    let empty = Timeline { rows: Vec::new(), last: NEVER };
    let (mut edges, mut worker, mut t, mut stalled) = (Vec::new(), first_worker(&timelines, end), end, 0);
    while let Some(w) = worker.filter(|_| t > start && stalled <= timelines.len()) {
        let left = match timelines.get(&w).unwrap_or(&empty).before(t) {
            Err(previous_end) => {
                let left = previous_end.max(start);
                edges.push(Edge { kind: Some("unknown"), ..edge(w, left, t) });
                left
            }
            Ok(row) if row.is_wait() => {
                let (Some(comm_id), Some(send)) = (row.ended_by, row.ended_by_send) else { break };
                let from = send.min(t).max(start);
                let crossing = Edge {
                    kind: row.ended_by_type,
                    source_worker: row.ended_by_worker,
                    comm_id: Some(comm_id),
                    ..edge(w, from, t)
                };
                edges.push(crossing);
                stalled = if from == t { stalled + 1 } else { 0 };
                (worker, t) = (row.ended_by_worker, from);
                continue;
            }
            Ok(row) => {
                let left = row.start.max(start);
                edges.push(Edge {
                    kind: row.kind,
                    operator: row.operator,
                    name: row.name,
                    activity_id: row.activity_id,
                    ..edge(w, left, t)
                });
                left
            }
        };
        (stalled, t) = (0, left);
    }
    Ok((edges, t <= start))
}

/// An edge on `worker` over `[start, end]` with no other column set.
fn edge<'a>(worker: i64, start: i64, end: i64) -> Edge<'a> {
    Edge {
        kind: None,
        worker,
        source_worker: None,
        operator: None,
        name: None,
        activity_id: None,
        comm_id: None,
        start,
        end,
    }
}

fn read_rows(batches: &[RecordBatch]) -> Result<(Vec<Activity<'_>>, Option<Bounds>), KernelError> {
    let (mut rows, mut bounds) = (Vec::new(), None);
    for batch in Batch::all(batches).iter().filter(|b| !b.is_empty()) {
        let (worker, id, kind, start) =
            (batch.ints("worker")?, batch.ints("activity_id")?, batch.strs("type")?, batch.ints("start")?);
        let (end, operator, name) = (batch.ints("end")?, batch.ints("operator")?, batch.strs("name")?);
        let (ended_by, ended_by_type) = (batch.ints("ended_by")?, batch.strs("ended_by_type")?);
        let (ended_by_worker, ended_by_send) = (batch.ints("ended_by_worker")?, batch.ints("ended_by_send")?);
        if bounds.is_none() {
            let (slice, slice_start, slice_end) =
                (batch.ints("slice")?, batch.ints("slice_start")?, batch.ints("slice_end")?);
            bounds =
                Some(Bounds { slice: slice.get(0), start: slice_start.need(0)?, end: slice_end.need(0)? });
        }
        for i in 0..batch.len() {
            rows.push(Activity {
                worker: worker.need(i)?,
                activity_id: id.get(i),
                kind: kind.get(i),
                start: start.need(i)?,
                end: end.need(i)?,
                operator: operator.get(i),
                name: name.get(i),
                ended_by: ended_by.get(i),
                ended_by_type: ended_by_type.get(i),
                ended_by_worker: ended_by_worker.get(i),
                ended_by_send: ended_by_send.get(i),
            });
        }
    }
    Ok((rows, bounds))
}

/// The kernel: one slice's `SLICED` activities (the batches of one table with schema `input`)
/// to its `CRITICAL_PATH`, one row per edge, latest first.
pub fn slice_critical_path(input: &Schema, batches: &[RecordBatch]) -> Result<RecordBatch, KernelError> {
    check(input, SLICED_READ)?;
    let (rows, bounds) = read_rows(batches)?;
    let Some(bounds) = bounds else { return Ok(RecordBatch::new_empty(schema(CRITICAL_PATH))) };
    let (edges, complete) = critical_path(&rows, bounds)?;
    Ok(path_batch(bounds.slice, &edges, complete))
}

fn path_batch(slice: Option<i64>, edges: &[Edge], complete: bool) -> RecordBatch {
    let ints = |f: &dyn Fn(usize, &Edge) -> Option<i64>| -> ArrayRef {
        Arc::new(edges.iter().enumerate().map(|(i, e)| f(i, e)).collect::<Int64Array>())
    };
    let columns: Vec<ArrayRef> = vec![
        ints(&|_, _| slice),
        ints(&|i, _| Some(i as i64)),
        Arc::new(edges.iter().map(|e| e.kind).collect::<StringArray>()),
        ints(&|_, e| Some(e.worker)),
        ints(&|_, e| e.source_worker),
        ints(&|_, e| e.operator),
        Arc::new(edges.iter().map(|e| e.name).collect::<StringArray>()),
        ints(&|_, e| e.activity_id),
        ints(&|_, e| e.comm_id),
        ints(&|_, e| Some(e.start)),
        ints(&|_, e| Some(e.end)),
        ints(&|_, e| Some(e.end - e.start)),
        Arc::new(edges.iter().map(|_| Some(complete)).collect::<BooleanArray>()),
    ];
    RecordBatch::try_new(schema(CRITICAL_PATH), columns).expect("the columns follow CRITICAL_PATH")
}
