//! A process joins a running cluster, then a process leaves without ever building a dataflow
//! that every other worker built after the join (`docs/rescaling.md`, "Dataflows the leaver
//! never builds that others built before its notice"). The leaver may be the joined process,
//! process 0, or the join's server; the joined workers feed both dataflows when they stay, and
//! the one running across the join when they leave. Records the stayers sent the leaver on the
//! unbuilt dataflow's exchanges, keyed counts and broadcasts are handed to a stayer (or
//! retired) when the leaver goes. Every record fed is delivered once, every key counted once
//! per time with a sequential program's count, and every stayer receives one copy of each
//! broadcast record, in both dataflows.

use crate::common;
use crate::leaving_support::counted::{
    build_counted, build_parts, check_delivered_and_counted, check_parts, Parts, Rng, Seen,
};
use crate::leaving_support::{leave_without_building, run_with_join};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use timely_engine::Worker;

/// The longest a test may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(120);

/// One run: `initial` processes of `threads` workers; worker 0 asks for a join once it reaches
/// epoch `join_at` (the joined process is process `initial`, served by worker `server`); every
/// worker feeds the first dataflow until it knows the join is over, and `after` epochs more.
/// Then every worker but those of process `leaver` builds the `parts` of the second dataflow
/// and feeds its first round of `records` records; once all have, the leaver asks to leave
/// and returns without building it, and the stayers feed up to `records` records in each of
/// `rounds - 1` more rounds, stepping a random number of times (up to `steps`) after each.
#[derive(Clone, Copy, Debug)]
struct Plan {
    initial: usize,
    threads: usize,
    server: usize,
    join_at: u64,
    after: u64,
    leaver: usize,
    parts: Parts,
    rounds: u64,
    records: u64,
    steps: u64,
    seed: u64,
}

impl Plan {
    /// A random plan: 2 or 3 processes of 1 or 2 workers and a joiner; any of them leaving
    /// (the joined one and the join's server included); any parts of the second dataflow.
    fn random(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0x10_1E);
        let initial = 2 + rng.below(2) as usize;
        let threads = 1 + rng.below(2) as usize;
        let which = 1 + rng.below(7);
        Plan {
            initial,
            threads,
            server: rng.below((initial * threads) as u64) as usize,
            join_at: rng.below(4),
            after: 1 + rng.below(3),
            leaver: rng.below(initial as u64 + 1) as usize,
            parts: Parts { exchange: which & 1 != 0, count: which & 2 != 0, broadcast: which & 4 != 0 },
            rounds: 1 + rng.below(4),
            records: 10 + rng.below(30),
            steps: rng.below(10),
            seed,
        }
    }

    /// The workers that stay, the joined ones included.
    fn stayers(&self) -> Vec<usize> {
        let leavers = self.leaver * self.threads..(self.leaver + 1) * self.threads;
        (0..(self.initial + 1) * self.threads).filter(|w| !leavers.contains(w)).collect()
    }
}

/// What the test shares with the workers.
#[derive(Clone, Default)]
struct Shared {
    /// What the workers saw of the dataflow across the join, and of the one the leaver never
    /// builds.
    across: Arc<Mutex<Seen>>,
    unbuilt: Arc<Mutex<Seen>>,
    /// Workers whose program started: a process joins only once every initial process has
    /// set up (a join earlier is refused).
    started: Arc<AtomicUsize>,
    join_now: Arc<AtomicBool>,
    /// Stayers that built the second dataflow and fed its first round.
    fed: Arc<AtomicUsize>,
}

/// True once this worker knows the joined process and the joined workers' bootstrap is over.
fn join_complete(worker: &Worker, plan: &Plan) -> bool {
    worker.peers() == (plan.initial + 1) * plan.threads && !worker.state().rescaling().is_busy()
}

