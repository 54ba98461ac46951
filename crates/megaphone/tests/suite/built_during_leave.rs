//! Keyed operators built while a process leaves (`docs/rescaling.md`, "Dataflows built during
//! a leave"): the workers that stay build a dataflow with word count and the keyed running sum
//! after the leave's notice and before the leaver went, and the leaver builds it too or never
//! does. Either way the dataflow completes and both operators equal sequential references over
//! every record fed, with moves from every stayer in turn, some of them to a leaver (the
//! operator overrides those). The leaver is held in its leave (an operator of its first
//! dataflow keeps its capability) until every other worker has built the new dataflow, so the
//! build always falls inside the leave.

use crate::common::{self, counts_reference, keyed_sum, sums_reference, within, Rng};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use timely_engine::dataflow::operators::Captured;
use timely_engine::dataflow::{InputHandle, ProbeHandle, Stream};
use timely_engine::Worker;
use timely_megaphone::{Bins, Command, Control, StateMachine};

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

/// The inputs and probe of the keyed dataflow on one worker.
struct Keyed {
    data: InputHandle<u64, (u64, u64)>,
    control: InputHandle<u64, Command>,
    probe: ProbeHandle<u64>,
}

/// Builds word count and the keyed sum on `worker`, their outputs captured.
fn build_keyed(
    worker: &mut Worker,
    bins: Bins,
    counts: &Captured<u64, (u64, u64)>,
    sums: &Captured<u64, (u64, u64, usize)>,
) -> Keyed {
    let (mut data, mut control) = (InputHandle::new(), InputHandle::new());
    let probe = ProbeHandle::new();
    let index = worker.index();
    worker.dataflow(|scope| {
        let control = Control::new(&scope.input_from(&mut control)).with_bins(bins);
        let words: Stream<u64, (u64, u64)> = scope.input_from(&mut data);
        words
            .state_machine(&control.clone().named("Words"), |word: &u64, _: u64, n: &mut u64| {
                *n += 1;
                (false, Some((*word, *n)))
            })
            .probe_with(&probe)
            .capture_into(counts);
        keyed_sum(&words, &control.named("Sums"), index, 2).probe_with(&probe).capture_into(sums);
    });
    Keyed { data, control, probe }
}

/// Word count's outputs: `(time, (key, count))`.
type Counts = Vec<(u64, (u64, u64))>;

/// The keyed sum's outputs: `(time, (key, sum, worker))`.
type Sums = Vec<(u64, (u64, u64, usize))>;

/// One run: `processes` processes of `threads` workers; process `leaver` leaves, and builds
/// the keyed dataflow during its leave when `leaver_builds`; each stayer waits up to `delay`
/// steps (a random number) after the notice before it builds, then feeds `rounds` rounds.
#[derive(Clone, Copy, Debug)]
struct Plan {
    processes: usize,
    threads: usize,
    leaver: usize,
    leaver_builds: bool,
    delay: u64,
    rounds: u64,
    bins: usize,
    seed: u64,
}

impl Plan {
    /// Three processes; process 1 leaves.
    fn fixed(threads: usize, leaver_builds: bool, seed: u64) -> Self {
        Plan { processes: 3, threads, leaver: 1, leaver_builds, delay: 0, rounds: 8, bins: 16, seed }
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
            rounds: 2 + rng.below(10),
            bins: 4 << rng.below(4),
            seed,
        }
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
    // Stayers that have built the keyed dataflow; the leaver is held until all have.
    let built = Arc::new(AtomicUsize::new(0));
    let stayers = (processes - 1) * threads;
    let program = {
        let (observed, counts, sums) = (observed.clone(), counts.clone(), sums.clone());
        move |worker: &mut Worker| {
            let index = worker.index();
            let leaves_now = index / threads == leaver;
            let released = built.clone();
            worker.dataflow::<u64, _>(|scope| {
                scope.source::<u64, _, _>("Hold", move |capability, info| {
                    let mut held = Some(capability);
                    move |_output| {
                        if !leaves_now || released.load(Ordering::SeqCst) == stayers {
                            held = None;
                        } else if held.is_some() {
                            info.activator.activate();
                        }
                    }
                });
            });
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
                    let mut keyed = build_keyed(worker, bins, &counts, &sums);
                    // Released by the leave: it refuses records and holds no capability.
                    assert!(keyed.data.try_send((1, 1)).is_err());
                    keyed.control.close();
                }
                return;
            }
            while leaves.leaving().is_empty() {
                worker.step();
            }
            (0..rng.below(plan.delay + 1)).for_each(|_| _ = worker.step());
            observed.lock().unwrap().built_during.push((index, leaves.leaving()));
            let mut keyed = build_keyed(worker, bins, &counts, &sums);
            built.fetch_add(1, Ordering::SeqCst);
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
    let runs: Vec<_> = (0..processes)
        .map(|process| {
            let config = common::cluster_config(&addresses, process, processes, threads, None);
            let program = program.clone();
            std::thread::spawn(move || timely_engine::execute(config, program).map(|_| ()))
        })
        .collect();
    for (process, run) in runs.into_iter().enumerate() {
        run.join().expect("process thread").unwrap_or_else(|error| panic!("process {process}: {error}"));
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
        assert_eq!(leaving, &leavers, "worker {worker} built outside the leave");
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
        let runs: Vec<_> = (0..processes)
            .map(|process| {
                let config = common::cluster_config(&addresses, process, processes, 1, None);
                let program = program.clone();
                std::thread::spawn(move || timely_engine::execute(config, program).map(|_| ()))
            })
            .collect();
        let results: Vec<Result<(), String>> = runs
            .into_iter()
            .map(|run| run.join().expect("process thread").map_err(|e| e.to_string()))
            .collect();
        results.into_iter().filter_map(Result::err).collect::<Vec<_>>().join("\n")
    });
    assert!(
        error.contains("worker 1 built it before its leave and worker 2 during the leave"),
        "expected the run to stop naming both workers, got: {error:?}"
    );
}
