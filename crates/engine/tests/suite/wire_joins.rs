//! Joins that do not fit the cluster they join end the joiner's run with a clear error, never
//! a panic: a joiner told other departed processes (`--gone`) than its server's view (with
//! `wire_rescale`'s simulated members, processes 0 and 1, and the engine joining as process 2,
//! served by worker 0), a progress state in a welcome that names a location outside the scope
//! or counts that would overflow, or that belongs to a dataflow the server says it does not
//! run (the same harness), a range of batches other than the one the joiner asked for (the
//! same harness, answering the joiner's request), and a joiner that asks two servers for a
//! welcome (with engine members and this test joining as process 2).

use crate::common;
use crate::wire_input::{blamed_by_abort, exchange_and_probe, frame_to, LIMIT};
use crate::wire_rescale::{
    join_as_process_2, member, members_script_joiner, members_send_to_joiner, send_to_joiner, wire,
};

use std::io::Write;
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use timely_communication::exchangeable::bincode_encode;
use timely_communication::networking::harness::Member;
use timely_communication::Exchangeable;

use timely_engine::progress::Location;
use timely_engine::rescale::messages::{
    BootstrapMessage, Envelope, ScopeWelcome, Welcome, BOOTSTRAP_CHANNEL,
};

/// Waits up to 10 s for member 0 to record a failure; returns it.
fn member_failure(member: &Member) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(failure) = member.transport.health().failure() {
            return failure.to_string();
        }
        assert!(Instant::now() < deadline, "member 0 learns that the joiner stopped");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The server says worker 1 (process 1) left, but the joiner was started without `--gone`:
/// the joiner stops with a configuration error naming `--gone` and both views, blaming no
/// other process (its abort frame names itself), where it used to panic.
#[test]
fn a_welcome_whose_departed_workers_differ_from_gone_ends_the_joiners_run() {
    common::within(LIMIT, || {
        let welcome = Welcome { existing: 2, departed: vec![1], ..Welcome::default() };
        let (error, members) = members_send_to_joiner(vec![(0, BootstrapMessage::Welcome(welcome))], false);
        assert!(!error.contains("panicked"), "not a panic: {error}");
        for needed in [
            "worker 2 stopped: this joining process was started with --gone [] (workers [])",
            "its bootstrap server, worker 0, says the processes that left the cluster are [1] (workers [1])",
            "start a joining process with --gone naming exactly the processes that left",
        ] {
            assert!(error.contains(needed), "expected {needed:?} in: {error}");
        }
        assert!(!error.contains("broke the protocol"), "the server is not blamed: {error}");
        let seen = member_failure(&members[0]);
        assert!(seen.contains("process 2"), "member 0 names the joiner: {seen}");
    });
}

/// The frame of worker 2's hello to worker `server` (of process `server`: one worker each).
fn hello_to(server: usize) -> Vec<u8> {
    frame_to(BOOTSTRAP_CHANNEL as u64, 2, server as u64, &wire(2, BootstrapMessage::Hello { from: 2 }))
}

/// Process 2 (this test) joins engine members 0 and 1 and says hello from worker 2 to both:
/// each member's run ends naming process 2, whichever hello or `Serving` arrives first (the
/// second server refuses the hello, or a server learns that another welcomed it too), and
/// the abort frame blames the joiner. On the old code both welcomed it and ran on.
#[test]
fn a_joiner_that_says_hello_to_two_servers_is_refused() {
    common::within(LIMIT, || {
        let addresses = common::free_addresses(3);
        let (sender, channel) = mpsc::channel();
        let runs = [member(addresses.clone(), 0, Some(sender)), member(addresses.clone(), 1, None)];
        channel.recv_timeout(Duration::from_secs(20)).expect("process 0's channels");
        let mut connections = join_as_process_2(&addresses);
        let mut raws: Vec<TcpStream> = (0..2)
            .map(|process| connections.streams[process].take().expect("a stream to a member").stream)
            .collect();
        for (process, raw) in raws.iter_mut().enumerate() {
            raw.write_all(&hello_to(process)).expect("write hello");
        }
        let blamed = blamed_by_abort(&mut raws[0]);
        let errors: Vec<String> = (runs.into_iter())
            .map(|run| run.join().expect("a member's thread").expect_err("a member's run fails").to_string())
            .collect();
        // The member that finds the second hello names it; the other may hear of it first
        // from that member's abort frame, which names the joiner too.
        for error in &errors {
            assert!(error.contains("lost the connection to process 2: "), "{errors:?}");
        }
        let refused = "lost the connection to process 2: it broke the protocol: worker 2 asked worker";
        let found =
            errors.iter().find(|error| error.contains(refused)).unwrap_or_else(|| panic!("{errors:?}"));
        assert!(found.contains("a joining process asks only its server"), "{found}");
        assert_eq!(blamed, 2, "the abort frame blames the joiner");
    });
}

/// The progress channel of the dataflow the joiner of `members_send_to_joiner` builds (input,
/// exchange, probe), as a single worker allocates it: identifiers follow the program, so the
/// joiner allocates the same.
fn joiners_progress_channel() -> usize {
    timely_engine::example(|worker| exchange_and_probe(worker).2.progress as usize)
}

