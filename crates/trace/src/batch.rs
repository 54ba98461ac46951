//! Columnar batches of trace events.
//!
//! A [`Row`] is one event with every column optional but its time and kind; an
//! [`EventBatch`] appends rows column by column and turns them into an Arrow `RecordBatch`
//! of [`crate::schema::schema`]. This module must not decide which events exist or where
//! batches go.

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Int64Builder, Int8Builder, ListBuilder, StringBuilder};
use arrow_array::types::Int8Type;
use arrow_array::{ArrayRef, DictionaryArray, RecordBatch, StringArray};

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

/// Rows being gathered into one Arrow `RecordBatch`.
pub struct EventBatch {
    time_ns: Int64Builder,
    kind: Int8Builder,
    operator: Int64Builder,
    address: ListBuilder<Int64Builder>,
    name: StringBuilder,
    channel: Int64Builder,
    channel_kind: StringBuilder,
    source_worker: Int64Builder,
    target_worker: Int64Builder,
    source_operator: Int64Builder,
    source_port: Int64Builder,
    target_operator: Int64Builder,
    target_port: Int64Builder,
    seq: Int64Builder,
    records: Int64Builder,
    bytes: Int64Builder,
    useful: BooleanBuilder,
    duration_ns: Int64Builder,
    wake: StringBuilder,
    len: usize,
}

impl Default for EventBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBatch {
    /// An empty batch.
    pub fn new() -> Self {
        let address = Int64Builder::new();
        let item = Arc::new(arrow_schema::Field::new("item", arrow_schema::DataType::Int64, false));
        EventBatch {
            time_ns: Int64Builder::new(),
            kind: Int8Builder::new(),
            operator: Int64Builder::new(),
            address: ListBuilder::new(address).with_field(item),
            name: StringBuilder::new(),
            channel: Int64Builder::new(),
            channel_kind: StringBuilder::new(),
            source_worker: Int64Builder::new(),
            target_worker: Int64Builder::new(),
            source_operator: Int64Builder::new(),
            source_port: Int64Builder::new(),
            target_operator: Int64Builder::new(),
            target_port: Int64Builder::new(),
            seq: Int64Builder::new(),
            records: Int64Builder::new(),
            bytes: Int64Builder::new(),
            useful: BooleanBuilder::new(),
            duration_ns: Int64Builder::new(),
            wake: StringBuilder::new(),
            len: 0,
        }
    }

    /// Appends `row`.
    pub fn push(&mut self, row: &Row<'_>) {
        self.time_ns.append_value(row.time_ns);
        self.kind.append_value(row.kind.code());
        self.operator.append_option(row.operator);
        match row.address {
            Some(address) => {
                self.address.values().extend(address.iter().map(|a| Some(*a as i64)));
                self.address.append(true);
            }
            None => self.address.append_null(),
        }
        self.name.append_option(row.name);
        self.channel.append_option(row.channel);
        self.channel_kind.append_option(row.channel_kind.map(ChannelKind::name));
        self.source_worker.append_option(row.source_worker);
        self.target_worker.append_option(row.target_worker);
        self.source_operator.append_option(row.source_operator);
        self.source_port.append_option(row.source_port);
        self.target_operator.append_option(row.target_operator);
        self.target_port.append_option(row.target_port);
        self.seq.append_option(row.seq);
        self.records.append_option(row.records);
        self.bytes.append_option(row.bytes);
        self.useful.append_option(row.useful);
        self.duration_ns.append_option(row.duration_ns);
        self.wake.append_option(row.wake.map(Wake::name));
        self.len += 1;
    }

    /// The number of rows gathered.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no row has been gathered.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The gathered rows as a `RecordBatch`; the batch is empty afterwards.
    pub fn finish(&mut self) -> RecordBatch {
        let names = StringArray::from_iter_values(Kind::ALL.iter().map(|k| k.name()));
        let kind = DictionaryArray::<Int8Type>::try_new(self.kind.finish(), Arc::new(names))
            .expect("kind codes index the kind names");
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.time_ns.finish()),
            Arc::new(kind),
            Arc::new(self.operator.finish()),
            Arc::new(self.address.finish()),
            Arc::new(self.name.finish()),
            Arc::new(self.channel.finish()),
            Arc::new(self.channel_kind.finish()),
            Arc::new(self.source_worker.finish()),
            Arc::new(self.target_worker.finish()),
            Arc::new(self.source_operator.finish()),
            Arc::new(self.source_port.finish()),
            Arc::new(self.target_operator.finish()),
            Arc::new(self.target_port.finish()),
            Arc::new(self.seq.finish()),
            Arc::new(self.records.finish()),
            Arc::new(self.bytes.finish()),
            Arc::new(self.useful.finish()),
            Arc::new(self.duration_ns.finish()),
            Arc::new(self.wake.finish()),
        ];
        self.len = 0;
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
