//! Dataflows built while processes leave a cluster that a process joined (`docs/rescaling.md`,
//! "Dataflows built during a leave"): random plans in which a process joins a running cluster
//! and feeds records too, then one or two processes leave one after the other (the joined one,
//! process 0 and the joined worker's server included; the first leave right after the join in
//! some), and the workers that stay, the joined ones included, build a new dataflow at a random
//! step after each leave's notice while the leaver is still there. Each leaver builds that
//! dataflow during its leave or never. Every dataflow, the one running across the join
//! included, delivers every record fed once and counts every key once per time with a
//! sequential program's count.
//!
//! Each leaver is held in its leave until every worker that builds the dataflow of its leave
//! has (a drained leaver builds nothing more): an
//! operator of a dataflow built first keeps its capability (and the leaver's program returns,
//! so it says it built nothing more at once), or, on the joined process (whose instance of
//! that operator started without a capability), its program waits (so it says so only once
//! drained).

use crate::common;
use crate::leaving_support::counted::{
    build_counted, check_delivered_and_counted, feed_random_rounds, Rng, Seen,
};
use crate::leaving_support::{hold_leaver, run_with_join};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use timely_engine::Worker;

/// The longest a test may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(120);

/// One run: `initial` processes of `threads` workers; worker 0 asks for a join when it reaches
/// epoch `join_at` (the joined process is process `initial`, served by worker `server`); then
/// the processes `leavers` leave in order, the first `leave_delay` epochs after the join
/// completed, each later one a random number of steps (up to `delay`) after the previous one
/// left. `leaver_builds[k]`: the `k`-th leaver builds the dataflow of its leave too. Stayers
/// wait up to `delay` steps after a notice before they build, then feed up to `records`
/// records in each of `rounds` rounds.
#[derive(Clone, Debug)]
struct Plan {
    initial: usize,
    threads: usize,
    server: usize,
    join_at: u64,
    leavers: Vec<usize>,
    leave_delay: u64,
    leaver_builds: Vec<bool>,
    delay: u64,
    rounds: u64,
    records: u64,
    seed: u64,
}

impl Plan {
    /// A random plan: 2 or 3 processes of 1 or 2 workers, a join, then one or two leaves of
    /// any of the processes (the joined one included), at least one process staying.
    fn random(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0x501E);
        let initial = 2 + rng.below(2) as usize;
        let threads = 1 + rng.below(2) as usize;
        let mut processes: Vec<usize> = (0..=initial).collect();
        let leaves = 1 + rng.below(2) as usize;
        let leavers: Vec<usize> =
            (0..leaves).map(|_| processes.remove(rng.below(processes.len() as u64) as usize)).collect();
        Plan {
            initial,
            threads,
            server: rng.below((initial * threads) as u64) as usize,
            join_at: rng.below(4),
            leave_delay: [0, 0, 1, 3][rng.below(4) as usize],
            leaver_builds: (0..leaves).map(|_| rng.below(2) == 1).collect(),
            leavers,
            delay: rng.below(20),
            rounds: 1 + rng.below(4),
            records: rng.below(30),
            seed,
        }
    }

    /// The workers of process `process`.
    fn workers(&self, process: usize) -> Vec<usize> {
        (process * self.threads..(process + 1) * self.threads).collect()
    }

    /// The number of workers that stay through the `k`-th leave (the joined ones included).
    fn stayers(&self, k: usize) -> usize {
        (self.initial + 1 - (k + 1)) * self.threads
    }

    /// The number of workers that build the dataflow of the `k`-th leave: the stayers, and
    /// the leaver's workers if they build it too.
    fn builders(&self, k: usize) -> usize {
        self.stayers(k) + if self.leaver_builds[k] { self.threads } else { 0 }
    }
}

/// What the test shares with the workers: per dataflow (the one across the join, then one per
/// leave) what they saw; per leave, how many workers built its dataflow; the join's flag and
/// how many workers started.
#[derive(Clone)]
struct Shared {
    seen: Vec<Arc<Mutex<Seen>>>,
    built: Vec<Arc<AtomicUsize>>,
    join_now: Arc<AtomicBool>,
    /// Workers whose program started: a process joins only once every initial process has
    /// set up (a join earlier is refused, and makes the cluster fail: `docs/rescaling.md`).
    started: Arc<AtomicUsize>,
}

/// True once this worker knows the joined process and the joined workers' bootstrap is over.
fn join_complete(worker: &Worker, plan: &Plan) -> bool {
    worker.peers() == (plan.initial + 1) * plan.threads && !worker.state().rescaling().is_busy()
}

/// Steps `worker` `steps` times.
fn step_times(worker: &mut Worker, steps: u64) {
    (0..steps).for_each(|_| _ = worker.step());
}

