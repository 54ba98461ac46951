//! Keyed state across joins: processes join a running cluster (threads of this test on
//! loopback, as in the engine's rescaling tests), receive the routing state of the keyed
//! operators from the workers that were there, take part in feeding records, and get bins
//! when the controller (worker 0) rebalances. Word count and a keyed running sum with
//! notifications must equal sequential references computed from every record sent.

use crate::common::{self, counts_reference, keyed_sum, sums_reference, within, Rng};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use timely_engine::dataflow::operators::Captured;
use timely_engine::dataflow::{InputHandle, ProbeHandle, Stream};
use timely_engine::Worker;
use timely_megaphone::{Bins, Command, Control, Controller, RoutingTable, StateMachine, Strategy};

/// The longest a run may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(180);

/// One run: `initial` processes of `threads` workers for `rounds` rounds; process
/// `initial + k` joins after round `joins[k]`.
#[derive(Clone)]
struct Plan {
    initial: usize,
    threads: usize,
    rounds: u64,
    joins: Vec<u64>,
    moves: Moves,
    bins: Bins,
    seed: u64,
}

/// Who moves bins.
#[derive(Clone, Copy)]
enum Moves {
    /// After each join, worker 0 rebalances with the strategy.
    Rebalance(Strategy),
    /// Each round one of the initial workers (in turn) moves a few random bins to random
    /// workers it knows, whether or not it has seen a join yet.
    Random,
}

impl Moves {
    fn strategy(self) -> Option<Strategy> {
        match self {
            Moves::Rebalance(strategy) => Some(strategy),
            Moves::Random => None,
        }
    }
}

/// What a run observed.
#[derive(Default)]
struct Observed {
    /// Every record sent: `(time, key, value)`.
    sent: Vec<(u64, u64, u64)>,
    /// The commands the controller sent: `(time, command)`.
    commands: Vec<(u64, Command)>,
}

/// The outputs of the two keyed operators, captured on every worker.
#[derive(Clone)]
struct Outputs {
    counts: Captured<u64, (u64, u64)>,
    sums: Captured<u64, (u64, u64, usize)>,
}

/// Runs `plan`; returns what was sent and the captured outputs.
fn run(plan: &Plan) -> (Observed, Outputs) {
    let addresses = common::free_addresses(plan.initial + plan.joins.len());
    let observed = Arc::new(Mutex::new(Observed::default()));
    let outputs = Outputs { counts: Captured::new(), sums: Captured::new() };
    let counters = Arc::new(Counters::default());
    let program = {
        let (plan, observed, outputs, counters) =
            (plan.clone(), observed.clone(), outputs.clone(), counters.clone());
        move |worker: &mut Worker| drive(worker, &plan, &observed, &outputs, &counters)
    };
    let config =
        |process, join| common::cluster_config(&addresses, process, plan.initial, plan.threads, join);
    let mut runs: Vec<_> = (0..plan.initial)
        .map(|process| {
            let (config, program) = (config(process, None), program.clone());
            std::thread::spawn(move || timely_engine::execute(config, program))
        })
        .collect();
    for k in 0..plan.joins.len() {
        // One process joins at a time: the next waits for the previous one's bootstrap.
        let deadline = Instant::now() + Duration::from_secs(60);
        while counters.reached.load(Ordering::SeqCst) < plan.initial * plan.threads * (k + 1)
            || counters.bootstrapped.load(Ordering::SeqCst) < k * plan.threads
        {
            assert!(Instant::now() < deadline, "the cluster did not reach join {k}");
            std::thread::sleep(Duration::from_millis(5));
        }
        let (config, program) = (config(plan.initial + k, Some(k % plan.threads)), program.clone());
        runs.push(std::thread::spawn(move || timely_engine::execute(config, program)));
    }
    for run in runs {
        run.join().expect("process thread").expect("process run");
    }
    let observed = std::mem::take(&mut *observed.lock().unwrap());
    (observed, outputs)
}

/// Where the workers are.
#[derive(Default)]
struct Counters {
    /// Initial workers that reached a join's round (each counts once per join).
    reached: AtomicUsize,
    /// Joined workers whose bootstrap is complete.
    bootstrapped: AtomicUsize,
}

