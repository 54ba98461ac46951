//! A process leaving a running cluster, at the transport level: processes are simulated by
//! threads on loopback ports. A process that says goodbye while the others run has left: its
//! own shutdown completes in order (every peer says goodbye back), every worker of the others
//! is told after the process's last message, what they send it afterwards is dropped without
//! an error, they never report it lost however long it stays silent, and they go on moving
//! frames and end in order. A process that ends without a goodbye is still a lost peer.

use crate::common;

use std::time::{Duration, Instant};

use timely_communication::networking::harness::{exchange, shutdown_all, Member};
use timely_communication::networking::{ClusterIdentity, Entry, Liveness, MessageHeader, NetworkError};

const THREADS: usize = 2;
const SETUP: Duration = Duration::from_secs(20);
const LIMIT: Duration = Duration::from_secs(90);

fn identity() -> ClusterIdentity {
    ClusterIdentity { cluster_id: 12, secret: b"leave tests".to_vec(), ..ClusterIdentity::default() }
}

/// Three processes of `THREADS` workers whose peers are lost after `liveness`.
fn three_processes(liveness: Liveness) -> Vec<Member> {
    let addresses = common::free_addresses(3);
    let handles: Vec<_> = (0..3)
        .map(|process| {
            let addresses = addresses.clone();
            std::thread::spawn(move || {
                Member::start(Entry::Setup, process, &addresses, (THREADS, liveness), &identity(), SETUP)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("a setup thread").expect("the cluster starts")).collect()
}

/// Waits until every worker of `member` received the notice that `process` left, after
/// draining what it received before; returns the number of other frames each drained.
fn await_departure(member: &mut Member, process: usize) -> Vec<usize> {
    let deadline = Instant::now() + SETUP;
    let mut drained = Vec::new();
    for worker in &mut member.workers {
        let mut frames = 0;
        loop {
            assert!(Instant::now() < deadline, "worker {} was not told that {process} left", worker.index);
            match worker.receiver.try_recv() {
                Some((header, _)) if header.is_goodbye() => {
                    assert_eq!(header.source as usize, process * THREADS, "the notice names the process");
                    break;
                }
                Some(_) => frames += 1,
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        drained.push(frames);
    }
    drained
}

#[test]
fn a_process_that_says_goodbye_leaves_and_the_others_run_on() {
    common::within(LIMIT, || {
        let liveness = Liveness::new(Duration::from_millis(300)).expect("a valid timeout");
        let mut members = three_processes(liveness);
        exchange(&mut members, 0, SETUP).expect("the cluster moves frames");
        // The leaver sends one more frame to every other worker, then says goodbye.
        let mut leaver = members.pop().expect("three members");
        for worker in &mut leaver.workers {
            for sender in worker.senders.iter_mut().flatten() {
                let first = (sender.process() * THREADS) as u64;
                let header = MessageHeader {
                    channel: 7,
                    source: worker.index as u64,
                    target_lower: first,
                    target_upper: first + THREADS as u64,
                    length: 0,
                    seqno: 0,
                };
                sender.send(header, b"last words").expect("a send before the goodbye");
                sender.flush().expect("a flush before the goodbye");
            }
        }
        let leaving = std::thread::spawn(move || leaver.shutdown(SETUP));
        for member in &mut members {
            // Each worker got the last frame of each of the leaver's two workers first.
            assert_eq!(await_departure(member, 2), vec![THREADS; THREADS]);
        }
        leaving.join().expect("the leaver's thread").expect("the leaver ends in order");
        // Sends to the departed process are dropped, not errors; nothing reports it lost,
        // although it has been silent for longer than the peer timeout.
        std::thread::sleep(liveness.timeout() * 3);
        for member in &mut members {
            assert!(member.transport.health().is_healthy(), "{:?}", member.transport.health().failure());
            for worker in &mut member.workers {
                let sender = worker.senders[2].as_mut().expect("a sender to the leaver");
                assert!(sender.departed());
                let header = MessageHeader {
                    channel: 7,
                    source: worker.index as u64,
                    target_lower: 4,
                    target_upper: 5,
                    length: 0,
                    seqno: 1,
                };
                sender.send(header, b"too late").expect("a send to a departed process is dropped");
                sender.flush().expect("so is its flush");
                worker.senders[2] = None;
            }
        }
        exchange(&mut members, 1, SETUP).expect("the two that stay still move frames");
        for (process, result) in shutdown_all(members, SETUP).into_iter().enumerate() {
            result.unwrap_or_else(|error| panic!("process {process} did not end in order: {error}"));
        }
    });
}

#[test]
fn a_process_that_ends_without_a_goodbye_is_still_lost() {
    common::within(LIMIT, || {
        let mut members = three_processes(Liveness::default());
        exchange(&mut members, 0, SETUP).expect("the cluster moves frames");
        drop(members.pop());
        let deadline = Instant::now() + SETUP;
        for member in &members {
            let failure = loop {
                if let Some(failure) = member.transport.health().failure() {
                    break failure;
                }
                assert!(Instant::now() < deadline, "process 2 was not reported lost");
                std::thread::sleep(Duration::from_millis(2));
            };
            assert!(matches!(failure, NetworkError::PeerLost { process: 2, .. }), "{failure}");
        }
    });
}
