//! The same workloads on two processes (loopback TCP) and on two threads of one process,
//! side by side, and the allocations per round of each.
//!
//! `cluster_bench [--runs 5] [--hello-rounds 10000] [--warmup 10000] [--batches 1000,100000]
//! [--records 5000000]` runs as process 0 of a 2-process cluster with one worker per
//! process; it starts itself again as process 1 (`--role child`), on free loopback ports
//! written to a hostfile per workload, and with a fresh cluster secret
//! (`TIMELY_CLUSTER_SECRET`). Each run does, in this order: every workload on the cluster,
//! the same workloads with `Config::Process(2)`, and hello with `Config::Thread`. After
//! `--runs` runs it prints markdown tables of medians (and min – max) over the runs.
//!
//! Workloads (`timely_benches::{hello_plan, exchange_plan}`):
//! - hello: `--warmup` untimed rounds, then `--hello-rounds` timed rounds; µs per round.
//!   With the defaults the timed rounds are rounds 10,000..20,000, over which the
//!   allocations of the process are counted (process 0 only, for the cluster).
//! - exchange: every worker sends `B` `u64` records per round, all routed to the other
//!   worker, into an operator that counts them; `--records / B` timed rounds after a
//!   tenth as many untimed ones. Records/s count both workers' records (the cluster's
//!   process 1 does what process 0 does); MB/s is records/s x 8 bytes of payload. Run
//!   once with `u64` records (bincode across processes) and once with `Abomonated<u64>`.
//!
//! A counting global allocator is installed for every measurement (one relaxed atomic
//! add per allocation).

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;
use timely_benches::{exchange_plan, hello_plan, CountingAllocator, Plan, Routing, Segment};
use timely_communication::initialize::{ClusterConfig, CLUSTER_SECRET_VARIABLE};
use timely_communication::{FlagError, Flags, ProgramFlags};
use timely_engine::dataflow::Abomonated;
use timely_engine::Config;

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// The command line, shared by parent and child (the parent passes it on).
#[derive(Clone, Debug)]
struct Options {
    child: bool,
    runs: usize,
    hello_rounds: u64,
    warmup: u64,
    batches: Vec<u64>,
    records: u64,
    hostfiles: Vec<PathBuf>,
}

impl Options {
    /// The command line (`--role` and `--hostfiles` are for the child the parent starts).
    fn flags() -> ProgramFlags {
        ProgramFlags::new("cluster_bench")
            .flag("--runs", "N", "runs of every workload and layout (default 5)")
            .flag("--hello-rounds", "N", "timed rounds of hello (default 10000)")
            .flag("--warmup", "N", "untimed rounds of hello first (default 10000)")
            .flag("--batches", "B1,B2", "records per round of the exchange workloads (default 1000,100000)")
            .flag("--records", "N", "records per exchange workload (default 5000000)")
            .flag("--role", "child", "run as process 1 (the parent starts it)")
            .flag("--hostfiles", "F1,F2", "the hostfiles of the workloads, for the child")
    }

    fn parse(flags: &Flags) -> Result<Options, FlagError> {
        Ok(Options {
            child: flags.text("--role") == Some("child"),
            runs: flags.value("--runs", 5)?,
            hello_rounds: flags.value("--hello-rounds", 10_000)?,
            warmup: flags.value("--warmup", 10_000)?,
            batches: flags.list("--batches", vec![1_000, 100_000])?,
            records: flags.value("--records", 5_000_000)?,
            hostfiles: flags.list("--hostfiles", Vec::new())?,
        })
    }

