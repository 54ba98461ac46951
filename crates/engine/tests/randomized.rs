//! Randomized multi-worker runs of generated dataflow programs.
//!
//! Each seed generates a small program: one or two inputs fed over several epochs, each
//! record by a randomly chosen worker, and a pipeline of stages: map, filter, flat_map,
//! exchange, broadcast, branch followed by concat or by a two-input notification join,
//! delay (at top level and directly in loop bodies), keyed per-time count and sum, a
//! notification-driven buffer, regions (nested scopes with the same timestamp), and
//! iterative loops nested up to two deep whose bodies are random pipelines themselves. Some programs are built as two identical dataflows
//! on each worker, watched by one probe. Workers step at random moments: sometimes not
//! at all between epochs, sometimes a few times, sometimes until the probe passes the
//! epoch; some close inputs early. Every program runs on 1, 2 and 4 worker threads, and
//!
//! * the `(epoch, record)` multiset it produces must equal that of a sequential
//!   interpreter of the same program description;
//! * on every worker, checking operators (inserted between random stages and at the
//!   end; some receive through an exchange) and the buffer and join stages check that no
//!   message arrives at a time its input frontier has passed or at or before a time
//!   already notified, that frontiers never move backwards, and that no notification is
//!   delivered while the input frontier can still reach its time;
//! * whenever a worker has waited for the probe to pass an epoch, every output at
//!   earlier epochs must already have been produced;
//! * the run must terminate (each run has a deadline, enforced from a helper thread).
//!
//! Failures name the seed, the worker count and the program. Environment variables:
//! `TIMELY_RANDOM_SEEDS=N` runs seeds `0..N` per worker count (default 60),
//! `TIMELY_RANDOM_SEED=S` runs only seed `S`, `TIMELY_RANDOM_VERBOSE=1` prints each
//! program.

#[allow(dead_code)]
#[path = "../../communication/tests/common/mod.rs"]
mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use timely_engine::dataflow::operators::{Capability, Captured, FrontierNotificator, InputPort};
use timely_engine::dataflow::{Exchange, InputHandle, Pact, Pipeline, ProbeHandle, Stream};
use timely_engine::{Config, MutableAntichain, Product, Timestamp};

/// Records are kept below this bound by every stage.
const M: u64 = 1000;
/// Seeds run by default per worker count.
const DEFAULT_SEEDS: u64 = 60;
/// A run that takes longer than this is reported as not terminating.
const DEADLINE: Duration = Duration::from_secs(20);
/// Programs whose reference evaluation handles more records than this are regenerated.
const WORK_CAP: usize = 60_000;

// ---------------------------------------------------------------------------------------
// Deterministic randomness.

#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability `num / den`.
    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
}

fn mix(a: u64, b: u64) -> u64 {
    Rng::new(a.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ b).next()
}

// ---------------------------------------------------------------------------------------
// Program descriptions.

#[derive(Clone, Debug)]
enum Stage {
    /// `x -> (x * mul + add) % M`.
    Map { mul: u64, add: u64 },
    /// Keeps `x` unless `x % modulus == residue`.
    Filter { modulus: u64, residue: u64 },
    /// `x -> [x, (3x + 1) % M][..x % fanout]` (zero, one or two records).
    FlatMap { fanout: u64 },
    /// Routes records to workers by a salted hash.
    Exchange { salt: u64 },
    /// A copy of every record to every worker.
    Broadcast,
    /// Records with `x % modulus != 0` go through `left`, the others through `right`; the
    /// two are concatenated, or with `join` merged by a two-input operator that buffers
    /// both inputs per time and releases them on notification (checking both inputs).
    Branch { modulus: u64, left: Vec<Stage>, right: Vec<Stage>, join: Option<usize> },
    /// Moves `x` to time `t + x % (max + 1)` in the innermost coordinate (at top level, or
    /// directly in a loop body, where it moves records to later iterations).
    Delay { max: u64 },
    /// Counts `x % keys` per time: emits `(key + keys * count) % M`.
    Count { keys: u64 },
    /// Sums `x` per key `x % keys` per time: emits `(7 * key + sum) % M`.
    Sum { keys: u64 },
    /// Buffers records per time and releases them on notification (checking the
    /// notifications), routing by record when `exchange`.
    Buffer { id: usize, exchange: bool },
    /// An iterative scope: a record leaves when `x % modulus == 0` or its iteration reaches
    /// `max_iters`, otherwise goes through `body` and around again.
    Loop { modulus: u64, max_iters: u64, body: Vec<Stage> },
    /// A nested scope with the same timestamp (a region) holding `body`.
    Region { body: Vec<Stage> },
    /// Concatenates the second input (top level only).
    Merge,
    /// A pass-through operator that checks frontiers, messages and notifications.
    Check { id: usize, exchange: bool },
}

#[derive(Clone, Debug)]
struct Program {
    /// Per input: `(epoch, record, owner hash)`, sorted by epoch.
    inputs: Vec<Vec<(u64, u64, u64)>>,
    max_epoch: u64,
    stages: Vec<Stage>,
    /// Number of checking operators (for ids).
    checks: usize,
    /// How many copies of the dataflow each worker builds (fed the same records, probed
    /// by one probe handle).
    copies: usize,
}

