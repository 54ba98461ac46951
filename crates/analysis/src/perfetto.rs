//! The analysed trace as Chrome trace-event JSON: the events of
//! `timely_py.analysis.perfetto_export`, written natively.
//!
//! This module owns writing an analysis's activities and critical-path edges as trace events,
//! byte for byte as the Python reference writes them with `json.dumps(..., separators=(",",
//! ":"))`: the same events in the same order, keys in the same order, floats as Python's
//! `repr` writes them, strings escaped as `ensure_ascii` does. What the events mean (tracks,
//! the critical path's own process, flow arrows for the messages it crosses) is the
//! reference's (`docs/critical-path.md`, "Views"); the caller hands the metadata events as
//! JSON text, the activities and the path (sorted) as Arrow tables of the reference's
//! columns. Every column but those that place an event becomes an argument, as in the
//! reference. It must not read files or decide which columns are shown.

use crate::columns::KernelError;
use crate::schemas::Kind;
use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Schema};
use std::collections::HashSet;
use std::fmt::Write as _;

/// Where events go: times count from `origin` (ns), a worker's process is `worker /
/// per_process`, the critical path is process `critical_pid`.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub origin: i64,
    pub per_process: i64,
    pub critical_pid: i64,
}

/// Edge types that are messages between workers (a flow arrow each).
const COMMUNICATION_TYPES: [&str; 2] = ["data_message", "progress_message"];

/// One column of an input table, typed.
enum Column<'a> {
    Int(&'a arrow_array::Int64Array),
    Bool(&'a arrow_array::BooleanArray),
    Str(&'a arrow_array::StringArray),
    LargeStr(&'a arrow_array::LargeStringArray),
}

impl<'a> Column<'a> {
    fn of(array: &'a dyn Array, name: &'static str) -> Result<Column<'a>, KernelError> {
        Ok(match array.data_type() {
            DataType::Int64 => Column::Int(array.as_primitive()),
            DataType::Boolean => Column::Bool(array.as_boolean()),
            DataType::Utf8 => Column::Str(array.as_string()),
            DataType::LargeUtf8 => Column::LargeStr(array.as_string()),
            other => {
                return Err(KernelError::WrongType {
                    column: name,
                    expected: Kind::Int,
                    found: other.clone(),
                })
            }
        })
    }

    fn int(&self, row: usize) -> Option<i64> {
        match self {
            Column::Int(a) if a.is_valid(row) => Some(a.value(row)),
            _ => None,
        }
    }

    fn str(&self, row: usize) -> Option<&str> {
        match self {
            Column::Str(a) if a.is_valid(row) => Some(a.value(row)),
            Column::LargeStr(a) if a.is_valid(row) => Some(a.value(row)),
            _ => None,
        }
    }

    fn is_valid(&self, row: usize) -> bool {
        match self {
            Column::Int(a) => a.is_valid(row),
            Column::Bool(a) => a.is_valid(row),
            Column::Str(a) => a.is_valid(row),
            Column::LargeStr(a) => a.is_valid(row),
        }
    }

    /// The value as JSON (the row must be valid).
    fn write(&self, out: &mut String, row: usize) {
        match self {
            Column::Int(a) => {
                let _ = write!(out, "{}", a.value(row));
            }
            Column::Bool(a) => out.push_str(if a.value(row) { "true" } else { "false" }),
            Column::Str(a) => write_str(out, a.value(row)),
            Column::LargeStr(a) => write_str(out, a.value(row)),
        }
    }
}

/// One batch's columns by name, in the table's order.
struct Rows<'a> {
    names: Vec<&'static str>,
    columns: Vec<Column<'a>>,
}

impl<'a> Rows<'a> {
    /// The `wanted` columns of `batch`, in that order (the arguments' order); others ignored.
    fn new(
        schema: &Schema,
        batch: &'a RecordBatch,
        wanted: &[&'static str],
    ) -> Result<Rows<'a>, KernelError> {
        let mut columns = Vec::new();
        for &name in wanted {
            let index = schema.index_of(name).map_err(|_| KernelError::MissingColumn(name))?;
            columns.push(Column::of(batch.column(index).as_ref(), name)?);
        }
        Ok(Rows { names: wanted.to_vec(), columns })
    }

    fn get(&self, name: &str) -> &Column<'a> {
        let index = self.names.iter().position(|n| *n == name).expect("checked in new");
        &self.columns[index]
    }

    fn required(&self, name: &'static str, row: usize, offset: usize) -> Result<i64, KernelError> {
        self.get(name).int(row).ok_or(KernelError::Null { column: name, row: offset + row })
    }

    /// `{"k":v,...` of every column but `skipped`, nulls left out (no closing brace).
    fn write_args(&self, out: &mut String, row: usize, skipped: &[&str]) {
        out.push('{');
        let mut first = true;
        for (name, column) in self.names.iter().zip(&self.columns) {
            if skipped.contains(name) || !column.is_valid(row) {
                continue;
            }
            if !first {
                out.push(',');
            }
            first = false;
            write_str(out, name);
            out.push(':');
            column.write(out, row);
        }
        if !first {
            out.push(',');
        }
    }
}

