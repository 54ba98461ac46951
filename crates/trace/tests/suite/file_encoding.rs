//! The trace files' own Parquet encoder against Arrow: any rows, handed both to a callback
//! (Arrow arrays built by `EventBatch::finish`) and to files (pages encoded by the writer),
//! read back from the files by the `parquet` crate's Arrow reader, must be the same table;
//! and the files must hold, cell by cell, what the events say.

use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, Int8Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use arrow_select::concat::concat_batches;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use timely_trace::schema::schema;
use timely_trace::{
    ChannelKind, EventBatch, Kind, ProcessMetadata, Row, Status, TraceClock, TraceConfig, TraceEvent,
    TraceWriter, Wake,
};

/// An event owning every column a row can have.
#[derive(Clone, Debug)]
struct Owned {
    time_ns: i64,
    kind: usize,
    ints: [Option<i64>; 12],
    address: Option<Vec<usize>>,
    name: Option<String>,
    channel_kind: Option<bool>,
    useful: Option<bool>,
    wake: Option<u8>,
}

fn to_row(_worker: usize, event: &Owned) -> Row<'_> {
    let [operator, channel, source_worker, target_worker, source_operator, source_port, target_operator, target_port, seq, records, bytes, duration_ns] =
        event.ints;
    Row {
        operator,
        address: event.address.as_deref(),
        name: event.name.as_deref(),
        channel,
        channel_kind: event
            .channel_kind
            .map(|data| if data { ChannelKind::Data } else { ChannelKind::Progress }),
        source_worker,
        target_worker,
        source_operator,
        source_port,
        target_operator,
        target_port,
        seq,
        records,
        bytes,
        useful: event.useful,
        duration_ns,
        wake: event
            .wake
            .map(|w| [Wake::Data, Wake::Progress, Wake::Activation, Wake::Timeout][w as usize % 4]),
        ..Row::new(event.time_ns, Kind::ALL[event.kind])
    }
}

impl TraceEvent for Owned {
    fn stamp(&self) -> i64 {
        self.time_ns
    }

    fn kind(&self) -> Kind {
        Kind::ALL[self.kind]
    }

    fn write(&self, worker: usize, batch: &mut EventBatch) {
        batch.push(&to_row(worker, self));
    }
}

/// Integers as traces have them (small, growing, repeating) and at the extremes, where
/// differences between neighbours wrap.
fn integer() -> impl Strategy<Value = i64> {
    prop_oneof![4 => 0i64..4, 2 => 0i64..1_000_000, 1 => any::<i64>(), 1 => Just(i64::MIN), 1 => Just(i64::MAX)]
}

fn cell<T: std::fmt::Debug + Clone>(
    value: impl Strategy<Value = T>,
    filled: f64,
) -> impl Strategy<Value = Option<T>> {
    proptest::option::weighted(filled, value)
}

fn event(filled: f64) -> impl Strategy<Value = Owned> {
    let ints = proptest::array::uniform12(cell(integer(), filled));
    let address = cell(proptest::collection::vec(prop_oneof![0usize..8, Just(usize::MAX)], 0..5), filled);
    let name = cell("[a-zé ]{0,12}", filled);
    (
        any::<i64>(),
        0..Kind::ALL.len(),
        ints,
        address,
        name,
        cell(any::<bool>(), filled),
        cell(any::<bool>(), filled),
        cell(0u8..4, filled),
    )
        .prop_map(|(time_ns, kind, ints, address, name, channel_kind, useful, wake)| Owned {
            time_ns,
            kind,
            ints,
            address,
            name,
            channel_kind,
            useful,
            wake,
        })
}

/// What the callback saw and what the files hold, each as one table.
fn written(events: Vec<Owned>, hand_over: usize) -> (RecordBatch, RecordBatch) {
    let dir = tempfile::tempdir().unwrap();
    let seen: Arc<Mutex<Vec<RecordBatch>>> = Default::default();
    let record = seen.clone();
    let mut config = TraceConfig::new(Some(dir.path().into()), TraceClock::nanoseconds(|| 0));
    config.callback =
        Some(Box::new(move |_, batch: &RecordBatch| record.lock().unwrap().push(batch.clone())));
    let metadata = ProcessMetadata::starting(0, 1, 1, 0, vec!["encoding-test".into()]);
    let writer = TraceWriter::start(config, metadata, 1).unwrap();
    let mut sink = writer.sink(0);
    for chunk in events.chunks(hand_over) {
        sink.hand_over(&mut chunk.to_vec());
    }
    drop(sink);
    writer.finish(Status::Complete).unwrap();
    let mut files: Vec<_> = walk(dir.path());
    files.sort();
    let read: Vec<RecordBatch> = files
        .into_iter()
        .flat_map(|path| {
            let reader =
                ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap()).unwrap();
            reader.build().unwrap().map(|batch| batch.unwrap())
        })
        .collect();
    let seen = seen.lock().unwrap();
    (concat_batches(&schema(), seen.iter()).unwrap(), concat_batches(&schema(), read.iter()).unwrap())
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "parquet") {
            found.push(path);
        }
    }
    found
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn files_hold_what_arrow_holds(
        events in (0.0..1.0f64).prop_flat_map(|filled| proptest::collection::vec(event(filled), 1..400)),
        hand_over in 1usize..300,
    ) {
        let (from_callback, from_files) = written(events.clone(), hand_over);
        // Every event, and a `trace_wait` row for each time the writer's queue was full.
        prop_assert!(from_callback.num_rows() >= events.len());
        prop_assert_eq!(from_files, from_callback);
    }
}