impl Program {
    /// A compact description for failure messages.
    fn describe(&self) -> String {
        let inputs: Vec<String> = self
            .inputs
            .iter()
            .map(|records| {
                let shown: Vec<String> = records.iter().map(|(e, x, _)| format!("{}@{}", x, e)).collect();
                format!("[{}]", shown.join(" "))
            })
            .collect();
        format!(
            "inputs {} (max epoch {}), {} dataflow(s) of stages {}",
            inputs.join(" + "),
            self.max_epoch,
            self.copies,
            describe_stages(&self.stages)
        )
    }
}

fn describe_stages(stages: &[Stage]) -> String {
    let parts: Vec<String> = stages
        .iter()
        .map(|stage| match stage {
            Stage::Map { mul, add } => format!("map(*{}+{})", mul, add),
            Stage::Filter { modulus, residue } => format!("filter(%{}!={})", modulus, residue),
            Stage::FlatMap { fanout } => format!("flat_map({})", fanout),
            Stage::Exchange { salt } => format!("exchange({})", salt % 100),
            Stage::Broadcast => "broadcast".to_string(),
            Stage::Branch { modulus, left, right, join } => format!(
                "branch(%{}: [{}] | [{}]){}",
                modulus,
                describe_stages(left),
                describe_stages(right),
                join.map(|id| format!(" -> join#{}", id)).unwrap_or_default()
            ),
            Stage::Delay { max } => format!("delay({})", max),
            Stage::Count { keys } => format!("count({})", keys),
            Stage::Sum { keys } => format!("sum({})", keys),
            Stage::Buffer { id, exchange } => format!("buffer#{}{}", id, if *exchange { "(x)" } else { "" }),
            Stage::Loop { modulus, max_iters, body } => {
                format!("loop(%{}, <={}: [{}])", modulus, max_iters, describe_stages(body))
            }
            Stage::Region { body } => format!("region([{}])", describe_stages(body)),
            Stage::Merge => "merge".to_string(),
            Stage::Check { id, exchange } => format!("check#{}{}", id, if *exchange { "(x)" } else { "" }),
        })
        .collect();
    parts.join(" -> ")
}

struct Generator {
    rng: Rng,
    broadcast_left: bool,
    loops_left: u32,
    ids: usize,
}

#[derive(Clone, Copy)]
struct Place {
    loop_depth: u32,
    branch_depth: u32,
}

impl Generator {
    fn stages(&mut self, place: Place, count: u64) -> Vec<Stage> {
        let mut stages = Vec::new();
        for _ in 0..count {
            stages.push(self.stage(place));
            if self.rng.chance(1, 3) {
                stages.push(self.check());
            }
        }
        stages
    }

    fn check(&mut self) -> Stage {
        self.ids += 1;
        Stage::Check { id: self.ids, exchange: self.rng.chance(1, 3) }
    }

    fn stage(&mut self, place: Place) -> Stage {
        loop {
            let rng = &mut self.rng;
            match rng.below(15) {
                0 | 1 => return Stage::Map { mul: rng.range(1, 13), add: rng.range(0, 40) },
                2 => return Stage::Filter { modulus: rng.range(2, 6), residue: rng.range(0, 1) },
                3 => return Stage::FlatMap { fanout: rng.range(2, 3) },
                4 | 5 => return Stage::Exchange { salt: rng.next() },
                6 if self.broadcast_left && place.loop_depth == 0 => {
                    self.broadcast_left = false;
                    return Stage::Broadcast;
                }
                7 if place.branch_depth < 2 => {
                    let modulus = rng.range(2, 4);
                    let (l, r) = (rng.range(0, 2), rng.range(0, 2));
                    let inner = Place { branch_depth: place.branch_depth + 1, ..place };
                    let left = self.stages(inner, l);
                    let right = self.stages(inner, r);
                    let join = if self.rng.chance(1, 2) {
                        self.ids += 1;
                        Some(self.ids)
                    } else {
                        None
                    };
                    return Stage::Branch { modulus, left, right, join };
                }
                // Inside loops only directly in a body (see `Interpreter::iterate`).
                8 if place.loop_depth == 0 || place.branch_depth == 0 => {
                    return Stage::Delay { max: rng.range(1, 3) }
                }
                9 => return Stage::Count { keys: rng.range(1, 7) },
                10 => return Stage::Sum { keys: rng.range(1, 5) },
                11 => {
                    self.ids += 1;
                    return Stage::Buffer { id: self.ids, exchange: rng.chance(1, 2) };
                }
                12 | 13 if place.loop_depth < 2 && self.loops_left > 0 => {
                    self.loops_left -= 1;
                    let modulus = rng.range(2, 9);
                    let max_iters = rng.range(1, 8);
                    let count = rng.range(0, 3);
                    let inner = Place { loop_depth: place.loop_depth + 1, branch_depth: 0 };
                    let mut body = vec![Stage::Map { mul: 1, add: 1 }];
                    body.extend(self.stages(inner, count));
                    return Stage::Loop { modulus, max_iters, body };
                }
                14 if place.branch_depth < 2 => {
                    // Like a branch, it is applied to one time at a time inside loops, so
                    // no delay directly inside.
                    let count = rng.range(1, 3);
                    let inner = Place { branch_depth: place.branch_depth + 1, ..place };
                    return Stage::Region { body: self.stages(inner, count) };
                }
                _ => {}
            }
        }
    }
}

