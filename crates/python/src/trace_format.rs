//! The trace format as Python reads it: the columns of a trace file, its event kinds and
//! classes and the format version, all from `timely_trace::schema` (with the prose of
//! `timely_trace::schema_docs`), so that the Python readers and `docs/trace-format.md` never
//! keep a copy of their own. It must not read traces.

use arrow_array::RecordBatch;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use timely_trace::schema::{schema, EventClass, Kind, FORMAT_VERSION};
use timely_trace::schema_docs::COLUMN_DESCRIPTIONS;

use crate::arrow_capsule::export_table;

/// The trace format: a dict with `version` (int), `schema` (the `pyarrow.Schema` of a trace
/// file), `columns` (`(name, description)` pairs in the schema's order), `kinds` (`(name,
/// class or None, when, columns)` tuples in the order of their dictionary codes) and `classes`
/// (`(name, [kind, ...])` pairs).
#[pyfunction]
pub fn trace_format(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let format = PyDict::new(py);
    format.set_item("version", FORMAT_VERSION)?;
    let empty = RecordBatch::new_empty(schema());
    format.set_item("schema", export_table(py, empty)?.getattr("schema")?)?;
    format.set_item("columns", COLUMN_DESCRIPTIONS.to_vec())?;
    let kinds: Vec<_> = Kind::ALL
        .iter()
        .map(|kind| (kind.name(), kind.class().map(EventClass::name), kind.when(), kind.columns()))
        .collect();
    format.set_item("kinds", kinds)?;
    let classes: Vec<_> = EventClass::ALL
        .iter()
        .map(|class| {
            let kinds: Vec<_> = Kind::ALL
                .iter()
                .filter(|kind| kind.class() == Some(*class))
                .map(|kind| kind.name())
                .collect();
            (class.name(), kinds)
        })
        .collect();
    format.set_item("classes", classes)?;
    Ok(format)
}
