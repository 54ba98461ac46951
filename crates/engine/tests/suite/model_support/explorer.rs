//! Exhaustive breadth-first exploration of a model's reachable states, and the harness the
//! scenarios run through.
//!
//! This module owns the search: a queue of states to expand, a visited set of 64-bit state
//! fingerprints (xxh3 of the state's `Hash` encoding) and, per state, its parent and the
//! action that reached it, so a violation comes with the shortest trace that shows it. It
//! knows nothing of a protocol beyond the `Model` trait: the actions enabled in a state, what
//! an action does, and the properties a state must have.
//!
//! Storing fingerprints instead of states (hash compaction) could in principle merge two
//! distinct states and skip one; with `n` states the chance is about `n^2 / 2^65`, below
//! one in a million for the few million states explored here.

use std::collections::{HashSet, VecDeque};
use std::fmt::{Debug, Display};
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// A protocol to explore: its states, its actions and the properties its states must have.
/// Implemented by a model's configuration (which protocol variant, which bounds).
pub trait Model: Debug {
    /// A complete state; `Display` shows it in one line of a trace.
    type State: Clone + Hash + Display;
    type Action: Copy + Debug;
    /// The properties a state (or an action) may violate.
    type Property: Copy + Debug + PartialEq;

    /// Every action enabled in `state`.
    fn enabled(&self, state: &Self::State) -> Vec<Self::Action>;

    /// The state after `action`, or the property the action itself violated (an event that
    /// is wrong in itself, such as a notification delivered too early).
    fn apply(
        &self,
        state: &Self::State,
        action: Self::Action,
    ) -> Result<Self::State, Violation<Self::Property>>;

    /// Checks the invariants of one state.
    fn check_state(&self, state: &Self::State) -> Result<(), Violation<Self::Property>>;

    /// Checks a state in which no action is enabled.
    fn check_terminal(&self, state: &Self::State) -> Result<(), Violation<Self::Property>>;
}

/// A property violated, with the facts that show it.
#[derive(Clone, Debug)]
pub struct Violation<P> {
    pub property: P,
    pub detail: String,
}

/// The actions from the initial state to a violation, each with the state it led to (for an
/// action that was wrong in itself, the last one shows the state it was taken in).
pub type Trace<M> = Vec<(<M as Model>::Action, <M as Model>::State)>;

/// What an exploration found.
pub struct Report<M: Model> {
    /// Distinct states reached.
    pub states: usize,
    /// Transitions taken (edges, including those to states already visited).
    pub transitions: usize,
    /// States with no enabled action.
    pub terminal: usize,
    /// The longest shortest path from the initial state.
    pub depth: usize,
    /// The first violation found, with the trace from the initial state to it.
    pub violation: Option<(Violation<M::Property>, Trace<M>)>,
}

impl<M: Model> Report<M> {
    /// The violated property, if any.
    pub fn property(&self) -> Option<M::Property> {
        self.violation.as_ref().map(|(violation, _)| violation.property)
    }

    /// The violation and its trace, one action and resulting state per line.
    pub fn trace(&self) -> String {
        let Some((violation, steps)) = &self.violation else { return "no violation".into() };
        let mut out = format!("{:?}: {}\n", violation.property, violation.detail);
        for (i, (action, state)) in steps.iter().enumerate() {
            out.push_str(&format!("{i:3} {action:?}\n      {state}\n"));
        }
        out
    }
}