/// Enough rows for several row groups, blocks of differences and bit-packed level runs.
#[test]
fn many_rows_cross_row_groups() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let events: Vec<Owned> =
        (0..300_000).map(|_| event(0.3).new_tree(&mut runner).unwrap().current()).collect();
    let (from_callback, from_files) = written(events, 4096);
    assert!(from_files.num_rows() >= 300_000);
    assert_eq!(from_files, from_callback);
}

/// One cell of a table, whatever its column's type.
#[derive(Debug, PartialEq)]
enum Cell {
    Null,
    Int(i64),
    Text(String),
    Bool(bool),
    List(Vec<i64>),
}

/// The cell at `row` of `column`, read through Arrow's typed arrays.
fn read_cell(column: &dyn Array, row: usize) -> Cell {
    if column.is_null(row) {
        return Cell::Null;
    }
    match column.data_type() {
        DataType::Int64 => Cell::Int(column.as_primitive::<Int64Type>().value(row)),
        DataType::Utf8 => Cell::Text(column.as_string::<i32>().value(row).to_string()),
        DataType::Boolean => Cell::Bool(column.as_boolean().value(row)),
        DataType::List(_) => {
            Cell::List(column.as_list::<i32>().value(row).as_primitive::<Int64Type>().values().to_vec())
        }
        DataType::Dictionary(_, _) => {
            let kinds = column.as_dictionary::<Int8Type>();
            let key = kinds.keys().value(row) as usize;
            Cell::Text(kinds.values().as_string::<i32>().value(key).to_string())
        }
        other => panic!("no trace column is {other}"),
    }
}

/// The cells `event` should have, in schema order, worked out from the event alone.
fn expected_cells(event: &Owned) -> Vec<Cell> {
    let int = |value: Option<i64>| value.map_or(Cell::Null, Cell::Int);
    let text = |value: Option<&str>| value.map_or(Cell::Null, |text| Cell::Text(text.to_string()));
    let row = to_row(0, event);
    let [operator, channel, source_worker, target_worker, source_operator, source_port, target_operator, target_port, seq, records, bytes, duration_ns] =
        event.ints;
    vec![
        Cell::Int(event.time_ns),
        Cell::Text(Kind::ALL[event.kind].name().to_string()),
        int(operator),
        event
            .address
            .as_ref()
            .map_or(Cell::Null, |items| Cell::List(items.iter().map(|i| *i as i64).collect())),
        text(event.name.as_deref()),
        int(channel),
        text(row.channel_kind.map(ChannelKind::name)),
        int(source_worker),
        int(target_worker),
        int(source_operator),
        int(source_port),
        int(target_operator),
        int(target_port),
        int(seq),
        int(records),
        int(bytes),
        event.useful.map_or(Cell::Null, Cell::Bool),
        int(duration_ns),
        text(row.wake.map(Wake::name)),
    ]
}

/// Files hold exactly the events fed, cell by cell: every column kind, dense and sparse
/// columns (from nearly empty to nearly full), several row groups and files' worth of
/// hand-overs. The expectation is worked out from the events, not from the writer's columns.
#[test]
fn files_hold_the_events_fed() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for filled in [0.02, 0.5, 0.98] {
        let events: Vec<Owned> = (0..150_000)
            .map(|_| event(filled).new_tree(&mut runner).unwrap().current())
            // No `trace_wait` among the events fed: the writer's own are left out below.
            .map(|event| Owned { kind: event.kind % (Kind::ALL.len() - 1), ..event })
            .collect();
        let (_, from_files) = written(events.clone(), 4096);
        let kinds = from_files.column(1);
        let rows: Vec<usize> = (0..from_files.num_rows())
            .filter(|row| read_cell(kinds, *row) != Cell::Text(Kind::TraceWait.name().to_string()))
            .collect();
        assert_eq!(rows.len(), events.len(), "filled {filled}");
        for (event, row) in events.iter().zip(rows) {
            let cells: Vec<Cell> =
                from_files.columns().iter().map(|column| read_cell(column.as_ref(), row)).collect();
            assert_eq!(cells, expected_cells(event), "filled {filled}, row {row}");
        }
    }
}