/// The program of every worker: builds word count and the keyed sum, feeds 20 records each
/// round and moves bins. With `Moves::Rebalance`, the initial workers wait at each join's
/// round until they see the join, and worker 0 then rebalances. With `Moves::Random`, nobody
/// waits: every worker runs on until every joined worker has bootstrapped and 12 more rounds
/// have passed, pausing a little each round so that the joins happen while records flow.
fn drive(
    worker: &mut Worker,
    plan: &Plan,
    observed: &Mutex<Observed>,
    outputs: &Outputs,
    counters: &Counters,
) {
    let index = worker.index();
    let mut data: InputHandle<u64, (u64, u64)> = InputHandle::new();
    let mut control: InputHandle<u64, Command> = InputHandle::new();
    let probe = ProbeHandle::new();
    let bins = plan.bins;
    worker.dataflow(|scope| {
        let commands = scope.input_from(&mut control);
        let control = Control::new(&commands).with_bins(bins);
        let words: Stream<u64, (u64, u64)> = scope.input_from(&mut data);
        let counts =
            words.state_machine(&control.clone().named("Counts"), |word: &u64, _: u64, count: &mut u64| {
                *count += 1;
                (false, Some((*word, *count)))
            });
        counts.probe_with(&probe).capture_into(&outputs.counts);
        keyed_sum(&words, &control.named("Sums"), index, 2).probe_with(&probe).capture_into(&outputs.sums);
    });
    let joined = worker.bootstrap();
    // Worker 0 plans the rebalances; random moves go out at once.
    let mut controller =
        Controller::new(RoutingTable::round_robin(bins, plan.initial * plan.threads).unwrap());
    if joined {
        counters.bootstrapped.fetch_add(1, Ordering::SeqCst);
    }
    let random = matches!(plan.moves, Moves::Random);
    let joiners = plan.joins.len() * plan.threads;
    let (mut round, mut last) = (*data.time(), plan.rounds);
    while round < last {
        let mut rng = Rng::new(plan.seed ^ (round << 8) ^ index as u64);
        let records: Vec<(u64, u64, u64)> = (0..20).map(|_| (round, rng.below(50), rng.below(100))).collect();
        records.iter().for_each(|&(_, key, value)| data.send((key, value)));
        observed.lock().unwrap().sent.extend(records);
        let mut moves = controller.due(round);
        if random && !joined && round as usize % (plan.initial * plan.threads) == index {
            moves = random_moves(&mut rng, bins, worker.peers());
        }
        observed.lock().unwrap().commands.extend(moves.iter().map(|&command| (round, command)));
        moves.into_iter().for_each(|command| control.send(command));
        data.advance_to(round + 1);
        control.advance_to(round + 1);
        worker.step_while(|| probe.less_than(&(round + 1)));
        if let Some(k) = plan.joins.iter().position(|&after| after == round).filter(|_| !joined) {
            counters.reached.fetch_add(1, Ordering::SeqCst);
            if let Some(strategy) = plan.moves.strategy() {
                await_peers(worker, (plan.initial + k + 1) * plan.threads);
                if index == 0 {
                    controller.rebalance(0..worker.peers(), strategy, round + 2).unwrap();
                }
            }
        }
        if random {
            std::thread::sleep(Duration::from_millis(2));
            if counters.bootstrapped.load(Ordering::SeqCst) < joiners {
                last = last.max(round + 13);
            }
        }
        round += 1;
    }
    assert!(controller.is_idle(), "worker 0 planned moves after the last round");
    data.close();
    control.close();
    worker.step_while(|| !probe.done());
}

/// One to three moves of distinct bins to workers below `peers`.
fn random_moves(rng: &mut Rng, bins: Bins, peers: usize) -> Vec<Command> {
    let chosen: BTreeSet<usize> =
        (0..1 + rng.below(3)).map(|_| rng.below(bins.count() as u64) as usize).collect();
    let to = |rng: &mut Rng| rng.below(peers as u64) as usize;
    chosen.into_iter().map(|bin| Command::Move { bin, worker: to(rng) }).collect()
}

