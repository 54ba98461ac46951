//! The Arrow schemas of the kernels' inputs and outputs, column for column those of
//! `timely_py.analysis.schemas` (every field nullable, as pyarrow makes them).
//!
//! This module owns only the column lists; what the columns mean is in
//! `docs/critical-path.md`. It holds no logic.

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use std::sync::Arc;

/// The type of a column as the kernels see it: a string column may also be a large string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 64-bit signed integers.
    Int,
    /// UTF-8 strings (`Utf8` or `LargeUtf8` on input; `Utf8` on output).
    Str,
    /// Booleans.
    Bool,
}

impl Kind {
    /// The Arrow type the kernels write for this kind.
    pub fn data_type(self) -> DataType {
        match self {
            Kind::Int => DataType::Int64,
            Kind::Str => DataType::Utf8,
            Kind::Bool => DataType::Boolean,
        }
    }

    /// Whether an input column of type `found` can be read as this kind.
    pub fn accepts(self, found: &DataType) -> bool {
        match self {
            Kind::Str => matches!(found, DataType::Utf8 | DataType::LargeUtf8),
            _ => *found == self.data_type(),
        }
    }
}

use Kind::{Bool, Int, Str};

/// One worker's material for the wait-state analysis.
pub const WORKER_ROWS: &[(&str, Kind)] = &[
    ("row_type", Str),
    ("worker", Int),
    ("start", Int),
    ("end", Int),
    ("operator", Int),
    ("useful", Bool),
    ("wake", Str),
    ("name", Str),
    ("depth", Int),
    ("comm_id", Int),
    ("comm_type", Str),
    ("source_worker", Int),
    ("send", Int),
    ("arrival", Int),
    ("read", Int),
    ("arrival_known", Bool),
];

/// A worker's activities after the wait-state analysis.
pub const ACTIVITIES: &[(&str, Kind)] = &[
    ("worker", Int),
    ("activity_id", Int),
    ("type", Str),
    ("start", Int),
    ("end", Int),
    ("operator", Int),
    ("name", Str),
    ("depth", Int),
    ("useful", Bool),
    ("ended_by", Int),
    ("ended_by_type", Str),
    ("ended_by_worker", Int),
    ("ended_by_send", Int),
];

/// The columns of one slice's activities that the critical path reads (`SLICED` is
/// [`ACTIVITIES`] plus `slice`, `slice_start` and `slice_end`; the others are not needed).
pub const SLICED_READ: &[(&str, Kind)] = &[
    ("worker", Int),
    ("activity_id", Int),
    ("type", Str),
    ("start", Int),
    ("end", Int),
    ("operator", Int),
    ("name", Str),
    ("ended_by", Int),
    ("ended_by_type", Str),
    ("ended_by_worker", Int),
    ("ended_by_send", Int),
    ("slice", Int),
    ("slice_start", Int),
    ("slice_end", Int),
];

/// The critical path of one slice, one row per edge.
pub const CRITICAL_PATH: &[(&str, Kind)] = &[
    ("slice", Int),
    ("step", Int),
    ("type", Str),
    ("worker", Int),
    ("source_worker", Int),
    ("operator", Int),
    ("name", Str),
    ("activity_id", Int),
    ("comm_id", Int),
    ("start", Int),
    ("end", Int),
    ("duration", Int),
    ("complete", Bool),
];

/// The Arrow schema of a column list (every field nullable).
pub fn schema(columns: &[(&str, Kind)]) -> SchemaRef {
    Arc::new(Schema::new(
        columns.iter().map(|(name, kind)| Field::new(*name, kind.data_type(), true)).collect::<Vec<_>>(),
    ))
}
