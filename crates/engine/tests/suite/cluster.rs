//! Dataflows across processes on loopback: each "process" of a cluster is a thread of this
//! test running `timely_engine::execute` with its own `Config::Cluster` (free loopback
//! ports, a shared secret), as in `crates/communication/tests/suite/cluster.rs`. Results are
//! compared with the same dataflow in one process.

use crate::common;

use std::fmt::Debug;
use std::time::Duration;
use timely_communication::initialize::ClusterConfig;
use timely_communication::networking::{ClockSync, ClusterIdentity, Liveness, ReceiveBudget};
use timely_engine::dataflow::operators::{hash_of, Captured};
use timely_engine::dataflow::plain::Plain;
use timely_engine::dataflow::{Abomonated, InputHandle, Scope, Stream};
use timely_engine::{Config, Product, Worker};

const LIMIT: Duration = Duration::from_secs(60);

/// Runs `func` on every worker of `processes` processes of `threads` workers each (one
/// process: `Config::Process`); returns the results of all workers of all processes.
fn run<R, F>(processes: usize, threads: usize, func: F) -> Vec<R>
where
    R: Send + 'static,
    F: Fn(&mut Worker) -> R + Send + Sync + Clone + 'static,
{
    run_with_budget(processes, threads, ReceiveBudget::default(), func)
}

/// [`run`], with `receive_budget` for every process of a cluster.
fn run_with_budget<R, F>(processes: usize, threads: usize, receive_budget: ReceiveBudget, func: F) -> Vec<R>
where
    R: Send + 'static,
    F: Fn(&mut Worker) -> R + Send + Sync + Clone + 'static,
{
    if processes == 1 {
        return timely_engine::execute(Config::Process(threads), func).expect("one process");
    }
    let addresses = common::free_addresses(processes);
    let runs: Vec<_> = (0..processes)
        .map(|process| {
            let config = Config::Cluster(ClusterConfig {
                threads,
                process,
                processes,
                initial_processes: processes,
                join: None,
                gone: Vec::new(),
                addresses: addresses.clone(),
                identity: ClusterIdentity {
                    cluster_id: 11,
                    secret: b"engine test".to_vec(),
                    ..ClusterIdentity::default()
                },
                connect_timeout: Duration::from_secs(20),
                liveness: Liveness::default(),
                clock: ClockSync::default(),
                insecure: false,
                frames: None,
                receive_budget: receive_budget.clone(),
            });
            let func = func.clone();
            std::thread::spawn(move || timely_engine::execute(config, func))
        })
        .collect();
    runs.into_iter()
        .enumerate()
        .flat_map(|(process, run)| {
            run.join().expect("process thread").unwrap_or_else(|e| panic!("process {process}: {e}"))
        })
        .collect()
}

/// The `(time, (worker index, record))`s that reach the end of the stream `build` makes
/// from an input, on `processes` x `threads` workers, each worker sending
/// `records(index, peers)`.
fn routed<I, D, F, G>(processes: usize, threads: usize, records: G, build: F) -> Vec<(u64, (usize, D))>
where
    I: timely_engine::dataflow::Data,
    D: timely_engine::dataflow::ExchangeData + Ord + Debug,
    F: Fn(&Scope<u64>, &mut InputHandle<u64, I>) -> Stream<u64, D> + Send + Sync + Clone + 'static,
    G: Fn(usize, usize) -> Vec<(u64, I)> + Send + Sync + Clone + 'static,
{
    let captured = Captured::new();
    let shared = captured.clone();
    run(processes, threads, move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let mut input = InputHandle::new();
        worker.dataflow(|scope| {
            build(scope, &mut input).map(move |record| (index, record)).capture_into(&shared);
        });
        for (time, record) in records(index, peers) {
            input.advance_to(time);
            input.send(record);
        }
    });
    captured.extract()
}

/// Records of the given type sent through `exchange` to all workers of 2 processes x 2
/// workers arrive once each, equal to what was sent, at the worker the hash names.
fn abomonated_round_trip<T: Plain + Ord + Debug + Sync + std::hash::Hash>(make: fn(u64) -> T) {
    const PER_WORKER: u64 = 50;
    let sent = move |index: usize, _peers: usize| {
        (0..PER_WORKER).map(|i| (i / 10, Abomonated(make(index as u64 * 1000 + i)))).collect::<Vec<_>>()
    };
    let hash = |record: &Abomonated<T>| hash_of(&record.0);
    let received = common::within(LIMIT, move || {
        routed(2, 2, sent, move |scope, input| scope.input_from(input).exchange(hash))
    });
    // (time, (target worker, record)) for every record sent, and how many cross processes.
    let mut expected = Vec::new();
    let mut crossing = 0;
    for sender in 0..4 {
        for (time, record) in sent(sender, 4) {
            let target = (hash(&record) % 4) as usize;
            crossing += usize::from(target / 2 != sender / 2);
            expected.push((time, (target, record)));
        }
    }
    expected.sort();
    assert!(crossing > 0, "no record crosses processes");
    assert_eq!(received, expected);
}

#[test]
fn abomonated_records_cross_processes() {
    abomonated_round_trip(|n| n);
    abomonated_round_trip(|n| (n, n * n));
    abomonated_round_trip(|n| (0..n % 7).map(|i| i * n).collect::<Vec<u64>>());
    abomonated_round_trip(|n| "é".repeat((n % 5) as usize) + &n.to_string());
}