/// The activities' columns, in the reference's order.
pub const ACTIVITY_COLUMNS: [&str; 11] = [
    "worker",
    "activity_id",
    "type",
    "start",
    "end",
    "operator",
    "name",
    "useful",
    "ended_by",
    "ended_by_type",
    "ended_by_worker",
];

/// The critical path's columns, in the reference's order.
pub const PATH_COLUMNS: [&str; 11] = [
    "slice",
    "step",
    "type",
    "worker",
    "source_worker",
    "name",
    "activity_id",
    "comm_id",
    "start",
    "end",
    "complete",
];

/// The trace-event file: `{"traceEvents":[` the metadata events `head` (JSON text of events
/// separated by commas, possibly empty), each activity as a complete slice on its worker's
/// track, each edge of `path` (sorted by start, then end) on the critical track, a flow pair
/// per communication edge with a sender, `],"displayTimeUnit":"ns"}`.
pub fn trace_events(
    head: &str,
    activities: (&Schema, &[RecordBatch]),
    path: (&Schema, &[RecordBatch]),
    layout: Layout,
) -> Result<String, KernelError> {
    let mut critical = HashSet::new();
    for batch in path.1 {
        let rows = Rows::new(path.0, batch, &PATH_COLUMNS)?;
        let ids = rows.get("activity_id");
        critical.extend((0..batch.num_rows()).filter_map(|row| ids.int(row)));
    }
    let mut out = String::with_capacity(
        64 + head.len() + 250 * activities.1.iter().map(RecordBatch::num_rows).sum::<usize>(),
    );
    out.push_str("{\"traceEvents\":[");
    out.push_str(head);
    let mut first = head.is_empty();
    let mut separate = |out: &mut String| {
        if !first {
            out.push(',');
        }
        first = false;
    };
    let mut offset = 0;
    for batch in activities.1 {
        let rows = Rows::new(activities.0, batch, &ACTIVITY_COLUMNS)?;
        for row in 0..batch.num_rows() {
            separate(&mut out);
            let worker = rows.required("worker", row, offset)?;
            let (start, end) = (rows.required("start", row, offset)?, rows.required("end", row, offset)?);
            out.push_str("{\"ph\":\"X\",\"name\":");
            write_name(&mut out, &rows, row);
            out.push_str(",\"cat\":");
            write_optional_str(&mut out, rows.get("type").str(row));
            let _ =
                write!(out, ",\"pid\":{},\"tid\":{worker},\"ts\":", worker.div_euclid(layout.per_process));
            write_micros(&mut out, start, layout.origin);
            out.push_str(",\"dur\":");
            write_micros(&mut out, end, start);
            out.push_str(",\"args\":");
            rows.write_args(&mut out, row, &["worker", "start", "end", "name"]);
            let on_path = rows.get("activity_id").int(row).is_some_and(|id| critical.contains(&id));
            out.push_str(if on_path { "\"critical\":true}}" } else { "\"critical\":false}}" });
        }
        offset += batch.num_rows();
    }
    let mut crossings = Vec::new();
    offset = 0;
    for batch in path.1 {
        let rows = Rows::new(path.0, batch, &PATH_COLUMNS)?;
        for row in 0..batch.num_rows() {
            separate(&mut out);
            let (start, end) = (rows.required("start", row, offset)?, rows.required("end", row, offset)?);
            out.push_str("{\"ph\":\"X\",\"name\":");
            write_name(&mut out, &rows, row);
            let _ =
                write!(out, ",\"cat\":\"critical_path\",\"pid\":{},\"tid\":0,\"ts\":", layout.critical_pid);
            write_micros(&mut out, start, layout.origin);
            out.push_str(",\"dur\":");
            write_micros(&mut out, end, start);
            out.push_str(",\"args\":");
            rows.write_args(&mut out, row, &["start", "end", "name"]);
            if out.ends_with(',') {
                out.pop();
            }
            out.push_str("}}");
            let kind = rows.get("type").str(row);
            if let (Some(kind), Some(source)) = (kind, rows.get("source_worker").int(row)) {
                if COMMUNICATION_TYPES.contains(&kind) {
                    let receiver = rows.required("worker", row, offset)?;
                    crossings.push((kind.to_string(), source, receiver, start, end));
                }
            }
        }
        offset += batch.num_rows();
    }
    for (flow_id, (kind, source, receiver, start, end)) in crossings.iter().enumerate() {
        for (phase, worker, ns) in [("s", *source, *start), ("f", *receiver, *end)] {
            separate(&mut out);
            out.push_str("{\"name\":");
            write_str(&mut out, &format!("critical {kind}"));
            let _ = write!(
                out,
                ",\"cat\":\"critical_path\",\"id\":{},\"ph\":\"{phase}\",\"pid\":{},\"tid\":{worker},\"ts\":",
                flow_id + 1,
                worker.div_euclid(layout.per_process)
            );
            write_micros(&mut out, ns, layout.origin);
            out.push_str(if phase == "f" { ",\"bp\":\"e\"}" } else { "}" });
        }
    }
    out.push_str("],\"displayTimeUnit\":\"ns\"}");
    Ok(out)
}

