//! Steady-state heap allocations of the hello dataflow, counted by a global allocator: none
//! per round on one worker, and almost none on two. One test, so that nothing else runs in
//! the process while it counts.
//!
//! The counts are the worker threads' own: the test harness and the thread that started the
//! workers may still be finishing their set-up while the rounds run (on a loaded machine they
//! did, and their allocations showed up in a count of the whole process).

use timely_benches::{hello_plan, take_watched_allocation, CountingAllocator, Plan};
use timely_engine::Config;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn hello_allocates_nothing_per_round_in_steady_state() {
    let plan = Plan { warmup: 2_000, rounds: 5_000, segments: 1 };
    let one = hello_plan(Config::Thread, plan, false);
    assert_eq!(
        one[0].worker_allocations,
        0,
        "one worker; its first allocation was made {}",
        take_watched_allocation().unwrap_or_else(|| "where it could not be recorded".into())
    );
    // Two threads allocate nothing either when they keep pace; a thread descheduled long
    // enough for messages to pile up can make its peer allocate a buffer, hence the margin.
    let two = hello_plan(Config::Process(2), plan, false);
    assert!(
        two[0].worker_allocations < plan.rounds / 100,
        "two workers: {} allocations in {} rounds",
        two[0].worker_allocations,
        plan.rounds
    );
}
