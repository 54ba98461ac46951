//! The critical path of one slice (thesis algorithm 1 and section 5.3):
//! `timely_py.analysis.critical_path` in Rust.
//!
//! This module owns following one slice's activities (`SLICED`) backwards from the slice's
//! end to its start, and the kernel [`slice_critical_path`] that returns the path's edges
//! (`CRITICAL_PATH`, latest first). It must not change activities or decide what is waiting
//! ([`crate::waits`] does).
//!
//! The walk: the snapshot spans from the slice's earliest to its latest activity (within the
//! slice's bounds). It starts at the end on the lowest running worker not waiting there; when
//! every running worker waits, on the lowest whose wait's message was in flight at the end,
//! else the lowest whose wait's message was sent after the end, else the lowest running one;
//! a worker that has not started or has finished there (`not_started`, `finished`) counts as
//! not running: one is taken only when no worker runs at the end, the one that worked latest.
//! At time `t` on worker `w` it takes the activity covering the moment before `t`: a worker
//! activity is added (clipped to `t` and the snapshot) and the walk moves to its start; a gap
//! is added as `unknown`; a `waiting` activity is never added: the walk crosses to the sender
//! over the communication that ended it (an edge from its send, clipped into `[start, t]`, to
//! `t`) and goes on on the sender at the send. A sender with no activity in the slice is one
//! long gap. A wait the walk cannot cross (no message, or crossings that go round without
//! moving back in time) gets an `all_waiting` edge back to the latest end of any worker's
//! non-waiting activity (`not_started` and `finished` are none), and the walk goes on on
//! that worker. So the walk always reaches the
//! snapshot's start (`complete`).

use crate::columns::{check, Batch, KernelError};
use crate::schemas::{schema, CRITICAL_PATH, SLICED_READ};
use arrow_array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use arrow_schema::Schema;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The activity type the critical path never contains.
const WAITING: &str = "waiting";

/// The activity types in which a worker was not running at all: the walk starts in one only
/// when no worker runs at the end, and they are no work an `all_waiting` edge goes back to.
const ABSENT: [&str; 2] = ["not_started", "finished"];

/// The edge type of time in which no worker the walk can follow was working.
const ALL_WAITING: &str = "all_waiting";

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

    fn is_absent(&self) -> bool {
        self.kind.is_some_and(|kind| ABSENT.contains(&kind))
    }

    /// The message that ended this wait, when the trace says which, from whom and when sent.
    fn crossing(&self) -> Option<Crossing> {
        Some(Crossing { comm_id: self.ended_by?, send: self.ended_by_send?, sender: self.ended_by_worker? })
    }
}

/// A message the walk can cross backwards: its id, send time and sender.
#[derive(Clone, Copy, Debug)]
struct Crossing {
    comm_id: i64,
    send: i64,
    sender: i64,
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

/// One worker's activities in a slice, sorted, for "what covers the moment before t" and
/// "when did its last non-waiting activity before t end".
struct Timeline<'a> {
    /// The non-empty activities by start; they never overlap.
    rows: Vec<Activity<'a>>,
    /// The non-empty activities that are work (not waits, not `ABSENT`), by start.
    work: Vec<Activity<'a>>,
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
        let work = rows.iter().filter(|r| !r.is_wait() && !r.is_absent()).copied().collect();
        Ok(Timeline { rows, work, last })
    }

    /// The activity covering `(t - 1, t)`, or else the end of the last one before `t`.
    fn before(&self, t: i64) -> Result<&Activity<'a>, i64> {
        let index = self.rows.partition_point(|r| r.end < t);
        match self.rows.get(index) {
            Some(row) if row.start < t => Ok(row),
            _ => Err(if index > 0 { self.rows[index - 1].end } else { NEVER }),
        }
    }

    /// The latest moment up to `t` at which a non-waiting activity of this worker ran.
    fn worked_until(&self, t: i64) -> Option<i64> {
        let index = self.work.partition_point(|r| r.start < t);
        index.checked_sub(1).map(|i| self.work[i].end.min(t))
    }
}