/// The seed's hello: in round `r` worker `r % peers` sends `r`, exchanged by value, so to
/// itself; what crosses processes is progress (no worker's round ends before every
/// worker's has).
fn hello(processes: usize, threads: usize) -> Vec<(u64, (usize, u64))> {
    const ROUNDS: u64 = 200;
    let records = |index: usize, peers: usize| {
        (0..ROUNDS)
            .filter(|round| round % peers as u64 == index as u64)
            .map(|round| (round, round))
            .collect::<Vec<_>>()
    };
    routed(processes, threads, records, |scope, input| scope.input_from(input).exchange(|x: &u64| *x))
}

#[test]
fn hello_on_two_processes_equals_one_process() {
    let cluster = common::within(LIMIT, || hello(2, 2));
    let reference = hello(1, 4);
    assert_eq!(cluster.len(), 200);
    assert_eq!(cluster, reference);
}

/// Word counts per epoch (`count_by_key` exchanges words by hash) of lines dealt to the
/// workers round-robin.
fn word_count(processes: usize, threads: usize) -> Vec<(u64, (String, u64))> {
    const WORDS: &[&str] = &["timely", "data", "flow", "worker", "exchange", "progress", "é"];
    let lines = |index: usize, peers: usize| {
        let mut lines = Vec::new();
        for epoch in 0..5u64 {
            for line in (0..40u64).filter(|line| line % peers as u64 == index as u64) {
                let words: Vec<&str> =
                    (0..6).map(|i| WORDS[((line * 7 + i * i + epoch) % 7) as usize]).collect();
                lines.push((epoch, words.join(" ")));
            }
        }
        lines
    };
    let counts = routed(processes, threads, lines, |scope, input| {
        scope
            .input_from(input)
            .flat_map(|line: String| line.split(' ').map(str::to_owned).collect::<Vec<_>>())
            .count_by_key()
    });
    let mut counts: Vec<_> = counts.into_iter().map(|(time, (_worker, count))| (time, count)).collect();
    counts.sort();
    counts
}

#[test]
fn word_count_on_two_processes_equals_one_process() {
    let cluster = common::within(LIMIT, || word_count(2, 2));
    let reference = word_count(1, 1);
    assert_eq!(reference.iter().map(|(_, (_, count))| count).sum::<u64>(), 5 * 40 * 6);
    assert_eq!(cluster, reference);
}

#[test]
fn broadcast_reaches_every_worker_of_every_process_once() {
    let records = |index: usize, _peers: usize| {
        (0..30u64).map(|i| (i / 10, index as u64 * 100 + i)).collect::<Vec<_>>()
    };
    let received = common::within(LIMIT, move || {
        routed(2, 2, records, |scope, input| scope.input_from(input).broadcast())
    });
    let mut expected: Vec<_> = (0..4)
        .flat_map(|sender| records(sender, 4))
        .flat_map(|(time, record)| (0..4).map(move |worker| (time, (worker, record))))
        .collect();
    expected.sort();
    assert_eq!(received, expected);
}

/// The number of Collatz steps from `x` to 1.
fn collatz_steps(mut x: u64) -> u64 {
    let mut steps = 0;
    while x != 1 {
        x = if x.is_multiple_of(2) { x / 2 } else { 3 * x + 1 };
        steps += 1;
    }
    steps
}

/// Every worker feeds its share of `1..=RANGE`; each record goes round a loop, exchanged by
/// its current value at every step (all-to-all between the processes), until it reaches 1.
fn collatz_in_a_loop(receive_budget: ReceiveBudget) -> Vec<(u64, u64)> {
    const RANGE: u64 = 3000;
    let results = run_with_budget(2, 2, receive_budget, |worker| {
        let captured: Captured<u64, (u64, u64)> = Captured::new();
        let shared = captured.clone();
        let mut input = InputHandle::new();
        worker.dataflow::<u64, _>(|scope| {
            let start = scope.input_from(&mut input).map(|x: u64| (x, x, 0u64));
            let done = scope.iterative::<u64, _>(|inner| {
                let (handle, cycle) = inner.feedback(Product::new(0, 1));
                let (more, finished) = start.enter(inner).concat(&cycle).branch(|_t, &(_, x, _)| x == 1);
                more.map(|(s, x, n)| (s, if x.is_multiple_of(2) { x / 2 } else { 3 * x + 1 }, n + 1))
                    .exchange(|&(_, x, _)| x)
                    .connect_loop(handle);
                finished.leave(scope)
            });
            done.map(|(s, _, n)| (s, n)).capture_into(&shared);
        });
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        for x in (1..=RANGE).filter(|x| x % peers == index) {
            input.send(x);
        }
        input.close();
        while worker.step() {}
        captured.extract().into_iter().map(|(_, record)| record).collect::<Vec<_>>()
    });
    let mut all: Vec<(u64, u64)> = results.into_iter().flatten().collect();
    all.sort_unstable();
    all
}

#[test]
fn a_loop_exchanging_across_processes_is_exact_when_every_message_spills() {
    common::within(LIMIT, || {
        let expected: Vec<(u64, u64)> = (1..=3000).map(|x| (x, collatz_steps(x))).collect();
        let spill_dir = tempfile::tempdir().expect("a spill directory");
        for bytes in [0, 4 << 10] {
            let budget = ReceiveBudget {
                bytes,
                spill_dir: spill_dir.path().to_path_buf(),
                ..ReceiveBudget::default()
            };
            assert_eq!(collatz_in_a_loop(budget), expected, "receive budget of {bytes} bytes");
        }
    });
}
