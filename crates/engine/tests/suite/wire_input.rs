//! Progress batches and data messages from another process that break the protocol end the
//! run with a `ClusterFailure` naming that process, never a panic of the receiving worker, and the abort
//! frame the receiving process sends as it closes blames the sender. Process 0 runs the
//! engine (a thread of this test); process 1 is this test speaking the handshake and then
//! writing frames of its choice on process 0's progress or data channel.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use timely_communication::initialize::ClusterConfig;
use timely_communication::networking::{establish, ClusterIdentity, MessageHeader, Sealing};
use timely_communication::Exchangeable;
use timely_engine::dataflow::{InputHandle, Message, ProbeHandle};
use timely_engine::progress::{Location, ProgressBatch};
use timely_engine::{Config, ExecuteError};

pub(crate) const LIMIT: Duration = Duration::from_secs(60);

/// Process 0's progress channel and the data channel of its exchange.
#[derive(Clone, Copy)]
pub(crate) struct Channels {
    pub(crate) progress: u64,
    pub(crate) data: u64,
}

/// The bytes to write, given process 0's channels.
type FrameOn = Box<dyn FnOnce(Channels) -> Vec<u8>>;

/// Unsealed, so that the raw peer writes frames as they are (it holds the secret, so it could
/// seal them too: what it sends is what a member that went wrong would send).
pub(crate) fn identity() -> ClusterIdentity {
    ClusterIdentity { cluster_id: 12, secret: b"wire input test".to_vec(), sealing: Sealing::Never }
}

/// Starts process 0 of a 2-process cluster (one worker) that builds an input, an exchange and
/// a probe and steps for at most 20 s; returns its run, its channels, and process 1's stream
/// to it.
pub(crate) fn engine_and_raw_peer(
) -> (std::thread::JoinHandle<Result<Vec<()>, ExecuteError>>, Channels, TcpStream) {
    let addresses = common::free_addresses(2);
    let mut config = ClusterConfig::started_together(addresses.clone(), 0, 2, 1, identity());
    config.connect_timeout = Duration::from_secs(20);
    let (channel_tx, channel_rx) = mpsc::channel();
    let channel_tx = Arc::new(Mutex::new(channel_tx));
    let run = std::thread::spawn(move || {
        timely_engine::execute(Config::Cluster(config), move |worker| {
            let (_input, _probe, channels) = exchange_and_probe(worker);
            channel_tx.lock().unwrap().send(channels).unwrap();
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                worker.step_or_park(Some(Duration::from_millis(20)));
            }
        })
    });
    let mut streams =
        establish(1, &addresses, 1, &identity(), Duration::from_secs(20)).expect("process 1 connects");
    let raw = streams.remove(0).expect("a stream to process 0").stream;
    let channels = channel_rx.recv_timeout(Duration::from_secs(20)).expect("the channels");
    (run, channels, raw)
}

/// Builds the dataflow these tests' processes run (an input, an exchange, a probe) on
/// `worker`; returns its handles and the channels it allocated.
pub(crate) fn exchange_and_probe(
    worker: &mut timely_engine::Worker,
) -> (InputHandle<u64, u64>, ProbeHandle<u64>, Channels) {
    let mut input: InputHandle<u64, u64> = InputHandle::new();
    let probe = ProbeHandle::new();
    worker.dataflow::<u64, _>(|scope| {
        scope.input_from(&mut input).exchange(|x| *x).probe_with(&probe);
    });
    let state = worker.state().clone();
    let allocator = state.allocator();
    let channel = |kind: &str| {
        let record = allocator.allocations().iter().rev().find(|r| r.type_name.contains(kind));
        record.unwrap_or_else(|| panic!("a {kind} channel")).identifier as u64
    };
    let channels = Channels { progress: channel("ProgressBatch<u64>"), data: channel("Message<u64, u64>") };
    drop(allocator);
    (input, probe, channels)
}

/// A frame of worker `source` on `channel` for worker 0.
pub(crate) fn frame(channel: u64, source: u64, payload: &[u8]) -> Vec<u8> {
    frame_to(channel, source, 0, payload)
}

/// A frame of worker `source` on `channel` for worker `target`.
pub(crate) fn frame_to(channel: u64, source: u64, target: u64, payload: &[u8]) -> Vec<u8> {
    let header = MessageHeader {
        channel,
        source,
        target_lower: target,
        target_upper: target + 1,
        length: payload.len() as u64,
        seqno: 0,
    };
    let mut bytes = Vec::new();
    header.write_to(&mut bytes);
    bytes.extend_from_slice(payload);
    bytes
}

fn batch(source: usize, sequence: u64, updates: Vec<((Location, u64), i64)>) -> Vec<u8> {
    let mut bytes = Vec::new();
    ProgressBatch { source, sequence, after: None, updates }.encode(&mut bytes);
    bytes
}

