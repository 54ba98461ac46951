//! The two kernels on hand-built inputs: the wait-state analysis (waits ended by messages,
//! waits for input, buffered messages, spinning steps, the last stretch, user activities),
//! the critical path (crossing a message and splitting the sender, a message sent after the
//! wait, a sender absent from the slice, waits without messages, every worker waiting at the
//! slice's end) and their errors.

mod rows;

use arrow_schema::DataType;
use rows::{batch, ints, strings, Cell, Cell::*, Row};
use timely_analysis::schemas::{Kind, SLICED_READ, WORKER_ROWS};
use timely_analysis::{slice_critical_path, worker_activities, KernelError};

fn own(kind: &'static str, start: i64, end: i64) -> Row {
    vec![("row_type", S(kind)), ("worker", I(1)), ("start", I(start)), ("end", I(end))]
}

fn useful(start: i64, end: i64) -> Row {
    let mut row = own("operator", start, end);
    row.extend([("useful", B(true)), ("operator", I(1))]);
    row
}

fn park(start: i64, end: i64, wake: &'static str) -> Row {
    let mut row = own("park", start, end);
    row.push(("wake", S(wake)));
    row
}

fn delivery(comm: i64, send: i64, arrival: i64, read: i64, known: bool) -> Row {
    let mut row = own("delivery", read, read);
    row.extend([("comm_id", I(comm)), ("comm_type", S("data_message")), ("source_worker", I(0))]);
    row.extend([("send", I(send)), ("arrival", I(arrival)), ("read", I(read)), ("arrival_known", B(known))]);
    row
}

/// `(type, start, end, ended_by)` of each activity of one worker's rows.
fn activities(rows: &[Row]) -> Vec<(String, i64, i64, Option<i64>)> {
    let input = batch(WORKER_ROWS, rows);
    let out = worker_activities(&input.schema(), &[input]).unwrap();
    let (types, starts, ends, ended) =
        (strings(&out, "type"), ints(&out, "start"), ints(&out, "end"), ints(&out, "ended_by"));
    (0..out.num_rows())
        .map(|i| (types[i].clone().unwrap(), starts[i].unwrap(), ends[i].unwrap(), ended[i]))
        .collect()
}

fn a(kind: &str, start: i64, end: i64, ended_by: Option<i64>) -> (String, i64, i64, Option<i64>) {
    (kind.to_string(), start, end, ended_by)
}

#[test]
fn a_park_ended_by_a_message_waits_until_it_arrived_then_stays_parked() {
    let rows = [useful(0, 10), park(20, 100, "data"), delivery(7, 50, 80, 120, true), useful(110, 130)];
    assert_eq!(
        activities(&rows),
        [
            a("operator", 0, 10, None),
            a("waiting", 10, 80, Some(7)),
            a("parked", 80, 100, None),
            a("operator", 110, 130, None)
        ]
    );
}

#[test]
fn a_park_no_message_ended_is_waiting_for_input() {
    let rows = [useful(0, 10), park(20, 100, "activation"), useful(110, 130)];
    assert_eq!(activities(&rows)[1], a("waiting_for_input", 10, 110, None));
}

#[test]
fn unproductive_steps_are_waiting_but_a_buffered_message_means_work_was_pending() {
    let steps = [own("step", 20, 25), own("step", 30, 35), useful(60, 80), useful(0, 10)];
    let mut rows = steps.to_vec();
    rows.push(delivery(3, 40, 52, 70, true));
    assert_eq!(activities(&rows)[1], a("waiting", 10, 52, Some(3)));
    rows.push(delivery(4, 5, 5, 65, true)); // arrived at 5, read at 65: buffered at 10
    assert_eq!(activities(&rows).iter().filter(|r| r.0 == "waiting").count(), 0);
}

#[test]
fn a_wake_by_data_with_an_unknown_arrival_ends_at_the_work_it_caused() {
    let rows = [useful(0, 10), park(20, 100, "data"), delivery(9, 50, 115, 115, false), useful(110, 130)];
    assert_eq!(activities(&rows)[1], a("waiting", 10, 110, Some(9)));
}

#[test]
fn the_last_stretch_is_no_wait_and_ids_number_the_activities() {
    let rows = [useful(0, 10), park(20, 100, "timeout")];
    let input = batch(WORKER_ROWS, &rows);
    let out = worker_activities(&input.schema(), &[input]).unwrap();
    assert_eq!(strings(&out, "type"), [Some("operator".to_string()), Some("parked".to_string())]);
    assert_eq!(ints(&out, "activity_id"), [Some(1 << 40), Some((1 << 40) | 1)]);
}

