//! Messages of the bootstrap (join) and leave protocols from another process that break the
//! protocol end the run with a `ClusterFailure` naming that process: never a panic of the
//! receiving worker, never a silent change of its state. Two harnesses: process 0 of a
//! 2-process cluster with this test as process 1 (a member that goes wrong, `wire_input`'s),
//! and processes 0 and 1 with this test joining as process 2 (a joiner that goes wrong).

use crate::common;
use crate::wire_input::{blamed_by_abort, frame, identity, run_with, Channels, LIMIT};

use std::io::Write;
use std::net::TcpStream;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use timely_communication::initialize::ClusterConfig;
use timely_communication::networking::harness::Member;
use timely_communication::networking::{establish_as, Connections, Entry};
use timely_communication::Exchangeable;
use timely_engine::dataflow::{InputHandle, ProbeHandle};
use timely_engine::rescale::messages::{BootstrapMessage, Envelope, Welcome, BOOTSTRAP_CHANNEL};
use timely_engine::{Config, ExecuteError};

const BOOTSTRAP: u64 = BOOTSTRAP_CHANNEL as u64;

/// The bytes of `message` as worker `from` sends it on the bootstrap channel.
pub(crate) fn wire(from: usize, message: BootstrapMessage) -> Vec<u8> {
    let mut bytes = Vec::new();
    Envelope { from, message }.encode(&mut bytes);
    bytes
}

/// Process 1 (worker 1) writes `messages` (made for process 0's channels) on the bootstrap
/// channel; process 0's run must fail naming process 1 for `reason`, and its abort blame it.
fn member_sends(messages: impl FnOnce(Channels) -> Vec<Vec<u8>> + Send + 'static, reason: &str) {
    let reason = reason.to_owned();
    common::within(LIMIT, move || {
        let (error, blamed) = run_with(|channels| {
            messages(channels).iter().flat_map(|bytes| frame(BOOTSTRAP, 1, bytes)).collect()
        });
        let expected = "lost the connection to process 1: it broke the protocol: ";
        assert!(error.contains(expected) && error.contains(&reason), "expected {reason:?} in: {error}");
        assert_eq!(blamed, 1, "the abort frame blames the sender");
    });
}

#[test]
fn undecodable_bootstrap_bytes() {
    member_sends(
        |_| vec![vec![9, 9, 9]],
        &format!("worker 1 sent an invalid message on channel {BOOTSTRAP}"),
    );
}

#[test]
fn a_bootstrap_message_claiming_a_length_beyond_its_bytes() {
    // A `Welcome` whose `dataflows` claims 2^60 entries: refused, not allocated.
    let mut bytes = wire(1, BootstrapMessage::Welcome(Welcome::default()));
    bytes.truncate(8 + 4 + 8);
    bytes.extend_from_slice(&(1u64 << 60).to_le_bytes());
    member_sends(move |_| vec![bytes], "worker 1 sent an invalid message on channel");
}

#[test]
fn an_envelope_naming_a_worker_of_another_process() {
    member_sends(
        |_| vec![wire(0, BootstrapMessage::Leaving { from: 0 })],
        "a bootstrap message that claims to come from worker 0",
    );
}

#[test]
fn a_message_naming_another_sender_than_its_envelope() {
    member_sends(
        |_| vec![wire(1, BootstrapMessage::Hello { from: 0 })],
        "Hello that claims to come from worker 0",
    );
}

#[test]
fn a_hello_from_a_worker_that_did_not_join() {
    member_sends(
        |_| vec![wire(1, BootstrapMessage::Hello { from: 1 })],
        "worker 1 asked for a welcome but did not join the cluster",
    );
}

#[test]
fn a_welcome_for_a_worker_that_is_not_joining() {
    member_sends(
        |_| vec![wire(1, BootstrapMessage::Welcome(Welcome::default()))],
        "worker 1 sent a Welcome message to worker 0, which is not joining",
    );
}

