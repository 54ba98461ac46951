//! Builds kernel inputs from short row descriptions, for the crate's tests.

// Each test binary that includes this module uses a part of it.
#![allow(dead_code)]

use arrow_array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use std::collections::HashMap;
use std::sync::Arc;
use timely_analysis::schemas::{schema, Kind};

/// A value of one cell.
#[derive(Clone, Copy)]
pub enum Cell {
    I(i64),
    S(&'static str),
    B(bool),
}

/// A row: the named cells; every other column is null.
pub type Row = Vec<(&'static str, Cell)>;

/// The rows as one record batch of the columns `columns`.
pub fn batch(columns: &[(&str, Kind)], rows: &[Row]) -> RecordBatch {
    let maps: Vec<HashMap<&str, Cell>> = rows.iter().map(|r| r.iter().copied().collect()).collect();
    let arrays: Vec<ArrayRef> = columns
        .iter()
        .map(|(name, kind)| -> ArrayRef {
            let cells = maps.iter().map(|m| m.get(name).copied());
            match kind {
                Kind::Int => Arc::new(cells.map(|c| c.map(int)).collect::<Int64Array>()),
                Kind::Str => Arc::new(cells.map(|c| c.map(string)).collect::<StringArray>()),
                Kind::Bool => Arc::new(cells.map(|c| c.map(boolean)).collect::<BooleanArray>()),
            }
        })
        .collect();
    RecordBatch::try_new(schema(columns), arrays).unwrap()
}

fn int(cell: Cell) -> i64 {
    match cell {
        Cell::I(value) => value,
        _ => panic!("not an int"),
    }
}

fn string(cell: Cell) -> &'static str {
    match cell {
        Cell::S(value) => value,
        _ => panic!("not a string"),
    }
}

fn boolean(cell: Cell) -> bool {
    match cell {
        Cell::B(value) => value,
        _ => panic!("not a bool"),
    }
}

/// The int column `name` of `batch`, nulls as None.
pub fn ints(batch: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    let array = batch.column_by_name(name).unwrap().as_any().downcast_ref::<Int64Array>().unwrap();
    array.iter().collect()
}

/// The string column `name` of `batch`, nulls as None.
pub fn strings(batch: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let array = batch.column_by_name(name).unwrap().as_any().downcast_ref::<StringArray>().unwrap();
    array.iter().map(|s| s.map(str::to_string)).collect()
}

/// The boolean column `name` of `batch` (no nulls).
pub fn booleans(batch: &RecordBatch, name: &str) -> Vec<bool> {
    let array = batch.column_by_name(name).unwrap().as_any().downcast_ref::<BooleanArray>().unwrap();
    array.iter().map(Option::unwrap).collect()
}