/// The program of every worker.
fn program(worker: &mut Worker, plan: &Plan, shared: &Shared) {
    let (index, threads) = (worker.index(), plan.threads);
    let process = index / threads;
    shared.started.fetch_add(1, Ordering::SeqCst);
    for (k, &leaver) in plan.leavers.iter().enumerate() {
        hold_leaver(worker, process == leaver, &shared.built[k], plan.builders(k));
    }
    let (mut input, probe) = build_counted(worker, &shared.seen[0]);
    worker.bootstrap();
    let state = worker.state().clone();
    let leaves = state.rescaling().leaves();
    let mut rng = Rng::new(plan.seed ^ (index as u64) << 32);
    // The dataflow across the join: every worker feeds it in lockstep epochs until it sees the
    // first leave's notice; the first leaver's first worker asks for the leave.
    let asks_first = index == plan.leavers[0] * threads;
    let mut epoch = *input.time();
    let mut since_join = 0;
    let mut next = index as u64 * 1_000_000;
    while leaves.leaving().is_empty() {
        if asks_first && join_complete(worker, plan) {
            if since_join >= plan.leave_delay {
                worker.leave().expect("nothing refuses the leave");
                break;
            }
            since_join += 1;
        }
        let set_up = || shared.started.load(Ordering::SeqCst) >= plan.initial * threads;
        if index == 0 && epoch >= plan.join_at && set_up() {
            shared.join_now.store(true, Ordering::SeqCst);
        }
        let mine: Vec<u64> = (0..rng.below(4))
            .map(|_| {
                next += 1 + rng.below(3);
                next
            })
            .collect();
        shared.seen[0].lock().unwrap().fed.extend(mine.iter().map(|&x| (epoch, x)));
        mine.into_iter().for_each(|x| input.send(x));
        epoch += 1;
        input.advance_to(epoch);
        worker.step_while(|| probe.less_than(&epoch) && leaves.leaving().is_empty());
        std::thread::sleep(Duration::from_millis(1));
    }
    // (Harmless on a leaver: its input was released.)
    input.close();
    for (k, &leaver) in plan.leavers.iter().enumerate() {
        let first = leaver * threads;
        if k > 0 && index == first {
            let previous = plan.leavers[k - 1] * threads;
            while !leaves.departed().contains(&previous) {
                worker.step();
            }
            step_times(worker, rng.below(plan.delay + 1));
            worker.leave().expect("nothing refuses the leave");
        }
        while !leaves.leaving().contains(&first) && !leaves.departed().contains(&first) {
            worker.step();
        }
        // (The joined process's workers build at once: nothing holds them in their leave but
        // their programs, and a drained leaver builds nothing more.)
        if process != plan.initial || process != leaver {
            step_times(worker, rng.below(plan.delay + 1));
        }
        if process == leaver {
            assert!(worker.is_leaving(), "worker {index} of a leaving process is leaving");
            if plan.leaver_builds[k] {
                let (mut input, _probe) = build_counted(worker, &shared.seen[k + 1]);
                shared.built[k].fetch_add(1, Ordering::SeqCst);
                assert!(input.try_send(1).is_err(), "a leaver's input is released");
            }
            if process == plan.initial {
                // The joined process's instance of the hold has no capability (its server's
                // had let it go): its program holds it instead (its process says goodbye
                // only once its programs returned).
                while shared.built[k].load(Ordering::SeqCst) < plan.builders(k) {
                    worker.step();
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            return;
        }
        let during = (index, leaves.leaving(), leaves.departed());
        let (input, probe) = build_counted(worker, &shared.seen[k + 1]);
        shared.seen[k + 1].lock().unwrap().built_during.push(during);
        shared.built[k].fetch_add(1, Ordering::SeqCst);
        feed_random_rounds(
            worker,
            input,
            &probe,
            &shared.seen[k + 1],
            &mut rng,
            plan.rounds,
            plan.records,
            &mut next,
        );
    }
    worker.step_while(|| !probe.done());
}

/// Runs `plan` and returns what the workers saw of each dataflow.
fn run(plan: Plan) -> Vec<Seen> {
    let addresses = common::free_addresses(plan.initial + 1);
    let shared = Shared {
        seen: (0..=plan.leavers.len()).map(|_| Arc::default()).collect(),
        built: plan.leavers.iter().map(|_| Arc::default()).collect(),
        join_now: Arc::default(),
        started: Arc::default(),
    };
    let program = {
        let (plan, shared) = (plan.clone(), shared.clone());
        move |worker: &mut Worker| program(worker, &plan, &shared)
    };
    run_with_join(&addresses, (plan.initial, plan.threads, plan.server), &shared.join_now, program);
    shared.seen.iter().map(|seen| std::mem::take(&mut *seen.lock().unwrap())).collect()
}

/// Runs `plan` and checks every dataflow it built.
fn check(plan: Plan) {
    let seen = common::within(LIMIT, {
        let plan = plan.clone();
        move || run(plan)
    });
    check_delivered_and_counted(&seen[0], "the dataflow across the join");
    for (k, &leaver) in plan.leavers.iter().enumerate() {
        let what = format!("the dataflow of leave {k} (process {leaver})");
        let during = &seen[k + 1].built_during;
        assert_eq!(during.len(), plan.stayers(k), "{what}: built by every stayer");
        for (worker, leaving, departed) in during {
            let inside = plan.workers(leaver).iter().all(|w| leaving.contains(w) && !departed.contains(w));
            assert!(inside, "{what}: worker {worker} built it outside the leave ({leaving:?}, {departed:?})");
        }
        check_delivered_and_counted(&seen[k + 1], &what);
    }
}

/// Random plans of a join followed by one or two leaves, the stayers (joined workers included)
/// building a dataflow during each leave. `TIMELY_JOIN_BUILD_SEEDS=N` runs N seeds (default 6),
/// `TIMELY_JOIN_BUILD_FIRST=S` starts at seed S (default 0).
#[test]
fn random_dataflows_built_during_leaves_after_a_join() {
    let env =
        |name: &str, default: u64| std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default);
    let (first, seeds) = (env("TIMELY_JOIN_BUILD_FIRST", 0), env("TIMELY_JOIN_BUILD_SEEDS", 6));
    for seed in first..first + seeds {
        let plan = Plan::random(seed);
        eprintln!("seed {seed}: {plan:?}");
        check(plan);
    }
}
