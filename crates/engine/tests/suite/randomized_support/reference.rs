//! The sequential reference: a direct interpretation of a program description.

use super::program::{Program, Stage};
use super::{M, WORK_CAP};
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------
// The sequential reference: a direct interpretation over `(time coordinates, record)`.

type Collection = Vec<(Vec<u64>, u64)>;

struct Interpreter {
    peers: u64,
    work: usize,
    cap: usize,
}

impl Interpreter {
    fn charge(&mut self, collection: &Collection) -> Option<()> {
        self.work += collection.len();
        (self.work <= self.cap).then_some(())
    }

    fn stages(
        &mut self,
        mut collection: Collection,
        stages: &[Stage],
        second: &Collection,
    ) -> Option<Collection> {
        for stage in stages {
            collection = self.stage(collection, stage, second)?;
            self.charge(&collection)?;
        }
        Some(collection)
    }

    fn stage(&mut self, collection: Collection, stage: &Stage, second: &Collection) -> Option<Collection> {
        Some(match stage {
            Stage::Map { mul, add } => {
                collection.into_iter().map(|(t, x)| (t, (x * mul + add) % M)).collect()
            }
            Stage::Filter { modulus, residue } => {
                collection.into_iter().filter(|(_, x)| x % modulus != *residue).collect()
            }
            Stage::FlatMap { fanout } => collection
                .into_iter()
                .flat_map(|(t, x)| flat_map_record(x, *fanout).into_iter().map(move |y| (t.clone(), y)))
                .collect(),
            Stage::Exchange { .. } | Stage::Buffer { .. } | Stage::Check { .. } => collection,
            Stage::Broadcast => collection
                .into_iter()
                .flat_map(|(t, x)| (0..self.peers).map(move |_| (t.clone(), x)))
                .collect(),
            Stage::Branch { modulus, left, right, .. } => {
                let (yes, no): (Collection, Collection) =
                    collection.into_iter().partition(|(_, x)| divides(*modulus, *x));
                let mut out = self.stages(no, left, second)?;
                out.extend(self.stages(yes, right, second)?);
                out
            }
            Stage::Delay { max } => collection
                .into_iter()
                .map(|(mut t, x)| {
                    *t.last_mut().unwrap() += x % (max + 1);
                    (t, x)
                })
                .collect(),
            Stage::Count { keys } => {
                let mut counts: BTreeMap<(Vec<u64>, u64), u64> = BTreeMap::new();
                for (t, x) in collection {
                    *counts.entry((t, x % keys)).or_default() += 1;
                }
                counts.into_iter().map(|((t, k), c)| (t, (k + keys * c) % M)).collect()
            }
            Stage::Sum { keys } => {
                let mut sums: BTreeMap<(Vec<u64>, u64), u64> = BTreeMap::new();
                for (t, x) in collection {
                    *sums.entry((t, x % keys)).or_default() += x;
                }
                sums.into_iter().map(|((t, k), s)| (t, (7 * k + s) % M)).collect()
            }
            Stage::Loop { modulus, max_iters, body } => {
                self.iterate(collection, *modulus, *max_iters, body)?
            }
            Stage::Region { body } => self.stages(collection, body, second)?,
            Stage::Merge => {
                let mut out = collection;
                out.extend(second.iter().cloned());
                out
            }
        })
    }
}

impl Interpreter {
    /// A loop, evaluated in time order. Records wait at positions: 0 is the exit test,
    /// `p` in `1..=n` is the input of body stage `p - 1`, `n + 1` is the feedback. Pending
    /// groups are processed in order of (time, position); since every stage emits at
    /// times no earlier than its input's and the feedback strictly later, a group is
    /// complete when it is taken. Each body stage sees one time at a time, which is exact
    /// for stages that group by time; a delay may only appear directly in a loop body
    /// (not inside a branch there), where it re-enters this ordering.
    fn iterate(
        &mut self,
        collection: Collection,
        modulus: u64,
        max_iters: u64,
        body: &[Stage],
    ) -> Option<Collection> {
        let mut pending: BTreeMap<(Vec<u64>, usize), Vec<u64>> = BTreeMap::new();
        for (mut time, x) in collection {
            time.push(0);
            pending.entry((time, 0)).or_default().push(x);
        }
        let mut out = Collection::new();
        let no_second = Collection::new();
        while let Some(((mut time, position), records)) = pending.pop_first() {
            self.work += records.len();
            if self.work > self.cap {
                return None;
            }
            if position == 0 {
                for x in records {
                    if leaves(x, modulus, *time.last().unwrap(), max_iters) {
                        let mut outer = time.clone();
                        outer.pop();
                        out.push((outer, x));
                    } else {
                        pending.entry((time.clone(), 1)).or_default().push(x);
                    }
                }
            } else if position <= body.len() {
                let group: Collection = records.into_iter().map(|x| (time.clone(), x)).collect();
                for (later, y) in self.stage(group, &body[position - 1], &no_second)? {
                    pending.entry((later, position + 1)).or_default().push(y);
                }
            } else {
                *time.last_mut().unwrap() += 1;
                pending.entry((time, 0)).or_default().extend(records);
            }
        }
        Some(out)
    }
}

/// True when `modulus` divides `x` (the workspace's minimum Rust predates
/// `u64::is_multiple_of`).
#[allow(clippy::manual_is_multiple_of)]
pub fn divides(modulus: u64, x: u64) -> bool {
    x % modulus == 0
}

/// Whether a record leaves a loop at iteration `iteration`.
pub fn leaves(x: u64, modulus: u64, iteration: u64, max_iters: u64) -> bool {
    divides(modulus, x) || iteration >= max_iters
}

pub fn flat_map_record(x: u64, fanout: u64) -> Vec<u64> {
    let all = [x, (3 * x + 1) % M];
    all[..(x % fanout) as usize].to_vec()
}

/// The expected sorted `(epoch, record)` output of one copy of the dataflow on `peers`
/// workers, or `None` if the program does too much work.
pub fn reference(program: &Program, peers: u64) -> Option<Vec<(u64, u64)>> {
    let inputs: Vec<Vec<(u64, u64)>> =
        program.inputs.iter().map(|records| records.iter().map(|(e, x, _)| (*e, *x)).collect()).collect();
    reference_over(program, &inputs, peers, WORK_CAP)
}

/// Like [`reference`], but over `inputs` (per input, `(epoch, record)`: what the workers of
/// a run fed) instead of the program's own, doing at most `cap` work.
pub fn reference_over(
    program: &Program,
    inputs: &[Vec<(u64, u64)>],
    peers: u64,
    cap: usize,
) -> Option<Vec<(u64, u64)>> {
    let collections: Vec<Collection> =
        inputs.iter().map(|records| records.iter().map(|(e, x)| (vec![*e], *x)).collect()).collect();
    let empty = Collection::new();
    let second = collections.get(1).unwrap_or(&empty);
    let mut interpreter = Interpreter { peers, work: 0, cap };
    let out =
        interpreter.stages(collections.first().cloned().unwrap_or_default(), &program.stages, second)?;
    let mut out: Vec<(u64, u64)> = out.into_iter().map(|(t, x)| (t[0], x)).collect();
    out.sort();
    Some(out)
}
