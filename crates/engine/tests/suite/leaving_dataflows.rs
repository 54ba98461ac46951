//! Dataflows built while a process leaves (`docs/rescaling.md`, "Dataflows built during a
//! leave"): the workers that stay build a dataflow after the leave's notice and before the
//! leaver went, and the leaver builds it too or never does. Either way the dataflow completes,
//! every record fed is delivered once and every key is counted once per time with a
//! sequential program's count; fixed cases, and random plans (any process leaving, stayers
//! building at random steps after the notice). The leaver is held in its leave (an operator of its first dataflow keeps
//! its capability) until every other worker has built the new dataflow, so the build always
//! falls inside the leave.

use crate::common;
use crate::leaving_support::counted::{
    build_counted, check_delivered_and_counted, feed_random_rounds, Rng, Seen,
};
use crate::leaving_support::{hold_leaver, run_processes};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use timely_engine::Worker;

/// The longest a test may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(120);

/// One run: `processes` processes of `threads` workers; process `leaver` leaves, and builds
/// the second dataflow during its leave when `leaver_builds`; each stayer waits a random
/// number of steps (up to `delay`) after the notice before it builds, then feeds `records`
/// records in `rounds` rounds.
#[derive(Clone, Copy, Debug)]
struct Plan {
    processes: usize,
    threads: usize,
    leaver: usize,
    leaver_builds: bool,
    delay: u64,
    rounds: u64,
    records: u64,
    seed: u64,
}

impl Plan {
    /// Three processes; process 1 leaves; 20 records in one round.
    fn fixed(threads: usize, leaver_builds: bool) -> Self {
        Plan { processes: 3, threads, leaver: 1, leaver_builds, delay: 0, rounds: 1, records: 20, seed: 0 }
    }

    /// A random plan: 2 to 4 processes of 1 or 2 workers, any process leaving.
    fn random(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let processes = 2 + rng.below(3) as usize;
        Plan {
            processes,
            threads: 1 + rng.below(2) as usize,
            leaver: rng.below(processes as u64) as usize,
            leaver_builds: rng.below(2) == 1,
            delay: rng.below(20),
            rounds: 1 + rng.below(6),
            records: rng.below(40),
            seed,
        }
    }

    /// The leaving workers.
    fn leavers(&self) -> Vec<usize> {
        (self.leaver * self.threads..(self.leaver + 1) * self.threads).collect()
    }
}

/// Runs `plan` and returns what the workers saw.
fn run(plan: Plan) -> Seen {
    let Plan { processes, threads, leaver, .. } = plan;
    let addresses = common::free_addresses(processes);
    let seen: Arc<Mutex<Seen>> = Arc::default();
    // Workers that have built the second dataflow; the leaver is held until all that build
    // it have (its own workers too: a leave complete before they build would refuse them).
    let built = Arc::new(AtomicUsize::new(0));
    let stayers = (processes - 1) * threads;
    let builders = stayers + if plan.leaver_builds { threads } else { 0 };
    let program = {
        let seen = seen.clone();
        move |worker: &mut Worker| {
            let index = worker.index();
            let leaves_now = index / threads == leaver;
            hold_leaver(worker, leaves_now, &built, builders);
            let state = worker.state().clone();
            let leaves = state.rescaling().leaves();
            let mut rng = Rng::new(plan.seed ^ (index as u64) << 32);
            if leaves_now {
                if index == leaver * threads {
                    worker.leave().expect("nothing refuses the leave");
                }
                while !worker.is_leaving() {
                    worker.step();
                }
                if plan.leaver_builds {
                    (0..rng.below(plan.delay + 1)).for_each(|_| _ = worker.step());
                    let (mut input, _probe) = build_counted(worker, &seen);
                    built.fetch_add(1, Ordering::SeqCst);
                    // Released by the leave: it refuses records and holds no capability.
                    assert!(input.try_send(1).is_err());
                }
                return;
            }
            while leaves.leaving().is_empty() {
                worker.step();
            }
            (0..rng.below(plan.delay + 1)).for_each(|_| _ = worker.step());
            let during = (index, leaves.leaving(), leaves.departed());
            let (input, probe) = build_counted(worker, &seen);
            seen.lock().unwrap().built_during.push(during);
            built.fetch_add(1, Ordering::SeqCst);
            let mut next = index as u64 * 1_000_000;
            feed_random_rounds(worker, input, &probe, &seen, &mut rng, plan.rounds, plan.records, &mut next);
        }
    };
    run_processes(&addresses, processes, threads, program);
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    seen
}

/// Runs `plan` and checks that the dataflow built during the leave delivered and counted
/// what was fed.
fn check(plan: Plan) {
    let seen = common::within(LIMIT, move || run(plan));
    let leavers = plan.leavers();
    assert_eq!(seen.built_during.len(), (plan.processes - 1) * plan.threads);
    for (worker, leaving, departed) in &seen.built_during {
        assert_eq!((leaving, departed), (&leavers, &vec![]), "worker {worker} built outside the leave");
    }
    check_delivered_and_counted(&seen, "the dataflow built during the leave");
}

#[test]
fn a_dataflow_the_leaver_never_builds_completes_on_the_others() {
    check(Plan::fixed(1, false));
}

#[test]
fn a_dataflow_the_leaver_builds_during_its_leave_completes() {
    check(Plan::fixed(1, true));
}

#[test]
fn a_pair_of_leaving_workers_that_never_build_it_is_not_waited_for() {
    check(Plan::fixed(2, false));
}

/// Random plans: 2 to 4 processes of 1 or 2 workers, any of them leaving, building the
/// dataflow during its leave or never, stayers building at random steps after the notice and
/// feeding random records over several rounds. `TIMELY_BUILD_SEEDS=N` runs N seeds (default 8).
#[test]
fn random_dataflows_built_during_leaves() {
    let seeds: u64 = std::env::var("TIMELY_BUILD_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    for seed in 300..300 + seeds {
        let plan = Plan::random(seed);
        eprintln!("seed {seed}: {plan:?}");
        check(plan);
    }
}
