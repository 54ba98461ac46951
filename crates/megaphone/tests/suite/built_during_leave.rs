//! Keyed operators built while a process leaves (`docs/rescaling.md`, "Dataflows built during
//! a leave"; `docs/megaphone.md`, "Operators built during a leave"): the workers that stay
//! build a dataflow with word count and the keyed running sum after the leave's notice (or
//! some of them before the leave was asked for) and before the leaver went, and the leaver
//! builds it too during its leave or never does. Either way the dataflow completes and both
//! operators equal sequential references over every record fed, with moves from every stayer
//! in turn, some of them to a leaver (the operator overrides those). The leaver is held in its
//! leave (an operator of its first dataflow keeps its capability) until every worker that
//! builds the new dataflow has, so the builds always fall inside the leave.

use crate::common::{self, build_keyed, counts_reference, hold_leaver, sums_reference, within, Rng};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use timely_engine::dataflow::operators::Captured;
use timely_engine::Worker;
use timely_megaphone::{Bins, Command};

/// The longest a run may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(120);

/// What a run observed.
#[derive(Default)]
struct Observed {
    /// Every record fed `(time, key, value)`.
    sent: Vec<(u64, u64, u64)>,
    /// Per worker that built the dataflow on the stayers' side: the workers leaving then.
    built_during: Vec<(usize, Vec<usize>)>,
}

/// Word count's outputs: `(time, (key, count))`.
type Counts = Vec<(u64, (u64, u64))>;

/// The keyed sum's outputs: `(time, (key, sum, worker))`.
type Sums = Vec<(u64, (u64, u64, usize))>;

/// One run: `processes` processes of `threads` workers; process `leaver` leaves, and builds
/// the keyed dataflow during its leave when `leaver_builds`; the first `early` stayers build
/// it before the leave is asked for, the others wait up to `delay` steps (a random number)
/// after the notice before they build; then each stayer feeds `rounds` rounds.
#[derive(Clone, Copy, Debug)]
struct Plan {
    processes: usize,
    threads: usize,
    leaver: usize,
    leaver_builds: bool,
    early: usize,
    delay: u64,
    rounds: u64,
    bins: usize,
    seed: u64,
}

impl Plan {
    /// Three processes; process 1 leaves.
    fn fixed(threads: usize, leaver_builds: bool, seed: u64) -> Self {
        Plan {
            processes: 3,
            threads,
            leaver: 1,
            leaver_builds,
            early: 0,
            delay: 0,
            rounds: 8,
            bins: 16,
            seed,
        }
    }

    /// A random plan: 2 to 4 processes of 1 or 2 workers, any process leaving, some stayers
    /// building before the leave (then the leaver builds too: see `docs/megaphone.md`).
    fn random(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let processes = 2 + rng.below(3) as usize;
        let threads = 1 + rng.below(2) as usize;
        let early =
            if rng.below(2) == 0 { 0 } else { rng.below(((processes - 1) * threads) as u64 + 1) as usize };
        Plan {
            processes,
            threads,
            leaver: rng.below(processes as u64) as usize,
            leaver_builds: early > 0 || rng.below(2) == 1,
            early,
            delay: rng.below(20),
            rounds: 2 + rng.below(10),
            bins: 4 << rng.below(4),
            seed,
        }
    }

    /// True if stayer `index` builds before the leave: the first `early` stayers do.
    fn builds_early(&self, index: usize) -> bool {
        let rank = if index / self.threads < self.leaver { index } else { index - self.threads };
        rank < self.early
    }

    /// The leaving workers.
    fn leavers(&self) -> Vec<usize> {
        (self.leaver * self.threads..(self.leaver + 1) * self.threads).collect()
    }
}