#[test]
fn a_next_message_for_a_worker_that_is_not_joining() {
    member_sends(
        |c| vec![wire(1, BootstrapMessage::Next { from: 1, scopes: vec![(c.progress as usize, 0)] })],
        "worker 1 sent a Next message to worker 0, which is not joining",
    );
}

#[test]
fn batches_for_a_worker_that_is_not_joining() {
    member_sends(
        |c| {
            let batches = BootstrapMessage::Batches {
                channel: c.progress as usize,
                sender: 1,
                start: 0,
                batches: vec![0; 8],
            };
            vec![wire(1, batches)]
        },
        "worker 1 sent a Batches message to worker 0, which is not joining",
    );
}

#[test]
fn a_range_request_from_a_worker_that_did_not_join() {
    member_sends(
        |c| {
            let range = BootstrapMessage::Range {
                from: 1,
                channel: c.progress as usize,
                sender: 0,
                start: 0,
                end: 1,
            };
            vec![wire(1, range)]
        },
        "worker 1 asked for progress batches, but this worker is not its bootstrap server now",
    );
}

#[test]
fn a_done_from_a_worker_that_did_not_join() {
    member_sends(
        |_| vec![wire(1, BootstrapMessage::Done { from: 1 })],
        "worker 1 said it finished its bootstrap but did not join the cluster",
    );
}

#[test]
fn a_leaver_sealed_twice() {
    member_sends(
        |_| {
            vec![wire(1, BootstrapMessage::Sealed { from: 1 }), wire(1, BootstrapMessage::Sealed { from: 1 })]
        },
        "worker 1 sealed worker 0 twice",
    );
}

#[test]
fn a_leave_completed_twice() {
    member_sends(
        |_| {
            let left = || wire(1, BootstrapMessage::Left { from: 1, dataflows: 1 });
            vec![left(), left()]
        },
        "worker 1 said twice that its leave is complete",
    );
}

#[test]
fn stranded_channels_from_a_worker_that_is_not_leaving() {
    member_sends(
        |c| {
            vec![wire(
                1,
                BootstrapMessage::Stranded { from: 1, channels: vec![c.progress as usize], kept: vec![] },
            )]
        },
        "worker 1 listed channels of dataflows it never built, but it is not leaving",
    );
}

#[test]
fn a_message_forwarded_by_a_worker_that_is_not_leaving() {
    member_sends(
        |c| {
            let forwarded = BootstrapMessage::Forwarded {
                from: 1,
                channel: c.data as usize,
                source: 0,
                bytes: vec![1, 2],
            };
            vec![wire(1, forwarded)]
        },
        "worker 1 forwarded a message of a dataflow it never built, but it is not leaving",
    );
}

/// This test's process joins members 0 and 1 as process 2 (one worker). Process 0 says it is
/// ready once its own set-up is done; process 1 may still be setting up then, and the joiner
/// dials it again until it runs.
pub(crate) fn join_as_process_2(addresses: &[String]) -> Connections {
    establish_as(Entry::Join, 2, addresses, &[], 1, &identity(), Duration::from_secs(20))
        .expect("process 2 joins")
}

/// A member of a 2-process cluster (one worker each) that builds an input, an exchange and a
/// probe and steps for at most 20 s; process 0 reports its channels on `channels`.
pub(crate) fn member(
    addresses: Vec<String>,
    process: usize,
    channels: Option<mpsc::Sender<u64>>,
) -> JoinHandle<Result<Vec<()>, ExecuteError>> {
    let mut config = ClusterConfig::started_together(addresses, process, 2, 1, identity());
    config.connect_timeout = Duration::from_secs(20);
    let channels = std::sync::Mutex::new(channels);
    std::thread::spawn(move || {
        timely_engine::execute(Config::Cluster(config), move |worker| {
            let mut input: InputHandle<u64, u64> = InputHandle::new();
            let probe = ProbeHandle::new();
            worker.dataflow::<u64, _>(|scope| {
                scope.input_from(&mut input).exchange(|x| *x).probe_with(&probe);
            });
            if let Some(sender) = channels.lock().unwrap().take() {
                let state = worker.state().clone();
                let allocator = state.allocator();
                let records = allocator.allocations();
                let progress = records.iter().rev().find(|r| r.type_name.contains("ProgressBatch<u64>"));
                sender.send(progress.expect("a progress channel").identifier as u64).unwrap();
            }
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                worker.step_or_park(Some(Duration::from_millis(20)));
            }
        })
    })
}

