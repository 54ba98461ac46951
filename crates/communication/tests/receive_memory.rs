//! A receive thread reserves memory for the bytes that arrived, not for the length a frame's
//! header claims. Its own binary, since it counts every allocation of the process (a global
//! allocator that remembers the largest request).

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use timely_communication::largest_allocation::{largest_allocation, CountingAllocator};
use timely_communication::networking::{
    MessageHeader, NetworkError, Transport, TransportOptions, WorkerEndpoints, MAX_MESSAGE_BYTES,
};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Process 0's transport (one worker) and process 1's raw stream to it, after a valid handshake.
fn receiver_and_raw_peer() -> (Transport, Vec<WorkerEndpoints>, TcpStream) {
    let mut streams = common::connect_processes(2, 1, Duration::from_secs(20)).into_iter();
    let first = streams.next().expect("process 0's streams");
    let raw = streams
        .next()
        .expect("process 1's streams")
        .into_iter()
        .next()
        .flatten()
        .expect("a stream to 0")
        .stream;
    let wake = Arc::new(|_worker: usize| {});
    let (transport, workers) =
        Transport::start(0, 1, first, TransportOptions::default(), wake).expect("process 0's transport");
    (transport, workers, raw)
}

fn frame(length: u64, seqno: u64) -> Vec<u8> {
    let header = MessageHeader { channel: 3, source: 1, target_lower: 0, target_upper: 1, length, seqno };
    let mut bytes = Vec::new();
    header.write_to(&mut bytes);
    bytes
}

/// Waits up to 5 s for the transport to record a failure.
fn failure_within_5s(transport: &Transport) -> NetworkError {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(failure) = transport.health().failure() {
            return failure;
        }
        assert!(Instant::now() < deadline, "no failure reported within 5 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_claimed_length_is_not_reserved_before_its_bytes_arrive() {
    common::within(Duration::from_secs(60), || {
        let (transport, mut workers, mut raw) = receiver_and_raw_peer();
        // A genuine message of 3 MiB, larger than a receive buffer, arrives whole and intact
        // while its buffer grows.
        let body: Vec<u8> = (0..3usize << 20).map(|i| (i % 251) as u8).collect();
        raw.write_all(&frame(body.len() as u64, 0)).expect("write a header");
        raw.write_all(&body).expect("write a body");
        let (header, payload) = common::next_delivery(&mut workers[0].receiver);
        assert_eq!((header.seqno, header.length), (0, body.len() as u64));
        assert!(payload.in_memory() == Some(&body[..]), "the payload arrived intact");
        drop(payload);
        let before = largest_allocation();
        assert!(before < 64 << 20, "{before} bytes requested at once for a 3 MiB message");
        // A header that claims the largest length allowed, followed by 64 KiB.
        raw.write_all(&frame(MAX_MESSAGE_BYTES as u64, 1)).expect("write a header");
        raw.write_all(&vec![7u8; 1 << 16]).expect("write part of a body");
        let watch = Instant::now() + Duration::from_millis(800);
        while Instant::now() < watch {
            let largest = largest_allocation();
            assert!(largest < 64 << 20, "{largest} bytes requested at once after a claim of 1 GiB");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(transport.health().failure(), None, "a message in progress is no failure");
        // One byte over the cap ends the connection, naming the sender.
        let (transport, _workers, mut raw) = receiver_and_raw_peer();
        raw.write_all(&frame(MAX_MESSAGE_BYTES as u64 + 1, 0)).expect("write a header");
        let failure = failure_within_5s(&transport);
        let NetworkError::PeerLost { process: 1, reason } = &failure else { panic!("unexpected {failure}") };
        assert!(reason.contains("exceeds the maximum of 1073741824 bytes"), "{reason}");
    });
}
