//! Columnar batches of trace events.
//!
//! A [`Row`] is one event with every column optional but its time and kind; an
//! [`EventBatch`] appends rows column by column, sparsely, and turns them into an Arrow
//! `RecordBatch` of [`crate::schema::schema`] or shows them as they are ([`Column`]) to the
//! file encoder. This module must not decide which events exist or where batches go.

use std::sync::Arc;

use arrow_array::types::Int8Type;
use arrow_array::{
    new_null_array, ArrayRef, BooleanArray, DictionaryArray, Int64Array, Int8Array, ListArray, RecordBatch,
    StringArray,
};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field};

use crate::schema::{schema, ChannelKind, Kind, Wake};

/// One event. Build it with struct update syntax:
/// `Row { operator: Some(3), ..Row::new(time_ns, Kind::ScheduleStart) }`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row<'a> {
    /// Nanoseconds since the Unix epoch on this process's clock.
    pub time_ns: i64,
    /// What happened.
    pub kind: Kind,
    /// Operator id.
    pub operator: Option<i64>,
    /// Operator or scope address.
    pub address: Option<&'a [usize]>,
    /// Operator or activity name.
    pub name: Option<&'a str>,
    /// Dataflow, progress or communication channel id.
    pub channel: Option<i64>,
    /// What the channel carries.
    pub channel_kind: Option<ChannelKind>,
    /// Sending worker.
    pub source_worker: Option<i64>,
    /// Receiving worker.
    pub target_worker: Option<i64>,
    /// Sending operator of a channel.
    pub source_operator: Option<i64>,
    /// Output port of the sending operator.
    pub source_port: Option<i64>,
    /// Receiving operator of a channel.
    pub target_operator: Option<i64>,
    /// Input port of the receiving operator.
    pub target_port: Option<i64>,
    /// Sequence number.
    pub seq: Option<i64>,
    /// Records in a message, or updates in a progress batch.
    pub records: Option<i64>,
    /// Payload bytes of a network frame.
    pub bytes: Option<i64>,
    /// Whether an operator's run did useful work.
    pub useful: Option<bool>,
    /// A park's timeout, or a wait for the trace writer.
    pub duration_ns: Option<i64>,
    /// What woke a parked worker.
    pub wake: Option<Wake>,
}

impl Row<'_> {
    /// An event of `kind` at `time_ns` with every other column null.
    pub fn new(time_ns: i64, kind: Kind) -> Self {
        Row {
            time_ns,
            kind,
            operator: None,
            address: None,
            name: None,
            channel: None,
            channel_kind: None,
            source_worker: None,
            target_worker: None,
            source_operator: None,
            source_port: None,
            target_operator: None,
            target_port: None,
            seq: None,
            records: None,
            bytes: None,
            useful: None,
            duration_ns: None,
            wake: None,
        }
    }
}

/// A column being gathered, sparsely: the rows that have a value, with it. Most cells of a
/// row are null, so a row costs only what it fills.
#[derive(Clone)]
struct Sparse<T> {
    cells: Vec<(u32, T)>,
}

impl<T> Default for Sparse<T> {
    fn default() -> Self {
        Sparse { cells: Vec::new() }
    }
}

impl<T> Sparse<T> {
    #[inline]
    fn push(&mut self, row: usize, value: Option<T>) {
        if let Some(value) = value {
            self.cells.push((row as u32, value));
        }
    }

    /// Moves `other`'s cells after this column's, their rows shifted by `rows`.
    fn append(&mut self, other: &mut Sparse<T>, rows: usize) {
        let shift = rows as u32;
        self.cells.extend(other.cells.drain(..).map(|(row, value)| (row + shift, value)));
    }

    /// The validity of `rows` rows (none when every row has a value).
    fn nulls(&self, rows: usize) -> Option<NullBuffer> {
        if self.cells.len() == rows {
            return None;
        }
        let mut valid = BooleanBufferBuilder::new(rows);
        valid.append_n(rows, false);
        self.cells.iter().for_each(|(row, _)| valid.set_bit(*row as usize, true));
        Some(NullBuffer::new(valid.finish()))
    }
}

/// A column that can forget its cells.
trait Clear {
    fn clear(&mut self);
}

impl<T> Clear for Sparse<T> {
    fn clear(&mut self) {
        self.cells.clear();
    }
}

