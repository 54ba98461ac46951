//! The frame observer on loopback, with threads as processes: every data frame a process's send
//! thread writes is reported once as sent there and once as received by its peer, with equal
//! headers, in the same order, never before it was sent; control frames (heartbeats, clock
//! probes and replies) are never reported; the observer reaches the transport from
//! `ClusterConfig::frames`, and sequence numbers count per channel, source and target range.

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use timely_communication::initialize::ClusterConfig;
use timely_communication::networking::{
    ClockSync, ClusterIdentity, Liveness, MessageHeader, ReceiveBudget, Transport, TransportOptions,
    WorkerEndpoints,
};
use timely_communication::{initialize, Allocator, Config, FrameDirection, FrameObserver, Push};

const LIMIT: Duration = Duration::from_secs(60);
const SETUP: Duration = Duration::from_secs(20);
const THREADS: usize = 2;
/// Payload sizes: empty, below and at a header, and beyond the send (64 KiB) and receive
/// (1 MiB) buffers.
const SIZES: [usize; 6] = [0, 1, 48, 1000, 70_000, (1 << 20) + 5];
const POINT: u64 = 5;
const BROADCAST: u64 = 6;
const BROADCASTS: u64 = 3;

/// Everything an observer was told, in the order it was told.
#[derive(Default)]
struct Recorder {
    frames: Mutex<Vec<(FrameDirection, i64, MessageHeader)>>,
}

impl FrameObserver for Recorder {
    fn frame(&self, direction: FrameDirection, time_ns: i64, header: &MessageHeader) {
        self.frames.lock().expect("the recorder").push((direction, time_ns, *header));
    }
}

impl Recorder {
    /// The times and headers reported in `direction`, in order.
    fn reported(&self, direction: FrameDirection) -> Vec<(i64, MessageHeader)> {
        let frames = self.frames.lock().expect("the recorder");
        frames.iter().filter(|frame| frame.0 == direction).map(|&(_, time, header)| (time, header)).collect()
    }
}

/// The global worker indices of `process`.
fn workers_of(process: usize) -> std::ops::Range<u64> {
    (process * THREADS) as u64..((process + 1) * THREADS) as u64
}

fn header(
    channel: u64,
    source: u64,
    targets: std::ops::Range<u64>,
    seqno: u64,
    length: usize,
) -> MessageHeader {
    let (target_lower, target_upper) = (targets.start, targets.end);
    MessageHeader { channel, source, target_lower, target_upper, length: length as u64, seqno }
}

/// The headers worker `source` sends to process `remote`: every size to each of its workers,
/// flushed per target (so the send thread sees several batches), then `BROADCASTS` messages
/// to all of them.
fn planned(source: u64, remote: usize) -> Vec<MessageHeader> {
    let point = workers_of(remote).flat_map(|target| {
        SIZES
            .iter()
            .enumerate()
            .map(move |(seqno, &size)| header(POINT, source, target..target + 1, seqno as u64, size))
    });
    let broadcast =
        (0..BROADCASTS).map(|seqno| header(BROADCAST, source, workers_of(remote), seqno, seqno as usize + 1));
    point.chain(broadcast).collect()
}

/// Worker `me` sends what [`planned`] says to every other process.
fn send_planned(me: &mut WorkerEndpoints) {
    for (remote, sender) in me.senders.iter_mut().enumerate() {
        let Some(sender) = sender else { continue };
        for header in planned(me.index as u64, remote) {
            sender.send(header, &vec![7; header.length as usize]).expect("send");
            if header.channel == BROADCAST || header.seqno as usize == SIZES.len() - 1 {
                sender.flush().expect("flush");
            }
        }
    }
}

/// One simulated process with an observer.
struct Observed {
    transport: Transport,
    workers: Vec<WorkerEndpoints>,
    recorder: Arc<Recorder>,
}