/// Steps `worker` until the cluster has `peers` workers.
fn await_peers(worker: &mut Worker, peers: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while worker.peers() < peers {
        assert!(Instant::now() < deadline, "worker {}: no join within 60 s", worker.index());
        worker.step();
    }
}

/// Runs `plan` and checks both operators' outputs against sequential references, that the
/// moves happened, and that joined workers got keyed records only once they owned bins.
fn check(plan: Plan) {
    let (observed, outputs) = within(LIMIT, {
        let plan = plan.clone();
        move || run(&plan)
    });
    assert!(!observed.commands.is_empty(), "the controller planned no moves");
    let mut sent = observed.sent.clone();
    sent.sort();
    let counts = outputs.counts.extract();
    assert_eq!(counts, counts_reference(&sent), "word counts differ from the reference");
    let sums = outputs.sums.extract();
    let without: Vec<_> = sums.iter().map(|&(time, (key, sum, _))| (time, (key, sum))).collect();
    assert_eq!(without, sums_reference(&sent, 2), "keyed sums differ from the reference");
    // Joined workers report sums (they own bins), never before their first bin arrived.
    let initial_peers = plan.initial * plan.threads;
    let first_move_in = |worker: usize| {
        observed
            .commands
            .iter()
            .filter(|(_, Command::Move { worker: to, .. })| *to == worker)
            .map(|(t, _)| *t)
            .min()
    };
    let reporters: BTreeSet<usize> = sums.iter().map(|&(_, (_, _, worker))| worker).collect();
    let joined_workers = initial_peers..(plan.initial + plan.joins.len()) * plan.threads;
    // Rebalancing gives every joined worker bins; random moves may pass one by.
    let reported = joined_workers.clone().filter(|joined| reporters.contains(joined)).count();
    match plan.moves {
        Moves::Rebalance(_) => {
            assert_eq!(reported, joined_workers.len(), "joined workers reported: {reporters:?}")
        }
        Moves::Random => assert!(reported > 0, "no joined worker reported: {reporters:?}"),
    }
    for joined in joined_workers {
        let first = first_move_in(joined).unwrap_or(u64::MAX);
        let early = sums.iter().find(|&&(time, (_, _, worker))| worker == joined && time < first);
        assert!(early.is_none(), "worker {joined} reported {early:?} before its first bin came at {first}");
    }
}

#[test]
fn a_joined_process_gets_bins_and_results_stay_exact() {
    check(Plan {
        initial: 2,
        threads: 1,
        rounds: 14,
        joins: vec![4],
        moves: Moves::Rebalance(Strategy::AllAtOnce),
        bins: Bins::new(16).unwrap(),
        seed: 1,
    });
}

#[test]
fn two_joins_of_two_workers_with_each_strategy() {
    for (seed, strategy) in
        [(2, Strategy::AllAtOnce), (3, Strategy::Fluid), (4, Strategy::Batched { per_worker: 2 })]
    {
        check(Plan {
            initial: 2,
            threads: 2,
            rounds: 30,
            joins: vec![3, 12],
            moves: Moves::Rebalance(strategy),
            bins: Bins::new(32).unwrap(),
            seed,
        });
    }
}

/// Moves sent by workers that have not seen a join yet reach the joined workers only through
/// the routing state the others hand over: results must stay exact all the same.
/// `MEGAPHONE_JOIN_SEEDS=N` runs N seeds (default 4).
#[test]
fn random_moves_from_every_worker_while_processes_join() {
    let seeds: u64 = std::env::var("MEGAPHONE_JOIN_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(4);
    for seed in 10..10 + seeds {
        check(Plan {
            initial: 2,
            threads: 2,
            rounds: 40,
            // Every third seed: the second process joins as soon as the first has bootstrapped,
            // maybe before it has assembled its routing state (its part then carries no table).
            joins: if seed % 3 == 0 { vec![3, 4] } else { vec![2 + seed % 5, 15 + seed % 7] },
            moves: Moves::Random,
            bins: Bins::new(16).unwrap(),
            seed,
        });
    }
}
