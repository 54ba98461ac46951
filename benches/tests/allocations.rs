//! Steady-state heap allocations of the hello dataflow, counted by a global allocator: none
//! per round on one worker; on two threads, only the blocks of the cross-thread queues (one
//! per 31 messages). One test, so that nothing else runs in the process while it counts.

use timely_benches::{hello_plan, CountingAllocator, Plan};
use timely_engine::Config;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn hello_allocates_nothing_per_round_in_steady_state() {
    let plan = Plan { warmup: 2_000, rounds: 5_000, segments: 1 };
    let one = hello_plan(Config::Thread, plan, false);
    assert_eq!(one[0].allocations, 0, "one worker");
    let two = hello_plan(Config::Process(2), plan, false);
    // About 4 cross-thread messages per round, a queue block per 31 of them.
    assert!(two[0].allocations < plan.rounds / 4, "two workers: {} allocations in {} rounds", two[0].allocations, plan.rounds);
}