/// The program of every worker.
fn program(worker: &mut Worker, plan: &Plan, shared: &Shared) {
    let (index, threads) = (worker.index(), plan.threads);
    shared.started.fetch_add(1, Ordering::SeqCst);
    let (mut input, probe) = build_counted(worker, &shared.across);
    worker.bootstrap();
    let mut rng = Rng::new(plan.seed ^ (index as u64) << 32);
    // The dataflow across the join: every worker (the joined ones from their bootstrap's
    // epoch) feeds it in lockstep epochs until it knows the join is over, and `after` more.
    let mut epoch = *input.time();
    let mut next = index as u64 * 1_000_000;
    let mut left = plan.after;
    while left > 0 {
        let set_up = shared.started.load(Ordering::SeqCst) >= plan.initial * threads;
        if index == 0 && epoch >= plan.join_at && set_up {
            shared.join_now.store(true, Ordering::SeqCst);
        }
        if join_complete(worker, plan) {
            left -= 1;
        }
        let mine: Vec<u64> = (0..1 + rng.below(3))
            .map(|_| {
                next += 1 + rng.below(3);
                next
            })
            .collect();
        shared.across.lock().unwrap().fed.extend(mine.iter().map(|&x| (epoch, x)));
        mine.into_iter().for_each(|x| input.send(x));
        epoch += 1;
        input.advance_to(epoch);
        worker.step_while(|| probe.less_than(&epoch));
        std::thread::sleep(Duration::from_millis(1));
    }
    input.close();
    let stayers = plan.stayers().len();
    if index / threads == plan.leaver {
        return leave_without_building(worker, index == plan.leaver * threads, &shared.fed, stayers);
    }
    let (mut unbuilt, unbuilt_probe) = build_parts(worker, &shared.unbuilt, plan.parts);
    let state = worker.state().clone();
    let leaves = state.rescaling().leaves();
    for round in 0..plan.rounds {
        let count = if round == 0 { plan.records } else { rng.below(plan.records + 1) };
        let mine: Vec<u64> = (0..count).map(|i| (index as u64) << 32 | round << 16 | i).collect();
        shared.unbuilt.lock().unwrap().fed.extend(mine.iter().map(|&x| (round, x)));
        mine.into_iter().for_each(|x| unbuilt.send(x));
        unbuilt.advance_to(round + 1);
        (0..1 + rng.below(plan.steps + 1)).for_each(|_| _ = worker.step());
        if round == 0 {
            assert!(leaves.leaving().is_empty(), "built and fed before the notice");
            shared.fed.fetch_add(1, Ordering::SeqCst);
        }
    }
    if plan.rounds == 1 {
        // Wait for the notice: the leave happens while the dataflow runs.
        while leaves.leaving().is_empty() && leaves.departed().is_empty() {
            worker.step();
        }
    }
    unbuilt.close();
    worker.step_while(|| !unbuilt_probe.done() || !probe.done());
}

/// Runs `plan` and checks both dataflows against a sequential program.
fn check(plan: Plan) {
    let (across, unbuilt) = common::within(LIMIT, move || {
        let addresses = common::free_addresses(plan.initial + 1);
        let shared = Shared::default();
        let run = {
            let shared = shared.clone();
            move |worker: &mut Worker| program(worker, &plan, &shared)
        };
        run_with_join(&addresses, (plan.initial, plan.threads, plan.server), &shared.join_now, run);
        let take = |seen: &Mutex<Seen>| std::mem::take(&mut *seen.lock().unwrap());
        (take(&shared.across), take(&shared.unbuilt))
    });
    let joined = (plan.initial * plan.threads..(plan.initial + 1) * plan.threads).collect::<Vec<_>>();
    let fed_by_joined = across.fed.iter().any(|(_, x)| joined.iter().any(|&w| x / 1_000_000 == w as u64));
    assert!(fed_by_joined, "the joined workers fed the dataflow across the join");
    check_delivered_and_counted(&across, "the dataflow across the join");
    check_parts(&unbuilt, plan.parts, &plan.stayers(), "a dataflow the leaver never built");
}

/// Random plans of a join followed by a leave of a process that never builds a dataflow the
/// others built after the join. `TIMELY_UNBUILT_JOIN_SEEDS=N` runs N seeds (default 6),
/// `TIMELY_UNBUILT_JOIN_FIRST=S` starts at seed S (default 0).
#[test]
fn random_joins_then_a_leaver_that_never_builds() {
    let env =
        |name: &str, default: u64| std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default);
    let (first, seeds) = (env("TIMELY_UNBUILT_JOIN_FIRST", 0), env("TIMELY_UNBUILT_JOIN_SEEDS", 6));
    for seed in first..first + seeds {
        let plan = Plan::random(seed);
        eprintln!("seed {seed}: {plan:?}");
        check(plan);
    }
}
