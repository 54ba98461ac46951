//! Exchange throughput: records routed between workers by hash.
//!
//! `cargo run --release --example exchange -- [RECORDS_PER_ROUND] [ROUNDS] [-w WORKERS]`
//! (defaults: 1000000 records per round per worker, 10 rounds).
//!
//! Every worker pushes RECORDS_PER_ROUND `u64` records per round into an input, in batches;
//! the records go through `exchange(|x| *x)` to a sink that counts them and checks that
//! each landed on worker `x % peers`. After each round the worker steps until a probe
//! shows the round complete. Each process prints the records its workers received (which
//! must be what the routing sends them: on one process, workers x records x rounds; else it
//! exits with status 1) and the rate in records/s.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;
mod common;

use timely_communication::ProgramFlags;
use timely_engine::dataflow::{InputHandle, Pipeline, ProbeHandle};

const BATCH: u64 = 1024;

fn main() {
    let program = ProgramFlags::new("exchange")
        .positional("RECORDS_PER_ROUND", "records per round (default 1000000)")
        .positional("ROUNDS", "rounds (default 10)");
    let (runtime, numbers, _) = common::runtime_and_numbers(program, &[1_000_000, 10]);
    let (records, rounds) = (numbers[0], numbers[1]);
    let start = Instant::now();
    let results = runtime
        .execute(move |worker| {
            let (index, peers) = (worker.index(), worker.peers() as u64);
            let mut input = InputHandle::new();
            let probe = ProbeHandle::new();
            let received = Rc::new(Cell::new(0u64));
            let misrouted = Rc::new(Cell::new(0u64));
            let (count, wrong) = (received.clone(), misrouted.clone());
            worker.dataflow::<u64, _>(|scope| {
                scope.input_from(&mut input).exchange(|x: &u64| *x).probe_with(&probe).sink(
                    Pipeline,
                    "Count",
                    move |input, _| {
                        input.for_each(|_time, data| {
                            count.set(count.get() + data.len() as u64);
                            wrong.set(
                                wrong.get()
                                    + data.iter().filter(|&&x| x % peers != index as u64).count() as u64,
                            );
                            data.clear();
                        })
                    },
                );
            });
            let mut batch = Vec::with_capacity(BATCH as usize);
            // Records are this worker's index in the high bits and a counter below, so every
            // worker sends to every worker.
            let mut next = (index as u64) << 40;
            for round in 0..rounds {
                let mut left = records;
                while left > 0 {
                    let n = left.min(BATCH);
                    batch.extend(next..next + n);
                    next += n;
                    input.send_batch(&mut batch);
                    left -= n;
                    worker.step();
                }
                input.advance_to(round + 1);
                worker.step_while(|| probe.less_than(input.time()));
            }
            (received.get(), misrouted.get(), routed_to(index as u64, peers, records * rounds))
        })
        .unwrap_or_else(|e| {
            eprintln!("exchange failed: {}", e);
            std::process::exit(1)
        });
    let elapsed = start.elapsed();
    let workers = results.len() as u64;
    let received: u64 = results.iter().map(|(r, _, _)| r).sum();
    let misrouted: u64 = results.iter().map(|(_, m, _)| m).sum();
    let expected: u64 = results.iter().map(|(_, _, e)| e).sum();
    let rate = received as f64 / elapsed.as_secs_f64();
    println!(
        "{} workers: {} records received ({} per round per worker, {} rounds) in {:.3?}: {:.2} M records/s",
        workers,
        received,
        records,
        rounds,
        elapsed,
        rate / 1e6
    );
    if received != expected || misrouted != 0 {
        println!(
            "MISMATCH: expected {} records, got {} ({} on the wrong worker)",
            expected, received, misrouted
        );
        std::process::exit(1);
    }
    println!("ok");
}

/// How many records worker `index` of `peers` receives when every worker sends `sent`
/// consecutive records starting at its index shifted left by 40 (what the program sends).
fn routed_to(index: u64, peers: u64, sent: u64) -> u64 {
    (0..peers)
        .map(|sender| {
            let first = (sender << 40) % peers;
            // The records from `sender` congruent to `index` modulo `peers`.
            let skip = (index + peers - first) % peers;
            sent / peers + u64::from(skip < sent % peers)
        })
        .sum()
}