/// Two processes of two workers, both observed, with heartbeats after 250 ms of quiet and a
/// burst of clock probes from process 1 at start.
fn observed_pair() -> Vec<Observed> {
    let liveness = Liveness::new(Duration::from_secs(1)).expect("a valid peer timeout");
    // A probe counts as a write, so probes more often than heartbeats would replace them; the
    // default interval leaves the burst at start and then heartbeats.
    let clock = ClockSync::default();
    common::connect_processes(2, THREADS, SETUP)
        .into_iter()
        .enumerate()
        .map(|(process, streams)| {
            let recorder = Arc::new(Recorder::default());
            let frames: Arc<dyn FrameObserver> = recorder.clone();
            let (transport, workers) = Transport::start(
                process,
                THREADS,
                streams,
                TransportOptions { liveness, clock, frames: Some(frames), ..Default::default() },
                Arc::new(|_| {}),
            )
            .expect("the transport starts");
            Observed { transport, workers, recorder }
        })
        .collect()
}

/// Waits until both processes have read a heartbeat and process 1 has measured its clock, so
/// that control frames of every kind went both ways while the observers were installed.
fn wait_for_control_frames(nodes: &[Observed]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let heartbeats =
        |process: usize| nodes[process].transport.receive_stats()[1 - process].map(|s| s.heartbeats);
    while heartbeats(0) == Some(0)
        || heartbeats(1) == Some(0)
        || nodes[1].transport.clock_offsets().is_empty()
    {
        assert!(Instant::now() < deadline, "no heartbeat or clock measurement within 20 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every worker sends its plan and receives everything planned for it (a broadcast reaches
/// both workers of a process); then the workers' endpoints are dropped.
fn exchange_all(nodes: &mut [Observed]) {
    std::thread::scope(|scope| {
        for worker in nodes.iter_mut().flat_map(|node| node.workers.iter_mut()) {
            scope.spawn(move || {
                send_planned(worker);
                let expected = THREADS * (SIZES.len() + BROADCASTS as usize);
                for _ in 0..expected {
                    let (header, payload) = common::next_delivery(&mut worker.receiver);
                    assert_eq!(header.length as usize, payload.len());
                }
            });
        }
    });
    for node in nodes.iter_mut() {
        node.workers.clear();
        assert_eq!(node.transport.health().failure(), None);
    }
}

#[test]
fn every_data_frame_is_reported_sent_once_and_received_once_with_equal_headers() {
    common::within(LIMIT, || {
        let mut nodes = observed_pair();
        wait_for_control_frames(&nodes);
        exchange_all(&mut nodes);
        let stats: Vec<_> = nodes.iter().map(|node| node.transport.receive_stats()).collect();
        let recorders: Vec<_> = nodes.iter().map(|node| Arc::clone(&node.recorder)).collect();
        let shutdowns: Vec<_> = nodes
            .into_iter()
            .map(|node| std::thread::spawn(move || node.transport.shutdown(Duration::from_secs(10))))
            .collect();
        for shutdown in shutdowns {
            assert_eq!(shutdown.join().expect("shutdown thread"), Ok(()));
        }
        for (sender, receiver) in [(0, 1), (1, 0)] {
            let sent = recorders[sender].reported(FrameDirection::Sent);
            let received = recorders[receiver].reported(FrameDirection::Received);
            let headers = |frames: &[(i64, MessageHeader)]| frames.iter().map(|f| f.1).collect::<Vec<_>>();
            // One stream: the receiver reads the frames in the order the sender wrote them.
            assert_eq!(headers(&sent), headers(&received), "process {sender} to {receiver}");
            // Exactly the planned data frames, each once: no control frame, no duplicate.
            let mut observed = headers(&sent);
            let mut expected: Vec<_> =
                workers_of(sender).flat_map(|source| planned(source, receiver)).collect();
            observed.sort_by_key(|h| (h.channel, h.source, h.target_lower, h.seqno));
            expected.sort_by_key(|h| (h.channel, h.source, h.target_lower, h.seqno));
            assert_eq!(observed, expected, "process {sender} to {receiver}");
            assert!(observed.iter().all(|header| !header.is_control()));
            // One clock: a frame is read after its write started; each thread's times never go back.
            assert!(sent.iter().zip(&received).all(|(s, r)| s.0 <= r.0), "sent before received");
            assert!(
                sent.windows(2).all(|w| w[0].0 <= w[1].0) && received.windows(2).all(|w| w[0].0 <= w[1].0)
            );
            // The bytes reported are the payload bytes delivered.
            let bytes: u64 = received.iter().map(|f| f.1.length).sum();
            assert_eq!(bytes, stats[receiver][sender].expect("stats").payload_bytes);
        }
    });
}

/// Every worker sends `MESSAGES` pairs to every worker and broadcasts as many, then receives
/// everything sent to it; returns its index.
fn exchange(mut allocator: Allocator) -> usize {
    const MESSAGES: usize = 40;
    let (index, peers) = (allocator.index(), allocator.peers());
    let (mut pushers, mut puller) = allocator.allocate::<(usize, usize)>(POINT as usize);
    let (mut broadcast, mut broadcasts, _) = allocator.broadcast::<(usize, usize)>(BROADCAST as usize);
    for seq in 0..MESSAGES {
        pushers.iter_mut().for_each(|pusher| pusher.send((index, seq)));
        broadcast.send((index, seq));
    }
    let mut received = 0;
    while received < 2 * peers * MESSAGES {
        assert_eq!(allocator.failure(), None);
        allocator.release();
        allocator.receive();
        allocator.events().borrow_mut().clear();
        while puller.recv().is_some() || broadcasts.recv().is_some() {
            received += 1;
        }
        allocator.await_events(Some(Duration::from_millis(50)));
    }
    assert_eq!(received, 2 * peers * MESSAGES);
    index
}

/// The seqnos reported in `direction`, per (channel, source, target range), in order.
type Counters = BTreeMap<(u64, u64, u64, u64), Vec<u64>>;

fn seqnos(recorder: &Recorder, direction: FrameDirection) -> Counters {
    let mut counters = Counters::new();
    for (_, h) in recorder.reported(direction) {
        counters.entry((h.channel, h.source, h.target_lower, h.target_upper)).or_default().push(h.seqno);
    }
    counters
}

#[test]
fn the_cluster_config_carries_the_observer_and_seqnos_count_per_channel_source_and_targets() {
    common::within(LIMIT, || {
        let addresses = common::free_addresses(2);
        let recorder = Arc::new(Recorder::default());
        let runs: Vec<_> = (0..2)
            .map(|process| {
                // Only process 0 observes: a process without an observer runs as before.
                let frames = (process == 0).then(|| Arc::clone(&recorder) as Arc<dyn FrameObserver>);
                let config = Config::Cluster(ClusterConfig {
                    threads: THREADS,
                    process,
                    processes: 2,
                    initial_processes: 2,
                    join: None,
                    gone: Vec::new(),
                    addresses: addresses.clone(),
                    identity: ClusterIdentity {
                        cluster_id: 12,
                        secret: b"frames".to_vec(),
                        ..ClusterIdentity::default()
                    },
                    connect_timeout: SETUP,
                    liveness: Liveness::default(),
                    clock: ClockSync::default(),
                    insecure: false,
                    frames,
                    receive_budget: ReceiveBudget::default(),
                });
                std::thread::spawn(move || initialize(config, exchange).expect("start").join())
            })
            .collect();
        for run in runs {
            let indices: Vec<usize> =
                run.join().expect("process").into_iter().map(|r| r.expect("worker")).collect();
            assert_eq!(indices.len(), THREADS);
        }
        let every = (0..40).collect::<Vec<u64>>();
        for (direction, sources, targets) in [(FrameDirection::Sent, 0, 1), (FrameDirection::Received, 1, 0)]
        {
            let mut expected = Counters::new();
            for source in workers_of(sources) {
                for target in workers_of(targets) {
                    expected.insert((POINT, source, target, target + 1), every.clone());
                }
                let range = workers_of(targets);
                expected.insert((BROADCAST, source, range.start, range.end), every.clone());
            }
            assert_eq!(seqnos(&recorder, direction), expected, "{direction:?}");
        }
    });
}
