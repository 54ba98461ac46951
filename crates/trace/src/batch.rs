//! Columnar batches of trace events.
//!
//! An [`EventBatch`] gathers rows column by column, sparsely: a recorder starts a row with
//! [`EventBatch::row`] and fills only the cells its event has ([`Cells`]), with no
//! intermediate form. A [`Row`] is the same event as a value, every column optional but its
//! time and kind, for recorders that prefer building one. The batch turns into an Arrow
//! `RecordBatch` of [`crate::schema::schema`], or shows its columns as they are ([`Column`])
//! to the file encoder. This module must not decide which events exist or where batches go.

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
    fn push(&mut self, row: u32, value: T) {
        self.cells.push((row, value));
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
    fn push(&mut self, row: u32, list: &[usize]) {
        self.items.extend(list.iter().map(|item| *item as i64));
        self.cells.push((row, self.items.len() as u32));
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

    fn clear(&mut self) {
        self.cells.clear();
        self.items.clear();
    }
}

/// The nullable integer columns, in schema order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Int {
    /// `operator`.
    Operator,
    /// `channel`.
    Channel,
    /// `source_worker`.
    SourceWorker,
    /// `target_worker`.
    TargetWorker,
    /// `source_operator`.
    SourceOperator,
    /// `source_port`.
    SourcePort,
    /// `target_operator`.
    TargetOperator,
    /// `target_port`.
    TargetPort,
    /// `seq`.
    Seq,
    /// `records`.
    Records,
    /// `bytes`.
    Bytes,
    /// `duration_ns`.
    DurationNs,
}

/// How many [`Int`] columns there are.
const INTS: usize = 12;

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
    ints: [Sparse<i64>; INTS],
    address: Lists,
    name: Sparse<String>,
    channel_kind: Sparse<ChannelKind>,
    useful: Sparse<bool>,
    wake: Sparse<Wake>,
}

/// The cells of the row an [`EventBatch::row`] started: each setter fills one column of it.
/// Set each column at most once.
pub struct Cells<'a> {
    batch: &'a mut EventBatch,
    row: u32,
}

impl Cells<'_> {
    /// Sets an integer column.
    #[inline]
    pub fn int(self, column: Int, value: i64) -> Self {
        self.batch.ints[column as usize].push(self.row, value);
        self
    }

    /// Sets `address`.
    #[inline]
    pub fn address(self, address: &[usize]) -> Self {
        self.batch.address.push(self.row, address);
        self
    }

    /// Sets `name`.
    pub fn name(self, name: &str) -> Self {
        self.batch.name.push(self.row, name.to_owned());
        self
    }

    /// Sets `channel_kind`.
    pub fn channel_kind(self, kind: ChannelKind) -> Self {
        self.batch.channel_kind.push(self.row, kind);
        self
    }

    /// Sets `useful`.
    #[inline]
    pub fn useful(self, useful: bool) -> Self {
        self.batch.useful.push(self.row, useful);
        self
    }

    /// Sets `wake`.
    pub fn wake(self, wake: Wake) -> Self {
        self.batch.wake.push(self.row, wake);
        self
    }
}

