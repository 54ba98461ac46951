//! Dataflows across processes on loopback: each "process" of a cluster is a thread of this
//! test running `timely_engine::execute` with its own `Config::Cluster` (free loopback
//! ports, a shared secret), as in `crates/communication/tests/suite/cluster.rs`. Results are
//! compared with the same dataflow in one process.

use crate::common;

use std::fmt::Debug;
use std::time::Duration;
use timely_communication::initialize::ClusterConfig;
use timely_communication::networking::{ClockSync, ClusterIdentity, Liveness};
use timely_engine::dataflow::operators::{hash_of, Captured};
use timely_engine::dataflow::plain::Plain;
use timely_engine::dataflow::{Abomonated, InputHandle, Scope, Stream};
use timely_engine::{Config, Worker};

const LIMIT: Duration = Duration::from_secs(60);

/// Runs `func` on every worker of `processes` processes of `threads` workers each (one
/// process: `Config::Process`); returns the results of all workers of all processes.
fn run<R, F>(processes: usize, threads: usize, func: F) -> Vec<R>
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