impl Sparse<i64> {
    /// The column as an array; `nulls` is an all-null array of `rows` rows, shared by the
    /// columns that have no value.
    fn finish(&mut self, rows: usize, nulls: &ArrayRef) -> ArrayRef {
        if self.cells.is_empty() {
            return Arc::clone(nulls);
        }
        let nulls = self.nulls(rows);
        let mut values = vec![0i64; rows];
        self.cells.drain(..).for_each(|(row, value)| values[row as usize] = value);
        Arc::new(Int64Array::new(values.into(), nulls))
    }
}

impl<T: AsRef<str>> Sparse<T> {
    fn finish_strings(&mut self, rows: usize) -> ArrayRef {
        if self.cells.is_empty() {
            return new_null_array(&DataType::Utf8, rows);
        }
        let nulls = self.nulls(rows);
        let (mut offsets, mut bytes) = (Vec::with_capacity(rows + 1), Vec::new());
        offsets.push(0i32);
        for (row, value) in self.cells.drain(..) {
            offsets.resize(row as usize + 1, bytes.len() as i32);
            bytes.extend_from_slice(value.as_ref().as_bytes());
            offsets.push(bytes.len() as i32);
        }
        offsets.resize(rows + 1, bytes.len() as i32);
        Arc::new(StringArray::new(OffsetBuffer::new(offsets.into()), bytes.into(), nulls))
    }
}

impl Sparse<bool> {
    fn finish_booleans(&mut self, rows: usize) -> ArrayRef {
        if self.cells.is_empty() {
            return new_null_array(&DataType::Boolean, rows);
        }
        let nulls = self.nulls(rows);
        let mut values = BooleanBufferBuilder::new(rows);
        values.append_n(rows, false);
        self.cells.drain(..).for_each(|(row, value)| values.set_bit(row as usize, value));
        Arc::new(BooleanArray::new(values.finish(), nulls))
    }
}

/// The list column being gathered: per row that has a list, the row and where its items
/// end in one shared vector of items (no allocation per row).
#[derive(Clone, Default)]
struct Lists {
    cells: Vec<(u32, u32)>,
    items: Vec<i64>,
}

impl Lists {
    #[inline]
    fn push(&mut self, row: usize, list: Option<&[usize]>) {
        if let Some(list) = list {
            self.items.extend(list.iter().map(|item| *item as i64));
            self.cells.push((row as u32, self.items.len() as u32));
        }
    }

    fn append(&mut self, other: &mut Lists, rows: usize) {
        let (shift, items) = (rows as u32, self.items.len() as u32);
        self.cells.extend(other.cells.drain(..).map(|(row, end)| (row + shift, end + items)));
        self.items.append(&mut other.items);
    }

    /// The column as an array of `rows` rows; the lists are empty afterwards.
    fn finish(&mut self, rows: usize) -> ArrayRef {
        let item = Arc::new(Field::new("item", DataType::Int64, false));
        if self.cells.is_empty() {
            return new_null_array(&DataType::List(item), rows);
        }
        let mut valid = BooleanBufferBuilder::new(rows);
        valid.append_n(rows, false);
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0i32);
        for (row, end) in self.cells.drain(..) {
            offsets.resize(row as usize + 1, *offsets.last().expect("offsets start at 0"));
            offsets.push(end as i32);
            valid.set_bit(row as usize, true);
        }
        offsets.resize(rows + 1, *offsets.last().expect("offsets start at 0"));
        let items = Arc::new(Int64Array::new(std::mem::take(&mut self.items).into(), None));
        let nulls = Some(NullBuffer::new(valid.finish()));
        Arc::new(ListArray::new(item, OffsetBuffer::new(offsets.into()), items, nulls))
    }
}

impl Clear for Lists {
    fn clear(&mut self) {
        self.cells.clear();
        self.items.clear();
    }
}

