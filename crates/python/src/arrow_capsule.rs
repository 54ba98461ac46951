//! Arrow tables across the Python boundary without copying, through the Arrow PyCapsule
//! interface (`__arrow_c_stream__`, the C stream interface of the Arrow C Data Interface).
//!
//! This module owns the exchange itself: [`import_table`] takes the record batches of any
//! Python object that exports an Arrow stream (a `pyarrow.Table`, a `RecordBatchReader`, ...)
//! and reads them in place, its buffers still owned by the exporter; [`export_table`] hands a
//! Rust record batch to pyarrow the same way and returns a `pyarrow.Table` over Rust's buffers.
//! Whatever comes in that is not such a stream is a `TypeError`. It must not know what the
//! tables hold.

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};
use std::ffi::CStr;
use std::sync::Mutex;

/// The capsule name the interface gives an `ArrowArrayStream`.
const STREAM: &CStr = c"arrow_array_stream";

fn arrow_error(error: ArrowError) -> PyErr {
    PyValueError::new_err(format!("reading the Arrow stream failed: {error}"))
}

/// The schema and record batches of `data`, an object with `__arrow_c_stream__`.
pub fn import_table(data: &Bound<'_, PyAny>) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    let kind = || data.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
    if !data.hasattr("__arrow_c_stream__")? {
        return Err(PyTypeError::new_err(format!(
            "expected an Arrow table (a pyarrow.Table or any object with __arrow_c_stream__), got {}",
            kind()
        )));
    }
    let exported = data.call_method0("__arrow_c_stream__")?;
    let capsule = exported
        .cast::<PyCapsule>()
        .map_err(|_| PyTypeError::new_err(format!("{}.__arrow_c_stream__() returned no capsule", kind())))?;
    let pointer = capsule.pointer_checked(Some(STREAM)).map_err(|_| {
        PyTypeError::new_err(format!(
            "{}.__arrow_c_stream__() returned a capsule not named arrow_array_stream",
            kind()
        ))
    })?;
    // SAFETY: a capsule named `arrow_array_stream` holds an `ArrowArrayStream` (the Arrow
    // PyCapsule interface), which the capsule keeps alive while we hold `capsule`. `from_raw`
    // moves the stream out and leaves a released one behind, which the capsule's destructor
    // then skips, so the stream is released exactly once (by the reader).
    let stream = unsafe { FFI_ArrowArrayStream::from_raw(pointer.as_ptr().cast()) };
    let reader = RecordBatchStreamReader::try_new(stream).map_err(arrow_error)?;
    let schema = arrow_array::RecordBatchReader::schema(&reader);
    let batches = reader.collect::<Result<Vec<_>, _>>().map_err(arrow_error)?;
    Ok((schema, batches))
}

/// `batch` as a `pyarrow.Table` that reads Rust's buffers in place.
pub fn export_table(py: Python<'_>, batch: RecordBatch) -> PyResult<Bound<'_, PyAny>> {
    let schema = batch.schema();
    let stream = FFI_ArrowArrayStream::new(Box::new(RecordBatchIterator::new([Ok(batch)], schema)));
    let holder = Bound::new(py, ArrowStream { stream: Mutex::new(Some(stream)) })?;
    py.import("pyarrow")?.getattr("table")?.call1((holder,))
}

/// A stream handed over once through `__arrow_c_stream__` (what `pyarrow.table` asks for).
#[pyclass(module = "timely_py._core", frozen)]
struct ArrowStream {
    stream: Mutex<Option<FFI_ArrowArrayStream>>,
}

#[pymethods]
impl ArrowStream {
    /// The stream as a capsule; the schema it is asked for is not honoured (the caller
    /// checks or casts), as the interface allows.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let stream =
            self.stream.lock().map_err(|_| PyValueError::new_err("the Arrow stream is poisoned"))?.take();
        let stream = stream.ok_or_else(|| PyValueError::new_err("the Arrow stream was already consumed"))?;
        PyCapsule::new_with_value(py, stream, STREAM)
    }
}
