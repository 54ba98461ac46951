//! Helpers shared by the integration tests.

use std::fs::File;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use timely_communication::networking::Delivery;
use timely_communication::queue::ThreadQueue;

/// Runs `test` on its own thread and fails if it does not finish within `limit`, so that a lost
/// wake-up shows as a failure instead of a hung test run.
pub fn within<R: Send + 'static>(limit: Duration, test: impl FnOnce() -> R + Send + 'static) -> R {
    let (sender, receiver) = std::sync::mpsc::channel();
    let runner = std::thread::spawn(move || {
        let _ = sender.send(test());
    });
    match receiver.recv_timeout(limit) {
        Ok(result) => result,
        // The test panicked: join to re-raise its panic with its message.
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match runner.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the runner sends before it finishes"),
        },
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("test did not finish within {limit:?}")
        }
    }
}

/// The test ports: below the ephemeral range (32768+), so that outgoing connections never
/// take them.
const PORTS: std::ops::Range<u16> = 20_000..32_000;
/// How many port locks one test process holds at most: a long randomized run (thousands of
/// clusters) gives the oldest back, whose clusters ended long ago.
const HELD_PORTS: usize = 3_000;

/// `n` loopback addresses whose ports are free now, in `PORTS`, and distinct across the tests
/// of this run. nextest runs each test in a process of its own, several at once, and a port
/// that is free when one process checks it may be another's a moment later; so each port is
/// also claimed with a lock on `$TMPDIR/timely-test-ports/PORT.lock`, which this process holds
/// until it exits or has claimed `HELD_PORTS` more. Each process starts at its own place in
/// the range and wraps around at its end.
#[allow(dead_code)] // not every test binary uses it
pub fn free_addresses(n: usize) -> Vec<String> {
    static CLAIMS: AtomicUsize = AtomicUsize::new(0);
    static HELD: Mutex<std::collections::VecDeque<File>> = Mutex::new(std::collections::VecDeque::new());
    let start = (std::process::id() % 1000) as usize * 10;
    let locks = std::env::temp_dir().join("timely-test-ports");
    std::fs::create_dir_all(&locks).expect("a directory for the port locks");
    let mut addresses = Vec::new();
    let mut tried = 0;
    while addresses.len() < n {
        assert!(tried < PORTS.len(), "no free test port in {PORTS:?}");
        tried += 1;
        let claim = CLAIMS.fetch_add(1, Ordering::SeqCst);
        let port = PORTS.start + ((start + claim) % PORTS.len()) as u16;
        let lock = File::create(locks.join(format!("{port}.lock"))).expect("a port lock file");
        if lock.try_lock().is_err() {
            continue; // another test process holds this port (or this one, for a recent cluster)
        }
        let address = format!("127.0.0.1:{port}");
        if TcpListener::bind(&address).is_ok() {
            let mut held = HELD.lock().unwrap();
            held.push_back(lock);
            if held.len() > HELD_PORTS {
                held.pop_front();
            }
            addresses.push(address);
        }
    }
    addresses
}

/// Connects `processes` simulated processes of `threads` workers each (threads running
/// `establish` on free loopback ports, with one identity); returns each one's streams.
#[allow(dead_code)] // not every test binary that includes this module connects clusters
pub fn connect_processes(
    processes: usize,
    threads: usize,
    setup: Duration,
) -> Vec<Vec<Option<timely_communication::networking::PeerStream>>> {
    use timely_communication::networking::{establish, ClusterIdentity};
    let addresses = free_addresses(processes);
    let handles: Vec<_> = (0..processes)
        .map(|process| {
            let addresses = addresses.clone();
            let identity =
                ClusterIdentity { cluster_id: 3, secret: b"tests".to_vec(), ..ClusterIdentity::default() };
            std::thread::spawn(move || establish(process, &addresses, threads, &identity, setup))
        })
        .collect();
    handles
        .into_iter()
        .map(|handle| handle.join().expect("establish thread").expect("the cluster connects"))
        .collect()
}

/// The next delivery of `receiver`, waiting up to 20 s for it.
#[allow(dead_code)] // not every test binary that includes this module receives deliveries
pub fn next_delivery(receiver: &mut ThreadQueue<Delivery>) -> Delivery {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(delivery) = receiver.try_recv() {
            return delivery;
        }
        assert!(Instant::now() < deadline, "a message within 20 s");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Process `process` of a loopback cluster on `addresses` that starts with `initial` processes
/// of `threads` workers each; `join`: the process joins the running cluster (as process
/// `process` of `process + 1`), served by that worker. One test identity, 20 s to connect.
#[allow(dead_code)] // not every test binary that includes this module runs clusters
pub fn loopback_cluster(
    addresses: &[String],
    process: usize,
    initial: usize,
    threads: usize,
    join: Option<usize>,
) -> timely_communication::Config {
    use timely_communication::initialize::ClusterConfig;
    use timely_communication::networking::ClusterIdentity;
    let identity =
        ClusterIdentity { cluster_id: 7, secret: b"test secret".to_vec(), ..ClusterIdentity::default() };
    let mut config = ClusterConfig::started_together(addresses.to_vec(), process, initial, threads, identity);
    if join.is_some() {
        config.processes = process + 1;
        config.join = join;
    }
    config.connect_timeout = Duration::from_secs(20);
    timely_communication::Config::Cluster(config)
}
