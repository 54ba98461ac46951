//! Building a program as a dataflow, with operators that check frontiers, messages and
//! notifications on every worker.

use super::program::{mix, Rng, Stage};
use super::reference::{divides, flat_map_record, leaves};
use super::M;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use timely_engine::dataflow::operators::{Capability, FrontierNotificator, InputPort};
use timely_engine::dataflow::{Exchange, Pact, Pipeline, Stream};
use timely_engine::{MutableAntichain, Product, Timestamp};

// ---------------------------------------------------------------------------------------
// Building the program as a dataflow.

/// Timestamps the generated programs use: epochs and loop times nested up to two deep.
pub trait Time: Timestamp {
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
pub struct Ctx {
    pub worker: usize,
    pub violations: Arc<Mutex<Vec<String>>>,
}

impl Ctx {
    pub fn violation(&self, message: String) {
        let mut violations = self.violations.lock().unwrap();
        if violations.len() < 25 {
            violations.push(format!("worker {}: {}", self.worker, message));
        }
    }
}

fn record_hash(x: u64, salt: u64) -> u64 {
    (x ^ salt).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 17
}

pub fn build_stages<T: Time>(
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
pub fn check<T: Time, P: Pact<T, u64>>(
    stream: &Stream<T, u64>,
    pact: P,
    ctx: &Ctx,
    id: usize,
) -> Stream<T, u64> {
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