fn generate(seed: u64) -> Program {
    for attempt in 0u64.. {
        let mut generator =
            Generator { rng: Rng::new(mix(seed, attempt)), broadcast_left: true, loops_left: 3, ids: 0 };
        let rng = &mut generator.rng;
        let max_epoch = rng.range(0, 7);
        let input_count = if rng.chance(1, 3) { 2 } else { 1 };
        let mut inputs = Vec::new();
        for _ in 0..input_count {
            let len = match rng.below(10) {
                0 => 0,
                1 => rng.range(150, 400),
                _ => rng.range(1, 25),
            };
            let mut records: Vec<(u64, u64, u64)> =
                (0..len).map(|_| (rng.range(0, max_epoch), rng.below(100), rng.next())).collect();
            records.sort();
            inputs.push(records);
        }
        let count = generator.rng.range(2, 8);
        let top = Place { loop_depth: 0, branch_depth: 0 };
        let mut stages = generator.stages(top, count);
        if input_count == 2 {
            let at = generator.rng.range(0, stages.len() as u64) as usize;
            stages.insert(at, Stage::Merge);
        }
        let copies = if generator.rng.chance(1, 5) { 2 } else { 1 };
        let program = Program { inputs, max_epoch, stages, checks: generator.ids, copies };
        // Reject programs that blow up (broadcast, flat_map in loops); the largest worker
        // count decides.
        if reference(&program, 4).is_some() {
            return program;
        }
    }
    unreachable!()
}

// ---------------------------------------------------------------------------------------
// The sequential reference: a direct interpretation over `(time coordinates, record)`.

type Collection = Vec<(Vec<u64>, u64)>;

struct Interpreter {
    peers: u64,
    work: usize,
}

