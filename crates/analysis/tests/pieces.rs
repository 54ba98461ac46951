//! The pieces kernel on hand-built events: runs paired per operator (steps, nested scopes at
//! their depth, operators), user activities paired by nesting depth, parks with the unpark's
//! wake, instants, input sends, the lifetime without the network threads' events, events in
//! any order and in several batches, and its errors.

mod rows;

use rows::{batch, ints, strings, Cell::*, Row};
use std::collections::HashMap;
use timely_analysis::pieces::EVENTS_READ;
use timely_analysis::{worker_pieces, Catalogue, KernelError};

fn event(t: i64, ord: i64, kind: &'static str) -> Row {
    vec![("worker", I(4)), ("t", I(t)), ("ord", I(ord)), ("kind", S(kind))]
}

fn with(mut row: Row, cells: &[(&'static str, rows::Cell)]) -> Row {
    row.extend_from_slice(cells);
    row
}

fn events() -> Vec<Row> {
    vec![
        with(event(10, 0, "schedule_start"), &[("operator", I(0))]),
        with(event(11, 1, "schedule_start"), &[("operator", I(2))]),
        with(event(12, 2, "schedule_start"), &[("operator", I(5))]),
        with(event(13, 3, "activity_start"), &[("name", S("outer"))]),
        with(event(14, 4, "activity_start"), &[("name", S("inner"))]),
        event(15, 5, "activity_stop"),
        event(15, 6, "activity_stop"),
        with(event(16, 7, "schedule_stop"), &[("operator", I(5)), ("useful", B(true))]),
        with(event(17, 8, "schedule_stop"), &[("operator", I(2))]),
        event(18, 9, "park"),
        with(event(20, 10, "unpark"), &[("wake", S("data"))]),
        event(20, 11, "progress_push"),
        with(event(21, 12, "message_send"), &[("channel", I(9))]),
        with(event(22, 13, "message_send"), &[("channel", I(8))]),
        with(event(23, 14, "schedule_stop"), &[("operator", I(0)), ("useful", B(true))]),
        with(event(24, 15, "unpark"), &[("wake", S("timeout"))]),
        event(30, 16, "network_recv_end"),
    ]
}

fn catalogue() -> Catalogue {
    Catalogue {
        depths: HashMap::from([(0, 0), (2, 1)]),
        input_channels: HashMap::from([(9, 1)]),
        origin: Some(1),
        end: Some(40),
    }
}

type Piece = (String, i64, i64, Option<i64>, Option<i64>, Option<String>, Option<String>);

/// `(row_type, start, end, operator, depth, wake, name)` of each row, sorted.
fn pieces(rows: &[Vec<Row>]) -> Vec<Piece> {
    let batches: Vec<_> = rows.iter().map(|r| batch(EVENTS_READ, r)).collect();
    let out = worker_pieces(&batches[0].schema(), &batches, &catalogue()).unwrap();
    assert!(ints(&out, "worker").iter().all(|w| *w == Some(4)));
    let (types, starts, ends) = (strings(&out, "row_type"), ints(&out, "start"), ints(&out, "end"));
    let (operators, depths) = (ints(&out, "operator"), ints(&out, "depth"));
    let (wakes, names) = (strings(&out, "wake"), strings(&out, "name"));
    let mut found: Vec<Piece> = (0..out.num_rows())
        .map(|i| {
            let kind = types[i].clone().unwrap();
            (
                kind,
                starts[i].unwrap(),
                ends[i].unwrap(),
                operators[i],
                depths[i],
                wakes[i].clone(),
                names[i].clone(),
            )
        })
        .collect();
    found.sort();
    found
}

fn piece(kind: &str, start: i64, end: i64) -> Piece {
    (kind.to_string(), start, end, None, None, None, None)
}

#[test]
fn every_kind_of_piece_from_one_workers_events() {
    let mut expected = vec![
        ("step".to_string(), 10, 23, Some(0), None, None, None),
        ("scope".to_string(), 11, 17, Some(2), Some(1), None, None),
        ("operator".to_string(), 12, 16, Some(5), None, None, None),
        ("user".to_string(), 13, 15, None, Some(0), None, Some("outer".to_string())),
        ("user".to_string(), 14, 15, None, Some(1), None, Some("inner".to_string())),
        ("park".to_string(), 18, 20, None, None, Some("data".to_string()), None),
        piece("instant", 20, 20),
        ("input".to_string(), 21, 21, Some(1), None, None, None),
        piece("lifetime", 10, 24),
        piece("trace", 1, 40),
    ];
    expected.sort();
    assert_eq!(pieces(&[events()]), expected);
    let mut shuffled = events();
    shuffled.reverse();
    let (first, second) = shuffled.split_at(7);
    assert_eq!(pieces(&[first.to_vec(), second.to_vec()]), expected);
}

#[test]
fn no_events_no_rows_and_a_null_time_is_an_error() {
    let empty = batch(EVENTS_READ, &[]);
    assert_eq!(
        worker_pieces(&empty.schema(), std::slice::from_ref(&empty), &catalogue()).unwrap().num_rows(),
        0
    );
    let null_t = batch(EVENTS_READ, &[vec![("worker", I(4)), ("ord", I(0)), ("kind", S("park"))]]);
    let error = worker_pieces(&null_t.schema(), &[null_t], &catalogue()).unwrap_err();
    assert_eq!(error, KernelError::Null { column: "t", row: 0 });
}
