//! The critical-path analysis's native kernels as Python functions (`timely_analysis`).
//!
//! This module owns their Python signatures: a table in (anything with `__arrow_c_stream__`,
//! read in place by [`crate::arrow_capsule`]), the kernel run without the GIL, a
//! `pyarrow.Table` out. A column the kernel cannot read is a `TypeError`, a missing column or
//! a missing value it needs a `ValueError`. The algorithms are `timely_analysis`'s; this
//! module must not implement any.

use crate::arrow_capsule::{export_table, import_table};
use arrow_array::RecordBatch;
use arrow_schema::Schema;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::collections::HashMap;
use timely_analysis::{Catalogue, KernelError};

fn run<'py>(
    py: Python<'py>,
    name: &str,
    kernel: impl Fn(&Schema, &[RecordBatch]) -> Result<RecordBatch, KernelError> + Send + Sync,
    table: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let (schema, batches) = import_table(table)?;
    let result = py.detach(|| kernel(&schema, &batches));
    drop(batches); // with the GIL: releasing the exporter's buffers may need it
    match result {
        Ok(batch) => export_table(py, batch),
        Err(error) if error.is_type_error() => Err(PyTypeError::new_err(format!("{name}: {error}"))),
        Err(error) => Err(PyValueError::new_err(format!("{name}: {error}"))),
    }
}

/// The wait-state analysis of one worker: its rows (`WORKER_ROWS` of
/// `timely_py.analysis.schemas`) to its activities (`ACTIVITIES`), as
/// `timely_py.analysis.waits.worker_activities` does.
#[pyfunction]
pub fn worker_activities<'py>(py: Python<'py>, table: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    run(py, "worker_activities", timely_analysis::worker_activities, table)
}

/// The critical path of one slice: its activities (`SLICED`) to its edges (`CRITICAL_PATH`),
/// as `timely_py.analysis.critical_path.slice_critical_path` does.
#[pyfunction]
pub fn slice_critical_path<'py>(py: Python<'py>, table: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    run(py, "slice_critical_path", timely_analysis::slice_critical_path, table)
}

/// One worker's pieces: its clock-corrected events (`worker`, `kind`, `t`, `ord`, `operator`,
/// `useful`, `wake`, `name`, `channel`) to its `WORKER_ROWS` but the deliveries, as
/// `timely_py.analysis.waits.worker_rows` makes them from `activities.pieces`. `depths` is
/// `activities.scope_depths`, `input_channels` and `origin`, `end` the `activities.Catalogue`'s.
#[pyfunction]
#[pyo3(signature = (table, depths, input_channels, origin, end))]
pub fn worker_pieces<'py>(
    py: Python<'py>,
    table: &Bound<'py, PyAny>,
    depths: HashMap<i64, i64>,
    input_channels: HashMap<i64, i64>,
    origin: Option<i64>,
    end: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let known = Catalogue { depths, input_channels, origin, end };
    run(py, "worker_pieces", |schema, batches| timely_analysis::worker_pieces(schema, batches, &known), table)
}

/// Writes the analysis's Perfetto trace to `file`: the metadata events `head` (JSON text),
/// then `activities` and the critical `path` (tables of
/// `timely_py.analysis.perfetto_export`'s columns, the path sorted) as that module's
/// reference writer writes them, without the GIL (`timely_analysis::perfetto`).
#[pyfunction]
#[pyo3(signature = (file, head, activities, path, origin, per_process, critical_pid))]
#[allow(clippy::too_many_arguments)]
pub fn write_perfetto_trace<'py>(
    py: Python<'py>,
    file: std::path::PathBuf,
    head: &str,
    activities: &Bound<'py, PyAny>,
    path: &Bound<'py, PyAny>,
    origin: i64,
    per_process: i64,
    critical_pid: i64,
) -> PyResult<()> {
    if per_process < 1 {
        return Err(PyValueError::new_err(format!("per_process must be positive, not {per_process}")));
    }
    let (activity_schema, activity_batches) = import_table(activities)?;
    let (path_schema, path_batches) = import_table(path)?;
    let layout = timely_analysis::perfetto::Layout { origin, per_process, critical_pid };
    let written = py.detach(|| {
        let text = timely_analysis::perfetto::trace_events(
            head,
            (&activity_schema, &activity_batches),
            (&path_schema, &path_batches),
            layout,
        )?;
        std::fs::write(&file, text).map_err(WriteError::Io)
    });
    drop((activity_batches, path_batches)); // with the GIL, as in `run`
    match written {
        Ok(()) => Ok(()),
        Err(WriteError::Io(error)) => Err(error.into()),
        Err(WriteError::Kernel(error)) if error.is_type_error() => {
            Err(PyTypeError::new_err(format!("write_perfetto_trace: {error}")))
        }
        Err(WriteError::Kernel(error)) => {
            Err(PyValueError::new_err(format!("write_perfetto_trace: {error}")))
        }
    }
}

enum WriteError {
    Kernel(KernelError),
    Io(std::io::Error),
}

impl From<KernelError> for WriteError {
    fn from(error: KernelError) -> Self {
        WriteError::Kernel(error)
    }
}