impl Interpreter {
    fn charge(&mut self, collection: &Collection) -> Option<()> {
        self.work += collection.len();
        (self.work <= WORK_CAP).then_some(())
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
            if self.work > WORK_CAP {
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
fn divides(modulus: u64, x: u64) -> bool {
    x % modulus == 0
}

/// Whether a record leaves a loop at iteration `iteration`.
fn leaves(x: u64, modulus: u64, iteration: u64, max_iters: u64) -> bool {
    divides(modulus, x) || iteration >= max_iters
}

fn flat_map_record(x: u64, fanout: u64) -> Vec<u64> {
    let all = [x, (3 * x + 1) % M];
    all[..(x % fanout) as usize].to_vec()
}

/// The expected sorted `(epoch, record)` output of one copy of the dataflow on `peers`
/// workers, or `None` if the program does too much work.
fn reference(program: &Program, peers: u64) -> Option<Vec<(u64, u64)>> {
    let collections: Vec<Collection> = program
        .inputs
        .iter()
        .map(|records| records.iter().map(|(e, x, _)| (vec![*e], *x)).collect())
        .collect();
    let empty = Collection::new();
    let second = collections.get(1).unwrap_or(&empty);
    let mut interpreter = Interpreter { peers, work: 0 };
    let out = interpreter.stages(collections[0].clone(), &program.stages, second)?;
    let mut out: Vec<(u64, u64)> = out.into_iter().map(|(t, x)| (t[0], x)).collect();
    out.sort();
    Some(out)
}

// ---------------------------------------------------------------------------------------
// Building the program as a dataflow.

/// Timestamps the generated programs use: epochs and loop times nested up to two deep.
trait Time: Timestamp {
    /// The time `n` steps later in the innermost coordinate.
    fn delayed_by(&self, n: u64) -> Self;
    /// Builds a loop stage in a scope with this timestamp.
    fn build_loop(
        stream: &Stream<Self, u64>,
        modulus: u64,
        max_iters: u64,
        body: &[Stage],
        ctx: &Ctx,
    ) -> Stream<Self, u64>;
}

impl Time for u64 {
    fn delayed_by(&self, n: u64) -> Self {
        self + n
    }
    fn build_loop(
        stream: &Stream<Self, u64>,
        modulus: u64,
        max_iters: u64,
        body: &[Stage],
        ctx: &Ctx,
    ) -> Stream<Self, u64> {
        build_loop(stream, modulus, max_iters, body, ctx)
    }
}

impl Time for Product<u64, u64> {
    fn delayed_by(&self, n: u64) -> Self {
        Product::new(self.outer, self.inner + n)
    }
    fn build_loop(
        stream: &Stream<Self, u64>,
        modulus: u64,
        max_iters: u64,
        body: &[Stage],
        ctx: &Ctx,
    ) -> Stream<Self, u64> {
        build_loop(stream, modulus, max_iters, body, ctx)
    }
}

impl Time for Product<Product<u64, u64>, u64> {
    fn delayed_by(&self, n: u64) -> Self {
        Product::new(self.outer, self.inner + n)
    }
    fn build_loop(_: &Stream<Self, u64>, _: u64, _: u64, _: &[Stage], _: &Ctx) -> Stream<Self, u64> {
        panic!("the generator nests loops at most two deep")
    }
}

/// What the operators of one worker share with the test.
#[derive(Clone)]
struct Ctx {
    worker: usize,
    violations: Arc<Mutex<Vec<String>>>,
}

impl Ctx {
    fn violation(&self, message: String) {
        let mut violations = self.violations.lock().unwrap();
        if violations.len() < 25 {
            violations.push(format!("worker {}: {}", self.worker, message));
        }
    }
}

fn record_hash(x: u64, salt: u64) -> u64 {
    (x ^ salt).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 17
}

fn build_stages<T: Time>(
    stream: &Stream<T, u64>,
    stages: &[Stage],
    ctx: &Ctx,
    second: Option<&Stream<T, u64>>,
) -> Stream<T, u64> {
    let mut stream = stream.clone();
    for stage in stages {
        stream = match stage {
            &Stage::Map { mul, add } => stream.map(move |x| (x * mul + add) % M),
            &Stage::Filter { modulus, residue } => stream.filter(move |x| x % modulus != residue),
            &Stage::FlatMap { fanout } => stream.flat_map(move |x| flat_map_record(x, fanout)),
            &Stage::Exchange { salt } => stream.exchange(move |x| record_hash(*x, salt)),
            Stage::Broadcast => stream.broadcast(),
            Stage::Branch { modulus, left, right, join } => {
                let modulus = *modulus;
                let (no, yes) = stream.branch(move |_time, x| divides(modulus, *x));
                let left = build_stages(&no, left, ctx, second);
                let right = build_stages(&yes, right, ctx, second);
                match join {
                    Some(id) => join_buffer(&left, &right, ctx, *id),
                    None => left.concat(&right),
                }
            }
            &Stage::Delay { max } => stream.delay(move |x, time: &T| time.delayed_by(x % (max + 1))),
            &Stage::Count { keys } => {
                stream.map(move |x| x % keys).count_by_key().map(move |(k, c)| (k + keys * c) % M)
            }
            &Stage::Sum { keys } => stream
                .map(move |x| (x % keys, x))
                .aggregate(|_key, x, sum: &mut u64| *sum += x, |key, sum| (7 * key + sum) % M),
            &Stage::Buffer { id, exchange } => {
                if exchange {
                    buffer(&stream, Exchange::new(|x: &u64| record_hash(*x, 7)), ctx, id)
                } else {
                    buffer(&stream, Pipeline, ctx, id)
                }
            }
            Stage::Loop { modulus, max_iters, body } => {
                T::build_loop(&stream, *modulus, *max_iters, body, ctx)
            }
            Stage::Region { body } => {
                let outer = stream.scope().clone();
                outer.region(|inner| build_stages(&stream.enter(inner), body, ctx, None).leave(&outer))
            }
            Stage::Merge => stream.concat(second.expect("merge only at top level with two inputs")),
            &Stage::Check { id, exchange } => {
                if exchange {
                    check(&stream, Exchange::new(|x: &u64| record_hash(*x, 3)), ctx, id)
                } else {
                    check(&stream, Pipeline, ctx, id)
                }
            }
        };
    }
    stream
}

fn build_loop<T: Time>(
    stream: &Stream<T, u64>,
    modulus: u64,
    max_iters: u64,
    body: &[Stage],
    ctx: &Ctx,
) -> Stream<T, u64>
where
    Product<T, u64>: Time + Timestamp<Summary = Product<T::Summary, u64>>,
{
    let outer = stream.scope().clone();
    outer.iterative::<u64, _>(|inner| {
        let (handle, cycle) = inner.feedback::<u64>(Product::new(Default::default(), 1));
        let entered = stream.enter(inner).concat(&cycle);
        let (continuing, done) =
            entered.branch(move |time: &Product<T, u64>, x: &u64| leaves(*x, modulus, time.inner, max_iters));
        build_stages(&continuing, body, ctx, None).connect_loop(handle);
        done.leave(&outer)
    })
}

/// What a checking operator learned on one worker.
struct Checker<T: Timestamp> {
    ctx: Ctx,
    name: String,
    /// The frontier at the previous run (None before the first run).
    last: Option<Vec<T>>,
    /// Times at which notifications were delivered.
    notified: Vec<T>,
}

impl<T: Timestamp> Checker<T> {
    fn new(ctx: &Ctx, name: String) -> Self {
        Checker { ctx: ctx.clone(), name, last: None, notified: Vec::new() }
    }

    /// Checks that the frontier did not move backwards since the previous run.
    fn observe_frontier(&mut self, frontier: &MutableAntichain<T>) {
        let current = frontier.frontier();
        if let Some(last) = &self.last {
            if &last[..] != current {
                for time in current {
                    if !last.iter().any(|l| l.less_equal(time)) {
                        self.ctx.violation(format!(
                            "{}: input frontier moved backwards from {:?} to {:?}",
                            self.name, last, current
                        ));
                    }
                }
            }
        }
        self.last = Some(current.to_vec());
    }

    /// Checks a message at `time` against the frontier and delivered notifications.
    fn observe_message(&mut self, time: &T, records: usize, frontier: &MutableAntichain<T>) {
        if !frontier.less_equal(time) {
            self.ctx.violation(format!(
                "{}: {} records at time {:?} arrived although the input frontier {:?} has passed that time",
                self.name,
                records,
                time,
                frontier.frontier()
            ));
        }
        if let Some(notified) = self.notified.iter().find(|n| time.less_equal(n)) {
            self.ctx.violation(format!(
                "{}: {} records at time {:?} arrived after the notification at time {:?} (frontier {:?})",
                self.name,
                records,
                time,
                notified,
                frontier.frontier()
            ));
        }
    }

    /// Checks a notification delivered at `time`.
    fn observe_notification(&mut self, time: &T, frontier: &MutableAntichain<T>) {
        if frontier.less_equal(time) {
            self.ctx.violation(format!(
                "{}: notification at time {:?} delivered while the input frontier {:?} can still reach it",
                self.name,
                time,
                frontier.frontier()
            ));
        }
        self.notified.push(time.clone());
    }
}

/// A pass-through operator that checks its input frontier, the messages it receives and
/// notifications it requests for every time it sees (which hold back its output).
fn check<T: Time, P: Pact<T, u64>>(stream: &Stream<T, u64>, pact: P, ctx: &Ctx, id: usize) -> Stream<T, u64> {
    let ctx = ctx.clone();
    stream.unary_frontier(pact, "Check", move |_initial, _info| {
        let mut checker = Checker::new(&ctx, format!("check#{}", id));
        let mut notificator = FrontierNotificator::new();
        let mut requested: HashSet<T> = HashSet::new();
        let mut jitter = Rng::new(mix(id as u64, ctx.worker as u64));
        move |input, frontier, output| {
            // Now and then give up the processor, to vary how workers interleave.
            if jitter.chance(1, 8) {
                std::thread::yield_now();
            }
            checker.observe_frontier(frontier);
            input.for_each(|capability, data| {
                checker.observe_message(capability.time(), data.len(), frontier);
                if requested.insert(capability.time().clone()) {
                    notificator.notify_at(capability.retain());
                }
                output.session(&capability).give_vec(data);
            });
            let frontiers = [frontier];
            while let Some(capability) = notificator.next(&frontiers) {
                checker.observe_notification(capability.time(), frontier);
            }
        }
    })
}

/// Moves the records of `input` into `stash`, checking each message; returns capabilities
/// for the times that were not stashed before (to request notifications for).
fn stash_input<T: Timestamp>(
    input: &mut InputPort<T, u64>,
    frontier: &MutableAntichain<T>,
    checker: &mut Checker<T>,
    stash: &mut HashMap<T, Vec<u64>>,
) -> Vec<Capability<T>> {
    let mut requests = Vec::new();
    input.for_each(|capability, data| {
        checker.observe_message(capability.time(), data.len(), frontier);
        let records = stash.entry(capability.time().clone()).or_default();
        if records.is_empty() {
            requests.push(capability.retain());
        }
        records.append(data);
    });
    requests
}

/// Buffers records per time and releases them when notified, checking the notifications.
fn buffer<T: Time, P: Pact<T, u64>>(
    stream: &Stream<T, u64>,
    pact: P,
    ctx: &Ctx,
    id: usize,
) -> Stream<T, u64> {
    let mut checker = Checker::new(ctx, format!("buffer#{}", id));
    let mut stash: HashMap<T, Vec<u64>> = HashMap::new();
    stream.unary_notify(pact, "Buffer", move |input, output, notificator| {
        checker.observe_frontier(notificator.frontier(0));
        for capability in stash_input(input, notificator.frontier(0), &mut checker, &mut stash) {
            notificator.notify_at(capability);
        }
        notificator.for_each(|capability, _count, notificator| {
            checker.observe_notification(capability.time(), notificator.frontier(0));
            if let Some(mut records) = stash.remove(capability.time()) {
                output.session(&capability).give_vec(&mut records);
            }
        });
    })
}

/// Merges two streams, buffering both per time and releasing them when the time is
/// complete on both inputs; checks each input's frontier and the notifications.
fn join_buffer<T: Time>(
    left: &Stream<T, u64>,
    right: &Stream<T, u64>,
    ctx: &Ctx,
    id: usize,
) -> Stream<T, u64> {
    let mut checkers = [
        Checker::new(ctx, format!("join#{} input 0", id)),
        Checker::new(ctx, format!("join#{} input 1", id)),
    ];
    let mut stash: HashMap<T, Vec<u64>> = HashMap::new();
    let left_pact = Exchange::new(|x: &u64| record_hash(*x, 11));
    left.binary_notify(right, left_pact, Pipeline, "Join", move |input0, input1, output, notificator| {
        for (index, checker) in checkers.iter_mut().enumerate() {
            checker.observe_frontier(notificator.frontier(index));
        }
        let mut requests = stash_input(input0, notificator.frontier(0), &mut checkers[0], &mut stash);
        requests.extend(stash_input(input1, notificator.frontier(1), &mut checkers[1], &mut stash));
        for capability in requests {
            notificator.notify_at(capability);
        }
        notificator.for_each(|capability, _count, notificator| {
            for (index, checker) in checkers.iter_mut().enumerate() {
                checker.observe_notification(capability.time(), notificator.frontier(index));
            }
            if let Some(mut records) = stash.remove(capability.time()) {
                output.session(&capability).give_vec(&mut records);
            }
        });
    })
}

// ---------------------------------------------------------------------------------------
// Running a program.

/// Runs `program` on `workers` workers; returns a description of every problem found.
fn run(
    seed: u64,
    program: &Arc<Program>,
    workers: usize,
    expected: &Arc<Vec<(u64, u64)>>,
    join: Option<u64>,
) -> Result<(), String> {
    let violations: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let captured: Captured<u64, u64> = Captured::new();
    let seen: Arc<Mutex<Vec<(u64, u64)>>> = Arc::new(Mutex::new(Vec::new()));
    let (sender, receiver) = mpsc::channel();
    {
        let program = program.clone();
        let expected = expected.clone();
        let violations = violations.clone();
        let captured = captured.clone();
        let seen = seen.clone();
        std::thread::Builder::new()
            .name(format!("randomized-{}-{}", seed, workers))
            .spawn(move || {
                let run = Run { seed, program, expected, violations, captured, seen, join: None };
                let result = match join {
                    None => {
                        let config = if workers == 1 { Config::Thread } else { Config::Process(workers) };
                        timely_engine::execute(config, move |worker| run_worker(worker, &run)).map(drop)
                    }
                    Some(epoch) => joined::execute(workers, epoch, run),
                };
                let _ = sender.send(result);
            })
            .expect("spawn a run thread");
    }
    let mut problems = Vec::new();
    match receiver.recv_timeout(DEADLINE) {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => problems.push(format!("the run failed: {}", error)),
        Err(_) => problems.push(format!("the run did not terminate within {:?}", DEADLINE)),
    }
    problems.extend(violations.lock().unwrap().iter().cloned());
    if problems.is_empty() {
        let got = captured.extract();
        if &got != expected.as_ref() {
            problems.push(format!("output differs from the reference: {}", diff(expected, &got)));
        }
        let mut got_seen = seen.lock().unwrap().clone();
        got_seen.sort();
        if &got_seen != expected.as_ref() {
            problems.push(format!(
                "records seen before the probe differ from the reference: {}",
                diff(expected, &got_seen)
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "seed {} on {} worker(s): {}\n  program: {}",
            seed,
            workers,
            problems.join("\n  "),
            program.describe()
        ))
    }
}

/// Multiset difference, abbreviated.
fn diff(expected: &[(u64, u64)], got: &[(u64, u64)]) -> String {
    let mut counts: BTreeMap<(u64, u64), i64> = BTreeMap::new();
    for r in expected {
        *counts.entry(*r).or_default() += 1;
    }
    for r in got {
        *counts.entry(*r).or_default() -= 1;
    }
    let missing: Vec<String> = counts
        .iter()
        .filter(|(_, c)| **c > 0)
        .map(|((t, x), c)| format!("{}@{}x{}", x, t, c))
        .take(12)
        .collect();
    let extra: Vec<String> = counts
        .iter()
        .filter(|(_, c)| **c < 0)
        .map(|((t, x), c)| format!("{}@{}x{}", x, t, -c))
        .take(12)
        .collect();
    format!(
        "expected {} records, got {}; missing [{}], unexpected [{}]",
        expected.len(),
        got.len(),
        missing.join(" "),
        extra.join(" ")
    )
}

/// What every worker of one run shares.
#[derive(Clone)]
struct Run {
    seed: u64,
    program: Arc<Program>,
    expected: Arc<Vec<(u64, u64)>>,
    violations: Arc<Mutex<Vec<String>>>,
    captured: Captured<u64, u64>,
    seen: Arc<Mutex<Vec<(u64, u64)>>>,
    /// In a run with a join: the epoch after which worker 0 asks for it, the flag it raises,
    /// and the number of workers before the join.
    join: Option<(u64, Arc<std::sync::atomic::AtomicBool>, usize)>,
}

fn run_worker(worker: &mut timely_engine::Worker, run: &Run) {
    let Run { seed, program, expected, violations, captured, seen, .. } = run;
    let (seed, captured) = (*seed, captured);
    let index = worker.index();
    let peers = run.join.as_ref().map_or(worker.peers(), |(_, _, initial)| *initial);
    let ctx = Ctx { worker: index, violations: violations.clone() };
    // handles[input][copy]
    let mut handles: Vec<Vec<InputHandle<u64, u64>>> =
        program.inputs.iter().map(|_| (0..program.copies).map(|_| InputHandle::new()).collect()).collect();
    let probe = ProbeHandle::new();
    for copy in 0..program.copies {
        worker.dataflow::<u64, _>(|scope| {
            let streams: Vec<Stream<u64, u64>> =
                handles.iter_mut().map(|h| scope.input_from(&mut h[copy])).collect();
            let output = build_stages(&streams[0], &program.stages, &ctx, streams.get(1));
            let output = check(&output, Pipeline, &ctx, program.checks + 1);
            output.capture_into(captured);
            let seen = seen.clone();
            output
                .inspect_batch(move |time, data| {
                    seen.lock().unwrap().extend(data.iter().map(|x| (*time, *x)))
                })
                .probe_with(&probe);
        });
    }

    if worker.bootstrap() {
        return;
    }
    // This worker's records: per input, per epoch.
    let mine: Vec<BTreeMap<u64, Vec<u64>>> = program
        .inputs
        .iter()
        .map(|records| {
            let mut by_epoch: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
            for (epoch, x, owner) in records {
                if (*owner % peers as u64) as usize == index {
                    by_epoch.entry(*epoch).or_default().push(*x);
                }
            }
            by_epoch
        })
        .collect();
    let mut rng = Rng::new(mix(mix(seed, peers as u64), index as u64 + 1));
    for epoch in 0..=program.max_epoch {
        if let Some((at, asked, _)) = &run.join {
            if *at == epoch && index == 0 {
                asked.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        for (input, copies) in handles.iter_mut().enumerate() {
            if copies[0].is_closed() {
                continue;
            }
            let records = mine[input].get(&epoch);
            let advance = records.is_some() || rng.chance(1, 3);
            let more = mine[input].range(epoch + 1..).next().is_some();
            let close = !more && rng.chance(1, 4);
            for handle in copies.iter_mut() {
                if advance {
                    handle.advance_to(epoch);
                }
                if let Some(records) = records {
                    for x in records {
                        handle.send(*x);
                    }
                }
                if close {
                    handle.close();
                }
            }
        }
        match rng.below(5) {
            0 => {}
            1 => {
                worker.step();
            }
            2 => {
                for _ in 0..rng.range(1, 4) {
                    worker.step();
                }
            }
            _ => {
                // Wait until every output before the next epoch is complete, and check
                // that all of them were seen by then.
                let next = epoch + 1;
                for handle in handles.iter_mut().flatten().filter(|h| !h.is_closed()) {
                    handle.advance_to(next);
                }
                let start = Instant::now();
                while probe.less_than(&next) {
                    if start.elapsed() > DEADLINE {
                        ctx.violation(format!(
                            "the output probe did not pass epoch {} within {:?} (frontier {:?})",
                            epoch,
                            DEADLINE,
                            probe.frontier()
                        ));
                        return;
                    }
                    worker.step();
                }
                let mut got: Vec<(u64, u64)> =
                    seen.lock().unwrap().iter().filter(|(t, _)| *t < next).cloned().collect();
                got.sort();
                let want: Vec<(u64, u64)> = expected.iter().filter(|(t, _)| *t < next).cloned().collect();
                if got != want {
                    ctx.violation(format!(
                        "the output probe passed time {} (frontier {:?}) before all outputs at earlier times were seen: {}",
                        epoch,
                        probe.frontier(),
                        diff(&want, &got)
                    ));
                }
            }
        }
    }
    if let Some((_, _, initial)) = &run.join {
        // The join happens while this worker still holds its inputs, moved past every epoch
        // so that the others' probes can pass (worker 0 asks for the join only once it gets
        // to the join's epoch).
        for handle in handles.iter_mut().flatten().filter(|h| !h.is_closed()) {
            handle.advance_to(program.max_epoch + 1);
        }
        let start = Instant::now();
        while worker.peers() == *initial && start.elapsed() < DEADLINE {
            worker.step();
        }
    }
    for handle in handles.iter_mut().flatten() {
        handle.close();
    }
}

/// Runs with a process joining the cluster while the program runs.
mod joined {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn config(addresses: &[String], process: usize, initial: usize, join: Option<usize>) -> Config {
        super::common::loopback_cluster(addresses, process, initial, 1, join)
    }

    /// `processes` processes of one worker run the program; after worker 0 reaches `epoch`, one
    /// more process joins (served by worker `epoch % processes`).
    pub(super) fn execute(processes: usize, epoch: u64, run: Run) -> Result<(), timely_engine::ExecuteError> {
        let addresses = super::common::free_addresses(processes + 1);
        let asked = Arc::new(AtomicBool::new(false));
        let run = Run { join: Some((epoch, asked.clone(), processes)), ..run };
        let start = |process: usize, join: Option<usize>| {
            let (config, run) = (config(&addresses, process, processes, join), run.clone());
            std::thread::spawn(move || timely_engine::execute(config, move |worker| run_worker(worker, &run)))
        };
        let mut runs: Vec<_> = (0..processes).map(|process| start(process, None)).collect();
        let begun = Instant::now();
        while !asked.load(Ordering::SeqCst) && begun.elapsed() < DEADLINE {
            std::thread::sleep(Duration::from_millis(1));
        }
        runs.push(start(processes, Some(epoch as usize % processes)));
        let results: Vec<_> = runs.into_iter().map(|run| run.join().expect("a process thread")).collect();
        // The last failure is the joiner's if it failed: it explains the others' (a lost peer).
        match results.into_iter().filter_map(Result::err).next_back() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Tests.

fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("TIMELY_RANDOM_SEED") {
        return vec![seed.trim().parse().expect("TIMELY_RANDOM_SEED is a number")];
    }
    let count = std::env::var("TIMELY_RANDOM_SEEDS")
        .ok()
        .map(|s| s.trim().parse().expect("TIMELY_RANDOM_SEEDS is a number"))
        .unwrap_or(DEFAULT_SEEDS);
    (0..count).collect()
}

fn run_seeds(workers: usize, seeds: &[u64]) {
    let verbose = std::env::var("TIMELY_RANDOM_VERBOSE").is_ok();
    let start = Instant::now();
    let mut failures = Vec::new();
    for &seed in seeds {
        let program = Arc::new(generate(seed));
        if verbose {
            eprintln!("seed {}: {}", seed, program.describe());
        }
        let one = reference(&program, workers as u64).expect("generated programs stay small");
        let mut expected: Vec<(u64, u64)> =
            one.iter().cloned().cycle().take(one.len() * program.copies).collect();
        expected.sort();
        let expected = Arc::new(expected);
        if let Err(failure) = run(seed, &program, workers, &expected, None) {
            eprintln!("FAILED {}", failure);
            let hung = failure.contains("did not terminate");
            failures.push(failure);
            // A hung run leaves its threads behind; stop before they swamp the machine.
            if hung && failures.iter().filter(|f| f.contains("did not terminate")).count() >= 2 {
                failures.push("(stopped after two runs that did not terminate)".to_string());
                break;
            }
        }
    }
    eprintln!("{} programs on {} worker(s) in {:?}", seeds.len(), workers, start.elapsed());
    assert!(
        failures.is_empty(),
        "{} of {} programs failed:\n{}",
        failures.len(),
        seeds.len(),
        failures.join("\n")
    );
}

/// Programs on two processes of one worker, a third process joining at a random epoch:
/// outputs equal the reference, and every checking operator (no message behind a frontier,
/// no early notification) holds on every worker, the joined one included. Programs whose
/// output depends on the number of workers (broadcasts) or on all records of a key meeting on
/// one worker within a time (per-key counts and sums, keyed joins: plain `exchange` moves keys
/// to the new workers, keyed state across joins is Megaphone's job) are left out.
#[test]
fn random_programs_with_a_process_joining() {
    let mut failures = Vec::new();
    let mut ran = 0;
    let wanted = (seeds().len() / 3).max(1);
    let candidates: Vec<u64> = match std::env::var("TIMELY_RANDOM_SEED") {
        Ok(_) => seeds(),
        Err(_) => (0..5_000).collect(),
    };
    for seed in candidates {
        if ran == wanted {
            break;
        }
        let program = Arc::new(generate(seed));
        let description = program.describe();
        if ["broadcast", "count(", "sum(", "join#"].iter().any(|stage| description.contains(stage)) {
            continue;
        }
        let one = reference(&program, 2).expect("generated programs stay small");
        let mut expected: Vec<(u64, u64)> =
            one.iter().cloned().cycle().take(one.len() * program.copies).collect();
        expected.sort();
        let epoch = Rng::new(seed).below(program.max_epoch + 1);
        ran += 1;
        if let Err(failure) = run(seed, &program, 2, &Arc::new(expected), Some(epoch)) {
            failures.push(format!("(join after epoch {epoch}) {failure}"));
        }
    }
    assert_eq!(ran, wanted, "too few generated programs qualify");
    assert!(failures.is_empty(), "{} of {ran} programs failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn random_programs_on_one_worker() {
    run_seeds(1, &seeds());
}

#[test]
fn random_programs_on_two_workers() {
    run_seeds(2, &seeds());
}

#[test]
fn random_programs_on_four_workers() {
    run_seeds(4, &seeds());
}

#[test]
fn reference_interpreter_basics() {
    let program = Program {
        inputs: vec![vec![(0, 3, 0), (0, 4, 0), (1, 6, 0)]],
        max_epoch: 1,
        stages: vec![
            Stage::Loop { modulus: 5, max_iters: 10, body: vec![Stage::Map { mul: 1, add: 1 }] },
            Stage::Delay { max: 1 },
            Stage::Count { keys: 1 },
        ],
        checks: 0,
        copies: 1,
    };
    // The loop takes 3 and 4 to 5 and 6 to 10; the delay moves both 5s to epoch 1 and
    // keeps 10 there; one key counted three times at epoch 1.
    assert_eq!(reference(&program, 1), Some(vec![(1, 3)]));

    // A delay inside a loop body: a count after it sees records of different iterations
    // together.
    let program = Program {
        inputs: vec![vec![(0, 1, 0), (0, 2, 0)]],
        max_epoch: 0,
        stages: vec![Stage::Loop {
            modulus: 1000,
            max_iters: 2,
            body: vec![Stage::Map { mul: 1, add: 1 }, Stage::Delay { max: 1 }, Stage::Count { keys: 1 }],
        }],
        checks: 0,
        copies: 1,
    };
    // Iteration 0: 1 -> 2 (delay 0, stays at 0), 2 -> 3 (delay 1, moves to 1).
    // Count at (0, 0): one record -> 0 + 1 * 1 = 1; fed back to iteration 1.
    // Iteration 1: 1 -> 2 (delay 0, stays at 1). Count at (0, 1): records 3 and 2 -> 2;
    // fed back to iteration 2, where it leaves (max_iters 2).
    assert_eq!(reference(&program, 1), Some(vec![(0, 2)]));
}
