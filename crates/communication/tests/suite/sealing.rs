//! Sealed sessions through the real transport: two processes on loopback with sealing forced on,
//! connected through a proxy that sees (and, in some tests, changes) every byte process 1 sends
//! process 0. What the records must guarantee: the payload never crosses in the clear, and a
//! flipped byte, a replayed record or a dropped record ends the connection with an error naming
//! the sender, never a delivery. Without sealing, the same flipped byte is delivered (what an
//! unsealed loopback session does not protect).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use timely_communication::networking::{
    establish, ClusterIdentity, MessageHeader, NetworkError, PeerStream, Sealing, Transport,
    TransportOptions, WorkerEndpoints,
};

use crate::common;

const LIMIT: Duration = Duration::from_secs(60);
const SETUP: Duration = Duration::from_secs(20);
/// The bytes process 1 sends before its first record: its hello (96) and its proof (32).
const HANDSHAKE_BYTES: usize = 128;
/// A payload that must never be seen on the wire of a sealed session.
const SECRET_PAYLOAD: &[u8] = b"the payload an eavesdropper must not read";

/// What the proxy does to process 1's records (counted from 0, after the handshake).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tamper {
    Nothing,
    /// Flip one ciphertext bit of this record.
    Flip(usize),
    /// Send this record twice.
    Replay(usize),
    /// Leave this record out.
    Drop(usize),
    /// Unsealed session: flip the first payload byte of the first data frame.
    FlipPlain,
}

/// A process's transport and its one worker's endpoints.
type Node = (Transport, Vec<WorkerEndpoints>);

fn identity(sealing: Sealing) -> ClusterIdentity {
    ClusterIdentity { cluster_id: 5, secret: b"sealing tests".to_vec(), sealing }
}

/// Relays process 1's connection to process 0 at `target`, applying `tamper` to what 1 sends;
/// returns the proxy's address and a handle that yields every byte 1 sent.
fn proxy(target: String, tamper: Tamper) -> (String, JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a proxy port");
    let address = listener.local_addr().expect("the proxy's address").to_string();
    let handle = std::thread::spawn(move || {
        let (from_one, _) = listener.accept().expect("process 1 dials the proxy");
        // Process 1 may dial before process 0 listens: the proxy waits for 0 as a dialler does.
        let started = Instant::now();
        let to_zero = loop {
            match TcpStream::connect(&target) {
                Ok(stream) => break stream,
                Err(error) if started.elapsed() > Duration::from_secs(10) => {
                    panic!("the proxy cannot reach process 0: {error}")
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        };
        let back = (to_zero.try_clone().expect("clone"), from_one.try_clone().expect("clone"));
        let backward = std::thread::spawn(move || {
            let (mut from, mut to) = back;
            let _ = std::io::copy(&mut from, &mut to);
            let _ = to.shutdown(std::net::Shutdown::Write);
        });
        let seen = relay(from_one, to_zero, tamper);
        let _ = backward.join();
        seen
    });
    (address, handle)
}

/// Forwards `from` to `to` until `from` ends, tampering as asked; returns what `from` sent.
fn relay(mut from: TcpStream, mut to: TcpStream, tamper: Tamper) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut handshake = [0u8; HANDSHAKE_BYTES];
    if from.read_exact(&mut handshake).is_err() || to.write_all(&handshake).is_err() {
        return seen;
    }
    seen.extend_from_slice(&handshake);
    if tamper == Tamper::FlipPlain {
        flip_first_payload(&mut from, &mut to);
        return seen;
    }
    for index in 0.. {
        let mut header = [0u8; 12];
        if from.read_exact(&mut header).is_err() {
            break;
        }
        let length = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let mut record = header.to_vec();
        record.resize(12 + length + 16, 0);
        if from.read_exact(&mut record[12..]).is_err() {
            break;
        }
        seen.extend_from_slice(&record);
        let copies = match tamper {
            Tamper::Flip(k) if k == index => {
                record[12] ^= 0x01;
                1
            }
            Tamper::Replay(k) if k == index => 2,
            Tamper::Drop(k) if k == index => 0,
            _ => 1,
        };
        for _ in 0..copies {
            if to.write_all(&record).is_err() {
                return seen;
            }
        }
    }
    seen
}

/// Forwards unsealed frames, flipping the first payload byte of the first data frame.
fn flip_first_payload(from: &mut TcpStream, to: &mut TcpStream) {
    loop {
        let mut header = [0u8; 48];
        if from.read_exact(&mut header).is_err() {
            return;
        }
        let word = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().expect("8 bytes"));
        let mut frame = header.to_vec();
        frame.resize(48 + word(32) as usize, 0);
        if from.read_exact(&mut frame[48..]).is_err() {
            return;
        }
        let data = word(0) == 4 && frame.len() > 48;
        if data {
            frame[48] ^= 0x01;
        }
        if to.write_all(&frame).is_err() {
            return;
        }
        if data {
            let _ = std::io::copy(from, to);
            return;
        }
    }
}

