//! Typed, checked access to the kernels' input columns, and the kernels' error.
//!
//! This module owns reading an input table: checking that its schema has every column a
//! kernel reads with a usable type ([`check`]), and handing out each batch's columns as typed
//! views that borrow the batch's buffers (no copy) and turn a missing value the algorithm
//! needs into [`KernelError::Null`]. It must not know what the columns mean.

use crate::schemas::Kind;
use arrow_array::{Array, BooleanArray, Int64Array, LargeStringArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Schema};
use std::fmt;

/// Why a kernel refused its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelError {
    /// The input has no column of this name.
    MissingColumn(&'static str),
    /// The column exists with a type the kernel cannot read.
    WrongType { column: &'static str, expected: Kind, found: DataType },
    /// The value at `row` (counted over the whole input) is null but the algorithm needs it.
    Null { column: &'static str, row: usize },
    /// Two activities of one worker overlap (`docs/critical-path.md`: they never do).
    Overlap { worker: i64, at: i64 },
}

impl KernelError {
    /// Whether the input had the wrong type (as opposed to a wrong value or a missing column).
    pub fn is_type_error(&self) -> bool {
        matches!(self, KernelError::WrongType { .. })
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::MissingColumn(column) => write!(f, "the input has no column `{column}`"),
            KernelError::WrongType { column, expected, found } => {
                write!(f, "column `{column}` must be {}, not {found}", expected_name(*expected))
            }
            KernelError::Null { column, row } => write!(f, "column `{column}` is null in row {row}"),
            KernelError::Overlap { worker, at } => {
                write!(
                    f,
                    "activities of worker {worker} overlap at {at} (a worker's activities never overlap)"
                )
            }
        }
    }
}

impl std::error::Error for KernelError {}

fn expected_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Int => "int64",
        Kind::Str => "string",
        Kind::Bool => "bool",
    }
}

/// Checks that `schema` has every column of `wanted` with a type of its kind (other columns
/// are allowed and ignored).
pub fn check(schema: &Schema, wanted: &[(&'static str, Kind)]) -> Result<(), KernelError> {
    for &(column, expected) in wanted {
        let field = schema.field_with_name(column).map_err(|_| KernelError::MissingColumn(column))?;
        if !expected.accepts(field.data_type()) {
            return Err(KernelError::WrongType { column, expected, found: field.data_type().clone() });
        }
    }
    Ok(())
}

/// One input batch, whose rows are numbered from `offset` in error messages.
pub struct Batch<'a> {
    batch: &'a RecordBatch,
    offset: usize,
}

impl<'a> Batch<'a> {
    /// The batches of one input table, each with the number of its first row.
    pub fn all(batches: &'a [RecordBatch]) -> Vec<Batch<'a>> {
        let mut offset = 0;
        batches
            .iter()
            .map(|batch| {
                let numbered = Batch { batch, offset };
                offset += batch.num_rows();
                numbered
            })
            .collect()
    }

    /// The number of rows of this batch.
    pub fn len(&self) -> usize {
        self.batch.num_rows()
    }

    /// Whether this batch has no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn column(&self, name: &'static str, kind: Kind) -> Result<&'a dyn Array, KernelError> {
        let array = self.batch.column_by_name(name).ok_or(KernelError::MissingColumn(name))?;
        if kind.accepts(array.data_type()) {
            Ok(array.as_ref())
        } else {
            Err(KernelError::WrongType { column: name, expected: kind, found: array.data_type().clone() })
        }
    }

    fn wrong(&self, name: &'static str, kind: Kind, array: &dyn Array) -> KernelError {
        KernelError::WrongType { column: name, expected: kind, found: array.data_type().clone() }
    }

    /// The int64 column `name`.
    pub fn ints(&self, name: &'static str) -> Result<Ints<'a>, KernelError> {
        let array = self.column(name, Kind::Int)?;
        let values =
            array.as_any().downcast_ref::<Int64Array>().ok_or_else(|| self.wrong(name, Kind::Int, array))?;
        Ok(Ints { name, values, offset: self.offset })
    }

    /// The string column `name` (`Utf8` or `LargeUtf8`).
    pub fn strs(&self, name: &'static str) -> Result<Strs<'a>, KernelError> {
        let array = self.column(name, Kind::Str)?;
        if let Some(values) = array.as_any().downcast_ref::<StringArray>() {
            return Ok(Strs::Small(values));
        }
        let values = array
            .as_any()
            .downcast_ref::<LargeStringArray>()
            .ok_or_else(|| self.wrong(name, Kind::Str, array))?;
        Ok(Strs::Large(values))
    }

    /// The boolean column `name`.
    pub fn bools(&self, name: &'static str) -> Result<Bools<'a>, KernelError> {
        let array = self.column(name, Kind::Bool)?;
        let values = array
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| self.wrong(name, Kind::Bool, array))?;
        Ok(Bools(values))
    }
}

/// An int64 column of one batch.
pub struct Ints<'a> {
    name: &'static str,
    values: &'a Int64Array,
    offset: usize,
}

impl Ints<'_> {
    /// The value in `row` of the batch, or None when null.
    pub fn get(&self, row: usize) -> Option<i64> {
        self.values.is_valid(row).then(|| self.values.value(row))
    }

    /// The value in `row`, which the algorithm needs: null is an error.
    pub fn need(&self, row: usize) -> Result<i64, KernelError> {
        self.get(row).ok_or(KernelError::Null { column: self.name, row: self.offset + row })
    }
}

/// A string column of one batch.
pub enum Strs<'a> {
    /// 32-bit offsets.
    Small(&'a StringArray),
    /// 64-bit offsets.
    Large(&'a LargeStringArray),
}

impl<'a> Strs<'a> {
    /// The string in `row` of the batch (borrowed from the batch), or None when null.
    pub fn get(&self, row: usize) -> Option<&'a str> {
        match *self {
            Strs::Small(values) => values.is_valid(row).then(|| values.value(row)),
            Strs::Large(values) => values.is_valid(row).then(|| values.value(row)),
        }
    }
}

/// A boolean column of one batch.
pub struct Bools<'a>(&'a BooleanArray);

impl Bools<'_> {
    /// The value in `row` of the batch, or None when null.
    pub fn get(&self, row: usize) -> Option<bool> {
        self.0.is_valid(row).then(|| self.0.value(row))
    }
}
