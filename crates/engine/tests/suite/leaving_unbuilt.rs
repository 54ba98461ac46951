//! A dataflow that the workers that stay built before they saw a leave's notice, and that the
//! leaver never builds (`docs/rescaling.md`, "Dataflows the leaver never builds that others
//! built before its notice"). The stayers counted the leaver's initial capabilities there; the
//! leaver's `Left`, sent as soon as its program returned, retires them. Its exchanges had sent
//! the leaver records there already, its broadcasts copies, its keyed counts their membership
//! announcements: the drained leaver hands them all to the lowest-index stayer, which takes
//! the records in and retires the copies. Every record fed is delivered once, every key counted
//! once per time with a sequential program's count, and every stayer receives one copy of each
//! broadcast record (before, the run stopped with an error naming the dataflow; before that,
//! it never ended). Fixed cases, and random plans.

use crate::common;
use crate::leaving_support::counted::{build_parts, check_parts, Parts, Rng, Seen};
use crate::leaving_support::{leave_without_building, leave_without_building_stepping_on, run_processes};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use timely_engine::Worker;

/// The longest a test may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(120);

/// One run: `processes` processes of `threads` workers; the stayers build the `parts` of the
/// counted dataflow at once and feed `records` records per worker in the first round, which
/// reach every worker (the leaver too) before the leave is asked for; then process `leaver`
/// leaves without ever building it, and the stayers feed up to `records` records in each of
/// `rounds - 1` more rounds, stepping a random number of times (up to `steps`) after each.
/// The leaver's program returns at once, or (`steps_on`) goes on stepping until its leave is
/// complete, as a program that ignores `is_leaving` does.
#[derive(Clone, Copy, Debug)]
struct Plan {
    processes: usize,
    threads: usize,
    leaver: usize,
    parts: Parts,
    rounds: u64,
    records: u64,
    steps: u64,
    seed: u64,
    steps_on: bool,
}

impl Plan {
    /// Three processes; process 1 leaves; 40 records per stayer in each of three rounds.
    fn fixed(threads: usize, parts: Parts) -> Self {
        Plan {
            processes: 3,
            threads,
            leaver: 1,
            parts,
            rounds: 3,
            records: 40,
            steps: 5,
            seed: 0,
            steps_on: false,
        }
    }

    /// Like [`Plan::fixed`], but the leaver's program steps on during its leave.
    fn stepping_on(threads: usize, parts: Parts) -> Self {
        Plan { steps_on: true, ..Plan::fixed(threads, parts) }
    }

    /// A random plan: 2 to 4 processes of 1 or 2 workers, any process leaving, any parts.
    fn random(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let processes = 2 + rng.below(3) as usize;
        let which = 1 + rng.below(7);
        let parts = Parts { exchange: which & 1 != 0, count: which & 2 != 0, broadcast: which & 4 != 0 };
        Plan {
            processes,
            threads: 1 + rng.below(2) as usize,
            leaver: rng.below(processes as u64) as usize,
            parts,
            rounds: 1 + rng.below(5),
            records: 10 + rng.below(40),
            steps: rng.below(10),
            seed,
            steps_on: rng.below(2) == 1,
        }
    }

    /// The workers that stay.
    fn stayers(&self) -> Vec<usize> {
        let leavers = self.leaver * self.threads..(self.leaver + 1) * self.threads;
        (0..self.processes * self.threads).filter(|w| !leavers.contains(w)).collect()
    }
}

