//! One worker's input to the wait-state kernel (`WORKER_ROWS`), read into typed rows.
//!
//! This module owns the two kinds of row the kernel works on, the worker's own rows ([`Own`]:
//! runs, steps, scope runs, parks, instants, user activities, input sends, lifetimes, trace
//! bounds) and the messages it received ([`Delivery`]), and reading them from the input's
//! record batches ([`read_rows`]) in place, with a [`KernelError`] for a value the kernel
//! needs that is null. It must not decide anything about them ([`crate::waits`] and
//! [`crate::background`] do).

use crate::columns::{Batch, KernelError};
use arrow_array::RecordBatch;

/// A row of the worker's own (anything but a delivery).
#[derive(Clone, Copy, Debug, Default)]
pub struct Own<'a> {
    pub row_type: Option<&'a str>,
    pub start: i64,
    pub end: i64,
    pub operator: Option<i64>,
    pub useful: Option<bool>,
    pub wake: Option<&'a str>,
    pub name: Option<&'a str>,
    pub depth: Option<i64>,
}

/// A message the worker received.
#[derive(Clone, Copy, Debug, Default)]
pub struct Delivery<'a> {
    pub comm_id: i64,
    pub comm_type: Option<&'a str>,
    pub source_worker: Option<i64>,
    pub send: i64,
    pub arrival: i64,
    pub read: i64,
    pub arrival_known: bool,
}

/// One worker's input split into its own rows and its deliveries, and the worker (of the
/// first row), or None for an empty input.
pub type WorkerInput<'a> = (Option<i64>, Vec<Own<'a>>, Vec<Delivery<'a>>);

pub fn read_rows(batches: &[RecordBatch]) -> Result<WorkerInput<'_>, KernelError> {
    let (mut worker, mut own, mut deliveries) = (None, Vec::new(), Vec::new());
    for batch in Batch::all(batches).iter().filter(|b| !b.is_empty()) {
        let (row_type, workers, start, end) =
            (batch.strs("row_type")?, batch.ints("worker")?, batch.ints("start")?, batch.ints("end")?);
        let (operator, useful, wake) = (batch.ints("operator")?, batch.bools("useful")?, batch.strs("wake")?);
        let (name, depth, comm_id) = (batch.strs("name")?, batch.ints("depth")?, batch.ints("comm_id")?);
        let (comm_type, source, send) =
            (batch.strs("comm_type")?, batch.ints("source_worker")?, batch.ints("send")?);
        let (arrival, read, known) =
            (batch.ints("arrival")?, batch.ints("read")?, batch.bools("arrival_known")?);
        if worker.is_none() {
            worker = Some(workers.need(0)?);
        }
        for i in 0..batch.len() {
            if row_type.get(i) == Some("delivery") {
                deliveries.push(Delivery {
                    comm_id: comm_id.need(i)?,
                    comm_type: comm_type.get(i),
                    source_worker: source.get(i),
                    send: send.need(i)?,
                    arrival: arrival.need(i)?,
                    read: read.need(i)?,
                    arrival_known: known.get(i) == Some(true),
                });
            } else {
                own.push(Own {
                    row_type: row_type.get(i),
                    start: start.need(i)?,
                    end: end.need(i)?,
                    operator: operator.get(i),
                    useful: useful.get(i),
                    wake: wake.get(i),
                    name: name.get(i),
                    depth: depth.get(i),
                });
            }
        }
    }
    Ok((worker, own, deliveries))
}