#[test]
fn inner_user_activities_cover_operators_and_batches_are_one_table() {
    let mut outer = own("user", 0, 100);
    outer.extend([("depth", I(0)), ("name", S("outer"))]);
    let mut inner = own("user", 20, 40);
    inner.extend([("depth", I(1)), ("name", S("inner"))]);
    let (first, second) = (batch(WORKER_ROWS, &[outer, useful(10, 60)]), batch(WORKER_ROWS, &[inner]));
    let out = worker_activities(&first.schema(), &[first, second]).unwrap();
    let names: Vec<_> = strings(&out, "name").into_iter().map(Option::unwrap).collect();
    assert_eq!(names, ["outer", "inner", "outer"]);
    assert_eq!(ints(&out, "end"), [Some(20), Some(40), Some(100)]);
}

fn act(worker: i64, kind: &'static str, start: i64, end: i64) -> Row {
    let bounds = [("slice", I(3)), ("slice_start", I(0)), ("slice_end", I(1000))];
    let mut row = vec![("worker", I(worker)), ("type", S(kind)), ("start", I(start)), ("end", I(end))];
    row.extend(bounds);
    row.push(("activity_id", I(worker * 1000 + start)));
    row
}

fn wait(worker: i64, start: i64, end: i64, source: i64, send: i64) -> Row {
    let mut row = act(worker, "waiting", start, end);
    row.extend([("ended_by", I(1)), ("ended_by_type", S("data_message"))]);
    row.extend([("ended_by_worker", I(source)), ("ended_by_send", I(send))]);
    row
}

/// `(type, worker, start, end)` of each edge, and whether the path is complete.
fn path(rows: &[Row]) -> (Vec<(String, i64, i64, i64)>, bool) {
    let input = batch(SLICED_READ, rows);
    let out = slice_critical_path(&input.schema(), &[input]).unwrap();
    let (types, workers) = (strings(&out, "type"), ints(&out, "worker"));
    let (starts, ends) = (ints(&out, "start"), ints(&out, "end"));
    let complete = rows::booleans(&out, "complete");
    assert!(complete.windows(2).all(|w| w[0] == w[1]));
    let edges = (0..out.num_rows())
        .map(|i| (types[i].clone().unwrap(), workers[i].unwrap(), starts[i].unwrap(), ends[i].unwrap()))
        .collect();
    (edges, complete.first().copied().unwrap_or(true))
}

fn e(kind: &str, worker: i64, start: i64, end: i64) -> (String, i64, i64, i64) {
    (kind.to_string(), worker, start, end)
}

#[test]
fn the_path_crosses_the_message_that_ended_a_wait_and_splits_the_sender() {
    let rows = [
        act(0, "operator", 0, 60),
        act(0, "operator", 70, 90),
        wait(1, 0, 40, 0, 30),
        act(1, "operator", 50, 100),
    ];
    let (edges, complete) = path(&rows);
    assert_eq!(
        edges,
        [
            e("operator", 1, 50, 100),
            e("unknown", 1, 40, 50),
            e("data_message", 1, 30, 40),
            e("operator", 0, 0, 30)
        ]
    );
    assert!(complete);
}

#[test]
fn a_message_sent_after_the_wait_crosses_at_the_wait_end() {
    let rows = [act(0, "operator", 0, 100), wait(1, 0, 40, 0, 45), act(1, "operator", 40, 120)];
    let (edges, _) = path(&rows);
    assert_eq!(edges, [e("operator", 1, 40, 120), e("data_message", 1, 40, 40), e("operator", 0, 0, 40)]);
}

#[test]
fn a_sender_absent_from_the_slice_is_a_gap_and_a_wait_without_message_is_all_waiting() {
    let rows = [wait(1, 0, 40, 5, 10), act(1, "operator", 40, 100)];
    let (edges, complete) = path(&rows);
    assert_eq!(edges, [e("operator", 1, 40, 100), e("data_message", 1, 10, 40), e("unknown", 5, 0, 10)]);
    assert!(complete);
    let (edges, complete) = path(&[act(0, "waiting", 0, 40), act(0, "operator", 40, 60)]);
    assert_eq!(edges, [e("operator", 0, 40, 60), e("all_waiting", 0, 0, 40)]);
    assert!(complete);
}