/// Runs `plan`; returns what was fed and both outputs.
fn run(plan: Plan) -> (Observed, Counts, Sums) {
    let Plan { processes, threads, leaver, .. } = plan;
    let addresses = common::free_addresses(processes);
    let observed: Arc<Mutex<Observed>> = Arc::default();
    let (counts, sums) = (Captured::new(), Captured::new());
    let bins = Bins::new(plan.bins).unwrap();
    // Workers that have built the keyed dataflow; the leaver is held until every stayer has,
    // and its own workers too when they build it.
    let built = Arc::new(AtomicUsize::new(0));
    let builders = (processes - 1) * threads + if plan.leaver_builds { threads } else { 0 };
    // Stayers that built it before the leave; the leave is asked for once all `early` have.
    let built_early = Arc::new(AtomicUsize::new(0));
    let program = {
        let (observed, counts, sums) = (observed.clone(), counts.clone(), sums.clone());
        move |worker: &mut Worker| {
            let index = worker.index();
            let leaves_now = index / threads == leaver;
            hold_leaver(worker, leaves_now, &built, builders);
            let state = worker.state().clone();
            let leaves = state.rescaling().leaves();
            let mut rng = Rng::new(plan.seed ^ (index as u64) << 32);
            if leaves_now {
                if index == leaver * threads {
                    while built_early.load(Ordering::SeqCst) < plan.early {
                        worker.step();
                    }
                    worker.leave().expect("nothing refuses the leave");
                }
                while !worker.is_leaving() {
                    worker.step();
                }
                if plan.leaver_builds {
                    (0..rng.below(plan.delay + 1)).for_each(|_| _ = worker.step());
                    let mut keyed = build_keyed(worker, bins, &counts, &sums);
                    built.fetch_add(1, Ordering::SeqCst);
                    // Released by the leave: it refuses records and holds no capability.
                    assert!(keyed.data.try_send((1, 1)).is_err());
                    keyed.control.close();
                }
                return;
            }
            let early = plan.builds_early(index);
            if !early {
                while leaves.leaving().is_empty() {
                    worker.step();
                }
                (0..rng.below(plan.delay + 1)).for_each(|_| _ = worker.step());
            }
            observed.lock().unwrap().built_during.push((index, leaves.leaving()));
            let mut keyed = build_keyed(worker, bins, &counts, &sums);
            built.fetch_add(1, Ordering::SeqCst);
            built_early.fetch_add(usize::from(early), Ordering::SeqCst);
            let workers = processes * threads;
            for round in 0..plan.rounds {
                let records: Vec<(u64, u64, u64)> =
                    (0..20).map(|_| (round, rng.below(30), rng.below(100))).collect();
                records.iter().for_each(|&(_, key, value)| keyed.data.send((key, value)));
                observed.lock().unwrap().sent.extend(records);
                // Stayers move bins in turn, to any worker, the leavers included.
                if round as usize % workers == index {
                    let moved: BTreeSet<usize> =
                        (0..1 + rng.below(3)).map(|_| rng.below(bins.count() as u64) as usize).collect();
                    for bin in moved {
                        let to = rng.below(workers as u64) as usize;
                        keyed.control.send(Command::Move { bin, worker: to });
                    }
                }
                keyed.data.advance_to(round + 1);
                keyed.control.advance_to(round + 1);
                if rng.below(2) == 0 {
                    worker.step_while(|| keyed.probe.less_than(&(round + 1)));
                }
            }
            keyed.data.close();
            keyed.control.close();
            worker.step_while(|| !keyed.probe.done());
        }
    };
    let runs = common::start_processes(&addresses, processes, threads, program);
    for (process, outcome) in common::outcomes(runs).into_iter().enumerate() {
        outcome.unwrap_or_else(|error| panic!("process {process}: {error}"));
    }
    let observed = std::mem::take(&mut *observed.lock().unwrap());
    (observed, counts.extract(), sums.extract())
}