/// Worker 0 welcomes the joiner with a progress state of its one scope holding `accumulated`
/// (and nothing to request: both members send directly from batch 0); the joiner's run must
/// fail naming process 0 for `reason`, before it applies any of the state.
fn a_state_holding(accumulated: Vec<((Location, u64), i64)>, reason: &str) {
    let reason = reason.to_owned();
    common::within(LIMIT, move || {
        let channel = joiners_progress_channel();
        let mut state = Vec::new();
        bincode_encode(&(accumulated, vec![0u64, 0]), &mut state);
        let scope = ScopeWelcome { channel, address: vec![0], state, announced: None };
        let welcome =
            Welcome { existing: 2, dataflows: vec![Some(2)], scopes: vec![scope], ..Welcome::default() };
        let next = |from| BootstrapMessage::Next { from, scopes: vec![(channel, 0)] };
        let messages = vec![(0, BootstrapMessage::Welcome(welcome)), (0, next(0)), (1, next(1))];
        // The joiner calls bootstrap(), which activates the scope once both `Next` messages
        // are in, whichever arrives last: then the scope checks the state.
        let (error, _members) = members_send_to_joiner(messages, true);
        let expected = format!(
            "lost the connection to process 0: it broke the protocol: worker 0 sent a progress state or \
             range of channel {channel} with "
        );
        assert!(error.contains(&expected) && error.contains(&reason), "expected {reason:?} in: {error}");
    });
}

/// A location past the scope's nodes used to index the joiner's tracker out of bounds.
#[test]
fn a_welcome_whose_state_names_a_location_outside_the_scope() {
    a_state_holding(
        vec![((Location::source(1, 0), 0), 1), ((Location::target(9, 0), 0), 1)],
        "a progress update at node 9 of a scope of",
    );
}

/// Two counts of `i64::MAX` at one place used to overflow when the joiner added them up.
#[test]
fn a_welcome_whose_state_overflows_a_count() {
    a_state_holding(
        vec![((Location::source(1, 0), 0), i64::MAX), ((Location::source(1, 0), 0), i64::MAX)],
        "progress updates whose deltas add up to more than 4611686018427387904 in magnitude",
    );
}

/// A welcome from a server of 2 workers with dataflow 0 as `dataflow` (`Some(2)`: it runs,
/// built by both; `None`: it does not run) and the empty progress state of scope `[0]` on
/// `channel`.
fn welcome_with_one_scope(channel: usize, dataflow: Option<u64>) -> Welcome {
    let mut state = Vec::new();
    bincode_encode(&(Vec::<((Location, u64), i64)>::new(), vec![0u64, 0]), &mut state);
    let scope = ScopeWelcome { channel, address: vec![0], state, announced: None };
    Welcome { existing: 2, dataflows: vec![dataflow], scopes: vec![scope], ..Welcome::default() }
}

/// A welcome that says dataflow 0 no longer runs on the server but sends the progress state
/// of its scope: the joiner used to panic ("a scope the server runs is in a dataflow it runs")
/// when it built the dataflow's operators; it now refuses the welcome on arrival, naming the
/// server.
#[test]
fn a_welcome_with_a_scope_of_a_dataflow_it_does_not_run() {
    common::within(LIMIT, || {
        let channel = joiners_progress_channel();
        let welcome = welcome_with_one_scope(channel, None);
        let (error, _members) = members_send_to_joiner(vec![(0, BootstrapMessage::Welcome(welcome))], false);
        assert!(!error.contains("panicked"), "not a panic: {error}");
        let expected =
            "lost the connection to process 0: it broke the protocol: worker 0 sent a welcome with \
                        the progress state of scope [0], which is in no dataflow it runs";
        assert!(error.contains(expected), "expected {expected:?} in: {error}");
    });
}

/// Waits up to 10 s for the joiner's `Range` request to member 0; returns its channel, sender,
/// start and end.
fn range_request(member: &mut Member) -> (usize, usize, u64, u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut scratch = Vec::new();
    loop {
        while let Some((header, payload)) = member.workers[0].receiver.try_recv() {
            if header.channel != BOOTSTRAP_CHANNEL as u64 {
                continue;
            }
            let bytes = payload.read(&mut scratch).expect("the payload");
            if let Ok(Envelope {
                message: BootstrapMessage::Range { channel, sender, start, end, .. }, ..
            }) = Envelope::decode(bytes)
            {
                return (channel, sender, start, end);
            }
        }
        assert!(Instant::now() < deadline, "the joiner asks member 0 for a range within 10 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The server answers the joiner's request for batches `[0, 2)` of worker 0 with three: the
/// joiner used to apply all three as worker 0's batches 0 to 2 (and drop worker 0's own batch
/// 2 when it came), or, for a range too short, blame worker 0 for the gap; it now refuses the
/// answer, naming the server.
#[test]
fn a_range_longer_than_asked_for() {
    common::within(LIMIT, || {
        let channel = joiners_progress_channel();
        let welcome = welcome_with_one_scope(channel, Some(2));
        let (error, _members) = members_script_joiner(
            move |members| {
                send_to_joiner(members, 0, BootstrapMessage::Welcome(welcome));
                send_to_joiner(members, 0, BootstrapMessage::Next { from: 0, scopes: vec![(channel, 2)] });
                send_to_joiner(members, 1, BootstrapMessage::Next { from: 1, scopes: vec![(channel, 0)] });
                assert_eq!(range_request(&mut members[0]), (channel, 0, 0, 2), "the range missing");
                let mut batches = Vec::new();
                bincode_encode(&vec![Vec::<((Location, u64), i64)>::new(); 3], &mut batches);
                let answer = BootstrapMessage::Batches { channel, sender: 0, start: 0, batches };
                send_to_joiner(members, 0, answer);
            },
            true,
        );
        let expected = format!(
            "lost the connection to process 0: it broke the protocol: worker 0 sent progress batches of \
             channel {channel} that do not fit: 3 batches of worker 0 from batch 0, where [0, 2) was asked for"
        );
        assert!(error.contains(&expected), "expected {expected:?} in: {error}");
    });
}