/// `rows` in a slice that ends at `end` (every activity already cut there, as slicing does).
fn ending_at(rows: &[Row], end: i64) -> Vec<Row> {
    let bound =
        |&(name, cell): &(&'static str, Cell)| (name, if name == "slice_end" { I(end) } else { cell });
    rows.iter().map(|row| row.iter().map(bound).collect()).collect()
}

#[test]
fn every_worker_waiting_at_the_end_with_a_message_in_flight_crosses_it() {
    // Worker 1's wait ends after the slice by a message worker 0 sends after the slice; worker
    // 0's by a message worker 1 sent at 70, still in flight at the end: the walk crosses that.
    let rows = [
        act(0, "operator", 0, 50),
        wait(0, 50, 100, 1, 70),
        act(1, "operator", 0, 70),
        wait(1, 70, 100, 0, 130),
    ];
    let (edges, complete) = path(&ending_at(&rows, 100));
    assert_eq!(edges, [e("data_message", 0, 70, 100), e("operator", 1, 0, 70)]);
    assert!(complete);
}

#[test]
fn a_wait_at_the_end_for_a_message_sent_later_crosses_at_the_end_to_the_sender() {
    // Worker 0 waits for a message worker 1 sends after the slice; worker 1 has done nothing
    // recorded since 10 (it sleeps): that gap is what worker 0 waits for.
    let rows = [act(0, "operator", 0, 20), wait(0, 30, 100, 1, 130), act(1, "operator", 0, 10)];
    let (edges, complete) = path(&ending_at(&rows, 100));
    assert_eq!(edges, [e("data_message", 0, 100, 100), e("unknown", 1, 10, 100), e("operator", 1, 0, 10)]);
    assert!(complete);
}

#[test]
fn nothing_in_flight_at_the_end_is_all_waiting_since_the_last_work() {
    let rows = [
        act(0, "operator", 0, 20),
        act(0, "waiting", 20, 100),
        act(1, "operator", 0, 35),
        act(1, "waiting", 35, 100),
    ];
    let (edges, complete) = path(&ending_at(&rows, 100));
    assert_eq!(edges, [e("all_waiting", 0, 35, 100), e("operator", 1, 0, 35)]);
    assert!(complete);
}

#[test]
fn three_workers_waiting_at_the_end_prefer_the_message_in_flight_and_break_a_circle() {
    let in_flight = [
        act(0, "operator", 0, 40),
        wait(0, 40, 100, 1, 110),
        act(1, "operator", 0, 50),
        wait(1, 50, 100, 2, 90),
        act(2, "operator", 0, 90),
        wait(2, 90, 100, 0, 150),
    ];
    let (edges, complete) = path(&ending_at(&in_flight, 100));
    assert_eq!(edges, [e("data_message", 1, 90, 100), e("operator", 2, 0, 90)]);
    assert!(complete);
    // Each waits for the next one's message, all sent after the slice: the crossings at the
    // end go once round the circle, then the walk takes the time since the last work.
    let mut circle = in_flight.to_vec();
    circle[3] = wait(1, 50, 100, 2, 120);
    let (edges, complete) = path(&ending_at(&circle, 100));
    assert_eq!(
        edges,
        [
            e("data_message", 0, 100, 100),
            e("data_message", 1, 100, 100),
            e("data_message", 2, 100, 100),
            e("all_waiting", 0, 90, 100),
            e("operator", 2, 0, 90)
        ]
    );
    assert!(complete);
}

#[test]
fn empty_inputs_are_empty_outputs() {
    let input = batch(SLICED_READ, &[]);
    assert_eq!(slice_critical_path(&input.schema(), &[]).unwrap().num_rows(), 0);
    let input = batch(WORKER_ROWS, &[]);
    assert_eq!(worker_activities(&input.schema(), std::slice::from_ref(&input)).unwrap().num_rows(), 0);
}

#[test]
fn bad_inputs_are_errors_naming_what_is_wrong() {
    let rows = [useful(0, 10)];
    let good = batch(WORKER_ROWS, &rows);
    let columns: Vec<_> = WORKER_ROWS.iter().filter(|(name, _)| *name != "wake").copied().collect();
    let missing = batch(&columns, &rows);
    assert_eq!(worker_activities(&missing.schema(), &[missing]), Err(KernelError::MissingColumn("wake")));
    let mut typed = WORKER_ROWS.to_vec();
    typed[2] = ("start", Kind::Str);
    let wrong = batch(&typed, &[vec![("row_type", S("operator")), ("worker", I(1)), ("start", S("0"))]]);
    let error = worker_activities(&wrong.schema(), &[wrong]).unwrap_err();
    assert_eq!(error, KernelError::WrongType { column: "start", expected: Kind::Int, found: DataType::Utf8 });
    assert!(error.is_type_error());
    let null =
        batch(WORKER_ROWS, &[useful(0, 10), vec![("row_type", S("park")), ("worker", I(1)), ("end", I(3))]]);
    assert_eq!(
        worker_activities(&good.schema(), &[null]),
        Err(KernelError::Null { column: "start", row: 1 })
    );
    let overlap = batch(SLICED_READ, &[act(2, "operator", 0, 50), act(2, "user", 40, 60)]);
    let error = slice_critical_path(&overlap.schema(), &[overlap]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "activities of worker 2 overlap at 40 (a worker's activities never overlap)"
    );
}