/// Runs `plan` and checks both operators against the references.
fn check(plan: Plan) {
    let (observed, counts, sums) = within(LIMIT, move || run(plan));
    let leavers = plan.leavers();
    assert_eq!(observed.built_during.len(), (plan.processes - 1) * plan.threads);
    for (worker, leaving) in &observed.built_during {
        let expected = if plan.builds_early(*worker) { vec![] } else { leavers.clone() };
        assert_eq!(leaving, &expected, "worker {worker} built outside its side of the notice");
    }
    let mut sent = observed.sent;
    sent.sort();
    assert_eq!(counts, counts_reference(&sent), "word counts differ from the reference");
    let without: Vec<_> = sums.iter().map(|&(time, (key, sum, _))| (time, (key, sum))).collect();
    assert_eq!(without, sums_reference(&sent, 2), "keyed sums differ from the reference");
    let reported_by_leaver = sums.iter().find(|&&(_, (_, _, worker))| leavers.contains(&worker));
    assert!(reported_by_leaver.is_none(), "a leaver held a bin: {reported_by_leaver:?}");
}

#[test]
fn keyed_operators_the_leaver_never_builds_complete_on_the_others() {
    check(Plan::fixed(1, false, 1));
}

#[test]
fn keyed_operators_the_leaver_builds_during_its_leave_complete() {
    check(Plan::fixed(1, true, 2));
}

#[test]
fn keyed_operators_built_before_the_leave_by_some_and_during_it_by_the_others_agree() {
    // Worker 0 builds before the leave, worker 2 after its notice, the leaver after its own.
    check(Plan { early: 1, ..Plan::fixed(1, true, 5) });
    // Every stayer builds before the leave; the leaver's process of two after its notice.
    check(Plan { early: 4, ..Plan::fixed(2, true, 6) });
}

#[test]
fn a_pair_of_leaving_workers_takes_no_part_in_keyed_operators_built_during_the_leave() {
    check(Plan::fixed(2, false, 3));
    check(Plan::fixed(2, true, 4));
}

/// Random plans: 2 to 4 processes of 1 or 2 workers, any of them leaving, building the keyed
/// dataflow during its leave or never, stayers building at random steps after the notice and
/// moving bins at random. `MEGAPHONE_BUILD_SEEDS=N` runs N seeds (default 8).
#[test]
fn random_keyed_operators_built_during_leaves() {
    let seeds: u64 = std::env::var("MEGAPHONE_BUILD_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    for seed in 200..200 + seeds {
        let plan = Plan::random(seed);
        eprintln!("seed {seed}: {plan:?}");
        check(plan);
    }
}

/// Worker 1 builds the keyed dataflow and then leaves; worker 2 builds it only after the
/// leave's notice, so the two tables differ: worker 2's run stops with an error naming both,
/// instead of giving wrong counts.
#[test]
fn a_keyed_operator_built_on_both_sides_of_a_notice_stops_the_run() {
    let error = within(LIMIT, || {
        let processes = 3;
        let addresses = common::free_addresses(processes);
        let (counts, sums) = (Captured::new(), Captured::new());
        let bins = Bins::new(8).unwrap();
        let worker_0_built = Arc::new(AtomicUsize::new(0));
        let program = move |worker: &mut Worker| {
            let index = worker.index();
            let state = worker.state().clone();
            let leaves = state.rescaling().leaves();
            if index == 2 {
                while leaves.leaving().is_empty() {
                    if !worker.step() {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
            let mut keyed = build_keyed(worker, bins, &counts, &sums);
            if index == 0 {
                worker_0_built.store(1, Ordering::SeqCst);
            }
            if index == 1 {
                while worker_0_built.load(Ordering::SeqCst) == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                worker.leave().expect("nothing refuses the leave");
                return;
            }
            keyed.data.send((1, 1));
            keyed.data.close();
            keyed.control.close();
            worker.step_while(|| !keyed.probe.done());
        };
        let runs = common::start_processes(&addresses, processes, 1, program);
        common::outcomes(runs).into_iter().filter_map(Result::err).collect::<Vec<_>>().join("\n")
    });
    assert!(
        error.contains("worker 1 built it before its leave and worker 2 during the leave"),
        "expected the run to stop naming both workers, got: {error:?}"
    );
}