/// Process 0 and process 1 (which dials 0 through a proxy applying `tamper`), both with
/// `sealing`; returns their transports and workers, and the proxy.
fn pair_through_proxy(sealing: Sealing, tamper: Tamper) -> (Vec<Node>, JoinHandle<Vec<u8>>) {
    let addresses = common::free_addresses(2);
    let (through, proxy) = proxy(addresses[0].clone(), tamper);
    let zero = {
        let addresses = addresses.clone();
        std::thread::spawn(move || establish(0, &addresses, 1, &identity(sealing), SETUP))
    };
    let seen_by_one = [through, addresses[1].clone()];
    let one = establish(1, &seen_by_one, 1, &identity(sealing), SETUP).expect("process 1 connects");
    let zero = zero.join().expect("process 0").expect("process 0 connects");
    let expect_sealed = sealing == Sealing::Always;
    assert_eq!(zero[1].as_ref().map(PeerStream::is_sealed), Some(expect_sealed));
    assert_eq!(one[0].as_ref().map(PeerStream::is_sealed), Some(expect_sealed));
    let nodes = [zero, one]
        .into_iter()
        .enumerate()
        .map(|(process, streams)| {
            let wake = Arc::new(|_| {});
            Transport::start(process, 1, streams, TransportOptions::default(), wake)
                .expect("the transport starts")
        })
        .collect();
    (nodes, proxy)
}

/// Message `seqno` from worker 1 to worker 0: the secret payload, a number, and `size` bytes.
fn message(seqno: u64, size: usize) -> (MessageHeader, Vec<u8>) {
    let header = MessageHeader { channel: 4, source: 1, target_lower: 0, target_upper: 1, length: 0, seqno };
    let mut payload = SECRET_PAYLOAD.to_vec();
    payload.extend(seqno.to_le_bytes());
    payload.extend((0..size).map(|i| (i % 253) as u8));
    (header, payload)
}

/// Worker 1 sends `count` messages, flushing each (so each is at least one record).
fn send(one: &mut WorkerEndpoints, count: u64, size: usize) {
    let sender = one.senders[0].as_mut().expect("a sender to process 0");
    for seqno in 0..count {
        let (header, payload) = message(seqno, size);
        if sender.send(header, &payload).and_then(|()| sender.flush()).is_err() {
            return; // the connection already failed
        }
    }
}

