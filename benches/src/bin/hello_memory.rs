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

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (config, rest) = timely_engine::Config::from_args(args).unwrap_or_else(|e| {
        eprintln!("{}", e);
        std::process::exit(2)
    });
    let rounds: u64 = match rest.iter().find(|a| !a.starts_with('-')) {
        Some(a) => a.parse().unwrap_or_else(|_| {
            eprintln!("ROUNDS must be a non-negative integer, got {:?}", a);
            std::process::exit(2)
        }),
        None => {
            eprintln!("usage: hello_memory ROUNDS [-w WORKERS]");
            std::process::exit(2)
        }
    };
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