/// Processes 0 and 1 run the engine; this test joins as process 2 (worker 2), says hello to
/// worker 0, its server, and then writes `then` (given process 0's progress channel) to it.
/// Process 0's run must fail naming process 2 for `reason`.
fn joiner_sends(then: impl FnOnce(usize) -> Vec<Vec<u8>> + Send + 'static, reason: &str) {
    let reason = reason.to_owned();
    common::within(LIMIT, move || {
        let addresses = common::free_addresses(3);
        let (sender, channel) = mpsc::channel();
        let runs = [member(addresses.clone(), 0, Some(sender)), member(addresses.clone(), 1, None)];
        let progress = channel.recv_timeout(Duration::from_secs(20)).expect("process 0's channels") as usize;
        let mut connections = join_as_process_2(&addresses);
        let mut raw: TcpStream = connections.streams[0].take().expect("a stream to process 0").stream;
        raw.write_all(&frame(BOOTSTRAP, 2, &wire(2, BootstrapMessage::Hello { from: 2 })))
            .expect("write hello");
        // Process 0 steps every 20 ms at most: by now it has admitted and welcomed worker 2.
        std::thread::sleep(Duration::from_millis(500));
        let bytes: Vec<u8> = then(progress).iter().flat_map(|message| frame(BOOTSTRAP, 2, message)).collect();
        raw.write_all(&bytes).expect("write the frames");
        let blamed = blamed_by_abort(&mut raw);
        let [first, second] = runs;
        let error = first.join().expect("process 0's thread").expect_err("process 0's run fails").to_string();
        let _ = second.join();
        let expected = "lost the connection to process 2: it broke the protocol: ";
        assert!(error.contains(expected) && error.contains(&reason), "expected {reason:?} in: {error}");
        assert_eq!(blamed, 2, "the abort frame blames the joiner");
    });
}

#[test]
fn a_joiner_that_says_hello_twice() {
    joiner_sends(
        |_| vec![wire(2, BootstrapMessage::Hello { from: 2 })],
        "worker 2 asked for a welcome twice",
    );
}

#[test]
fn a_range_request_naming_a_worker_that_does_not_exist() {
    joiner_sends(
        |progress| {
            vec![wire(2, BootstrapMessage::Range { from: 2, channel: progress, sender: 7, start: 0, end: 1 })]
        },
        "worker 2 asked for the progress batches of worker 7 of 3",
    );
}

#[test]
fn a_range_request_for_a_channel_that_does_not_exist() {
    joiner_sends(
        |_| vec![wire(2, BootstrapMessage::Range { from: 2, channel: 1 << 40, sender: 1, start: 0, end: 1 })],
        &format!("worker 2 asked for progress channel {}, which this worker does not have", 1u64 << 40),
    );
}

#[test]
fn a_reversed_range_request() {
    joiner_sends(
        |progress| {
            vec![wire(2, BootstrapMessage::Range { from: 2, channel: progress, sender: 1, start: 5, end: 2 })]
        },
        "worker 2 asked for the reversed range [5, 2) of worker 1",
    );
}

#[test]
fn a_range_request_repeated() {
    joiner_sends(
        |progress| {
            let range = BootstrapMessage::Range {
                from: 2,
                channel: progress,
                sender: 1,
                start: u64::MAX - 1,
                end: u64::MAX,
            };
            vec![wire(2, range.clone()), wire(2, range)]
        },
        "worker 2 asked twice for the batches of worker 1 on progress channel",
    );
}

#[test]
fn a_done_repeated() {
    joiner_sends(
        |_| vec![wire(2, BootstrapMessage::Done { from: 2 }), wire(2, BootstrapMessage::Done { from: 2 })],
        "worker 2 said twice that it finished its bootstrap",
    );
}

