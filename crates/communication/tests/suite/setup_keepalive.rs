//! Liveness during setup: a peer that connected and then froze is lost after the peer timeout,
//! not at the setup deadline; a peer that waits long for others, alive, is kept by the set-up
//! keepalives, and on a sealed session the transport's records follow them in order.

use crate::common;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use timely_communication::networking::handshake::{handshake, LocalProcess, Role};
use timely_communication::networking::harness::{exchange, shutdown_all, Member};
use timely_communication::networking::{
    establish_with, ClusterIdentity, Entry, Liveness, NetworkError, Sealing, SetupTimes, Side,
};

const LIMIT: Duration = Duration::from_secs(60);
const DEADLINE: Duration = Duration::from_secs(60);

fn identity(sealing: Sealing) -> ClusterIdentity {
    ClusterIdentity { cluster_id: 11, secret: b"keepalive tests".to_vec(), sealing }
}

/// Connects to `address`, retrying while nobody listens yet.
fn dial(address: &str) -> TcpStream {
    let start = Instant::now();
    loop {
        match TcpStream::connect(address) {
            Ok(stream) => return stream,
            Err(error) if start.elapsed() > Duration::from_secs(10) => {
                panic!("cannot dial {address}: {error}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

#[test]
fn a_peer_frozen_during_setup_is_lost_after_the_peer_timeout_not_the_deadline() {
    common::within(LIMIT, || {
        let addresses = common::free_addresses(3);
        let id = identity(Sealing::Never);
        let (wanted, secret) = (addresses.clone(), id.clone());
        let liveness = Liveness::new(Duration::from_secs(1)).expect("a peer timeout");
        let waiting = std::thread::spawn(move || {
            let started = Instant::now();
            let times = SetupTimes { deadline: DEADLINE, liveness };
            (establish_with(Entry::Setup, 0, &wanted, &[], 1, &secret, times), started.elapsed())
        });
        // "Process 1" completes its handshake with 0, then freezes: connection open, silent.
        let mut frozen = dial(&addresses[0]);
        let local = LocalProcess { process: 1, processes: 3, threads: 1, role: Role::Setup };
        handshake(&mut frozen, &local, &id, Side::Dialler, Duration::from_secs(5)).expect("a handshake");
        let (result, waited) = waiting.join().expect("process 0's setup");
        let error = result.map(|_| ()).expect_err("process 1 froze");
        assert!(matches!(error, NetworkError::PeerLost { process: 1, .. }), "{error}");
        assert!(error.to_string().contains("sent nothing for 1 s during set-up"), "{error}");
        assert!(waited >= Duration::from_secs(1), "lost before the peer timeout: {waited:?}");
        assert!(waited < Duration::from_secs(10), "process 0 waited {waited:?}, as for its deadline");
        drop(frozen);
    });
}

#[test]
fn peers_waiting_longer_than_the_peer_timeout_stay_alive_and_sealed_records_stay_in_order() {
    common::within(LIMIT, || {
        let addresses = common::free_addresses(3);
        let liveness = Liveness::new(Duration::from_millis(200)).expect("a peer timeout");
        let id = identity(Sealing::Always);
        // Processes 0 and 1 connect at once and wait 1.5 s (7 peer timeouts) for process 2,
        // exchanging keepalives meanwhile.
        let handles: Vec<_> = (0..3)
            .map(|process| {
                let (addresses, id) = (addresses.clone(), id.clone());
                std::thread::spawn(move || {
                    if process == 2 {
                        std::thread::sleep(Duration::from_millis(1500));
                    }
                    Member::start(Entry::Setup, process, &addresses, (1, liveness), &id, DEADLINE)
                })
            })
            .collect();
        let mut members: Vec<Member> = handles
            .into_iter()
            .map(|handle| handle.join().expect("a setup thread").expect("setup succeeds"))
            .collect();
        for round in 0..3 {
            exchange(&mut members, round, Duration::from_secs(10)).expect("an exchange");
        }
        for result in shutdown_all(members, Duration::from_secs(10)) {
            result.expect("a clean shutdown");
        }
    });
}
