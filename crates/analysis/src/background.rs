//! The background of a worker's timeline, where its time went when no recorded activity says:
//! `timely_py.analysis.background` in Rust.
//!
//! This module owns the four activity types that lie under every other one (lowest in
//! [`crate::precedence`]), built from one worker's own rows ([`background`]):
//!
//! * `scope`: a run of a scope, the dataflow's root scope (a `step` row, depth 0) or a
//!   nested one (a `scope` row, at its depth): the scope's own work between its children's
//!   runs; the innermost scope running wins. `operator` is the scope's.
//! * `program`: a stretch between the worker's first and last own events (the `lifetime`
//!   row) outside every step, on a worker with at least one `step` row: the program's own
//!   code between steps, waiting for the interpreter lock, the engine's bookkeeping between
//!   dataflows. `operator` is the Input operator that sent the most messages (`input` rows)
//!   at or between the stretch's bounds, the lowest id on a tie, or null.
//! * `not_started`: from the trace's first event (the `trace` row's start) to the worker's
//!   first own event; `finished`: from its last own event to the trace's last event.
//!
//! Several `lifetime` (or `trace`) rows count as one from the earliest start to the latest
//! end. It must not decide waits ([`crate::waits`]) nor precedence.

use crate::precedence::Kind;
use crate::worker_rows::Own;
use std::collections::BTreeMap;

/// Row types that only this module reads (they are neither work nor waiting of the worker's).
pub const ROW_TYPES: [&str; 4] = ["scope", "input", "lifetime", "trace"];

/// Whether a row is one that only this module reads.
pub fn is_background_row(row: &Own) -> bool {
    row.row_type.is_some_and(|row_type| ROW_TYPES.contains(&row_type))
}

/// The earliest start and latest end of the rows of `row_type` (None: there are none).
fn bounds(own: &[Own], row_type: &str) -> Option<(i64, i64)> {
    let rows = || own.iter().filter(|r| r.row_type == Some(row_type));
    Some((rows().map(|r| r.start).min()?, rows().map(|r| r.end).max()?))
}

/// The stretches of `[first, last]` that no span (sorted by start) covers.
fn outside(first: i64, last: i64, spans: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let (mut stretches, mut t) = (Vec::new(), first);
    for &(start, end) in spans {
        if t >= last {
            break;
        }
        if start > t {
            stretches.push((t, start.min(last)));
        }
        t = t.max(end);
    }
    if t < last {
        stretches.push((t, last));
    }
    stretches
}

/// The Input operator that sent the most messages in `[left, right]` (the lowest id on a
/// tie), or None; `sends` are `(time, operator)` sorted by time.
fn input_of(sends: &[(i64, i64)], left: i64, right: i64) -> Option<i64> {
    let from = sends.partition_point(|&(t, _)| t < left);
    let to = sends.partition_point(|&(t, _)| t <= right);
    let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
    for &(_, operator) in &sends[from..to.max(from)] {
        *counts.entry(operator).or_default() += 1;
    }
    counts.iter().max_by_key(|&(operator, count)| (*count, std::cmp::Reverse(*operator))).map(|(op, _)| *op)
}

/// The `scope`, `program`, `not_started` and `finished` items of one worker's own rows, each
/// with the row its columns come from: scope runs in input order, then program stretches in
/// time order, then `not_started` and `finished`.
pub fn background<'a>(own: &[Own<'a>]) -> Vec<(Kind, Own<'a>)> {
    let mut items: Vec<(Kind, Own<'a>)> = own
        .iter()
        .filter(|r| matches!(r.row_type, Some("step" | "scope")))
        .map(|r| {
            let depth = if r.row_type == Some("step") { Some(0) } else { r.depth };
            let row = Own {
                start: r.start,
                end: r.end,
                operator: r.operator,
                useful: r.useful,
                depth,
                ..Own::default()
            };
            (Kind::Scope, row)
        })
        .collect();
    let Some((first, last)) = bounds(own, "lifetime") else { return items };
    if own.iter().any(|r| r.row_type == Some("step")) {
        let mut steps: Vec<(i64, i64)> = own
            .iter()
            .filter(|r| r.row_type == Some("step") && r.end > r.start)
            .map(|r| (r.start, r.end))
            .collect();
        steps.sort_unstable();
        let mut sends: Vec<(i64, i64)> = own
            .iter()
            .filter(|r| r.row_type == Some("input"))
            .filter_map(|r| r.operator.map(|operator| (r.start, operator)))
            .collect();
        sends.sort_by_key(|&(t, _)| t);
        for (left, right) in outside(first, last, &steps) {
            let operator = input_of(&sends, left, right);
            items.push((Kind::Program, Own { start: left, end: right, operator, ..Own::default() }));
        }
    }
    if let Some((origin, end)) = bounds(own, "trace") {
        items.push((Kind::NotStarted, Own { start: origin, end: first, ..Own::default() }));
        items.push((Kind::Finished, Own { start: last, end, ..Own::default() }));
    }
    items
}

#[cfg(test)]
mod tests {
    use crate::background::{input_of, outside};

    #[test]
    fn the_stretches_outside_the_spans_are_clipped_to_the_bounds() {
        assert_eq!(outside(0, 100, &[(10, 20), (15, 30), (50, 60)]), [(0, 10), (30, 50), (60, 100)]);
        assert_eq!(outside(20, 55, &[(10, 25), (50, 60), (70, 80)]), [(25, 50)]);
        assert_eq!(outside(0, 10, &[(0, 10)]), []);
        assert_eq!(outside(5, 5, &[]), []);
    }

    #[test]
    fn a_stretch_belongs_to_the_input_with_the_most_sends_in_it_the_lowest_on_a_tie() {
        let sends = [(5, 7), (10, 3), (10, 7), (20, 3), (30, 9)];
        assert_eq!(input_of(&sends, 10, 20), Some(3));
        assert_eq!(input_of(&sends, 5, 10), Some(7));
        assert_eq!(input_of(&sends, 30, 30), Some(9));
        assert_eq!(input_of(&sends, 11, 19), None);
    }
}