/// The event's name: the row's `name` unless it is null or empty (Python's `or`), else its type.
fn write_name(out: &mut String, rows: &Rows<'_>, row: usize) {
    match rows.get("name").str(row) {
        Some(name) if !name.is_empty() => write_str(out, name),
        _ => write_optional_str(out, rows.get("type").str(row)),
    }
}

fn write_optional_str(out: &mut String, value: Option<&str>) {
    match value {
        Some(text) => write_str(out, text),
        None => out.push_str("null"),
    }
}

/// `(ns - origin) / 1000` as Python writes that quotient of two ints: correctly rounded, in
/// `repr`'s shortest form.
pub fn write_micros(out: &mut String, ns: i64, origin: i64) {
    let difference = i128::from(ns) - i128::from(origin);
    let value = if difference.unsigned_abs() <= 1 << 53 {
        difference as f64 / 1000.0 // both exact: IEEE division rounds correctly
    } else {
        // The exact decimal quotient, rounded once by the parser.
        let (sign, magnitude) =
            if difference < 0 { ("-", difference.unsigned_abs()) } else { ("", difference.unsigned_abs()) };
        format!("{sign}{}.{:03}", magnitude / 1000, magnitude % 1000).parse().unwrap_or(f64::NAN)
    };
    write_float(out, value);
}

