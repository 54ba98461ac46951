//! Steady-state overhead of the Megaphone operator pair against a plain exchange and count.
//!
//! `cargo run --release -p timely-megaphone --example overhead -- [EPOCHS] [RECORDS] [RUNS] [WORKERS] [VARIANTS] [PROCESSES]`
//! (defaults: 100 epochs of 20,000 records, 5 runs, 2 workers, `exchange,256,4096`: the
//! plain count and `state_machine` with that many bins, 1 process). With `PROCESSES` above 1,
//! each run is a cluster of that many processes of `WORKERS` workers, threads of this program
//! connected over loopback TCP, as a cluster that can rescale.
//!
//! Every variant counts words: each record `(key, 1)` (keys drawn from 100,000) produces the
//! key's running count. `exchange` routes by the key's hash to a `unary` operator holding a
//! `HashMap`; `megaphone/N` is `state_machine` with N bins and no migration. Each epoch is fed
//! and then waited for (a probe), so a run's time is the sum of per-epoch latencies. The
//! variants run interleaved, `RUNS` times each, and the example prints each one's median
//! run time, its ratio to `exchange`, and the load average before and after (the machine
//! may be shared).

use std::collections::HashMap;
use std::time::{Duration, Instant};
use timely_communication::{FlagError, ProgramFlags};
use timely_engine::dataflow::operators::hash_of;
use timely_engine::dataflow::{Exchange, InputHandle, ProbeHandle, Stream};
use timely_engine::Config;
use timely_megaphone::{Bins, Command, Control, StateMachine};

#[derive(Clone, Copy, Debug)]
enum Variant {
    Exchange,
    Megaphone(usize),
}

impl Variant {
    fn name(self) -> String {
        match self {
            Variant::Exchange => "exchange".to_owned(),
            Variant::Megaphone(bins) => format!("megaphone/{bins}"),
        }
    }
}

/// The plain word count: exchange by the key's hash, count in a `HashMap`.
fn plain_count(data: &Stream<u64, (u64, u64)>) -> Stream<u64, (u64, u64)> {
    data.unary(Exchange::new(|(key, _): &(u64, u64)| hash_of(key)), "Count", |_, _| {
        let mut counts: HashMap<u64, u64> = HashMap::new();
        move |input, output| {
            input.for_each(|time, records| {
                let mut session = output.session(&time);
                for (key, _) in records.drain(..) {
                    let count = counts.entry(key).or_default();
                    *count += 1;
                    session.give((key, *count));
                }
            })
        }
    })
}

/// The configurations of `processes` processes of `workers` workers on loopback (one process:
/// threads of one process).
fn configs(processes: usize, workers: usize) -> Vec<Config> {
    use timely_communication::initialize::ClusterConfig;
    use timely_communication::networking::ClusterIdentity;
    if processes == 1 {
        return vec![Config::Process(workers)];
    }
    let addresses: Vec<String> = (0..processes)
        .map(|_| {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            listener.local_addr().expect("an address").to_string()
        })
        .collect();
    let identity =
        ClusterIdentity { cluster_id: 1, secret: b"overhead".to_vec(), ..ClusterIdentity::default() };
    (0..processes)
        .map(|process| {
            let config = ClusterConfig::started_together(
                addresses.clone(),
                process,
                processes,
                workers,
                identity.clone(),
            );
            Config::Cluster(config)
        })
        .collect()
}

/// One run of `variant`; returns its wall-clock time.
fn run(variant: Variant, processes: usize, workers: usize, epochs: u64, records: u64) -> Duration {
    let start = Instant::now();
    let runs: Vec<_> = configs(processes, workers)
        .into_iter()
        .map(|config| std::thread::spawn(move || count(config, variant, epochs, records)))
        .collect();
    runs.into_iter().for_each(|run| run.join().expect("a process thread"));
    start.elapsed()
}

/// One process of a run.
fn count(config: Config, variant: Variant, epochs: u64, records: u64) {
    timely_engine::execute(config, move |worker| {
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        let mut input = InputHandle::new();
        let mut control = InputHandle::<u64, Command>::new();
        let probe = ProbeHandle::new();
        worker.dataflow(|scope| {
            let data = scope.input_from(&mut input);
            let counts = match variant {
                Variant::Exchange => plain_count(&data),
                Variant::Megaphone(bins) => {
                    let control =
                        Control::new(&scope.input_from(&mut control)).with_bins(Bins::new(bins).unwrap());
                    data.state_machine(&control, |&key: &u64, _: u64, count: &mut u64| {
                        *count += 1;
                        (false, Some((key, *count)))
                    })
                }
            };
            counts.probe_with(&probe);
        });
        let mut state = 0x2545_F491_4F6C_DD1Du64 ^ index;
        for epoch in 0..epochs {
            for _ in 0..records / peers {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                input.send((state % 100_000, 1));
            }
            input.advance_to(epoch + 1);
            control.advance_to(epoch + 1);
            worker.step_while(|| probe.less_than(&(epoch + 1)));
        }
    })
    .expect("run failed");
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(|_| "unknown".to_owned(), |s| s.trim().to_owned())
}

fn main() {
    let program = ProgramFlags::new("overhead")
        .positional("EPOCHS", "epochs per run (default 100)")
        .positional("RECORDS", "records per epoch (default 20000)")
        .positional("RUNS", "runs per variant (default 5)")
        .positional("WORKERS", "workers per process (default 2)")
        .positional("VARIANTS", "exchange or a bin count, comma-separated (default exchange,256,4096)")
        .positional("PROCESSES", "processes (default 1)");
    let flags = program.parse_or_exit(std::env::args().skip(1));
    let read = || -> Result<_, FlagError> {
        let variants: String = flags.positional(4, "exchange,256,4096".to_string())?;
        let variants = variants
            .split(',')
            .map(|v| match v {
                "exchange" => Ok(Variant::Exchange),
                bins => bins
                    .parse()
                    .map(Variant::Megaphone)
                    .map_err(|_| FlagError::bad_value("VARIANTS", &variants, "exchange or a bin count")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let numbers =
            (flags.positional(0, 100u64)?, flags.positional(1, 20_000u64)?, flags.positional(2, 5u64)?);
        Ok((numbers, flags.positional(3, 2usize)?, variants, flags.positional(5, 1usize)?))
    };
    let ((epochs, records, runs), workers, variants, processes) =
        read().unwrap_or_else(|error| program.exit(&error));
    println!("{epochs} epochs of {records} records, {processes} process(es) of {workers} workers, {runs} runs per variant");
    println!("load average before: {}", load());
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    for _ in 0..runs {
        for (variant, times) in variants.iter().zip(times.iter_mut()) {
            times.push(run(*variant, processes, workers, epochs, records));
        }
    }
    println!("load average after: {}", load());
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    // Ratios are to the first variant.
    let baseline = median(&mut times[0].clone());
    println!("{:<16} {:>12} {:>10}   runs (ms)", "variant", "median (ms)", "ratio");
    for (variant, times) in variants.iter().zip(times.iter_mut()) {
        let all: Vec<String> = times.iter().map(|t| format!("{:.0}", t.as_secs_f64() * 1e3)).collect();
        let middle = median(times);
        let ratio = middle.as_secs_f64() / baseline.as_secs_f64();
        println!(
            "{:<16} {:>12.1} {:>10.2}   {}",
            variant.name(),
            middle.as_secs_f64() * 1e3,
            ratio,
            all.join(" ")
        );
    }
}
