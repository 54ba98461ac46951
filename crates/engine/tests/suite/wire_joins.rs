//! Joins that do not fit the cluster they join end the joiner's run with a clear error, never
//! a panic: a joiner told other departed processes (`--gone`) than its server's view. The
//! harness is `wire_rescale`'s: simulated members (processes 0 and 1) and the engine joining
//! as process 2, served by worker 0.

use crate::common;
use crate::wire_input::LIMIT;
use crate::wire_rescale::members_send_to_joiner;

use std::time::{Duration, Instant};

use timely_engine::rescale::messages::{BootstrapMessage, Welcome};

/// Waits up to 10 s for member 0 to record a failure; returns it.
fn member_failure(member: &timely_communication::networking::harness::Member) -> String {
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
        let (error, members) = members_send_to_joiner(vec![(0, BootstrapMessage::Welcome(welcome))]);
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