/// How the walk prefers to start on the worker of `line` at `end` (lowest first): running (an
/// activity ends at or after `end`) and not waiting; waiting for a message in flight (sent by
/// `end`); for one sent after `end`; for none; and last, not running there (nothing at the end,
/// or not started or finished), the one that worked latest before `end` first.
fn start_rank(line: &Timeline, end: i64) -> (u8, i64) {
    let running = line.last >= end;
    let row = if running { line.before(end).ok() } else { None };
    if !running || row.is_some_and(Activity::is_absent) {
        return (4, line.worked_until(end).unwrap_or(NEVER).saturating_neg());
    }
    match row.filter(|r| r.is_wait()).map(Activity::crossing) {
        None => (0, 0),
        Some(Some(crossing)) if crossing.send <= end => (1, 0),
        Some(Some(_)) => (2, 0),
        Some(None) => (3, 0),
    }
}

/// Where the walk starts: the worker it prefers most (`start_rank`), the lowest on a tie.
fn first_worker(timelines: &BTreeMap<i64, Timeline>, end: i64) -> i64 {
    let first = timelines.iter().min_by_key(|(worker, line)| (start_rank(line, end), **worker));
    *first.expect("a slice with activities has a worker").0
}

/// The latest moment up to `t`, after `start`, at which any worker ran a non-waiting activity,
/// and that worker (the lowest on a tie).
fn last_work(timelines: &BTreeMap<i64, Timeline>, t: i64, start: i64) -> Option<(i64, i64)> {
    let moments = timelines.iter().filter_map(|(w, line)| line.worked_until(t).map(|until| (until, *w)));
    moments.filter(|(until, _)| *until > start).max_by_key(|(until, w)| (*until, std::cmp::Reverse(*w)))
}

/// The edge past a wait of `worker` at `t` and where the walk goes on (worker, time): the
/// message that ended it, from its send (clipped into `[start, t]`) to `t`, on to the sender;
/// or, when the walk cannot `cross` it, an `all_waiting` edge back to the last work of any
/// worker, on to that worker.
fn past_wait<'a>(
    wait: &Activity<'a>,
    worker: i64,
    t: i64,
    start: i64,
    cross: bool,
    timelines: &BTreeMap<i64, Timeline>,
) -> (Edge<'a>, (i64, i64)) {
    if let Some(crossing) = wait.crossing().filter(|_| cross) {
        let from = crossing.send.min(t).max(start);
        let comm = Some(crossing.comm_id);
        let edge = Edge {
            kind: wait.ended_by_type,
            source_worker: Some(crossing.sender),
            comm_id: comm,
            ..edge(worker, from, t)
        };
        return (edge, (crossing.sender, from));
    }
    let source = last_work(timelines, t, start);
    let moment = source.map_or(start, |(until, _)| until);
    let source_worker = source.map(|(_, w)| w);
    let edge = Edge { kind: Some(ALL_WAITING), source_worker, ..edge(worker, moment, t) };
    (edge, (source_worker.unwrap_or(worker), moment))
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
    let empty = Timeline { rows: Vec::new(), work: Vec::new(), last: NEVER };
    let (mut edges, mut worker, mut t, mut stalled) = (Vec::new(), first_worker(&timelines, end), end, 0);
    while t > start {
        let left = match timelines.get(&worker).unwrap_or(&empty).before(t) {
            Err(previous_end) => {
                let left = previous_end.max(start);
                edges.push(Edge { kind: Some("unknown"), ..edge(worker, left, t) });
                left
            }
            Ok(row) if row.is_wait() => {
                let (past, next) = past_wait(row, worker, t, start, stalled < timelines.len(), &timelines);
                stalled = if past.comm_id.is_some() && past.start == t { stalled + 1 } else { 0 };
                edges.push(past);
                (worker, t) = next;
                continue;
            }
            Ok(row) => {
                let left = row.start.max(start);
                edges.push(Edge {
                    kind: row.kind,
                    operator: row.operator,
                    name: row.name,
                    activity_id: row.activity_id,
                    ..edge(worker, left, t)
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
