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

use timely_communication::{FlagError, Flags, ProgramFlags};
use timely_engine::wire_fuzz::alloc::{largest_allocation, CountingAllocator};
use timely_engine::wire_fuzz::inputs::{ACCEPTED, HOSTILE};
use timely_engine::wire_fuzz::{fuzz_frames, FrameFuzzOptions};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The command line: `--inputs`, `--per-run`, `--seed` and `--cap-mib`.
fn flags() -> ProgramFlags {
    ProgramFlags::new("fuzz_frames")
        .flag("--inputs", "N", "inputs in all (default 1000000)")
        .flag("--per-run", "N", "inputs per engine run (default 1000)")
        .flag("--seed", "S", "the random seed (default 1)")
        .flag("--cap-mib", "MIB", "the largest allocation allowed (default 64)")
}

/// `--inputs`, `--per-run`, `--seed` and `--cap-mib`, with their defaults.
fn parse(flags: &Flags) -> Result<(FrameFuzzOptions, usize), FlagError> {
    let options = FrameFuzzOptions {
        inputs: flags.value("--inputs", 1_000_000)?,
        per_run: flags.value("--per-run", 1000)?,
        seed: flags.value("--seed", 1)?,
        deadline: Duration::from_secs(10),
    };
    Ok((options, flags.value("--cap-mib", 64)?))
}

fn main() {
    let program = flags();
    let given = program.parse_or_exit(std::env::args().skip(1));
    let (options, cap_mib) = parse(&given).unwrap_or_else(|error| program.exit(&error));
    let run = || -> Result<(), String> {
        let report = fuzz_frames(&options).map_err(|error| error.to_string())?;
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
