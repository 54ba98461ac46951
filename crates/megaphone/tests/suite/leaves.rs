//! Keyed state across leaves: a process leaves a running cluster (threads of this test on
//! loopback, as in `joins`), its bins move to the workers that stay, and word count and the
//! keyed running sum with notifications must equal sequential references computed from every
//! record sent, the leaver's included. Moves keep coming from every worker in turn, some of
//! them to the leaver after it left (the operator overrides those). Optionally a process joins
//! after the leave and feeds too.

use crate::common::{self, build_keyed, counts_reference, sums_reference, within, Keyed, Rng};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use timely_engine::dataflow::operators::Captured;
use timely_engine::Worker;
use timely_megaphone::{Bins, Command};

/// The longest a run may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(180);

/// One run: `processes` processes of `threads` workers for at least `rounds` rounds; process
/// `leaver` leaves at round `leave_at`; with `rejoin`, a process joins once it has gone.
#[derive(Clone, Copy, Debug)]
struct Plan {
    processes: usize,
    threads: usize,
    rounds: u64,
    leaver: usize,
    leave_at: u64,
    rejoin: bool,
    bins: usize,
    seed: u64,
}

/// What a run observed: every record sent `(time, key, value)`, and the outputs.
struct Observed {
    sent: Vec<(u64, u64, u64)>,
    outputs: Outputs,
}

/// The outputs of word count and the keyed sum, captured on every worker.
#[derive(Clone)]
struct Outputs {
    counts: Captured<u64, (u64, u64)>,
    sums: Captured<u64, (u64, u64, usize)>,
}

/// Runs `plan` and returns what it observed.
fn run(plan: Plan) -> Observed {
    let addresses = common::free_addresses(plan.processes + usize::from(plan.rejoin));
    let sent: Arc<Mutex<Vec<(u64, u64, u64)>>> = Arc::default();
    let outputs = Outputs { counts: Captured::new(), sums: Captured::new() };
    let (departed, joined) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let program = {
        let (sent, outputs) = (sent.clone(), outputs.clone());
        let (departed, joined) = (departed.clone(), joined.clone());
        move |worker: &mut Worker| drive(worker, plan, &sent, &outputs, (&departed, &joined))
    };
    let config =
        |process, join| common::cluster_config(&addresses, process, plan.processes, plan.threads, join);
    let mut runs: Vec<_> = (0..plan.processes)
        .map(|process| {
            let (config, program) = (config(process, None), program.clone());
            std::thread::spawn(move || timely_engine::execute(config, program).map(|_| ()))
        })
        .collect();
    if plan.rejoin {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !departed.load(Ordering::SeqCst) {
            assert!(Instant::now() < deadline, "the leaver did not go");
            std::thread::sleep(Duration::from_millis(5));
        }
        let server = usize::from(plan.leaver == 0) * plan.threads;
        let mut joining = config(plan.processes, Some(server));
        if let timely_communication::Config::Cluster(cluster) = &mut joining {
            cluster.gone = vec![plan.leaver];
        }
        runs.push(std::thread::spawn(move || timely_engine::execute(joining, program).map(|_| ())));
    }
    for (process, run) in runs.into_iter().enumerate() {
        run.join().expect("process thread").unwrap_or_else(|error| panic!("process {process}: {error}"));
    }
    let sent = std::mem::take(&mut *sent.lock().unwrap());
    Observed { sent, outputs }
}

/// The program of every worker: word count and the keyed sum; each round 20 records and, from
/// one worker in turn, a few random moves. The leaving process's first worker calls
/// `leave()` at the leave's round; its workers then close their inputs and return. The others
/// go on until the leaver has gone (and, with `rejoin`, the joined process has fed for a few
/// rounds) and `rounds` have passed.
fn drive(
    worker: &mut Worker,
    plan: Plan,
    sent: &Mutex<Vec<(u64, u64, u64)>>,
    outputs: &Outputs,
    (departed, joined): (&AtomicBool, &AtomicBool),
) {
    let index = worker.index();
    let bins = Bins::new(plan.bins).unwrap();
    let Keyed { mut data, mut control, probe } = build_keyed(worker, bins, &outputs.counts, &outputs.sums);
    let joiner = worker.bootstrap();
    if joiner {
        joined.store(true, Ordering::SeqCst);
    }
    let leaves = !joiner && index / plan.threads == plan.leaver;
    let (mut round, mut after_join) = (*data.time(), 0);
    loop {
        if leaves && index.is_multiple_of(plan.threads) && round == plan.leave_at {
            worker.leave().expect("keyed operators hand their bins over");
        }
        if worker.is_leaving() {
            data.close();
            control.close();
            return;
        }
        if worker.state().rescaling().leaves().departed().len() == plan.threads {
            departed.store(true, Ordering::SeqCst);
        }
        let done = departed.load(Ordering::SeqCst) && (!plan.rejoin || after_join > 6);
        if done && round >= plan.rounds {
            break;
        }
        after_join += usize::from(joined.load(Ordering::SeqCst));
        let mut rng = Rng::new(plan.seed ^ (round << 8) ^ index as u64);
        let records: Vec<(u64, u64, u64)> = (0..20).map(|_| (round, rng.below(50), rng.below(100))).collect();
        records.iter().for_each(|&(_, key, value)| data.send((key, value)));
        sent.lock().unwrap().extend(records);
        // The initial workers move bins in turn (a leaver's turns pass once it left).
        if round as usize % (plan.processes * plan.threads) == index && !joiner {
            // Any worker index in use, the leaver's included (moves to it are overridden); once
            // a process joined, its workers only.
            let initial = plan.processes * plan.threads;
            let targets: Vec<usize> = if worker.peers() > initial {
                (initial..worker.peers()).collect()
            } else {
                (0..initial).collect()
            };
            random_moves(&mut rng, bins, &targets).into_iter().for_each(|command| control.send(command));
        }
        round += 1;
        data.advance_to(round);
        control.advance_to(round);
        worker.step_while(|| probe.less_than(&round));
        std::thread::sleep(Duration::from_millis(2));
    }
    data.close();
    control.close();
    worker.step_while(|| !probe.done());
}

