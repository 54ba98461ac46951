//! Steady-state heap allocations of the hello dataflow, counted by a global allocator: none
//! per round, on one worker and on two. One test, so that nothing else runs in the process
//! while it counts.

use timely_benches::{hello_plan, CountingAllocator, Plan};
use timely_engine::Config;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn hello_allocates_nothing_per_round_in_steady_state() {
    let plan = Plan { warmup: 2_000, rounds: 5_000, segments: 1 };
    let one = hello_plan(Config::Thread, plan, false);
    assert_eq!(one[0].allocations, 0, "one worker");
    // Two threads allocate nothing either when they keep pace; a thread descheduled long
    // enough for messages to pile up can make its peer allocate a buffer, hence the margin.
    let two = hello_plan(Config::Process(2), plan, false);
    assert!(
        two[0].allocations < plan.rounds / 100,
        "two workers: {} allocations in {} rounds",
        two[0].allocations,
        plan.rounds
    );
}
