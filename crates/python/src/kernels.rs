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
use timely_analysis::KernelError;

type Kernel = fn(&Schema, &[RecordBatch]) -> Result<RecordBatch, KernelError>;

fn run<'py>(
    py: Python<'py>,
    name: &str,
    kernel: Kernel,
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
