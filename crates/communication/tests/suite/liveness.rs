//! Liveness of peers on loopback: a peer that stops writing without closing its socket (as a
//! process under SIGSTOP, a frozen machine or a partition does) is reported lost within the
//! peer timeout plus the check interval, and a live peer whose workers send nothing is never
//! reported, because its send threads write heartbeats that no worker sees. Processes are
//! simulated by threads; a "frozen" process is one whose raw sockets stay open and silent, a
//! "deaf" one keeps writing heartbeats but reads nothing, and is reported lost too.

use crate::common;

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use timely_communication::networking::{
    Liveness, MessageHeader, NetworkError, PeerStream, Transport, TransportOptions, WorkerEndpoints,
    HEADER_BYTES, HEARTBEAT_CHANNEL,
};

const LIMIT: Duration = Duration::from_secs(120);
const SETUP: Duration = Duration::from_secs(20);
/// How much later than the timeout a silent peer may be reported (the bound).
const GRACE: Duration = Duration::from_secs(2);
const TRIALS: usize = 12;
/// The peer timeout of the frozen-peer trials, in ms. With 1 s, a live process's heartbeat
/// thread starved of CPU for 1.1 s (load 16 on 2 cores, four trials at once) was reported.
const TRIAL_TIMEOUT_MS: u64 = 2000;
/// Trials run this many at a time, each on its own ports.
const PARALLEL: usize = 4;

fn liveness(millis: u64) -> Liveness {
    Liveness::new(Duration::from_millis(millis)).expect("a valid peer timeout")
}

/// Connects `processes` simulated processes; returns each one's streams.
fn connect(processes: usize) -> Vec<Vec<Option<PeerStream>>> {
    common::connect_processes(processes, 1, SETUP)
}

/// A running process: its transport, its single worker's endpoints, and how often it was woken.
struct Node {
    transport: Transport,
    worker: WorkerEndpoints,
    wakes: Arc<AtomicUsize>,
}

fn start(process: usize, streams: Vec<Option<PeerStream>>, liveness: Liveness) -> Node {
    let wakes = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&wakes);
    let wake = Arc::new(move |_local: usize| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let (transport, mut workers) =
        Transport::start(process, 1, streams, TransportOptions { liveness, ..Default::default() }, wake)
            .expect("the transport starts");
    Node { transport, worker: workers.pop().expect("one worker"), wakes }
}

/// Closes every node in order, concurrently (each waits for the others' goodbyes).
fn shutdown_all(nodes: Vec<Node>) {
    let closing: Vec<_> = nodes
        .into_iter()
        .map(|Node { transport, worker, .. }| {
            drop(worker);
            std::thread::spawn(move || transport.shutdown(Duration::from_secs(10)))
        })
        .collect();
    for handle in closing {
        assert_eq!(handle.join().expect("shutdown thread"), Ok(()));
    }
}

/// Writes a frame without payload.
fn write_frame(stream: &mut TcpStream, header: MessageHeader) {
    let mut frame = [0u8; HEADER_BYTES];
    header.encode_into(&mut frame);
    stream.write_all(&frame).expect("write a frame");
}

