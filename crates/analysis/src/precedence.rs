//! Which activity a worker was doing at each moment when several cover it (thesis 6.1).
//!
//! This module owns [`overlay`]: from overlapping spans with priorities, the non-overlapping
//! segments in which the highest priority covering each moment wins (ties: the span that
//! started later, that is the inner one; then the one listed first), and the priorities of
//! the activity types ([`Kind::priority`]): waits, then parked stretches no wait explains,
//! then user activities (deeper ones higher), then operator runs, then the background of
//! [`crate::background`]: scope runs (deeper ones higher), the program between steps, and
//! the time before the worker started and after it finished. It is
//! `timely_py.analysis.precedence` in Rust and knows nothing about Arrow or traces.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The activity types a worker's moments are given to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A wait ended by a message.
    Waiting,
    /// A wait that no message ended.
    WaitingForInput,
    /// A park that no wait explains.
    Parked,
    /// A user activity.
    User,
    /// An operator run.
    Operator,
    /// A scope's own work in one of its runs (a dataflow's root scope: a step).
    Scope,
    /// The worker's time outside its steps: the program's own code.
    Program,
    /// Before the worker's first event.
    NotStarted,
    /// After the worker's last event.
    Finished,
}

/// Scopes nested deeper than this rank as if this deep (so that every scope ranks below operators).
pub const MAX_SCOPE_DEPTH: i64 = 39;

impl Kind {
    /// The type's name in the `type` column.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Waiting => "waiting",
            Kind::WaitingForInput => "waiting_for_input",
            Kind::Parked => "parked",
            Kind::User => "user",
            Kind::Operator => "operator",
            Kind::Scope => "scope",
            Kind::Program => "program",
            Kind::NotStarted => "not_started",
            Kind::Finished => "finished",
        }
    }

    /// The priority of an item of this type; a user activity adds its depth, a scope its
    /// depth between 0 and [`MAX_SCOPE_DEPTH`] (null: 0).
    pub fn priority(self, depth: Option<i64>) -> i64 {
        match self {
            Kind::Waiting | Kind::WaitingForInput => 1000,
            Kind::Parked => 900,
            Kind::User => 100i64.saturating_add(depth.unwrap_or(0)),
            Kind::Operator => 50,
            Kind::Scope => 10 + depth.unwrap_or(0).clamp(0, MAX_SCOPE_DEPTH),
            Kind::Program => 3,
            Kind::NotStarted => 2,
            Kind::Finished => 1,
        }
    }
}

/// A span to overlay: `[start, end)` with a priority. Empty spans (`start >= end`) cover nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: i64,
    pub end: i64,
    pub priority: i64,
}

/// A segment of [`overlay`]'s result: `(start, end, index of the span it belongs to)`.
pub type Segment = (i64, i64, usize);

/// `(start, end, index into spans)` segments in time order, each moment given to its top
/// span; a span cut by a higher one yields several segments, adjacent segments of one span
/// are merged.
pub fn overlay(spans: &[Span]) -> Vec<Segment> {
    let mut live: Vec<usize> = (0..spans.len()).filter(|&i| spans[i].start < spans[i].end).collect();
    live.sort_by_key(|&i| spans[i].start); // stable: ties keep the order of `spans`
    let mut bounds: Vec<i64> = live.iter().flat_map(|&i| [spans[i].start, spans[i].end]).collect();
    bounds.sort_unstable();
    bounds.dedup();
    // Max-heap on (priority, later start, earlier position in `live`).
    let mut heap: BinaryHeap<(i64, i64, Reverse<usize>)> = BinaryHeap::new();
    let mut segments: Vec<Segment> = Vec::new();
    let mut following = 0;
    for pair in bounds.windows(2) {
        let (left, right) = (pair[0], pair[1]);
        while following < live.len() && spans[live[following]].start <= left {
            let span = spans[live[following]];
            heap.push((span.priority, span.start, Reverse(following)));
            following += 1;
        }
        while heap.peek().is_some_and(|&(_, _, Reverse(at))| spans[live[at]].end <= left) {
            heap.pop();
        }
        let Some(&(_, _, Reverse(at))) = heap.peek() else { continue };
        let top = live[at];
        match segments.last_mut() {
            Some(last) if last.2 == top && last.1 == left => last.1 = right,
            _ => segments.push((left, right, top)),
        }
    }
    segments
}

#[cfg(test)]
mod tests {
    use crate::precedence::{overlay, Kind, Span};

    fn span(start: i64, end: i64, kind: Kind, depth: i64) -> Span {
        Span { start, end, priority: kind.priority(Some(depth)) }
    }

    #[test]
    fn inner_user_activities_win_over_outer_ones_and_over_operators() {
        let spans = [
            span(0, 100, Kind::User, 0),
            span(20, 40, Kind::User, 1),
            span(10, 60, Kind::Operator, 0),
            span(150, 160, Kind::Operator, 0),
        ];
        assert_eq!(overlay(&spans), vec![(0, 20, 0), (20, 40, 1), (40, 100, 0), (150, 160, 3)]);
    }

    #[test]
    fn waiting_wins_over_user_activities_and_empty_spans_cover_nothing() {
        let spans =
            [span(0, 100, Kind::User, 0), span(30, 50, Kind::Waiting, 0), span(70, 70, Kind::Parked, 0)];
        assert_eq!(overlay(&spans), vec![(0, 30, 0), (30, 50, 1), (50, 100, 0)]);
    }

    #[test]
    fn equal_priorities_go_to_the_later_start_then_to_the_first_listed() {
        let spans =
            [span(0, 10, Kind::Operator, 0), span(5, 20, Kind::Operator, 0), span(5, 20, Kind::Operator, 0)];
        assert_eq!(overlay(&spans), vec![(0, 5, 0), (5, 20, 1)]);
    }

    #[test]
    fn operators_win_over_scopes_inner_scopes_over_outer_ones_and_scopes_over_the_program() {
        let spans = [
            span(0, 100, Kind::Program, 0),
            span(10, 90, Kind::Scope, 0),
            span(20, 80, Kind::Scope, 1),
            span(30, 40, Kind::Operator, 0),
            span(50, 60, Kind::Scope, 1000),
        ];
        let expected = [(0, 10, 0), (10, 20, 1), (20, 30, 2), (30, 40, 3), (40, 50, 2), (50, 60, 4)];
        assert_eq!(overlay(&spans)[..6], expected);
        assert!(Kind::Scope.priority(Some(1000)) < Kind::Operator.priority(None));
        assert!(Kind::Scope.priority(Some(-5)) > Kind::Program.priority(None));
    }

    #[test]
    fn no_spans_no_segments() {
        assert!(overlay(&[]).is_empty());
    }
}