impl EventBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a row of `kind` at `time_ns`, its other columns null until set through the
    /// returned [`Cells`].
    #[inline]
    pub fn row(&mut self, time_ns: i64, kind: Kind) -> Cells<'_> {
        let row = self.time_ns.len() as u32;
        self.time_ns.push(time_ns);
        self.kind.push(kind.code());
        Cells { batch: self, row }
    }

    /// Appends `row`.
    pub fn push(&mut self, row: &Row<'_>) {
        let mut cells = self.row(row.time_ns, row.kind);
        let ints = [
            (Int::Operator, row.operator),
            (Int::Channel, row.channel),
            (Int::SourceWorker, row.source_worker),
            (Int::TargetWorker, row.target_worker),
            (Int::SourceOperator, row.source_operator),
            (Int::SourcePort, row.source_port),
            (Int::TargetOperator, row.target_operator),
            (Int::TargetPort, row.target_port),
            (Int::Seq, row.seq),
            (Int::Records, row.records),
            (Int::Bytes, row.bytes),
            (Int::DurationNs, row.duration_ns),
        ];
        for (column, value) in ints {
            if let Some(value) = value {
                cells = cells.int(column, value);
            }
        }
        if let Some(address) = row.address {
            cells = cells.address(address);
        }
        if let Some(name) = row.name {
            cells = cells.name(name);
        }
        if let Some(kind) = row.channel_kind {
            cells = cells.channel_kind(kind);
        }
        if let Some(useful) = row.useful {
            cells = cells.useful(useful);
        }
        if let Some(wake) = row.wake {
            cells.wake(wake);
        }
    }

    /// The number of rows gathered.
    pub fn len(&self) -> usize {
        self.time_ns.len()
    }

    /// Whether no row has been gathered.
    pub fn is_empty(&self) -> bool {
        self.time_ns.is_empty()
    }

    /// Turns the times of the rows from `first` on, and the durations of their waits for the
    /// writer, from stamps into nanoseconds with `to_ns`.
    pub(crate) fn stamps_to_ns(&mut self, first: usize, to_ns: fn(&mut [i64])) {
        let wait = Kind::TraceWait.code();
        let durations = &mut self.ints[Int::DurationNs as usize].cells;
        let from = durations.partition_point(|(row, _)| (*row as usize) < first);
        for (row, duration) in &mut durations[from..] {
            if self.kind[*row as usize] == wait {
                let start = self.time_ns[*row as usize];
                let mut ends = [start, start + *duration];
                to_ns(&mut ends);
                *duration = ends[1] - ends[0];
            }
        }
        to_ns(&mut self.time_ns[first..]);
    }

    /// How many rows have a `channel_kind`: a mark for [`EventBatch::channels_since`].
    pub(crate) fn channel_mark(&self) -> usize {
        self.channel_kind.cells.len()
    }

    /// The `(channel, channel_kind)` of the rows that got a channel kind after `mark`.
    pub(crate) fn channels_since(&self, mark: usize) -> impl Iterator<Item = (i64, ChannelKind)> + '_ {
        let channels = &self.ints[Int::Channel as usize].cells;
        self.channel_kind.cells[mark..].iter().filter_map(|(row, kind)| {
            let at = channels.binary_search_by_key(row, |(channel_row, _)| *channel_row).ok()?;
            Some((channels[at].1, *kind))
        })
    }

    /// Forgets every row, keeping the memory for the next ones.
    pub fn clear(&mut self) {
        self.time_ns.clear();
        self.kind.clear();
        self.ints.iter_mut().for_each(|column| column.cells.clear());
        self.address.clear();
        self.name.cells.clear();
        self.channel_kind.cells.clear();
        self.useful.cells.clear();
        self.wake.cells.clear();
    }

    /// The columns as gathered, in the order of [`crate::schema::schema`].
    pub(crate) fn columns(&self) -> [Column<'_>; 19] {
        let int = |column: Int| Column::Ints(&self.ints[column as usize].cells);
        let named = |cells: &[(u32, &'static str)]| Column::Strings(cells.to_vec());
        let kinds: Vec<_> = self.channel_kind.cells.iter().map(|(row, kind)| (*row, kind.name())).collect();
        let wakes: Vec<_> = self.wake.cells.iter().map(|(row, wake)| (*row, wake.name())).collect();
        [
            Column::Times(&self.time_ns),
            Column::Kinds(&self.kind),
            int(Int::Operator),
            Column::Lists { cells: &self.address.cells, items: &self.address.items },
            Column::Strings(self.name.cells.iter().map(|(row, name)| (*row, name.as_str())).collect()),
            int(Int::Channel),
            named(&kinds),
            int(Int::SourceWorker),
            int(Int::TargetWorker),
            int(Int::SourceOperator),
            int(Int::SourcePort),
            int(Int::TargetOperator),
            int(Int::TargetPort),
            int(Int::Seq),
            int(Int::Records),
            int(Int::Bytes),
            Column::Bools(&self.useful.cells),
            int(Int::DurationNs),
            named(&wakes),
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
        let mut ints = self.ints.iter_mut().map(|column| column.finish(rows, &no_ints));
        let mut int = || ints.next().expect("one array per integer column");
        let mut kinds = named(&mut self.channel_kind, ChannelKind::name);
        let mut wakes = named(&mut self.wake, Wake::name);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::new(std::mem::take(&mut self.time_ns).into(), None)),
            Arc::new(kind),
            int(),
            self.address.finish(rows),
            self.name.finish_strings(rows),
            int(),
            kinds.finish_strings(rows),
            int(),
            int(),
            int(),
            int(),
            int(),
            int(),
            int(),
            int(),
            int(),
            self.useful.finish_booleans(rows),
            int(),
            wakes.finish_strings(rows),
        ];
        RecordBatch::try_new(schema(), columns).expect("the columns follow the schema")
    }
}

/// A column of small enumerations as the strings written for them; `column` is empty
/// afterwards.
fn named<T>(column: &mut Sparse<T>, name: fn(T) -> &'static str) -> Sparse<&'static str> {
    Sparse { cells: column.cells.drain(..).map(|(row, value)| (row, name(value))).collect() }
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
