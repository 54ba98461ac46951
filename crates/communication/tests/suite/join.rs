//! Joining a running cluster, at the transport level and through `initialize`: processes are
//! simulated by threads on loopback ports. A third and a fourth process join in turn and move
//! frames both ways with every member; every old worker learns of each join exactly once;
//! everyone says goodbye and frees its port; wrong identities are refused with clear errors
//! while the cluster runs on; an early joiner waits for the cluster to be set up; a joiner that
//! dies after admission is a lost peer.

use crate::common;

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use timely_communication::initialize::ClusterConfig;
use timely_communication::networking::harness::{exchange, shutdown_all, start_cluster, Member};
use timely_communication::networking::{
    establish, establish_as, ClockSync, ClusterIdentity, Entry, Liveness, NetworkError, ReceiveBudget,
};
use timely_communication::{initialize, Allocator, Config};

const THREADS: usize = 2;
const SETUP: Duration = Duration::from_secs(20);
const LIMIT: Duration = Duration::from_secs(90);

fn identity() -> ClusterIdentity {
    ClusterIdentity { cluster_id: 11, secret: b"join tests".to_vec(), ..ClusterIdentity::default() }
}

fn join(process: usize, addresses: &[String], identity: &ClusterIdentity) -> Result<Member, NetworkError> {
    let settings = (THREADS, Liveness::default());
    Member::start(Entry::Join, process, &addresses[..=process], settings, identity, SETUP)
}

/// Initial process `process` of `addresses`.
fn initial(process: usize, addresses: &[String]) -> Result<Member, NetworkError> {
    Member::start(Entry::Setup, process, addresses, (THREADS, Liveness::default()), &identity(), SETUP)
}

