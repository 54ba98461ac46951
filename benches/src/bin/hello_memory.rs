//! Runs the hello dataflow for ROUNDS rounds and prints the process's peak resident set size.
//!
//! `hello_memory ROUNDS [-w WORKERS]` prints one line:
//! `rounds=R workers=W seconds=S us_per_round=U peak_rss_kib=K rss_kib=K allocations=A`.
//! If the engine keeps nothing per completed round, the peak stays flat as ROUNDS grows.
//! `allocations` counts every heap allocation of the process (all threads, set-up
//! included); its growth between two values of ROUNDS, divided by the difference in
//! rounds, is the number of allocations per round in steady state.

use timely_benches::{
    allocations, current_rss_kib, hello_rounds, peak_rss_kib, workers_of, CountingAllocator,
};
use timely_communication::{FlagError, ProgramFlags};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn main() {
    let program = ProgramFlags::new("hello_memory")
        .positional("ROUNDS", "rounds of the hello dataflow")
        .with_runtime_options();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (config, rest) = timely_engine::Config::from_args(args).unwrap_or_else(|error| program.exit(&error));
    let given = program.parse_or_exit(rest);
    if given.positionals().is_empty() {
        program.exit(&FlagError::Combination("ROUNDS is required".to_string()));
    }
    let rounds: u64 = given.positional(0, 0).unwrap_or_else(|error| program.exit(&error));
    let workers = workers_of(&config);
    let elapsed = hello_rounds(config, rounds);
    let allocations = allocations();
    let show = |v: Option<u64>| v.map_or_else(|| "unknown".to_string(), |k| k.to_string());
    println!(
        "rounds={} workers={} seconds={:.3} us_per_round={:.3} peak_rss_kib={} rss_kib={} allocations={}",
        rounds,
        workers,
        elapsed.as_secs_f64(),
        if rounds == 0 { 0.0 } else { elapsed.as_secs_f64() * 1e6 / rounds as f64 },
        show(peak_rss_kib()),
        show(current_rss_kib()),
        allocations,
    );
}