/// A finite float as Python's `repr` writes it: the shortest digits that round-trip, fixed
/// notation for decimal exponents from -4 to 15 (always with a fraction, `1.0`), else
/// scientific with a signed exponent of at least two digits (`1e-05`, `1.5e+16`).
pub fn write_float(out: &mut String, value: f64) {
    if value == 0.0 {
        out.push_str(if value.is_sign_negative() { "-0.0" } else { "0.0" });
        return;
    }
    let (digits, exponent) = shortest(value.abs());
    if value < 0.0 {
        out.push('-');
    }
    if !(-4..16).contains(&exponent) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.unsigned_abs());
    } else if exponent < 0 {
        out.push_str("0.");
        for _ in 0..(-exponent - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let whole = exponent as usize + 1;
        if digits.len() <= whole {
            out.push_str(&digits);
            for _ in digits.len()..whole {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            out.push_str(&digits[..whole]);
            out.push('.');
            out.push_str(&digits[whole..]);
        }
    }
}

/// The shortest digits that read back as `value` (positive, finite) and its decimal
/// exponent (`1234.5` is `("12345", 3)`); of two such digits equally near `value`, the one
/// ending in an even digit, as Python's `repr` chooses (Rust's formatting rounds such a tie up).
fn shortest(value: f64) -> (String, i32) {
    let (digits, exponent) = split_scientific(&format!("{value:e}"));
    let last = digits.as_bytes()[digits.len() - 1] - b'0';
    if last % 2 == 1 {
        for other in [last - 1, last + 1].into_iter().filter(|d| *d <= 9) {
            let candidate = format!("{}{other}", &digits[..digits.len() - 1]);
            let reads_back =
                format!("0.{candidate}e{}", exponent + 1).parse::<f64>().is_ok_and(|v| v == value);
            // A tie: `value` is exactly the midpoint of the two, digits then a 5.
            let midpoint = format!("{}{}5", &digits[..digits.len() - 1], last.min(other));
            if reads_back && split_scientific(&format!("{value:.1100e}")) == (midpoint, exponent) {
                return (candidate, exponent);
            }
        }
    }
    (digits, exponent)
}

/// The digits (no trailing zeros but one) and the exponent of Rust's scientific notation.
fn split_scientific(text: &str) -> (String, i32) {
    let (mantissa, exponent) = text.split_once('e').unwrap_or((text, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let trimmed = digits.trim_end_matches('0');
    (if trimmed.is_empty() { "0".to_string() } else { trimmed.to_string() }, exponent.parse().unwrap_or(0))
}

/// A JSON string as Python's `json.dumps` writes it by default (`ensure_ascii`): `"` and `\`
/// escaped, `\n \r \t \b \f` by name, other control characters, DEL and everything past
/// ASCII as `\uXXXX` (lower-case hex; UTF-16 surrogate pairs past the basic plane).
pub fn write_str(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(value: f64) -> String {
        let mut out = String::new();
        write_float(&mut out, value);
        out
    }

    #[test]
    fn floats_are_written_as_python_repr_writes_them() {
        for (value, repr) in [
            (0.0, "0.0"),
            (1.0, "1.0"),
            (1234.567, "1234.567"),
            (0.001, "0.001"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (-2.5, "-2.5"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e100, "1e+100"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1_152_921_504_606_858.0 + 0.25, "1152921504606858.2"), // a tie: the even digit
            (1_152_921_504_606_858.0 + 0.75, "1152921504606858.8"),
        ] {
            assert_eq!(float(value), repr, "{value}");
        }
    }

    #[test]
    fn strings_are_escaped_as_json_dumps_does() {
        let mut out = String::new();
        write_str(&mut out, "a\"b\\c\nd\u{1}\u{7f}é😀");
        assert_eq!(out, "\"a\\\"b\\\\c\\nd\\u0001\\u007f\\u00e9\\ud83d\\ude00\"");
    }

    #[test]
    fn micros_are_the_correctly_rounded_quotient() {
        let mut out = String::new();
        write_micros(&mut out, 1_234_567, 0);
        out.push(' ');
        write_micros(&mut out, 1_700_000_000_123_456_789, 0);
        assert_eq!(out, "1234.567 1700000000123456.8");
    }
}
