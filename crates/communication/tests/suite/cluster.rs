//! The cluster allocator on loopback: processes are simulated by threads, each running
//! `initialize` with its own `Config::Cluster`. Every worker sends to every worker, point to
//! point and by broadcast; the receiving side sees everything once, in order per sender; a
//! process whose run fails makes the others see it lost.

use crate::common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use timely_communication::networking::ClusterIdentity;
use timely_communication::{initialize, Allocator, Config, Push};

const POINT: usize = 3;
const BROADCAST: usize = 4;
const MESSAGES: usize = 200;
const LIMIT: Duration = Duration::from_secs(60);

fn cluster(process: usize, processes: usize, threads: usize, addresses: &[String]) -> Config {
    common::loopback_cluster(addresses, process, processes, threads, None)
}

/// Every worker sends `MESSAGES` numbered pairs to every worker and broadcasts as many
/// strings; returns, per channel and sender, what this worker received in arrival order.
fn exchange(mut allocator: Allocator) -> (usize, [BTreeMap<usize, Vec<usize>>; 2]) {
    let (index, peers) = (allocator.index(), allocator.peers());
    let (mut pushers, mut puller) = allocator.allocate::<(usize, usize)>(POINT);
    let (mut broadcast, mut broadcasts, _) = allocator.broadcast::<(usize, String)>(BROADCAST);
    assert_eq!(pushers.len(), peers);
    for seq in 0..MESSAGES {
        for pusher in pushers.iter_mut() {
            pusher.send((index, seq));
        }
        broadcast.send((index, format!("message {seq} from {index}")));
    }
    let mut received: [BTreeMap<usize, Vec<usize>>; 2] = Default::default();
    let expected = peers * MESSAGES;
    let start = Instant::now();
    while received.iter().map(|r| r.values().map(Vec::len).sum::<usize>()).sum::<usize>() < 2 * expected {
        assert!(start.elapsed() < LIMIT, "worker {index} is still waiting");
        assert_eq!(allocator.failure(), None);
        allocator.release();
        allocator.receive();
        allocator.events().borrow_mut().clear();
        while let Some((source, seq)) = puller.recv() {
            received[0].entry(source).or_default().push(seq);
        }
        while let Some((source, text)) = broadcasts.recv() {
            let seq = text.split(' ').nth(1).unwrap().parse().unwrap();
            assert_eq!(text, format!("message {seq} from {source}"));
            received[1].entry(source).or_default().push(seq);
        }
        allocator.await_events(Some(Duration::from_millis(50)));
    }
    (index, received)
}

fn run_cluster(processes: usize, threads: usize) {
    let addresses = common::free_addresses(processes);
    let runs: Vec<_> = (0..processes)
        .rev()
        .map(|process| {
            let config = cluster(process, processes, threads, &addresses);
            std::thread::spawn(move || initialize(config, exchange).expect("start").join())
        })
        .collect();
    let peers = processes * threads;
    let mut indices = Vec::new();
    for run in runs {
        for result in run.join().expect("process thread") {
            let (index, received) = result.expect("worker");
            indices.push(index);
            for channel in &received {
                assert_eq!(channel.len(), peers, "worker {index} heard from every worker");
                for (source, seqs) in channel {
                    assert_eq!(*seqs, (0..MESSAGES).collect::<Vec<_>>(), "worker {index} from {source}");
                }
            }
        }
    }
    indices.sort_unstable();
    assert_eq!(indices, (0..peers).collect::<Vec<_>>());
}

#[test]
fn two_processes_of_two_workers_exchange_everything() {
    common::within(LIMIT, || run_cluster(2, 2));
}

#[test]
fn three_processes_of_one_worker_exchange_everything() {
    common::within(LIMIT, || run_cluster(3, 1));
}

#[test]
fn a_failed_run_makes_the_other_process_see_it_lost() {
    common::within(LIMIT, || {
        let addresses = common::free_addresses(2);
        let failing = {
            let config = cluster(1, 2, 1, &addresses);
            std::thread::spawn(move || {
                initialize(config, |allocator| {
                    std::thread::sleep(Duration::from_millis(200));
                    allocator.fail();
                })
                .expect("start")
                .join()
            })
        };
        let config = cluster(0, 2, 1, &addresses);
        let survivor = initialize(config, |allocator| {
            let start = Instant::now();
            loop {
                allocator.await_events(Some(Duration::from_millis(100)));
                if let Some(failure) = allocator.failure() {
                    return (failure, start.elapsed());
                }
                assert!(start.elapsed() < Duration::from_secs(5), "the lost process went unnoticed");
            }
        })
        .expect("start")
        .join();
        failing.join().unwrap();
        let (failure, waited) = survivor.into_iter().next().unwrap().expect("worker");
        assert!(failure.contains("process 1"), "{failure}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
    });
}

#[test]
fn an_address_other_machines_can_reach_needs_a_secret_and_is_refused_before_binding() {
    let own = common::free_addresses(1).remove(0);
    // Held, so that a process that tried to listen would fail with "port is in use" instead.
    let _holder = std::net::TcpListener::bind(&own).expect("hold the port");
    let addresses = vec![own, "10.255.255.1:2102".to_string()];
    let unprotected = |process: usize| {
        let Config::Cluster(mut config) = cluster(process, 2, 1, &addresses) else { unreachable!() };
        config.identity = ClusterIdentity::default();
        Config::Cluster(config)
    };
    for process in [0, 1] {
        let started = Instant::now();
        let error = unprotected(process).try_build().err().expect("refused without a secret").to_string();
        assert!(started.elapsed() < Duration::from_secs(2), "refused at once, not after dialing");
        assert!(error.contains("refusing to start without a cluster secret"), "{error}");
        assert!(error.contains("10.255.255.1:2102") && !error.contains("in use"), "{error}");
        assert!(error.contains("TIMELY_CLUSTER_SECRET") && error.contains("--insecure"), "{error}");
    }
}

#[test]
fn a_message_too_large_to_send_becomes_the_network_s_failure_instead_of_vanishing() {
    use timely_communication::networking::MAX_MESSAGE_BYTES;
    common::within(LIMIT, || {
        let addresses = common::free_addresses(2);
        let receiver = {
            let config = cluster(1, 2, 1, &addresses);
            std::thread::spawn(move || {
                initialize(config, |mut allocator| drop(allocator.allocate::<Vec<u8>>(POINT)))
                    .expect("start")
                    .join()
            })
        };
        let config = cluster(0, 2, 1, &addresses);
        let sender = initialize(config, |mut allocator| {
            let (mut pushers, _puller) = allocator.allocate::<Vec<u8>>(POINT);
            assert!(allocator.failure().is_none());
            pushers[1].push(&mut Some(vec![7u8; MAX_MESSAGE_BYTES + 1]));
            pushers[1].done();
            allocator.failure()
        })
        .expect("start")
        .join();
        receiver.join().unwrap();
        let failure = sender.into_iter().next().unwrap().expect("worker").expect("the failure is recorded");
        assert!(failure.contains("exceeds the maximum"), "{failure}");
    });
}
