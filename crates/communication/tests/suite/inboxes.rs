//! What a cluster worker keeps of messages nobody will pull: messages for a channel whose
//! puller is gone are dropped on arrival, and messages for channels the worker has not
//! allocated are kept up to `ReceiveBudget::early_bytes` (`TIMELY_EARLY_BYTES`, 128 MiB by
//! default), past which the run fails naming the sending process. Processes are threads of
//! this test, each running `initialize`.

use crate::common;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use timely_communication::networking::DEFAULT_EARLY_BYTES;
use timely_communication::{initialize, Allocator, Config, Push};

const LIMIT: Duration = Duration::from_secs(120);
/// Allocated by both processes; process 0 drops its puller after the first message.
const FINISHED: usize = 3;
/// Allocated by process 1 only.
const UNALLOCATED: usize = 99;
const LATE_MESSAGES: u64 = 1_000;

/// Takes in what arrived on `allocator` until `done` says so, for at most 30 s.
fn receive_until(allocator: &mut Allocator, what: &str, mut done: impl FnMut(&mut Allocator) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done(allocator) {
        assert!(Instant::now() < deadline, "{what} within 30 s");
        allocator.await_events(Some(Duration::from_millis(20)));
        allocator.receive();
        allocator.events().borrow_mut().clear();
    }
}

/// Process 0: pulls one message of `FINISHED`, drops the channel, then watches what it keeps
/// (at most `limit` bytes for channels it has not allocated).
fn watcher(mut allocator: Allocator, steps: &Barrier, limit: usize) -> Result<(), String> {
    let (pushers, mut puller) = allocator.allocate::<u64>(FINISHED);
    drop(pushers);
    let mut first = None;
    receive_until(&mut allocator, "the first message", |_| {
        first = first.or_else(|| puller.recv());
        first.is_some()
    });
    drop(puller);
    steps.wait(); // Process 1 sends late messages on the finished channel.
    let dropped = |allocator: &mut Allocator| allocator.inbox_stats().expect("a cluster").dropped_after_close;
    receive_until(&mut allocator, "every late message dropped", |a| dropped(a) == LATE_MESSAGES);
    let stats = allocator.inbox_stats().expect("a cluster");
    assert_eq!((stats.early_messages, stats.early_bytes), (0, 0), "nothing of the finished channel kept");
    assert_eq!(allocator.failure(), None);
    steps.wait(); // Process 1 floods a channel process 0 never allocates.
    receive_until(&mut allocator, "a failure", |a| a.failure().is_some());
    let kept = allocator.inbox_stats().expect("a cluster").early_bytes;
    assert!(kept <= limit && kept > limit / 2, "{kept} bytes kept");
    let failure = allocator.failure().unwrap_or_default();
    steps.wait(); // Both end.
    Err(failure)
}

/// Process 1: the sender, flooding more than `limit` bytes on a channel process 0 never
/// allocates.
fn sender(mut allocator: Allocator, steps: &Barrier, limit: usize) -> Result<(), String> {
    let (mut pushers, _puller) = allocator.allocate::<u64>(FINISHED);
    pushers[0].send(0);
    allocator.release();
    steps.wait();
    for message in 1..=LATE_MESSAGES {
        pushers[0].send(message);
    }
    allocator.release();
    steps.wait();
    let (mut flood, _puller) = allocator.allocate::<Vec<u8>>(UNALLOCATED);
    let chunk = vec![7u8; 1 << 16];
    for _ in 0..(limit >> 16) + 64 {
        flood[0].send(chunk.clone());
    }
    allocator.release();
    steps.wait();
    Ok(())
}

/// Runs the watcher and the sender, process 0 keeping at most `early_bytes` (its default
/// when `None`) for channels it has not allocated, and returns the watcher's failure.
fn run(early_bytes: Option<usize>) -> String {
    let addresses = common::free_addresses(2);
    let steps = Arc::new(Barrier::new(2));
    let limit = early_bytes.unwrap_or(DEFAULT_EARLY_BYTES);
    let runs: Vec<_> = (0..2)
        .map(|process| {
            let mut config = common::loopback_cluster(&addresses, process, 2, 1, None);
            if let (Config::Cluster(cluster), Some(bytes)) = (&mut config, early_bytes) {
                assert_eq!(cluster.receive_budget.early_bytes, DEFAULT_EARLY_BYTES, "the default");
                cluster.receive_budget.early_bytes = bytes;
            }
            let steps = Arc::clone(&steps);
            std::thread::spawn(move || {
                let role = move |allocator: Allocator| match process {
                    0 => watcher(allocator, &steps, limit),
                    _ => sender(allocator, &steps, limit),
                };
                initialize(config, role).expect("start").join()
            })
        })
        .collect();
    let results: Vec<_> = runs.into_iter().map(|run| run.join().expect("a process thread")).collect();
    let failure = results[0][0].clone().expect("the worker ends").expect_err("process 0 fails");
    assert!(failure.contains("lost the connection to process 1: it broke the protocol"), "{failure}");
    assert!(failure.contains("channels this worker has not allocated"), "{failure}");
    assert!(failure.contains(&format!("at most {limit} (--early-bytes or TIMELY_EARLY_BYTES")), "{failure}");
    assert_eq!(results[1][0], Ok(Ok(())));
    failure
}

#[test]
fn late_messages_are_dropped_and_early_ones_are_bounded() {
    common::within(LIMIT, || {
        run(None);
    });
}

#[test]
fn a_configured_early_limit_bounds_early_messages() {
    common::within(LIMIT, || {
        run(Some(1 << 20));
    });
}