/// One trial: the last of `processes` processes is a raw peer that writes heartbeats for twice
/// the timeout (it must not be lost meanwhile) and then freezes, keeping its sockets open;
/// every other process must report it lost within the timeout plus [`GRACE`] of its last
/// heartbeat, with a reason that says how long it was silent. A process that reports the loss
/// closes its transport at once, as a real process ends: the others must still name the frozen
/// process, not the one that just closed.
fn frozen_peer_trial(processes: usize, timeout: Liveness) {
    let mut streams = connect(processes);
    let mut frozen: Vec<TcpStream> =
        streams.pop().expect("the frozen process").into_iter().flatten().map(|peer| peer.stream).collect();
    let mut nodes: Vec<Node> =
        streams.into_iter().enumerate().map(|(process, streams)| start(process, streams, timeout)).collect();
    let alive_until = Instant::now() + 2 * timeout.timeout();
    let last_heartbeat = loop {
        frozen.iter_mut().for_each(|stream| write_frame(stream, MessageHeader::heartbeat()));
        let written = Instant::now();
        for node in &nodes {
            assert_eq!(node.transport.health().failure(), None, "lost while it sent heartbeats");
        }
        if written >= alive_until {
            break written;
        }
        std::thread::sleep(timeout.heartbeat_interval());
    };
    let deadline = last_heartbeat + timeout.timeout() + GRACE;
    while !nodes.is_empty() {
        assert!(Instant::now() < deadline, "not every process reported the frozen one within the grace");
        let Some(position) = nodes.iter().position(|node| node.transport.health().failure().is_some()) else {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        let node = nodes.swap_remove(position);
        let failure = node.transport.health().failure().expect("a failure");
        let silent = last_heartbeat.elapsed();
        let NetworkError::PeerLost { process, reason } = &failure else { panic!("unexpected {failure}") };
        assert_eq!(*process, processes - 1, "{failure}");
        let timeout_text = timeout.timeout().as_secs_f64();
        let own = reason.contains(&format!("longer than the peer timeout of {timeout_text} s"));
        let blamed = reason.contains(&format!("(peer timeout {timeout_text} s), and process"));
        assert!(reason.contains("sent nothing for") && (own || blamed), "{reason}");
        // Declared silent after the timeout; blamed (when another process ended first) at most
        // one check interval before it.
        let earliest = if own { timeout.timeout() } else { timeout.timeout() - timeout.check_interval() };
        assert!(silent >= earliest, "reported after {silent:?}: {reason}");
        assert!(node.wakes.load(Ordering::SeqCst) > 0, "the worker was woken to see the failure");
    }
    drop(frozen);
}

/// Waits up to `limit` (from now) for `transport` to record a failure.
fn wait_for_failure(transport: &Transport, limit: Duration) -> NetworkError {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(failure) = transport.health().failure() {
            return failure;
        }
        assert!(Instant::now() < deadline, "no failure within {limit:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Runs [`TRIALS`] trials, [`PARALLEL`] at a time.
fn trials(processes: usize, timeout: Liveness) {
    for _ in 0..TRIALS / PARALLEL {
        std::thread::scope(|scope| {
            for _ in 0..PARALLEL {
                scope.spawn(|| frozen_peer_trial(processes, timeout));
            }
        });
    }
}

#[test]
fn a_frozen_process_of_two_is_reported_lost_in_every_trial() {
    common::within(LIMIT, || trials(2, liveness(TRIAL_TIMEOUT_MS)));
}

#[test]
fn a_frozen_process_of_three_is_reported_lost_by_both_others_in_every_trial() {
    common::within(LIMIT, || trials(3, liveness(TRIAL_TIMEOUT_MS)));
}

#[test]
fn peers_whose_workers_send_nothing_stay_alive_on_heartbeats_that_reach_no_worker() {
    common::within(LIMIT, || {
        let timeout = liveness(1000);
        let mut nodes: Vec<Node> = connect(2)
            .into_iter()
            .enumerate()
            .map(|(process, streams)| start(process, streams, timeout))
            .collect();
        std::thread::sleep(4 * timeout.timeout());
        for (process, node) in nodes.iter_mut().enumerate() {
            assert_eq!(node.transport.health().failure(), None);
            let stats = node.transport.receive_stats()[1 - process].expect("stats of the peer");
            // 4 s of heartbeats every 250 ms: about 16; scheduling delays may lose a few.
            assert!(stats.heartbeats >= 10, "{stats:?}");
            assert_eq!((stats.messages, stats.payload_bytes), (0, 0), "heartbeats are not messages");
            assert_eq!(node.wakes.load(Ordering::SeqCst), 0, "heartbeats wake no worker");
            assert!(node.worker.receiver.try_recv().is_none(), "heartbeats are not delivered");
        }
        shutdown_all(nodes);
    });
}

#[test]
fn workers_cannot_send_on_control_channels() {
    common::within(LIMIT, || {
        let mut nodes: Vec<Node> = connect(2)
            .into_iter()
            .enumerate()
            .map(|(process, streams)| start(process, streams, Liveness::default()))
            .collect();
        let sender = nodes[0].worker.senders[1].as_mut().expect("a sender to process 1");
        for channel in [HEARTBEAT_CHANNEL, u64::MAX - 7] {
            let header =
                MessageHeader { channel, target_lower: 1, target_upper: 2, ..MessageHeader::default() };
            let refused = sender.send(header, b"").expect_err("a control channel");
            assert!(refused.to_string().contains("reserved for control frames"), "{refused}");
        }
        shutdown_all(nodes);
    });
}

#[test]
fn an_unknown_control_frame_is_rejected_as_malformed() {
    common::within(LIMIT, || {
        let mut streams = connect(2);
        let mut raw = streams.pop().expect("process 1").into_iter().flatten().next().expect("a stream");
        let node = start(0, streams.pop().expect("process 0"), Liveness::default());
        let unknown = MessageHeader { channel: u64::MAX - 5, target_upper: 1, ..MessageHeader::default() };
        write_frame(&mut raw.stream, unknown);
        let failure = wait_for_failure(&node.transport, Duration::from_secs(5));
        let NetworkError::PeerLost { process: 1, reason } = &failure else { panic!("unexpected {failure}") };
        assert!(reason.contains("unknown control channel"), "{reason}");
    });
}

#[test]
fn a_peer_that_writes_heartbeats_but_reads_nothing_is_reported_lost() {
    common::within(LIMIT, || {
        let timeout = liveness(1000);
        let mut streams = connect(2);
        let mut deaf =
            streams.pop().expect("process 1").into_iter().flatten().next().expect("a stream to 0").stream;
        let Node { transport, mut worker, .. } = start(0, streams.pop().expect("process 0"), timeout);
        let stop = Arc::new(AtomicBool::new(false));
        let beating = Arc::clone(&stop);
        let heart = std::thread::spawn(move || {
            while !beating.load(Ordering::SeqCst) {
                write_frame(&mut deaf, MessageHeader::heartbeat());
                std::thread::sleep(timeout.heartbeat_interval());
            }
            deaf
        });
        // The worker sends until the socket buffers and the send queue are full; its last send
        // blocks until the send thread gives up on the peer.
        let flood = std::thread::spawn(move || {
            let sender = worker.senders[1].as_mut().expect("a sender to process 1");
            let chunk = vec![0u8; 1 << 16];
            let header = MessageHeader {
                channel: 3,
                source: 0,
                target_lower: 1,
                target_upper: 2,
                length: 0,
                seqno: 0,
            };
            while sender.send(header, &chunk).is_ok() {}
        });
        let failure = wait_for_failure(&transport, timeout.timeout() * 10);
        let NetworkError::PeerLost { process: 1, reason } = &failure else { panic!("unexpected {failure}") };
        assert!(reason.contains("read nothing for") && reason.contains("peer timeout of 1 s"), "{reason}");
        flood.join().expect("the blocked send ends with the failure");
        stop.store(true, Ordering::SeqCst);
        drop(heart.join().expect("the heartbeat thread"));
    });
}
