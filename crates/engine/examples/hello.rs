//! The seed's hello program: input → exchange → inspect → probe, one round at a time.
//!
//! `cargo run --release --example hello -- [ROUNDS] [-w WORKERS] [--quiet]`
//! With `--quiet` nothing is printed per record and the program reports the mean time per
//! round, which measures the engine's per-round latency.

mod common;

use std::time::Instant;
use timely_communication::ProgramFlags;
use timely_engine::dataflow::{InputHandle, ProbeHandle};

fn main() {
    let program = ProgramFlags::new("hello")
        .positional("ROUNDS", "rounds (default 10)")
        .switch("--quiet", "print no record; report the mean time per round");
    let (runtime, numbers, flags) = common::runtime_and_numbers(program, &[10]);
    let quiet = flags.has("--quiet");
    let rounds = numbers[0];
    let start = Instant::now();
    runtime
        .execute(move |worker| {
            let index = worker.index();
            let mut input = InputHandle::new();
            let probe = ProbeHandle::new();
            worker.dataflow(|scope| {
                scope
                    .input_from(&mut input)
                    .exchange(|x: &u64| *x)
                    .inspect(move |x| {
                        if !quiet {
                            println!("worker {}: seen {}", index, x)
                        }
                    })
                    .probe_with(&probe);
            });
            let peers = worker.peers() as u64;
            for round in 0..rounds {
                if round % peers == index as u64 {
                    input.send(round);
                }
                input.advance_to(round + 1);
                worker.step_while(|| probe.less_than(input.time()));
            }
        })
        .unwrap_or_else(|e| {
            eprintln!("hello failed: {}", e);
            std::process::exit(1)
        });
    if quiet {
        let elapsed = start.elapsed();
        println!(
            "{} rounds in {:?}: {:.3} µs per round",
            rounds,
            elapsed,
            elapsed.as_secs_f64() * 1e6 / rounds as f64
        );
    }
}