/// Runs `plan` and returns what the stayers saw.
fn run(plan: Plan) -> Seen {
    let Plan { processes, threads, leaver, .. } = plan;
    let addresses = common::free_addresses(processes);
    let seen: Arc<Mutex<Seen>> = Arc::default();
    // Stayers that fed their first round before the notice; the leaver waits for all of them.
    let fed = Arc::new(AtomicUsize::new(0));
    let stayers = plan.stayers().len();
    let program = {
        let seen = seen.clone();
        move |worker: &mut Worker| {
            let index = worker.index();
            if index / threads == leaver {
                let first = index == leaver * threads;
                return match plan.steps_on {
                    true => leave_without_building_stepping_on(worker, first, &fed, stayers),
                    false => leave_without_building(worker, first, &fed, stayers),
                };
            }
            let (mut input, probe) = build_parts(worker, &seen, plan.parts);
            let state = worker.state().clone();
            let mut rng = Rng::new(plan.seed ^ (index as u64) << 32);
            for round in 0..plan.rounds {
                let count = if round == 0 { plan.records } else { rng.below(plan.records + 1) };
                let mine: Vec<u64> = (0..count).map(|i| (index as u64) << 32 | round << 16 | i).collect();
                seen.lock().unwrap().fed.extend(mine.iter().map(|&x| (round, x)));
                mine.into_iter().for_each(|x| input.send(x));
                input.advance_to(round + 1);
                (0..1 + rng.below(plan.steps + 1)).for_each(|_| _ = worker.step());
                if round == 0 {
                    assert!(
                        state.rescaling().leaves().leaving().is_empty(),
                        "built and fed before the notice"
                    );
                    fed.fetch_add(1, Ordering::SeqCst);
                }
            }
            if plan.rounds == 1 {
                // Wait for the notice: the leave happens while the dataflow runs.
                while state.rescaling().leaves().leaving().is_empty()
                    && state.rescaling().leaves().departed().is_empty()
                {
                    worker.step();
                }
            }
            input.close();
            worker.step_while(|| !probe.done());
        }
    };
    run_processes(&addresses, processes, threads, program);
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    seen
}

/// Runs `plan` and checks every part of the dataflow against a sequential program.
fn check(plan: Plan) {
    let seen = common::within(LIMIT, move || run(plan));
    check_parts(&seen, plan.parts, &plan.stayers(), "a dataflow the leaver never built");
}

const EXCHANGE: Parts = Parts { exchange: true, count: false, broadcast: false };
const KEYED_COUNT: Parts = Parts { exchange: false, count: true, broadcast: false };
const BROADCAST: Parts = Parts { exchange: false, count: false, broadcast: true };

#[test]
fn records_sent_to_a_leaver_that_never_built_their_dataflow_are_delivered_once() {
    check(Plan::fixed(1, EXCHANGE));
}

#[test]
fn records_sent_to_a_pair_of_leavers_that_never_built_their_dataflow_are_delivered_once() {
    check(Plan::fixed(2, EXCHANGE));
}

#[test]
fn a_keyed_count_the_leaver_never_built_counts_every_key_once() {
    check(Plan::fixed(1, KEYED_COUNT));
}

#[test]
fn a_keyed_count_a_pair_of_leavers_never_built_counts_every_key_once() {
    check(Plan::fixed(2, KEYED_COUNT));
}

/// The leaver's program does not return during its leave (it steps on until its worker has
/// nothing more to do): before, its `Left` waited for its drain, which waited for the
/// stayers' seals, which waited for the keyed count's time to pass the leaver's initial
/// capabilities, which only the `Left` retires: the leave never completed.
#[test]
fn a_keyed_count_the_leaver_never_built_completes_while_its_program_steps_on() {
    check(Plan::stepping_on(1, KEYED_COUNT));
}

#[test]
fn a_keyed_count_a_pair_of_leavers_never_built_completes_while_their_programs_step_on() {
    check(Plan::stepping_on(2, KEYED_COUNT));
}

#[test]
fn records_sent_to_a_leaver_that_steps_on_without_building_their_dataflow_are_delivered_once() {
    check(Plan::stepping_on(1, Parts { exchange: true, count: true, broadcast: true }));
}

#[test]
fn a_broadcast_the_leaver_never_built_reaches_every_stayer_once() {
    check(Plan::fixed(1, BROADCAST));
}

#[test]
fn a_broadcast_a_pair_of_leavers_never_built_reaches_every_stayer_once() {
    check(Plan::fixed(2, BROADCAST));
}

/// Random plans: 2 to 4 processes of 1 or 2 workers, any of them leaving without building a
/// dataflow (an exchange, a keyed count, a broadcast, or several of them) that the stayers
/// built and fed before the notice, so that records were in flight to the leaver; the stayers
/// feed random rounds after it. `TIMELY_UNBUILT_SEEDS=N` runs N seeds (default 8).
#[test]
fn random_dataflows_the_leaver_never_builds() {
    let seeds: u64 = std::env::var("TIMELY_UNBUILT_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    for seed in 700..700 + seeds {
        let plan = Plan::random(seed);
        eprintln!("seed {seed}: {plan:?}");
        check(plan);
    }
}