/// Reads frames from process 0 until its abort frame; returns the process it blames.
pub(crate) fn blamed_by_abort(raw: &mut TcpStream) -> u64 {
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 1 << 16];
    loop {
        while let Ok(Some(header)) = MessageHeader::try_read(&buffer) {
            if buffer.len() < header.required_bytes() {
                break;
            }
            if header.is_abort() {
                return header.seqno;
            }
            buffer.drain(..header.required_bytes());
        }
        let read = raw.read(&mut chunk).expect("process 0 sends an abort frame within 10 s");
        assert!(read > 0, "process 0 closed without an abort frame");
        buffer.extend_from_slice(&chunk[..read]);
        assert!(buffer.len() < 64 << 20, "process 0 sent over 64 MiB without an abort frame");
    }
}

/// Writes the frame `payload` makes for process 0's channels; returns the error of process 0's
/// run and the process its abort frame blames.
pub(crate) fn run_with(payload: impl FnOnce(Channels) -> Vec<u8>) -> (String, u64) {
    let (run, channel, mut raw) = engine_and_raw_peer();
    raw.write_all(&payload(channel)).expect("write the frame");
    let blamed = blamed_by_abort(&mut raw);
    let error = run.join().expect("process 0's thread").expect_err("process 0's run fails");
    (error.to_string(), blamed)
}

#[test]
fn invalid_progress_batches_end_the_run_naming_their_sender() {
    common::within(LIMIT, || {
        let mut message = Vec::new();
        Message::new(0u64, vec![7u64], 0).encode(&mut message);
        let cases: [(&str, FrameOn); 6] = [
            (
                "a node past the scope",
                Box::new(|c| frame(c.progress, 1, &batch(1, 0, vec![((Location::source(5, 0), 0), 1)]))),
            ),
            (
                "a port the node lacks",
                Box::new(|c| frame(c.progress, 1, &batch(1, 0, vec![((Location::target(1, 0), 0), 1)]))),
            ),
            (
                "another sender",
                Box::new(|c| frame(c.progress, 1, &batch(0, 0, vec![((Location::source(1, 0), 0), 1)]))),
            ),
            ("bytes that do not decode", Box::new(|c| frame(c.progress, 1, &[1, 2, 3]))),
            ("a data message of another sender", Box::new(move |c| frame(c.data, 1, &message))),
            (
                "a sequence gap",
                Box::new(|c| frame(c.progress, 1, &batch(1, 3, vec![((Location::source(1, 0), 0), -1)]))),
            ),
        ];
        let reasons = [
            "names node 5 of a scope of 4 nodes",
            "names input 0 of node 1, which has 0",
            "a progress batch that claims to come from worker 0",
            "worker 1 sent an invalid message on channel",
            "a message that claims to come from worker 0",
            "expected batch 0 from worker 1 but received batch 3",
        ];
        for ((case, payload), reason) in cases.into_iter().zip(reasons) {
            let (error, blamed) = run_with(payload);
            let expected = "worker 0 stopped: lost the connection to process 1: it broke the protocol: ";
            assert!(error.contains(expected) && error.contains(reason), "{case}: {error}");
            assert_eq!(blamed, 1, "{case}: the abort frame blames the sender");
        }
    });
}

/// Deltas that decode but that no honest peer sends: one batch whose two `i64::MAX` at one
/// place would wrap when added up, and batches of `2^60` each, whose sum passes the bound of
/// `2^61` on what a worker receives. Each ends the run naming the sender before the batch
/// that passes the bound is applied; on the old code the first wrapped silently (a release
/// build does not check overflow) and the second was applied.
#[test]
fn deltas_past_the_bound_end_the_run_naming_their_sender() {
    common::within(LIMIT, || {
        let at = |delta| ((Location::source(1, 0), 0u64), delta);
        let cases: [(&str, FrameOn); 2] = [
            (
                "two i64::MAX at one place",
                Box::new(move |c| frame(c.progress, 1, &batch(1, 0, vec![at(i64::MAX), at(i64::MAX)]))),
            ),
            (
                "three batches of 2^60",
                Box::new(move |c| {
                    let mut frames = Vec::new();
                    for (sequence, delta) in [(0, 1 << 60), (1, -(1 << 60)), (2, 1 << 60)] {
                        frames.extend(frame(c.progress, 1, &batch(1, sequence, vec![at(delta)])));
                    }
                    frames
                }),
            ),
        ];
        for (case, payload) in cases {
            let (error, blamed) = run_with(payload);
            let expected = "worker 0 stopped: lost the connection to process 1: it broke the protocol: ";
            let reason = "brings progress updates whose deltas add up to more than 2305843009213693952 \
                          in magnitude on worker 0 (worker 1 sent";
            assert!(error.contains(expected) && error.contains(reason), "{case}: {error}");
            assert_eq!(blamed, 1, "{case}: the abort frame blames the sender");
        }
    });
}