#[test]
fn a_joiner_that_welcomes_its_server() {
    joiner_sends(
        |_| vec![wire(2, BootstrapMessage::Welcome(Welcome::default()))],
        "worker 2 sent a Welcome message to worker 0, which is not joining",
    );
}

/// The identity of `common::loopback_cluster`, which the joining engine uses.
fn cluster_identity() -> timely_communication::networking::ClusterIdentity {
    timely_communication::networking::ClusterIdentity {
        cluster_id: 7,
        secret: b"test secret".to_vec(),
        ..Default::default()
    }
}

/// A welcome that fits a joiner after two workers, with nothing running.
pub(crate) fn fitting_welcome() -> BootstrapMessage {
    BootstrapMessage::Welcome(Welcome { existing: 2, ..Welcome::default() })
}

/// Processes 0 and 1 are simulated members (the communication crate's harness: a transport and
/// no engine, one worker each); the engine joins as process 2, served by worker 0. Once both
/// members know of the join, each `(worker, message)` goes from that worker to worker 2. The
/// joiner's run must fail naming process `blamed` for `reason`.
fn members_send(messages: Vec<(usize, BootstrapMessage)>, blamed: usize, reason: &str) {
    let reason = reason.to_owned();
    common::within(LIMIT, move || {
        let (error, _members) = members_send_to_joiner(messages, false);
        let expected = format!("lost the connection to process {blamed}: it broke the protocol: ");
        assert!(error.contains(&expected) && error.contains(&reason), "expected {reason:?} in: {error}");
    });
}

/// The harness of [`members_send`]: returns the error of the joiner's run, which must fail,
/// and the members. With `bootstrap`, the joiner calls `worker.bootstrap()` after building its
/// dataflow (which activates its scopes once their bootstrap is complete).
pub(crate) fn members_send_to_joiner(
    messages: Vec<(usize, BootstrapMessage)>,
    bootstrap: bool,
) -> (String, Vec<Member>) {
    members_script_joiner(
        move |members| {
            messages.into_iter().for_each(|(from, message)| send_to_joiner(members, from, message))
        },
        bootstrap,
    )
}

/// Like [`members_send_to_joiner`], with `script` playing the members (processes 0 and 1, one
/// worker each) once both know of the joiner (process 2, worker 2).
pub(crate) fn members_script_joiner(
    script: impl FnOnce(&mut [Member]),
    bootstrap: bool,
) -> (String, Vec<Member>) {
    use timely_communication::networking::harness::start_cluster;
    let addresses = common::free_addresses(3);
    let limit = Duration::from_secs(20);
    let mut members = start_cluster(&addresses[..2], 1, &cluster_identity(), limit).expect("the members");
    let config = common::loopback_cluster(&addresses, 2, 2, 1, Some(0));
    let joiner = std::thread::spawn(move || {
        timely_engine::execute(config, move |worker| {
            let mut input: InputHandle<u64, u64> = InputHandle::new();
            let probe = ProbeHandle::new();
            worker.dataflow::<u64, _>(|scope| {
                scope.input_from(&mut input).exchange(|x| *x).probe_with(&probe);
            });
            if bootstrap {
                worker.bootstrap();
            }
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                worker.step_or_park(Some(Duration::from_millis(20)));
            }
        })
    });
    let deadline = Instant::now() + limit;
    let mut learned = [false; 2];
    while !learned.iter().all(|known| *known) {
        for (member, known) in members.iter_mut().zip(&mut learned) {
            *known |= member.take_joins().iter().flatten().any(|process| *process == 2);
        }
        assert!(Instant::now() < deadline, "the members learn of the join");
        std::thread::sleep(Duration::from_millis(1));
    }
    script(&mut members);
    let error = joiner.join().expect("the joiner's thread").expect_err("the joiner's run fails").to_string();
    (error, members)
}