/// One column of an [`EventBatch`] as gathered, in schema order: what the file encoder reads.
pub(crate) enum Column<'a> {
    /// A dense, non-null integer column (`time_ns`).
    Times(&'a [i64]),
    /// The dense `kind` column, as dictionary codes of [`Kind::ALL`].
    Kinds(&'a [i8]),
    /// A nullable integer column: the rows that have a value, in row order.
    Ints(&'a [(u32, i64)]),
    /// The nullable list column (`address`): per row that has a list, the row and where its
    /// items end in `items`.
    Lists { cells: &'a [(u32, u32)], items: &'a [i64] },
    /// A nullable string column.
    Strings(Vec<(u32, &'a str)>),
    /// A nullable boolean column.
    Bools(&'a [(u32, bool)]),
}

/// Rows being gathered into one Arrow `RecordBatch`. Time and kind are dense; every other
/// column is [`Sparse`] until [`EventBatch::finish`] makes Arrow arrays of them.
#[derive(Clone, Default)]
pub struct EventBatch {
    time_ns: Vec<i64>,
    kind: Vec<i8>,
    operator: Sparse<i64>,
    address: Lists,
    name: Sparse<String>,
    channel: Sparse<i64>,
    channel_kind: Sparse<&'static str>,
    source_worker: Sparse<i64>,
    target_worker: Sparse<i64>,
    source_operator: Sparse<i64>,
    source_port: Sparse<i64>,
    target_operator: Sparse<i64>,
    target_port: Sparse<i64>,
    seq: Sparse<i64>,
    records: Sparse<i64>,
    bytes: Sparse<i64>,
    useful: Sparse<bool>,
    duration_ns: Sparse<i64>,
    wake: Sparse<&'static str>,
}

impl EventBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `row`.
    pub fn push(&mut self, row: &Row<'_>) {
        let at = self.time_ns.len();
        self.time_ns.push(row.time_ns);
        self.kind.push(row.kind.code());
        self.operator.push(at, row.operator);
        self.address.push(at, row.address);
        self.name.push(at, row.name.map(str::to_owned));
        self.channel.push(at, row.channel);
        self.channel_kind.push(at, row.channel_kind.map(ChannelKind::name));
        self.source_worker.push(at, row.source_worker);
        self.target_worker.push(at, row.target_worker);
        self.source_operator.push(at, row.source_operator);
        self.source_port.push(at, row.source_port);
        self.target_operator.push(at, row.target_operator);
        self.target_port.push(at, row.target_port);
        self.seq.push(at, row.seq);
        self.records.push(at, row.records);
        self.bytes.push(at, row.bytes);
        self.useful.push(at, row.useful);
        self.duration_ns.push(at, row.duration_ns);
        self.wake.push(at, row.wake.map(Wake::name));
    }

    /// The number of rows gathered.
    pub fn len(&self) -> usize {
        self.time_ns.len()
    }

    /// Whether no row has been gathered.
    pub fn is_empty(&self) -> bool {
        self.time_ns.is_empty()
    }

    /// Moves `other`'s rows after this batch's; `other` is empty afterwards.
    pub fn append(&mut self, other: &mut EventBatch) {
        let rows = self.len();
        self.time_ns.append(&mut other.time_ns);
        self.kind.append(&mut other.kind);
        self.operator.append(&mut other.operator, rows);
        self.address.append(&mut other.address, rows);
        self.name.append(&mut other.name, rows);
        self.channel.append(&mut other.channel, rows);
        self.channel_kind.append(&mut other.channel_kind, rows);
        self.source_worker.append(&mut other.source_worker, rows);
        self.target_worker.append(&mut other.target_worker, rows);
        self.source_operator.append(&mut other.source_operator, rows);
        self.source_port.append(&mut other.source_port, rows);
        self.target_operator.append(&mut other.target_operator, rows);
        self.target_port.append(&mut other.target_port, rows);
        self.seq.append(&mut other.seq, rows);
        self.records.append(&mut other.records, rows);
        self.bytes.append(&mut other.bytes, rows);
        self.useful.append(&mut other.useful, rows);
        self.duration_ns.append(&mut other.duration_ns, rows);
        self.wake.append(&mut other.wake, rows);
    }

    /// Forgets every row, keeping the memory for the next ones.
    pub fn clear(&mut self) {
        self.time_ns.clear();
        self.kind.clear();
        let sparse: [&mut dyn Clear; 17] = [
            &mut self.operator,
            &mut self.address,
            &mut self.name,
            &mut self.channel,
            &mut self.channel_kind,
            &mut self.source_worker,
            &mut self.target_worker,
            &mut self.source_operator,
            &mut self.source_port,
            &mut self.target_operator,
            &mut self.target_port,
            &mut self.seq,
            &mut self.records,
            &mut self.bytes,
            &mut self.useful,
            &mut self.duration_ns,
            &mut self.wake,
        ];
        sparse.into_iter().for_each(|column| column.clear());
    }

    /// The columns as gathered, in the order of [`crate::schema::schema`].
    pub(crate) fn columns(&self) -> [Column<'_>; 19] {
        let strings = |cells: &[(u32, &'static str)]| cells.to_vec();
        [
            Column::Times(&self.time_ns),
            Column::Kinds(&self.kind),
            Column::Ints(&self.operator.cells),
            Column::Lists { cells: &self.address.cells, items: &self.address.items },
            Column::Strings(self.name.cells.iter().map(|(row, name)| (*row, name.as_str())).collect()),
            Column::Ints(&self.channel.cells),
            Column::Strings(strings(&self.channel_kind.cells)),
            Column::Ints(&self.source_worker.cells),
            Column::Ints(&self.target_worker.cells),
            Column::Ints(&self.source_operator.cells),
            Column::Ints(&self.source_port.cells),
            Column::Ints(&self.target_operator.cells),
            Column::Ints(&self.target_port.cells),
            Column::Ints(&self.seq.cells),
            Column::Ints(&self.records.cells),
            Column::Ints(&self.bytes.cells),
            Column::Bools(&self.useful.cells),
            Column::Ints(&self.duration_ns.cells),
            Column::Strings(strings(&self.wake.cells)),
        ]
    }

    /// The gathered rows as a `RecordBatch`; the batch is empty afterwards.
    pub fn finish(&mut self) -> RecordBatch {
        let rows = self.len();
        let no_ints = new_null_array(&DataType::Int64, rows);
        let names = StringArray::from_iter_values(Kind::ALL.iter().map(|k| k.name()));
        let codes = Int8Array::new(std::mem::take(&mut self.kind).into(), None);
        let kind = DictionaryArray::<Int8Type>::try_new(codes, Arc::new(names))
            .expect("kind codes index the kind names");
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::new(std::mem::take(&mut self.time_ns).into(), None)),
            Arc::new(kind),
            self.operator.finish(rows, &no_ints),
            self.address.finish(rows),
            self.name.finish_strings(rows),
            self.channel.finish(rows, &no_ints),
            self.channel_kind.finish_strings(rows),
            self.source_worker.finish(rows, &no_ints),
            self.target_worker.finish(rows, &no_ints),
            self.source_operator.finish(rows, &no_ints),
            self.source_port.finish(rows, &no_ints),
            self.target_operator.finish(rows, &no_ints),
            self.target_port.finish(rows, &no_ints),
            self.seq.finish(rows, &no_ints),
            self.records.finish(rows, &no_ints),
            self.bytes.finish(rows, &no_ints),
            self.useful.finish_booleans(rows),
            self.duration_ns.finish(rows, &no_ints),
            self.wake.finish_strings(rows),
        ];
        RecordBatch::try_new(schema(), columns).expect("the columns follow the schema")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;

    #[test]
    fn rows_become_columns() {
        let mut batch = EventBatch::new();
        let address = [0usize, 3];
        batch.push(&Row {
            operator: Some(3),
            address: Some(&address),
            name: Some("Map"),
            ..Row::new(10, Kind::OperatorCreated)
        });
        batch.push(&Row { operator: Some(3), useful: Some(true), ..Row::new(12, Kind::ScheduleStop) });
        batch.push(&Row { wake: Some(Wake::Data), ..Row::new(15, Kind::Unpark) });
        assert_eq!(batch.len(), 3);
        let records = batch.finish();
        assert!(batch.is_empty());
        assert_eq!(records.num_rows(), 3);
        let times = records.column(0).as_primitive::<Int64Type>();
        assert_eq!(times.values(), &[10, 12, 15]);
        let kinds = records.column(1).as_dictionary::<Int8Type>();
        let names = kinds.values().as_string::<i32>();
        let kind_of = |row: usize| names.value(kinds.keys().value(row) as usize).to_string();
        assert_eq!([kind_of(0), kind_of(1), kind_of(2)], ["operator_created", "schedule_stop", "unpark"]);
        let addresses = records.column_by_name("address").unwrap().as_list::<i32>();
        assert_eq!(addresses.value(0).as_primitive::<Int64Type>().values(), &[0, 3]);
        assert!(addresses.is_null(1));
        let useful = records.column_by_name("useful").unwrap().as_boolean();
        assert!(useful.is_null(0) && useful.value(1));
        assert_eq!(records.column_by_name("wake").unwrap().as_string::<i32>().value(2), "data");
    }
}
