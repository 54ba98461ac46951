//! Exhaustive breadth-first exploration of the model's reachable states.
//!
//! This module owns the search: a queue of states to expand, a visited set of 64-bit state
//! fingerprints (xxh3 of the state's `Hash` encoding) and, per state, its parent and the
//! action that reached it, so a violation comes with the shortest trace that shows it. It
//! knows nothing of the protocol beyond `actions::enabled`/`apply` and the properties.
//!
//! Storing fingerprints instead of states (hash compaction) could in principle merge two
//! distinct states and skip one; with `n` states the chance is about `n^2 / 2^65`, below
//! one in a million for the few million states explored here.

use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hash, Hasher};

use super::actions::{apply, enabled, Action, Config};
use super::model::State;
use super::properties::{check_state, check_terminal, Property, Violation};

/// What an exploration found.
#[derive(Debug)]
pub struct Report {
    /// Distinct states reached.
    pub states: usize,
    /// Transitions taken (edges, including those to states already visited).
    pub transitions: usize,
    /// States with no enabled action.
    pub terminal: usize,
    /// The longest shortest path from the initial state.
    pub depth: usize,
    /// The first violation found, with the trace from the initial state to it.
    pub violation: Option<(Violation, Vec<(Action, State)>)>,
}

impl Report {
    /// The violated property, if any.
    pub fn property(&self) -> Option<Property> {
        self.violation.as_ref().map(|(violation, _)| violation.property)
    }

    /// The violation and its trace, one action and resulting state per line (for an action
    /// that was wrong in itself, the last line shows the state it was taken in).
    pub fn trace(&self) -> String {
        let Some((violation, steps)) = &self.violation else { return "no violation".into() };
        let mut out = format!("{:?}: {}\n", violation.property, violation.detail);
        for (i, (action, state)) in steps.iter().enumerate() {
            out.push_str(&format!("{i:3} {action:?}\n      {}\n", describe(state)));
        }
        out
    }
}

/// A state in one line: per worker its capabilities, inbox, view and applied batches.
fn describe(state: &State) -> String {
    let workers: Vec<String> = state
        .workers
        .iter()
        .enumerate()
        .map(|(w, k)| {
            format!(
                "w{w}[epoch {:?} held {:?} notify {:03b} inbox {:?} view {:?} next {:?}]",
                k.epoch, k.held, k.notify, k.inbox, k.view.0, k.next
            )
        })
        .collect();
    let sent: Vec<u8> = state.logs.iter().map(|log| log.sent()).collect();
    format!("{} sent {sent:?} join {:?}", workers.join(" "), state.join)
}

/// Explores every state reachable from `initial` under `config`, stopping at the first
/// violation or after `limit` states (then `states == limit` says the search was cut short).
pub fn explore(initial: State, config: &Config, limit: usize) -> Report {
    let mut report = Report { states: 0, transitions: 0, terminal: 0, depth: 0, violation: None };
    let mut visited: HashSet<u64, BuildHasherDefault<Passthrough>> = HashSet::default();
    // Per discovered state: index of its parent and the action from it.
    let mut parents: Vec<(u32, Option<Action>)> = vec![(0, None)];
    let mut queue = VecDeque::from([(initial.clone(), 0u32, 0usize)]);
    visited.insert(fingerprint(&initial));
    if let Err(violation) = check_state(&initial, config) {
        report.violation = Some((violation, Vec::new()));
    }
    while let Some((state, index, depth)) = queue.pop_front() {
        if report.violation.is_some() || parents.len() >= limit {
            break;
        }
        report.depth = report.depth.max(depth);
        let actions = enabled(&state, config);
        if actions.is_empty() {
            report.terminal += 1;
            if let Err(violation) = check_terminal(&state) {
                report.violation = Some((violation, trace(&initial, config, &parents, index)));
            }
        }
        for action in actions {
            report.transitions += 1;
            let next = match apply(&state, config, action) {
                Ok(next) => next,
                Err(detail) => {
                    let mut steps = trace(&initial, config, &parents, index);
                    steps.push((action, state.clone()));
                    let violation = Violation { property: Property::EarlyNotification, detail };
                    report.violation = Some((violation, steps));
                    break;
                }
            };
            if !visited.insert(fingerprint(&next)) {
                continue;
            }
            parents.push((index, Some(action)));
            let child = (parents.len() - 1) as u32;
            if let Err(violation) = check_state(&next, config) {
                report.violation = Some((violation, trace(&initial, config, &parents, child)));
                break;
            }
            queue.push_back((next, child, depth + 1));
        }
    }
    report.states = parents.len();
    report
}

/// The actions from the initial state to state `index`, each with the state it led to.
fn trace(
    initial: &State,
    config: &Config,
    parents: &[(u32, Option<Action>)],
    index: u32,
) -> Vec<(Action, State)> {
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
            state = apply(&state, config, action).expect("a replayed action succeeds");
            (action, state.clone())
        })
        .collect()
}

fn fingerprint(state: &State) -> u64 {
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