/// One to three moves of distinct bins to workers among `targets`.
fn random_moves(rng: &mut Rng, bins: Bins, targets: &[usize]) -> Vec<Command> {
    let chosen: BTreeSet<usize> =
        (0..1 + rng.below(3)).map(|_| rng.below(bins.count() as u64) as usize).collect();
    let to = |rng: &mut Rng| targets[rng.below(targets.len() as u64) as usize];
    chosen.into_iter().map(|bin| Command::Move { bin, worker: to(rng) }).collect()
}

/// Runs `plan` and checks both operators' outputs against sequential references; returns
/// the workers that reported sums.
fn check(plan: Plan) -> BTreeSet<usize> {
    let observed = within(LIMIT, move || run(plan));
    let mut sent = observed.sent.clone();
    sent.sort();
    assert!(sent.iter().any(|&(time, ..)| time >= plan.leave_at + 3), "the run ended at the leave");
    assert_eq!(
        observed.outputs.counts.extract(),
        counts_reference(&sent),
        "word counts differ from the reference"
    );
    let sums = observed.outputs.sums.extract();
    let without: Vec<_> = sums.iter().map(|&(time, (key, sum, _))| (time, (key, sum))).collect();
    assert_eq!(without, sums_reference(&sent, 2), "keyed sums differ from the reference");
    let leavers = plan.leaver * plan.threads..(plan.leaver + 1) * plan.threads;
    let late =
        sums.iter().find(|&&(time, (_, _, worker))| leavers.contains(&worker) && time > plan.leave_at + 10);
    assert!(late.is_none(), "a leaver reported {late:?} long after it left");
    if plan.rejoin {
        let joined = plan.processes * plan.threads;
        assert!(sums.iter().any(|&(_, (_, _, worker))| worker >= joined), "the joined process got no bin");
    }
    sums.iter().map(|&(_, (_, _, worker))| worker).collect()
}

#[test]
fn the_last_process_leaves_and_its_bins_move() {
    let reporters = check(Plan {
        processes: 3,
        threads: 1,
        rounds: 16,
        leaver: 2,
        leave_at: 6,
        rejoin: false,
        bins: 16,
        seed: 1,
    });
    assert!(reporters.contains(&2), "the leaver held no bin before it left");
}

#[test]
fn process_0_of_two_workers_each_leaves() {
    let reporters = check(Plan {
        processes: 2,
        threads: 2,
        rounds: 16,
        leaver: 0,
        leave_at: 5,
        rejoin: false,
        bins: 32,
        seed: 2,
    });
    assert!(reporters.contains(&0) && reporters.contains(&1), "the leavers held no bin before they left");
}

#[test]
fn a_process_joins_after_another_left_and_gets_bins() {
    check(Plan {
        processes: 2,
        threads: 1,
        rounds: 20,
        leaver: 1,
        leave_at: 3,
        rejoin: true,
        bins: 16,
        seed: 3,
    });
}

/// Random plans: 2 or 3 processes of 1 or 2 workers, any process leaving at a random round,
/// half of them followed by a join. `MEGAPHONE_LEAVE_SEEDS=N` runs N seeds (default 6).
#[test]
fn random_leaves_and_rejoins() {
    let seeds: u64 = std::env::var("MEGAPHONE_LEAVE_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    for seed in 100..100 + seeds {
        let mut rng = Rng::new(seed);
        let processes = 2 + rng.below(2) as usize;
        let plan = Plan {
            processes,
            threads: 1 + rng.below(2) as usize,
            rounds: 12 + rng.below(8),
            leaver: rng.below(processes as u64) as usize,
            leave_at: 1 + rng.below(6),
            rejoin: rng.below(2) == 1,
            bins: 8 << rng.below(3),
            seed,
        };
        eprintln!("seed {seed}: {plan:?}");
        check(plan);
    }
}
