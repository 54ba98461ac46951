//! Processes joining a running cluster (`docs/rescaling.md`), on loopback: each "process" is a
//! thread of this test running `timely_engine::execute` with its own `Config::Cluster`; the
//! joining one has `join: Some(server)`.

#[path = "../../communication/tests/common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use timely_communication::initialize::ClusterConfig;
use timely_communication::networking::{ClockSync, ClusterIdentity, Liveness};
use timely_engine::dataflow::{InputHandle, ProbeHandle};
use timely_engine::{Config, Worker};

/// The configuration of process `process` of a cluster that starts with `initial` processes
/// and has `processes` after the joins so far (`join`: this process joins, served by it).
fn config(
    addresses: &[String],
    process: usize,
    initial: usize,
    threads: usize,
    join: Option<usize>,
) -> Config {
    Config::Cluster(ClusterConfig {
        threads,
        process,
        processes: if join.is_some() { process + 1 } else { initial },
        initial_processes: initial,
        join,
        addresses: addresses.to_vec(),
        identity: ClusterIdentity { cluster_id: 21, secret: b"rescaling test".to_vec() },
        connect_timeout: Duration::from_secs(20),
        liveness: Liveness::default(),
        clock: ClockSync::default(),
        insecure: false,
        frames: None,
    })
}

/// Steps `worker` until the cluster has `peers` workers.
fn await_peers(worker: &mut Worker, peers: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while worker.peers() < peers {
        assert!(Instant::now() < deadline, "worker {}: no join within 30 s", worker.index());
        worker.step();
    }
}

/// The seed's section 4.1.1: records go to `x mod 2` before the join, to `x mod 3` after it;
/// the joined worker sees its share, and every record is seen exactly once.
#[test]
fn a_third_process_joins_a_running_hello() {
    let addresses = common::free_addresses(3);
    let seen: Arc<Mutex<Vec<(usize, u64)>>> = Arc::default();
    let halfway = Arc::new(AtomicUsize::new(0));
    let program = {
        let (seen, halfway) = (seen.clone(), halfway.clone());
        move |worker: &mut Worker| {
            let index = worker.index();
            let mut input = InputHandle::new();
            let probe = ProbeHandle::new();
            let log = seen.clone();
            worker.dataflow(|scope| {
                scope
                    .input_from(&mut input)
                    .exchange(|x: &u64| *x)
                    .inspect(move |x| log.lock().unwrap().push((index, *x)))
                    .probe_with(&probe);
            });
            if worker.bootstrap() {
                return;
            }
            for round in 0..10u64 {
                if index == 0 {
                    input.send(round);
                }
                input.advance_to(round + 1);
                worker.step_while(|| probe.less_than(input.time()));
                if round == 4 {
                    halfway.fetch_add(1, Ordering::SeqCst);
                    await_peers(worker, 3);
                }
            }
        }
    };
    let runs: Vec<_> = (0..2)
        .map(|process| {
            let (config, program) = (config(&addresses, process, 2, 1, None), program.clone());
            std::thread::spawn(move || timely_engine::execute(config, program))
        })
        .collect();
    while halfway.load(Ordering::SeqCst) < 2 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let joiner = {
        let config = config(&addresses, 2, 2, 1, Some(0));
        std::thread::spawn(move || timely_engine::execute(config, program))
    };
    for run in runs.into_iter().chain([joiner]) {
        run.join().expect("process thread").expect("process run");
    }
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by_key(|&(_, x)| x);
    let expected: Vec<(usize, u64)> =
        (0..10u64).map(|x| (if x < 5 { x % 2 } else { x % 3 } as usize, x)).collect();
    assert_eq!(seen, expected);
}