/// Waits until every worker of `member` learned of `process`, and checks it learned of
/// nothing else.
fn await_join(member: &mut Member, process: usize) {
    let deadline = Instant::now() + SETUP;
    let mut learned = vec![Vec::new(); THREADS];
    while learned.iter().any(Vec::is_empty) {
        assert!(Instant::now() < deadline, "the workers learned only of {learned:?}");
        learned.iter_mut().zip(member.take_joins()).for_each(|(seen, more)| seen.extend(more));
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(learned, vec![vec![process]; THREADS]);
}

/// Shuts every member down at once and checks that each ended in order.
fn shut_down(members: Vec<Member>) {
    for (process, result) in shutdown_all(members, SETUP).into_iter().enumerate() {
        result.unwrap_or_else(|error| panic!("process {process} did not end in order: {error}"));
    }
}

#[test]
fn a_third_and_a_fourth_process_join_move_frames_and_say_goodbye() {
    common::within(LIMIT, || {
        let addresses = common::free_addresses(4);
        let mut members =
            start_cluster(&addresses[..2], THREADS, &identity(), SETUP).expect("the cluster starts");
        exchange(&mut members, 0, SETUP).expect("the initial cluster moves frames");
        for (round, process) in [(1, 2), (2, 3)] {
            let joiner = join(process, &addresses, &identity()).expect("the join succeeds");
            for member in &mut members {
                await_join(member, process);
            }
            members.push(joiner);
            exchange(&mut members, round, SETUP).expect("every pair moves frames both ways");
            for member in &mut members {
                assert_eq!(member.transport.processes(), process + 1);
                assert!(member.take_joins().iter().all(Vec::is_empty), "one message per join");
            }
        }
        shut_down(members);
        for address in &addresses {
            TcpListener::bind(address).unwrap_or_else(|error| panic!("{address} is still taken: {error}"));
        }
    });
}

#[test]
fn a_wrong_cluster_id_or_secret_is_refused_and_the_cluster_runs_on() {
    common::within(LIMIT, || {
        let addresses = common::free_addresses(3);
        let mut members =
            start_cluster(&addresses[..2], THREADS, &identity(), SETUP).expect("the cluster starts");
        let wrong_id = ClusterIdentity { cluster_id: 12, ..identity() };
        let wrong_secret = ClusterIdentity { secret: b"a guess".to_vec(), ..identity() };
        for (round, wrong) in [wrong_id, wrong_secret].iter().enumerate() {
            let started = Instant::now();
            let error = join(2, &addresses, wrong).err().expect("the join is refused");
            assert!(
                matches!(
                    error.root(),
                    NetworkError::ClusterMismatch { .. } | NetworkError::AuthenticationFailed
                ),
                "{error}"
            );
            assert!(started.elapsed() < SETUP / 2, "the refusal is final, not retried until the deadline");
            exchange(&mut members, round as u64, SETUP).expect("the cluster runs on");
            for member in &mut members {
                assert_eq!(member.transport.processes(), 2);
                assert!(member.take_joins().iter().all(Vec::is_empty));
            }
        }
        // The acceptor still admits the right joiner.
        let joiner = join(2, &addresses, &identity()).expect("the right joiner is admitted");
        members.iter_mut().for_each(|member| await_join(member, 2));
        members.push(joiner);
        exchange(&mut members, 9, SETUP).expect("the three move frames");
        shut_down(members);
    });
}

#[test]
fn a_joiner_that_is_not_next_is_told_which_index_to_take() {
    common::within(LIMIT, || {
        let addresses = common::free_addresses(4);
        let members =
            start_cluster(&addresses[..2], THREADS, &identity(), SETUP).expect("the cluster starts");
        let error = join(3, &addresses, &identity()).err().expect("process 3 cannot join a cluster of 2");
        assert_eq!(*error.root(), NetworkError::JoinCountMismatch { members: 2, joiner: 3, after: 4 });
        assert!(error.to_string().contains("must be -p 2 --nn 3"), "{error}");
        shut_down(members);
    });
}

#[test]
fn a_joiner_started_before_the_cluster_is_set_up_waits_for_it() {
    common::within(LIMIT, || {
        let addresses = common::free_addresses(3);
        let first = {
            let addresses = addresses[..2].to_vec();
            std::thread::spawn(move || initial(0, &addresses))
        };
        // Process 0 is setting up (it waits for process 1): the joiner dials it again and again.
        let joiner = {
            let addresses = addresses.clone();
            std::thread::spawn(move || join(2, &addresses, &identity()))
        };
        std::thread::sleep(Duration::from_millis(300));
        assert!(!joiner.is_finished(), "the joiner gave up while the cluster was setting up");
        let second = initial(1, &addresses[..2]).expect("process 1 starts");
        let first = first.join().expect("process 0's thread").expect("process 0 starts");
        let joiner =
            joiner.join().expect("the joiner's thread").expect("the joiner joins once the cluster runs");
        let mut members = vec![first, second];
        for member in &mut members {
            await_join(member, 2);
        }
        members.push(joiner);
        shut_down(members);
    });
}

#[test]
fn a_joiner_whose_cluster_never_finishes_setting_up_says_so() {
    common::within(LIMIT, || {
        let addresses = common::free_addresses(3);
        let first = {
            let addresses = addresses[..2].to_vec();
            std::thread::spawn(move || establish(0, &addresses, THREADS, &identity(), SETUP))
        };
        let settings = (THREADS, Liveness::default());
        let error =
            Member::start(Entry::Join, 2, &addresses, settings, &identity(), Duration::from_millis(500))
                .err()
                .expect("the cluster never runs");
        assert!(error.to_string().contains("still being set up"), "{error}");
        // Process 0's setup goes on and completes once process 1 starts.
        let second = establish(1, &addresses[..2], THREADS, &identity(), SETUP).expect("process 1 connects");
        let first = first.join().expect("process 0's thread").expect("process 0 connects");
        assert!(first[1].is_some() && second[0].is_some());
    });
}

#[test]
fn a_joiner_killed_after_admission_is_reported_lost() {
    common::within(LIMIT, || {
        let addresses = common::free_addresses(3);
        let mut members =
            start_cluster(&addresses[..2], THREADS, &identity(), SETUP).expect("the cluster starts");
        let joiner = join(2, &addresses, &identity()).expect("the join succeeds");
        members.iter_mut().for_each(|member| await_join(member, 2));
        // Dropping a transport closes its sockets without a goodbye, as a killed process does.
        drop(joiner);
        for member in &members {
            let deadline = Instant::now() + SETUP;
            let failure = loop {
                if let Some(failure) = member.transport.health().failure() {
                    break failure;
                }
                assert!(Instant::now() < deadline, "the joiner's loss is reported");
                std::thread::sleep(Duration::from_millis(5));
            };
            assert!(matches!(failure, NetworkError::PeerLost { process: 2, .. }), "{failure}");
        }
        // The abort of each member ends without waiting for anyone, and frees its port.
        members.into_iter().for_each(|member| member.transport.abort(Duration::from_millis(100)));
        for address in &addresses[..2] {
            TcpListener::bind(address).unwrap_or_else(|error| panic!("{address} is still taken: {error}"));
        }
    });
}

#[test]
fn add_process_admits_only_the_next_index() {
    common::within(LIMIT, || {
        let addresses = common::free_addresses(2);
        let mut members = start_cluster(&addresses, THREADS, &identity(), SETUP).expect("the cluster starts");
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback listener");
        let stream =
            std::net::TcpStream::connect(listener.local_addr().expect("an address")).expect("connect");
        for process in [0, 1, 3] {
            let error =
                members[0].transport.add_process(process, stream.try_clone().expect("a clone").into());
            let Err(NetworkError::JoinRefused { reason }) = error else {
                panic!("process {process}: {error:?}")
            };
            assert!(reason.contains("not the next to join; the cluster has 2 processes"), "{reason}");
        }
        assert_eq!(members[0].transport.processes(), 2);
        assert!(members[0].take_joins().iter().all(Vec::is_empty));
        exchange(&mut members, 0, SETUP).expect("the cluster runs on");
        shut_down(members);
    });
}

#[test]
fn joining_needs_the_last_index_and_setup_needs_no_join() {
    let addresses = common::free_addresses(3);
    for (process, count) in [(0, 3), (1, 3), (2, 2)] {
        let error = establish_as(Entry::Join, process, &addresses[..count], &[], 1, &identity(), SETUP)
            .err()
            .expect("a joiner must be the last process and not the first");
        assert!(matches!(error, NetworkError::InvalidArguments(_)), "{error}");
    }
}

fn cluster_config(process: usize, processes: usize, join: Option<usize>, addresses: &[String]) -> Config {
    Config::Cluster(ClusterConfig {
        threads: THREADS,
        process,
        processes,
        initial_processes: 2,
        join,
        gone: Vec::new(),
        addresses: addresses.to_vec(),
        identity: identity(),
        connect_timeout: SETUP,
        liveness: Liveness::default(),
        clock: ClockSync::default(),
        insecure: false,
        frames: None,
        receive_budget: ReceiveBudget::default(),
    })
}

/// An old worker waits until it learns of the joiner; a joining worker checks its server.
fn learn_of_join(allocator: &mut Allocator) -> (usize, Option<usize>, Vec<usize>) {
    let index = allocator.index();
    let Allocator::Cluster(cluster) = allocator else { panic!("a cluster allocator") };
    let server = cluster.join_server();
    let mut joined = Vec::new();
    let deadline = Instant::now() + SETUP;
    while server.is_none() && joined.is_empty() {
        assert!(Instant::now() < deadline, "worker {index} never learned of the join");
        allocator.await_events(Some(Duration::from_millis(50)));
        allocator.receive();
        // One range of worker indices per joined process: process = first worker / threads.
        joined.extend(allocator.take_joins().into_iter().map(|workers| workers.start / workers.len()));
    }
    (index, server, joined)
}

#[test]
fn workers_learn_of_a_join_through_their_allocator() {
    common::within(LIMIT, || {
        let addresses = common::free_addresses(3);
        // Each worker reports that it runs, which it does once its process is set up: the joiner
        // starts only then. Every worker stays until all six learned of the join (the joiner's
        // run once its set-up is done): a member that ended before would cut the joiner's
        // set-up short.
        let (running, started) = crossbeam_channel::unbounded();
        let learned = Arc::new(AtomicUsize::new(0));
        let runs: Vec<_> = [(0, 2, None), (1, 2, None), (2, 3, Some(1))]
            .into_iter()
            .map(|(process, processes, join)| {
                if join.is_some() {
                    (0..2 * THREADS).for_each(|_| started.recv_timeout(SETUP).expect("the cluster runs"));
                }
                let config = cluster_config(process, processes, join, &addresses[..processes]);
                let (running, learned) = (running.clone(), learned.clone());
                let work = move |mut allocator: Allocator| {
                    running.send(()).expect("the test listens");
                    let result = learn_of_join(&mut allocator);
                    learned.fetch_add(1, Ordering::SeqCst);
                    let deadline = Instant::now() + SETUP;
                    while learned.load(Ordering::SeqCst) < 3 * THREADS {
                        assert!(Instant::now() < deadline, "not every worker learned of the join");
                        allocator.await_events(Some(Duration::from_millis(1)));
                        allocator.receive();
                    }
                    result
                };
                std::thread::spawn(move || initialize(config, work).expect("start").join())
            })
            .collect();
        let mut results: Vec<_> = runs
            .into_iter()
            .flat_map(|run| run.join().expect("process thread"))
            .map(Result::unwrap)
            .collect();
        results.sort();
        let old = |index| (index, None, vec![2]);
        assert_eq!(results, vec![old(0), old(1), old(2), old(3), (4, Some(1), vec![]), (5, Some(1), vec![])]);
    });
}

fn parse(args: &[&str]) -> Result<ClusterConfig, String> {
    match Config::from_args(args.iter().map(|arg| arg.to_string())).map_err(|error| error.to_string())?.0 {
        Config::Cluster(cluster) => Ok(cluster),
        other => panic!("{args:?} is a cluster, not {other:?}"),
    }
}

#[test]
fn join_options_make_a_joining_cluster_config() {
    let config = parse(&["-n", "2", "-p", "2", "-w", "3", "--join", "5", "--nn", "3"]).expect("valid");
    let shape =
        (config.process, config.processes, config.initial_processes, config.join, config.addresses.len());
    assert_eq!(shape, (2, 3, 2, Some(5), 3));
    let config = parse(&["-n", "3", "-p3", "--join=0", "--nn=4"]).expect("valid");
    assert_eq!((config.processes, config.initial_processes, config.join), (4, 3, Some(0)));
    let initial = parse(&["-n", "2", "-p", "1"]).expect("valid");
    assert_eq!((initial.processes, initial.initial_processes, initial.join), (2, 2, None));
    assert!(initial.gone.is_empty());
    let after_leaves =
        parse(&["-n", "3", "-p", "4", "--join", "0", "--nn", "5", "--gone", "3,1"]).expect("valid");
    assert_eq!(after_leaves.gone, vec![1, 3]);
}

#[test]
fn bad_join_options_are_clear_errors() {
    let hostfile = std::env::temp_dir().join(format!("timely-join-hosts-{}", std::process::id()));
    std::fs::write(&hostfile, "localhost:7000\nlocalhost:7001\n").expect("write a hostfile");
    let hosts = hostfile.to_str().expect("a UTF-8 path");
    let cases: [(&[&str], &str); 12] = [
        (&["-n", "2", "-p", "1", "--gone", "0"], "only a joining process"),
        (&["-n", "2", "-p", "2", "--join", "0", "--nn", "3", "--gone", "2"], "not a distinct process below"),
        (&["-n", "2", "-p", "2", "--join", "0", "--nn", "3", "--gone", "a"], "expected process indices"),
        (&["-n", "2", "-p", "2", "--nn", "3"], "needs --join W"),
        (&["-n", "2", "-p", "2", "--join", "0"], "needs --nn N"),
        (&["-n", "2", "-p", "2", "--join", "0", "--nn", "4"], "with -p 2 the cluster has 3 processes"),
        (&["-n", "3", "-p", "1", "--join", "0", "--nn", "2"], "must be more than the 3 initial"),
        (&["-n", "2", "-p", "2", "-w", "2", "--join", "4", "--nn", "3"], "workers 0 to 3"),
        (&["-n", "1", "-p", "1", "--join", "0", "--nn", "2"], "-n 2 or more"),
        (&["-n", "2", "-p", "2", "--join", "x", "--nn", "3"], "expected a worker index"),
        (&["-n", "2", "-p", "2", "--join", "0", "--nn", "x"], "expected a number"),
        (&["-n", "2", "-p", "2", "--join", "0", "--nn", "3", "-h", hosts], "lists 2 address(es)"),
    ];
    for (args, expected) in cases {
        let error = parse(args).expect_err(&format!("{args:?} is invalid"));
        assert!(error.contains(expected), "{args:?}: {error}");
    }
    std::fs::remove_file(&hostfile).expect("remove the hostfile");
}