/// Member `from` (worker `from` of process `from`) sends `message` to the joiner, worker 2.
pub(crate) fn send_to_joiner(members: &mut [Member], from: usize, message: BootstrapMessage) {
    let payload = wire(from, message);
    let header = timely_communication::networking::MessageHeader {
        channel: BOOTSTRAP,
        source: from as u64,
        target_lower: 2,
        target_upper: 3,
        length: payload.len() as u64,
        seqno: 0,
    };
    let sender = members[from].workers[0].senders[2].as_mut().expect("a sender to the joiner");
    sender.send(header, &payload).expect("send");
    sender.flush().expect("flush");
}

#[test]
fn a_welcome_not_from_the_joiners_server() {
    members_send(
        vec![(1, fitting_welcome())],
        1,
        "worker 1 sent a welcome, but the server of this worker is worker 0",
    );
}

#[test]
fn a_second_welcome() {
    members_send(vec![(0, fitting_welcome()), (0, fitting_welcome())], 0, "worker 0 sent a second welcome");
}

#[test]
fn a_welcome_for_another_number_of_workers() {
    members_send(
        vec![(0, BootstrapMessage::Welcome(Welcome { existing: 7, ..Welcome::default() }))],
        0,
        "worker 0 sent a welcome for a cluster of 7 workers before the join, but the joining workers start at 2",
    );
}

#[test]
fn a_welcome_with_a_dataflow_of_more_workers_than_the_cluster() {
    let welcome = Welcome { existing: 2, dataflows: vec![Some(1 << 40)], ..Welcome::default() };
    members_send(
        vec![(0, BootstrapMessage::Welcome(welcome))],
        0,
        &format!("worker 0 sent a welcome with a dataflow built for {} workers", 1u64 << 40),
    );
}

#[test]
fn a_second_next_message() {
    let next = BootstrapMessage::Next { from: 1, scopes: Vec::new() };
    members_send(vec![(1, next.clone()), (1, next)], 1, "worker 1 sent a second Next message");
}

#[test]
fn batches_not_from_the_joiners_server() {
    let batches = BootstrapMessage::Batches { channel: 5, sender: 0, start: 0, batches: Vec::new() };
    members_send(
        vec![(1, batches)],
        1,
        "worker 1 sent progress batches, but the server of this worker is worker 0",
    );
}

#[test]
fn batches_nobody_asked_for() {
    let batches = BootstrapMessage::Batches { channel: 5, sender: 1, start: 0, batches: Vec::new() };
    members_send(
        vec![(0, fitting_welcome()), (0, batches)],
        0,
        "worker 0 sent progress batches of worker 1 on channel 5 that were not asked for",
    );
}

/// A joiner's leave notice can reach a member before the member admitted the join (the two
/// travel separately): the member must seal the leaver once it knows it, not fail looking for
/// a connection to it (the frame fuzzer found a panic here). Repeated: the order is a race.
#[test]
fn a_leave_notice_that_overtakes_its_join_is_no_panic() {
    common::within(LIMIT, || {
        for _ in 0..8 {
            let addresses = common::free_addresses(3);
            let (sender, channel) = mpsc::channel();
            let runs = [member(addresses.clone(), 0, Some(sender)), member(addresses.clone(), 1, None)];
            channel.recv_timeout(Duration::from_secs(20)).expect("process 0's channels");
            let mut connections = join_as_process_2(&addresses);
            let mut raw: TcpStream = connections.streams[0].take().expect("a stream to process 0").stream;
            let leaving = frame(BOOTSTRAP, 2, &wire(2, BootstrapMessage::Leaving { from: 2 }));
            raw.write_all(&leaving).expect("write the notice");
            std::thread::sleep(Duration::from_millis(100));
            drop(raw);
            drop(connections);
            for run in runs {
                let error =
                    run.join().expect("a member's thread").expect_err("the joiner was lost").to_string();
                assert!(
                    error.contains("lost the connection to process 2") && !error.contains("panicked"),
                    "{error}"
                );
            }
        }
    });
}

#[test]
fn a_serving_message_naming_a_worker_that_did_not_join() {
    member_sends(
        |_| vec![wire(1, BootstrapMessage::Serving { from: 1, joiner: 0 })],
        "worker 1 said it welcomed worker 0, which did not join after it",
    );
}