    /// The arguments that make a child run the same workloads on `hostfiles`.
    fn child_args(&self, hostfiles: &[PathBuf]) -> Vec<String> {
        let batches: Vec<String> = self.batches.iter().map(u64::to_string).collect();
        let hostfiles: Vec<String> = hostfiles.iter().map(|h| h.display().to_string()).collect();
        [
            ("--role", "child".to_string()),
            ("--hello-rounds", self.hello_rounds.to_string()),
            ("--warmup", self.warmup.to_string()),
            ("--batches", batches.join(",")),
            ("--records", self.records.to_string()),
            ("--hostfiles", hostfiles.join(",")),
        ]
        .into_iter()
        .flat_map(|(name, value)| [name.to_string(), value])
        .collect()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Workload {
    Hello,
    Exchange { batch: u64, abomonated: bool },
}

impl Workload {
    fn all(options: &Options) -> Vec<Workload> {
        let mut all = vec![Workload::Hello];
        for &batch in &options.batches {
            all.push(Workload::Exchange { batch, abomonated: false });
            all.push(Workload::Exchange { batch, abomonated: true });
        }
        all
    }

    fn name(self) -> String {
        match self {
            Workload::Hello => "hello".to_string(),
            Workload::Exchange { batch, abomonated } => {
                format!(
                    "exchange {} x {}",
                    thousands(batch),
                    if abomonated { "Abomonated<u64>" } else { "u64 (bincode)" }
                )
            }
        }
    }

    /// Timed rounds of one run.
    fn rounds(self, options: &Options) -> u64 {
        match self {
            Workload::Hello => options.hello_rounds,
            Workload::Exchange { batch, .. } => (options.records / batch).max(10),
        }
    }

    /// Runs the workload on `config` and checks that every record arrived.
    fn run(self, config: Config, options: &Options) -> Segment {
        let local = timely_benches::workers_of(&config) as u64;
        let rounds = self.rounds(options);
        match self {
            Workload::Hello => {
                hello_plan(config, Plan { warmup: options.warmup, rounds, segments: 1 }, false)[0]
            }
            Workload::Exchange { batch, abomonated } => {
                let plan = Plan { warmup: (rounds / 10).max(5), rounds, segments: 1 };
                let segment = if abomonated {
                    exchange_plan(config, plan, batch, Routing::Next, Abomonated, |x: &Abomonated<u64>| x.0)
                        [0]
                } else {
                    exchange_plan(config, plan, batch, Routing::Next, |v| v, |x: &u64| *x)[0]
                };
                assert_eq!(segment.received, rounds * batch * local, "{}: records lost", self.name());
                segment
            }
        }
    }
}

/// Where a workload ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Layout {
    Thread,
    Threads,
    Processes,
}

fn main() {
    let program = Options::flags();
    let given = program.parse_or_exit(std::env::args().skip(1));
    let options = Options::parse(&given).unwrap_or_else(|error| program.exit(&error));
    if options.child {
        for (workload, hostfile) in Workload::all(&options).into_iter().zip(&options.hostfiles) {
            workload.run(cluster_config(1, hostfile), &options);
        }
        return;
    }
    if std::env::var_os(CLUSTER_SECRET_VARIABLE).is_none() {
        // Before any thread starts: the children inherit the secret.
        std::env::set_var(CLUSTER_SECRET_VARIABLE, fresh_secret());
    }
    let load_before = load_average();
    let workloads = Workload::all(&options);
    let directory = std::env::temp_dir().join(format!("cluster_bench-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("a temporary directory");
    let mut results: BTreeMap<(Workload, Layout), Vec<Segment>> = BTreeMap::new();
    let mut ports = FreePorts::new();
    for run in 0..options.runs {
        eprintln!("run {} of {}", run + 1, options.runs);
        let hostfiles: Vec<PathBuf> = (0..workloads.len())
            .map(|index| {
                let path = directory.join(format!("run{run}-workload{index}.hosts"));
                std::fs::write(&path, format!("127.0.0.1:{}\n127.0.0.1:{}\n", ports.next(), ports.next()))
                    .expect("hostfile");
                path
            })
            .collect();
        let mut child = spawn_child(&options, &hostfiles);
        for (workload, hostfile) in workloads.iter().zip(&hostfiles) {
            let segment = workload.run(cluster_config(0, hostfile), &options);
            results.entry((*workload, Layout::Processes)).or_default().push(segment);
        }
        let status = child.wait().expect("wait for process 1");
        assert!(status.success(), "process 1 failed: {status}");
        for workload in &workloads {
            let segment = workload.run(Config::Process(2), &options);
            results.entry((*workload, Layout::Threads)).or_default().push(segment);
        }
        let segment = Workload::Hello.run(Config::Thread, &options);
        results.entry((Workload::Hello, Layout::Thread)).or_default().push(segment);
    }
    let _ = std::fs::remove_dir_all(&directory);
    print_tables(&options, &workloads, &results);
    println!("\nload average at the start: {load_before}; at the end: {}", load_average());
}

/// The config of process `process` of the 2-process cluster in `hostfile`, through the
/// command-line parser the programs use (the secret comes from the environment).
fn cluster_config(process: usize, hostfile: &Path) -> Config {
    let args =
        ["-n", "2", "-p", &process.to_string(), "-h", &hostfile.display().to_string()].map(String::from);
    match Config::from_args(args).expect("cluster arguments").0 {
        // Both processes start within milliseconds; a process that died shows sooner.
        Config::Cluster(cluster) => {
            Config::Cluster(ClusterConfig { connect_timeout: Duration::from_secs(15), ..cluster })
        }
        other => other,
    }
}

fn spawn_child(options: &Options, hostfiles: &[PathBuf]) -> Child {
    let exe = std::env::current_exe().expect("this program's path");
    Command::new(exe).args(options.child_args(hostfiles)).spawn().expect("start process 1")
}

/// The 1, 5 and 15 minute load averages, from `/proc/loadavg`.
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// A secret for this run's cluster, from the clock and the process id.
fn fresh_secret() -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{:x}{:x}", nanos, std::process::id())
}

/// Loopback ports that are free when handed out, below the ephemeral range (32768+) so
/// that outgoing connections do not take them in the meantime.
struct FreePorts {
    next: u16,
}

impl FreePorts {
    fn new() -> Self {
        FreePorts { next: 20_000 + (std::process::id() % 500) as u16 * 20 }
    }

    fn next(&mut self) -> u16 {
        loop {
            let port = self.next;
            self.next = if port >= 32_000 { 20_000 } else { port + 1 };
            if TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return port;
            }
        }
    }
}

/// Median, minimum and maximum.
fn summary(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (values[values.len() / 2], values[0], values[values.len() - 1])
}

fn cell(values: Vec<f64>) -> String {
    let (median, min, max) = summary(values);
    format!("**{}** ({} – {})", figure(median), figure(min), figure(max))
}

/// Three significant digits, thousands separated.
fn figure(value: f64) -> String {
    if value >= 1000.0 {
        thousands(value.round() as u64)
    } else if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn print_tables(
    options: &Options,
    workloads: &[Workload],
    results: &BTreeMap<(Workload, Layout), Vec<Segment>>,
) {
    let runs = |workload: Workload, layout: Layout| &results[&(workload, layout)];
    let per_round = |workload: Workload, layout: Layout, f: &dyn Fn(&Segment) -> f64| -> Vec<f64> {
        runs(workload, layout).iter().map(|s| f(s) / workload.rounds(options) as f64).collect()
    };
    let micros = |s: &Segment| s.elapsed.as_secs_f64() * 1e6;
    let ratio = |workload: Workload, a: Layout, b: Layout, f: &dyn Fn(&Segment) -> f64| {
        summary(per_round(workload, a, f)).0 / summary(per_round(workload, b, f)).0
    };
    // Records per second of both workers: each sends `batch` per round.
    let records_per_second = |workload: Workload, layout: Layout| -> Vec<f64> {
        let Workload::Exchange { batch, .. } = workload else { unreachable!() };
        per_round(workload, layout, &|s| s.elapsed.as_secs_f64())
            .iter()
            .map(|t| 2.0 * batch as f64 / t)
            .collect()
    };
    let median = |values: Vec<f64>| summary(values).0;

    println!("\n### 2 processes against 2 threads (medians of {} runs, min – max)\n", options.runs);
    println!("| workload | 1 process x 2 threads | 2 processes x 1 thread | processes / threads |");
    println!("|---|---:|---:|---:|");
    println!(
        "| hello, µs per round (rounds {}..{}) | {} | {} | {:.1}x |",
        thousands(options.warmup),
        thousands(options.warmup + options.hello_rounds),
        cell(per_round(Workload::Hello, Layout::Threads, &micros)),
        cell(per_round(Workload::Hello, Layout::Processes, &micros)),
        ratio(Workload::Hello, Layout::Processes, Layout::Threads, &micros),
    );
    println!("\n| exchange: records per worker per round | records | 2 threads: µs per round | 2 processes: µs per round | processes / threads | 2 threads: M records/s | 2 processes: M records/s | 2 processes: MB/s of payload |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for &workload in &workloads[1..] {
        let Workload::Exchange { batch, abomonated } = workload else { continue };
        let rps = |layout| median(records_per_second(workload, layout)) / 1e6;
        println!(
            "| {} | {} | {} | {} | {:.1}x | {} | {} | {} |",
            thousands(batch),
            if abomonated { "Abomonated<u64>" } else { "u64 (bincode)" },
            cell(per_round(workload, Layout::Threads, &micros)),
            cell(per_round(workload, Layout::Processes, &micros)),
            ratio(workload, Layout::Processes, Layout::Threads, &micros),
            figure(rps(Layout::Threads)),
            figure(rps(Layout::Processes)),
            figure(rps(Layout::Processes) * 8.0),
        );
    }

    println!("\n### Codec across processes: Abomonated<u64> against u64 (bincode), exchange throughput\n");
    println!("| records per worker per round | layout | u64 (bincode), M records/s | Abomonated<u64>, M records/s | abomonated / bincode |");
    println!("|---:|---|---:|---:|---:|");
    for &batch in &options.batches {
        for (layout, label) in
            [(Layout::Processes, "2 processes"), (Layout::Threads, "2 threads (no encoding)")]
        {
            let rps = |abomonated| {
                records_per_second(Workload::Exchange { batch, abomonated }, layout)
                    .into_iter()
                    .map(|r| r / 1e6)
                    .collect::<Vec<_>>()
            };
            println!(
                "| {} | {} | {} | {} | {:.2}x |",
                thousands(batch),
                label,
                cell(rps(false)),
                cell(rps(true)),
                median(rps(true)) / median(rps(false)),
            );
        }
    }

    println!("\n### Heap allocations per round in steady state (whole process; the cluster's process 0)\n");
    println!("| workload | 1 thread | 1 process x 2 threads | 2 processes x 1 thread (process 0) |");
    println!("|---|---:|---:|---:|");
    let allocations = |s: &Segment| s.allocations as f64;
    let alloc_cell = |workload: Workload, layout: Layout| match results.get(&(workload, layout)) {
        Some(_) => figure(median(per_round(workload, layout, &allocations))),
        None => "–".to_string(),
    };
    for &workload in workloads {
        let label = match workload {
            Workload::Hello => format!(
                "hello (rounds {}..{})",
                thousands(options.warmup),
                thousands(options.warmup + options.hello_rounds)
            ),
            _ => workload.name(),
        };
        println!(
            "| {} | {} | {} | {} |",
            label,
            alloc_cell(workload, Layout::Thread),
            alloc_cell(workload, Layout::Threads),
            alloc_cell(workload, Layout::Processes),
        );
    }
}