/// Explores every state reachable from `initial` under `model`, stopping at the first
/// violation or after `limit` states (then `states == limit` says the search was cut short).
pub fn explore<M: Model>(model: &M, initial: M::State, limit: usize) -> Report<M> {
    let mut report = Report { states: 0, transitions: 0, terminal: 0, depth: 0, violation: None };
    let mut visited: HashSet<u64, BuildHasherDefault<Passthrough>> = HashSet::default();
    // Per discovered state: index of its parent and the action from it.
    let mut parents: Vec<(u32, Option<M::Action>)> = vec![(0, None)];
    let mut queue = VecDeque::from([(initial.clone(), 0u32, 0usize)]);
    visited.insert(fingerprint(&initial));
    if let Err(violation) = model.check_state(&initial) {
        report.violation = Some((violation, Vec::new()));
    }
    while let Some((state, index, depth)) = queue.pop_front() {
        if report.violation.is_some() || parents.len() >= limit {
            break;
        }
        report.depth = report.depth.max(depth);
        let actions = model.enabled(&state);
        if actions.is_empty() {
            report.terminal += 1;
            if let Err(violation) = model.check_terminal(&state) {
                report.violation = Some((violation, trace(model, &initial, &parents, index)));
            }
        }
        for action in actions {
            report.transitions += 1;
            let next = match model.apply(&state, action) {
                Ok(next) => next,
                Err(violation) => {
                    let mut steps = trace(model, &initial, &parents, index);
                    steps.push((action, state.clone()));
                    report.violation = Some((violation, steps));
                    break;
                }
            };
            if !visited.insert(fingerprint(&next)) {
                continue;
            }
            parents.push((index, Some(action)));
            let child = (parents.len() - 1) as u32;
            if let Err(violation) = model.check_state(&next) {
                report.violation = Some((violation, trace(model, &initial, &parents, child)));
                break;
            }
            queue.push_back((next, child, depth + 1));
        }
    }
    report.states = parents.len();
    report
}

/// The actions from the initial state to state `index`, each with the state it led to.
fn trace<M: Model>(
    model: &M,
    initial: &M::State,
    parents: &[(u32, Option<M::Action>)],
    index: u32,
) -> Trace<M> {
    let mut actions = Vec::new();
    let mut at = index as usize;
    while let (parent, Some(action)) = parents[at] {
        actions.push(action);
        at = parent as usize;
    }
    actions.reverse();
    let mut state = initial.clone();
    actions
        .into_iter()
        .map(|action| {
            state = model.apply(&state, action).expect("a replayed action succeeds");
            (action, state.clone())
        })
        .collect()
}

fn fingerprint<S: Hash>(state: &S) -> u64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    state.hash(&mut hasher);
    hasher.finish()
}

/// The visited set's keys are already well-mixed fingerprints.
#[derive(Default)]
struct Passthrough(u64);

impl Hasher for Passthrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

/// More states than any scenario has: reaching it means the search was cut short.
pub const LIMIT: usize = 8_000_000;

/// The state after taking `prelude` from `initial` (a reachable start for an exploration).
pub fn start<M: Model>(model: &M, initial: M::State, prelude: &[M::Action]) -> M::State {
    prelude.iter().fold(initial, |state, &action| match model.apply(&state, action) {
        Ok(next) => next,
        Err(violation) => panic!("the prelude is valid: {violation:?}"),
    })
}

/// Explores from `start` and prints what was explored and the trace of a violation, if any.
pub fn run<M: Model>(model: &M, start: M::State) -> Report<M> {
    let clock = std::time::Instant::now();
    let report = explore(model, start, LIMIT);
    println!(
        "{model:?}: {} states, {} transitions, {} terminal, depth {}, {:.1?}\n{}",
        report.states,
        report.transitions,
        report.terminal,
        report.depth,
        clock.elapsed(),
        report.trace()
    );
    report
}

/// Explores a scenario that must hold everywhere, and checks that it was explored completely.
pub fn holds<M: Model>(model: &M, start: M::State, at_least: usize) -> Report<M> {
    let report = run(model, start);
    assert!(report.violation.is_none(), "{}", report.trace());
    assert!(report.states < LIMIT, "the search was cut short");
    assert!(report.states >= at_least, "only {} states: the model lost behaviour", report.states);
    assert!(report.terminal > 0, "no run completes");
    report
}

/// Explores a variant that must fail, and checks which property it breaks.
pub fn fails<M: Model>(model: &M, start: M::State, expected: &[M::Property]) -> Report<M> {
    let report = run(model, start);
    let found = report.property().unwrap_or_else(|| panic!("no violation in {} states", report.states));
    assert!(expected.contains(&found), "expected one of {expected:?}, found {}", report.trace());
    report
}