#[test]
fn a_sealed_session_delivers_everything_and_shows_no_payload_on_the_wire() {
    common::within(LIMIT, || {
        let (mut nodes, proxy) = pair_through_proxy(Sealing::Always, Tamper::Nothing);
        // Sizes below, at and far above a record's 64 KiB.
        let sizes = [0usize, 100, 65_536, 1 << 20];
        for (round, &size) in sizes.iter().enumerate() {
            send(&mut nodes[1].1[0], 1, size);
            let (header, payload) = common::next_delivery(&mut nodes[0].1[0].receiver);
            let (_, expected) = message(0, size);
            assert_eq!((header.source, payload.len()), (1, expected.len()), "round {round}");
            assert!(payload.in_memory() == Some(&expected[..]), "round {round}: intact");
        }
        let healths: Vec<_> = nodes.iter().map(|(transport, _)| transport.health()).collect();
        let closing: Vec<_> = nodes
            .into_iter()
            .map(|(transport, workers)| {
                std::thread::spawn(move || {
                    drop(workers);
                    transport.shutdown(Duration::from_secs(10))
                })
            })
            .collect();
        for close in closing {
            assert_eq!(close.join().expect("shutdown"), Ok(()));
        }
        assert!(healths.iter().all(|health| health.failure().is_none()));
        let wire = proxy.join().expect("the proxy");
        assert!(wire.len() > 1 << 20, "the proxy saw the traffic ({} bytes)", wire.len());
        let visible = wire.windows(SECRET_PAYLOAD.len()).any(|window| window == SECRET_PAYLOAD);
        assert!(!visible, "the payload crossed in the clear");
    });
}

/// Runs a sealed pair whose proxy applies `tamper` while process 1 sends; returns the failure
/// process 0 records, checking that no message it received was changed.
fn failure_under(tamper: Tamper, sealing: Sealing) -> (Option<NetworkError>, usize) {
    let (mut nodes, proxy) = pair_through_proxy(sealing, tamper);
    let health = nodes[0].0.health();
    let mut delivered = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    send(&mut nodes[1].1[0], 40, 1000);
    let zero = &mut nodes[0].1[0];
    while health.failure().is_none() && Instant::now() < deadline {
        match zero.receiver.try_recv() {
            Some((header, payload)) => {
                let (_, expected) = message(header.seqno, 1000);
                if payload.in_memory() == Some(&expected[..]) {
                    delivered += 1;
                } else {
                    // A changed message was delivered: report it as the outcome.
                    drop(nodes);
                    let _ = proxy.join();
                    return (None, usize::MAX);
                }
            }
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    let failure = health.failure();
    drop(nodes);
    let _ = proxy.join();
    (failure, delivered)
}

/// Checks that process 0 lost process 1 with a reason containing `expected`.
fn assert_lost_with(tamper: Tamper, expected: &str) {
    let (failure, delivered) = failure_under(tamper, Sealing::Always);
    assert_ne!(delivered, usize::MAX, "{tamper:?}: a changed message was delivered");
    match failure {
        Some(NetworkError::PeerLost { process: 1, reason }) => {
            assert!(reason.contains(expected), "{tamper:?}: {reason}");
        }
        other => panic!("{tamper:?}: expected process 1 lost with {expected:?}, found {other:?}"),
    }
}

#[test]
fn a_flipped_byte_ends_the_connection_naming_the_sender() {
    common::within(LIMIT, || assert_lost_with(Tamper::Flip(12), "record 12 failed authentication"));
}

#[test]
fn a_replayed_record_ends_the_connection_naming_the_sender() {
    common::within(LIMIT, || assert_lost_with(Tamper::Replay(12), "sealed record 12 arrived again"));
}

#[test]
fn a_dropped_record_ends_the_connection_naming_the_sender() {
    common::within(LIMIT, || {
        assert_lost_with(Tamper::Drop(12), "sealed record 13 arrived where record 12 was due")
    });
}

#[test]
fn an_unsealed_session_delivers_a_flipped_byte() {
    // What sealing adds: on an unsealed session (loopback by default) the transport cannot tell.
    common::within(LIMIT, || {
        let (failure, delivered) = failure_under(Tamper::FlipPlain, Sealing::Never);
        assert_eq!(delivered, usize::MAX, "the changed message was delivered: {failure:?}");
    });
}
