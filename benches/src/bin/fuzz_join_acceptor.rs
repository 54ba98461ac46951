//! The join acceptor's fuzzer at full size: a 2-process cluster (2 workers each) on loopback,
//! then junk, damaged and refused join attempts fired at process 0's acceptor, then the checks
//! that the cluster still moves frames, admits a valid joiner and shuts down in order with no
//! thread panicked (`timely_communication::networking::join_fuzz`).
//!
//! `fuzz_join_acceptor [--inputs 100000] [--clients 4] [--seed 1] [--runs 1]` prints, per run,
//! the inputs per kind and the inputs per second, then the median rate over the runs. Exits
//! with status 1 and the reason when a run finds a problem.

use std::net::TcpListener;

use timely_communication::networking::join_fuzz::{fuzz_join_acceptor, FuzzOptions, KINDS};
use timely_communication::{FlagError, Flags, ProgramFlags};

/// Three loopback addresses free now (ports the kernel picked).
fn free_addresses() -> Result<Vec<String>, String> {
    let listeners = (0..3)
        .map(|_| TcpListener::bind("127.0.0.1:0").map_err(|error| error.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    listeners
        .iter()
        .map(|listener| Ok(listener.local_addr().map_err(|error| error.to_string())?.to_string()))
        .collect()
}

/// The command line: `--inputs`, `--clients`, `--seed` and `--runs`.
fn flags() -> ProgramFlags {
    ProgramFlags::new("fuzz_join_acceptor")
        .flag("--inputs", "N", "join attempts in all (default 100000)")
        .flag("--clients", "N", "threads firing them (default 4)")
        .flag("--seed", "S", "the first run's random seed (default 1)")
        .flag("--runs", "N", "runs, each with the next seed (default 1)")
}

/// `--inputs`, `--clients`, `--seed` and `--runs`, with their defaults.
fn parse(flags: &Flags) -> Result<(usize, usize, u64, usize), FlagError> {
    Ok((
        flags.value("--inputs", 100_000)?,
        flags.value("--clients", 4)?,
        flags.value("--seed", 1)?,
        flags.value("--runs", 1)?,
    ))
}

fn main() {
    let program = flags();
    let given = program.parse_or_exit(std::env::args().skip(1));
    let (inputs, clients, seed, runs) = parse(&given).unwrap_or_else(|error| program.exit(&error));
    let run = || -> Result<(), String> {
        let mut rates = Vec::new();
        for run in 0..runs {
            let options =
                FuzzOptions { inputs, clients, seed: seed + run as u64, addresses: free_addresses()? };
            let report = fuzz_join_acceptor(&options).map_err(|error| error.to_string())?;
            let kinds: Vec<String> =
                KINDS.iter().zip(report.kinds).map(|(kind, n)| format!("{kind}: {n}")).collect();
            println!(
                "run {run}: {inputs} inputs from {clients} clients in {:.2} s, {:.0} inputs/s ({}); cluster unharmed",
                report.elapsed.as_secs_f64(),
                report.rate(),
                kinds.join(", ")
            );
            rates.push(report.rate());
        }
        rates.sort_by(f64::total_cmp);
        println!("median over {runs} run(s): {:.0} inputs/s", rates[rates.len() / 2]);
        Ok(())
    };
    if let Err(error) = run() {
        eprintln!("fuzz_join_acceptor: {error}");
        std::process::exit(1);
    }
}
