//! The frame fuzzer at full size (`timely_engine::wire_fuzz`): engine after engine on
//! loopback, each fed by a fake peer that passes the real handshake (sealed in even runs,
//! unsealed in odd ones) and then writes accepted and hostile frames, progress batches, data
//! and bootstrap messages; every run must end without a panic or a hang, with any error naming
//! the fake peer. The global allocator records the largest single allocation.
//!
//! `fuzz_frames [--inputs 1000000] [--per-run 1000] [--seed 1] [--cap-mib 64]` prints the
//! inputs, engine runs, wall time, panics, hangs and the largest allocation, then the inputs
//! per kind. Exits with status 1 and the reasons when a run found a problem or an allocation
//! exceeded the cap.

use std::time::Duration;

use timely_engine::wire_fuzz::alloc::{largest_allocation, CountingAllocator};
use timely_engine::wire_fuzz::inputs::{ACCEPTED, HOSTILE};
use timely_engine::wire_fuzz::{fuzz_frames, FrameFuzzOptions};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// `--inputs`, `--per-run`, `--seed` and `--cap-mib`, with their defaults.
fn parse() -> Result<(FrameFuzzOptions, usize), String> {
    let mut options =
        FrameFuzzOptions { inputs: 1_000_000, per_run: 1000, seed: 1, deadline: Duration::from_secs(10) };
    let mut cap_mib = 64;
    let mut args = std::env::args().skip(1);
    while let Some(name) = args.next() {
        let value = args.next().ok_or_else(|| format!("{name} needs a value"))?;
        let number =
            value.parse::<u64>().map_err(|_| format!("{name}: expected a number, found {value:?}"))?;
        match name.as_str() {
            "--inputs" => options.inputs = number as usize,
            "--per-run" => options.per_run = number as usize,
            "--seed" => options.seed = number,
            "--cap-mib" => cap_mib = number as usize,
            other => {
                return Err(format!("unknown option {other}; use --inputs, --per-run, --seed, --cap-mib"))
            }
        }
    }
    Ok((options, cap_mib))
}

fn main() {
    let run = || -> Result<(), String> {
        let (options, cap_mib) = parse()?;
        let report = fuzz_frames(&options)?;
        let largest = largest_allocation();
        println!(
            "{} inputs in {} engine runs ({} sealed, {} as a joiner) in {:.1} s ({:.0} inputs/s); {} runs ended \
             by the engine on a hostile input; {} aborts naming another member; panics: {}; hangs: {}; \
             largest allocation: {} bytes ({:.2} MiB, cap {} MiB)",
            report.inputs,
            report.runs,
            report.sealed_runs,
            report.joiner_runs,
            report.elapsed.as_secs_f64(),
            report.inputs as f64 / report.elapsed.as_secs_f64().max(1e-9),
            report.detected,
            report.framed,
            report.panics,
            report.hangs,
            largest,
            largest as f64 / (1 << 20) as f64,
            cap_mib
        );
        let accepted: Vec<String> =
            ACCEPTED.iter().zip(report.accepted).map(|(k, n)| format!("{k}: {n}")).collect();
        let hostile: Vec<String> =
            HOSTILE.iter().zip(report.hostile).map(|(k, n)| format!("{k}: {n}")).collect();
        println!("accepted inputs: {}", accepted.join(", "));
        println!("hostile inputs: {}", hostile.join(", "));
        let mut problems = report.failures.clone();
        if largest > cap_mib << 20 {
            problems.push(format!("an allocation of {largest} bytes exceeds the cap of {cap_mib} MiB"));
        }
        if report.panics > 0 {
            problems.push(format!("{} thread(s) panicked", report.panics));
        }
        match problems.is_empty() {
            true => Ok(()),
            false => Err(problems.join("\n")),
        }
    };
    if let Err(error) = run() {
        eprintln!("fuzz_frames: {error}");
        std::process::exit(1);
    }
}
