//! The background under a worker's recorded activities (`scope`, `program`, `not_started`,
//! `finished`): what each covers, what it is attributed to, what takes precedence over it; and
//! how the critical path treats a worker that has not started or has finished.

mod rows;

use rows::{batch, ints, strings, Cell::*, Row};
use timely_analysis::schemas::{SLICED_READ, WORKER_ROWS};
use timely_analysis::{slice_critical_path, worker_activities};

fn own(kind: &'static str, start: i64, end: i64) -> Row {
    vec![("row_type", S(kind)), ("worker", I(2)), ("start", I(start)), ("end", I(end))]
}

fn with(mut row: Row, cells: &[(&'static str, rows::Cell)]) -> Row {
    row.extend_from_slice(cells);
    row
}

fn run(start: i64, end: i64, operator: i64) -> Row {
    with(own("operator", start, end), &[("operator", I(operator)), ("useful", B(true))])
}

fn step(start: i64, end: i64) -> Row {
    with(own("step", start, end), &[("operator", I(90))])
}

fn input(t: i64, operator: i64) -> Row {
    with(own("input", t, t), &[("operator", I(operator))])
}

/// `(type, start, end, operator)` of each activity of one worker's rows.
fn activities(rows: &[Row]) -> Vec<(String, i64, i64, Option<i64>)> {
    let input = batch(WORKER_ROWS, rows);
    let out = worker_activities(&input.schema(), &[input]).unwrap();
    let (types, starts, ends, ops) =
        (strings(&out, "type"), ints(&out, "start"), ints(&out, "end"), ints(&out, "operator"));
    (0..out.num_rows())
        .map(|i| (types[i].clone().unwrap(), starts[i].unwrap(), ends[i].unwrap(), ops[i]))
        .collect()
}

fn a(kind: &str, start: i64, end: i64, operator: Option<i64>) -> (String, i64, i64, Option<i64>) {
    (kind.to_string(), start, end, operator)
}

/// A worker that starts at 100 in a trace from 0 to 1000, steps twice (each step a run of
/// the root scope 90 around an inner scope 91 around an operator), sends into inputs 5 and 6
/// between and after the steps, and ends at 900.
fn worker() -> Vec<Row> {
    vec![
        own("trace", 0, 1000),
        own("lifetime", 100, 900),
        step(200, 300),
        with(own("scope", 210, 290), &[("operator", I(91)), ("depth", I(1))]),
        run(220, 280, 1),
        step(500, 600),
        run(510, 590, 1),
        input(400, 6),
        input(450, 6),
        input(480, 6),
        input(500, 5),
        input(520, 5),
        input(600, 5),
        input(700, 5),
    ]
}

#[test]
fn every_moment_of_a_worker_whose_steps_are_recorded_has_a_named_activity() {
    assert_eq!(
        activities(&worker()),
        [
            a("not_started", 0, 100, None),
            a("program", 100, 200, None),
            a("scope", 200, 210, Some(90)),
            a("scope", 210, 220, Some(91)),
            a("operator", 220, 280, Some(1)),
            a("scope", 280, 290, Some(91)),
            a("scope", 290, 300, Some(90)),
            a("program", 300, 500, Some(6)),
            a("scope", 500, 510, Some(90)),
            a("operator", 510, 590, Some(1)),
            a("scope", 590, 600, Some(90)),
            a("program", 600, 900, Some(5)),
            a("finished", 900, 1000, None),
        ]
    );
}

#[test]
fn waits_parks_and_user_activities_take_precedence_over_the_background() {
    let mut rows = worker();
    rows.push(with(own("user", 120, 150), &[("name", S("load")), ("depth", I(0))]));
    rows.push(with(own("park", 350, 380), &[("wake", S("timeout"))]));
    rows.push(with(own("park", 640, 660), &[("wake", S("timeout"))]));
    let found = activities(&rows);
    assert!(found.contains(&a("user", 120, 150, None)) && found.contains(&a("program", 150, 200, None)));
    // The park between the two steps makes the stretch between their useful runs a wait.
    assert!(found.contains(&a("waiting_for_input", 280, 510, None)), "{found:?}");
    // The last park, after the last productive moment, stays a park inside the program's time.
    assert!(found.contains(&a("parked", 640, 660, None)) && found.contains(&a("program", 660, 900, Some(5))));
    let covered: i64 = found.iter().map(|(_, s, e, _)| e - s).sum();
    assert_eq!(covered, 1000, "the activities tile the trace's span");
}

#[test]
fn without_recorded_steps_there_is_no_program_time_and_without_bounds_nothing_before_or_after() {
    let rows: Vec<Row> = worker().into_iter().filter(|r| !matches!(r[0].1, S("step"))).collect();
    let types: Vec<String> = activities(&rows).into_iter().map(|r| r.0).collect();
    assert!(!types.contains(&"program".to_string()) && types.contains(&"finished".to_string()), "{types:?}");
    let rows: Vec<Row> =
        worker().into_iter().filter(|r| !matches!(r[0].1, S("trace" | "lifetime"))).collect();
    let found = activities(&rows);
    assert!(found.iter().all(|r| r.0 == "scope" || r.0 == "operator"), "{found:?}");
    assert_eq!((found[0].1, found.last().unwrap().2), (200, 600));
}

#[test]
fn background_rows_do_not_move_the_first_stretch_of_the_wait_state_analysis() {
    // With its trace row, the first stretch would begin at 0 (and the wait with it); it
    // begins at the worker's first own row, the park at 40.
    let rows = vec![
        own("trace", 0, 400),
        own("lifetime", 40, 300),
        with(own("park", 40, 60), &[("wake", S("timeout"))]),
        run(100, 110, 1),
        run(200, 300, 1),
    ];
    let found = activities(&rows);
    assert_eq!(found[..2], [a("not_started", 0, 40, None), a("waiting_for_input", 40, 100, None)]);
    assert_eq!(found.last(), Some(&a("finished", 300, 400, None)));
}

fn act(worker: i64, kind: &'static str, start: i64, end: i64) -> Row {
    let bounds = [("slice", I(0)), ("slice_start", I(0)), ("slice_end", I(1000))];
    let mut row = vec![("worker", I(worker)), ("type", S(kind)), ("start", I(start)), ("end", I(end))];
    row.extend(bounds);
    row.push(("activity_id", I(worker * 1000 + start)));
    row
}

/// `(type, worker, start, end)` of each edge, latest first.
fn path(rows: &[Row]) -> Vec<(String, i64, i64, i64)> {
    let input = batch(SLICED_READ, rows);
    let out = slice_critical_path(&input.schema(), &[input]).unwrap();
    let (types, workers) = (strings(&out, "type"), ints(&out, "worker"));
    let (starts, ends) = (ints(&out, "start"), ints(&out, "end"));
    (0..out.num_rows())
        .map(|i| (types[i].clone().unwrap(), workers[i].unwrap(), starts[i].unwrap(), ends[i].unwrap()))
        .collect()
}

fn e(kind: &str, worker: i64, start: i64, end: i64) -> (String, i64, i64, i64) {
    (kind.to_string(), worker, start, end)
}

#[test]
fn the_walk_starts_on_a_worker_still_running_and_takes_a_late_start_on_the_path() {
    // Worker 0 finished at 600; worker 1 started late (at 300) and ran until the end.
    let rows = [
        act(0, "operator", 0, 600),
        act(0, "finished", 600, 1000),
        act(1, "not_started", 0, 300),
        act(1, "operator", 300, 1000),
    ];
    assert_eq!(path(&rows), [e("operator", 1, 300, 1000), e("not_started", 1, 0, 300)]);
}

#[test]
fn when_every_worker_has_finished_the_walk_starts_on_the_last_to_finish() {
    let rows = [
        act(0, "operator", 0, 600),
        act(0, "finished", 600, 1000),
        act(1, "operator", 0, 800),
        act(1, "finished", 800, 1000),
    ];
    assert_eq!(path(&rows), [e("finished", 1, 800, 1000), e("operator", 1, 0, 800)]);
}

#[test]
fn an_all_waiting_edge_never_goes_back_to_a_worker_that_had_finished_or_not_started() {
    // Worker 1 waits at the end for a message nobody names; worker 0 ran until 500 and has
    // finished since; worker 2 has not started yet.
    let rows = [
        act(0, "operator", 0, 500),
        act(0, "finished", 500, 1000),
        act(1, "operator", 0, 200),
        act(1, "waiting", 200, 1000),
        act(2, "not_started", 0, 1000),
    ];
    assert_eq!(
        path(&rows),
        [e("all_waiting", 1, 500, 1000), e("operator", 0, 0, 500)],
        "the edge goes back to where worker 0's work ended"
    );
}

#[test]
fn a_worker_with_nothing_recorded_at_the_end_that_worked_last_beats_one_that_had_finished() {
    // A trace without recorded steps: worker 0's last run ends at 900, before its last event
    // (no `program` fills the gap); worker 1 finished at 500.
    let rows = [act(0, "operator", 0, 900), act(1, "operator", 0, 500), act(1, "finished", 500, 1000)];
    assert_eq!(path(&rows), [e("unknown", 0, 900, 1000), e("operator", 0, 0, 900)]);
}
