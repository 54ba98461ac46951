//! Per-record latency over time while processes join or leave a running cluster (the
//! rescaling experiments 2 and 4 of `docs/rescaling.md`, and its leave experiment).
//!
//! `rescale_latency [--threads 2] [--initial 2] [--joins 4,8] [--duration 12] [--rate 2000]
//!  [--injectors 4] [--cost 2000] [--sleep-us 0] [--loops 0] [--window-ms 100] [--trace DIR]
//!  [--pin 0|1] [--keyed BINS] [--keys 10000] [--state-bytes 0] [--strategy batched] [--leave P@S]
//!  [--evacuate 0|1]`
//!
//! Each "process" is a thread of this program running `timely_engine::execute` with its own
//! `Config::Cluster` on loopback (as `crates/engine/tests/suite/rescaling.rs` does); process
//! `initial + k` joins `joins[k]` seconds after the start, served by worker `k`, once the
//! previous joiner finished its bootstrap. The first `injectors` workers inject `rate`
//! records per second in total, each stamped with the time it was due (its rank over the
//! worker's rate, so a worker that stalls and catches up counts the stall in the latency of
//! the records it owed, rather than hiding it); the records go through
//! `exchange` by key, a stateless map of configurable cost (`cost` rounds of a hash loop, or a
//! `sleep-us` sleep, which occupies a worker without using a core), with `--loops N` then
//! `N` trips around an iterative scope, and an inspect that
//! measures the latency. Times are milliseconds since the start; every worker advances its
//! input to the current millisecond. With `--keyed BINS` the map is a Megaphone word count
//! instead (`timely-megaphone`, `BINS` bins): per key (the record's key modulo `--keys`) a
//! count, with the same cost per record; every time worker 0 sees the cluster grow it
//! rebalances the bins over every worker with `--strategy` (all_at_once, fluid or batched),
//! so keyed state moves to the joined workers (the seed's experiment with Megaphone); with
//! `--state-bytes B` each key's state also holds `B` bytes, so that moving bins moves that much.
//! With `--leave P@S` process `P` leaves `S` seconds after the start (its workers stop
//! injecting, close their inputs and go once drained; with `--keyed`, its bins move to the
//! workers that stay: all at once, at its cutoff). With `--evacuate 1` (and `--keyed`, `P`
//! not 0) worker 0 first plans the evacuation of P's bins at `S` with `--strategy`
//! (`Controller::evacuate`) and sends one step each time the previous one is complete; P
//! leaves once the last step is, so the leave itself moves nothing.
//!
//! Prints a CSV to stdout: per `window-ms` window of arrival time, the record count and the
//! latency percentiles (`window_s,records,p50_us,p99_us,max_us`), then one comment line per
//! join (`# join,K,spawned_s,bootstrapped_s`, K from 1), the leave (`# leave,P,asked_s,gone_s`:
//! when P's first worker called `leave`, when worker 0 saw it gone), the evacuation
//! (`# evacuate,P,planned_s,done_s,bins`) and the total
//! (`# records,SENT,RECEIVED`).
//! With `--trace DIR`, process `p` traces into `DIR/pP`. With `--pin 1` the initial processes'
//! threads run on CPU 0 and the joining processes' on CPU 1, as if each joiner brought its own
//! machine (the initial cluster keeps its cores; needs 2 CPUs). It exits with status 1 if a record
//! was lost or duplicated. Measures only; what the numbers mean is in `docs/rescaling.md`.

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use timely_communication::initialize::ClusterConfig;
use timely_communication::networking::ClusterIdentity;
use timely_communication::{FlagError, Flags, ProgramFlags};
use timely_engine::dataflow::{InputHandle, ProbeHandle, Scope, Stream};
use timely_engine::{execute_traced, Config, Product, TraceSettings, Worker};
use timely_megaphone::{Bins, Command, Control, Controller, RoutingTable, StateMachine, Strategy};

/// What one run does (see the module docs for the flags).
#[derive(Clone, Debug)]
struct Options {
    threads: usize,
    initial: usize,
    joins: Vec<f64>,
    duration: f64,
    rate: f64,
    injectors: usize,
    cost: u64,
    sleep_us: u64,
    loops: u64,
    window_ms: u64,
    trace: Option<PathBuf>,
    pin: bool,
    /// Bins of the keyed variant (0: the stateless map).
    keyed: usize,
    /// Bytes of padding in each key's state (keyed variant).
    state_bytes: usize,
    keys: u64,
    strategy: Strategy,
    /// The process that leaves and when (seconds after the start).
    leave: Option<(usize, f64)>,
    /// Worker 0 evacuates the leaver's bins before it leaves (keyed variant).
    evacuate: bool,
}

/// The command line.
fn flags() -> ProgramFlags {
    ProgramFlags::new("rescale_latency")
        .flag("--threads", "N", "workers per process (default 2)")
        .flag("--initial", "N", "processes at the start, at least 2 (default 2)")
        .flag("--joins", "T1,T2", "seconds at which a process joins (default 4,8)")
        .flag("--duration", "S", "seconds of input (default 12)")
        .flag("--rate", "R", "records per second (default 2000)")
        .flag("--injectors", "K", "workers that send the records (default 4)")
        .flag("--cost", "C", "work per record (default 2000)")
        .flag("--sleep-us", "U", "microseconds each record sleeps (default 0)")
        .flag("--loops", "N", "iterations of a loop per record, 0 for none (default 0)")
        .flag("--window-ms", "W", "milliseconds per latency window (default 100)")
        .flag("--trace", "DIR", "write a trace of the run there")
        .flag("--pin", "0|1", "pin workers to CPUs (default 0)")
        .flag("--keyed", "BINS", "Megaphone bins of the keyed variant, 0 for the stateless map (default 0)")
        .flag("--state-bytes", "S", "bytes of state per key, keyed variant (default 0)")
        .flag("--keys", "K", "distinct keys, keyed variant (default 10000)")
        .flag("--strategy", "S", "all_at_once, fluid or batched (default batched)")
        .flag("--leave", "P@S", "process P leaves S seconds after the start")
        .flag("--evacuate", "0|1", "move the leaver's bins off it first, keyed variant (default 0)")
}

/// `P@SECONDS`: the process that leaves and when.
fn parse_leave(text: &str) -> Result<(usize, f64), FlagError> {
    let bad = || FlagError::bad_value("--leave", text, "P@SECONDS");
    let (process, at) = text.split_once('@').ok_or_else(bad)?;
    Ok((process.parse::<f64>().map_err(|_| bad())? as usize, at.parse().map_err(|_| bad())?))
}

/// `all_at_once`, `fluid` or `batched` (4 bins per worker at a time).
fn parse_strategy(text: &str) -> Result<Strategy, FlagError> {
    match text {
        "all_at_once" => Ok(Strategy::AllAtOnce),
        "fluid" => Ok(Strategy::Fluid),
        "batched" => Ok(Strategy::Batched { per_worker: 4 }),
        _ => Err(FlagError::bad_value("--strategy", text, "all_at_once, fluid or batched")),
    }
}

impl Options {
    /// The options `flags` give, with their defaults; numbers are read as `f64` (`--rate 2e3`).
    fn parse(flags: &Flags) -> Result<Options, FlagError> {
        let number = |flag: &str, default: f64| flags.value(flag, default);
        let options = Options {
            threads: number("--threads", 2.0)? as usize,
            initial: number("--initial", 2.0)? as usize,
            joins: flags.list("--joins", vec![4.0, 8.0])?,
            duration: number("--duration", 12.0)?,
            rate: number("--rate", 2000.0)?,
            injectors: number("--injectors", 4.0)? as usize,
            cost: number("--cost", 2000.0)? as u64,
            sleep_us: number("--sleep-us", 0.0)? as u64,
            loops: number("--loops", 0.0)? as u64,
            window_ms: number("--window-ms", 100.0)?.max(1.0) as u64,
            trace: flags.value_with("--trace", None, |dir| Ok(Some(PathBuf::from(dir))))?,
            pin: number("--pin", 0.0)? != 0.0,
            keyed: number("--keyed", 0.0)? as usize,
            state_bytes: number("--state-bytes", 0.0)? as usize,
            keys: (number("--keys", 10_000.0)? as u64).max(1),
            strategy: flags.value_with("--strategy", Strategy::Batched { per_worker: 4 }, parse_strategy)?,
            leave: flags.value_with("--leave", None, |text| parse_leave(text).map(Some))?,
            evacuate: number("--evacuate", 0.0)? != 0.0,
        };
        let combination = |problem: &str| Err(FlagError::Combination(problem.to_string()));
        if options.threads == 0 || options.initial < 2 || options.injectors == 0 {
            return combination("--threads and --injectors must be at least 1, --initial at least 2");
        }
        if options.leave.is_some_and(|(process, at)| {
            process >= options.initial + options.joins.len() || at >= options.duration
        }) {
            return combination("--leave P@S: a process of the run, before --duration");
        }
        if options.evacuate && (options.keyed == 0 || options.leave.is_none_or(|(process, _)| process == 0)) {
            return combination(
                "--evacuate 1: needs --keyed and --leave P@S with P not 0 (worker 0 plans it)",
            );
        }
        if options.keyed > 0 && Bins::new(options.keyed).is_err() {
            return combination("--keyed: the bins must be a power of two");
        }
        if options.injectors > options.initial * options.threads {
            return combination("--injectors cannot exceed the initial workers");
        }
        if options.joins.windows(2).any(|w| w[0] > w[1])
            || options.joins.iter().any(|&t| t >= options.duration)
        {
            return combination("--joins must be increasing and before --duration");
        }
        Ok(options)
    }
}

/// What the workers of every process share: the clock, the measurements, the joins' progress.
#[derive(Default)]
struct Shared {
    /// `(arrival_ns, latency_ns)` of every record, from the inspect.
    arrivals: Mutex<Vec<(u64, u64)>>,
    /// Records injected, over all workers.
    sent: Mutex<u64>,
    /// Per join, when its first worker finished the bootstrap (ns since the start).
    bootstrapped: Mutex<Vec<Option<u64>>>,
    /// When the leaving process's first worker called `leave`, and when worker 0 saw it gone.
    left: Mutex<(Option<u64>, Option<u64>)>,
    /// With `--evacuate`: when worker 0 planned the evacuation, when its last step was
    /// complete, and how many bins it moved.
    evacuated: Mutex<(Option<u64>, Option<u64>, usize)>,
}

/// Nanoseconds since `start`.
fn since(start: Instant) -> u64 {
    start.elapsed().as_nanos() as u64
}

/// The per-record work: `cost` rounds of a multiplicative hash (kept by `black_box`), or a sleep.
fn work(key: u64, cost: u64, sleep_us: u64) {
    if sleep_us > 0 {
        std::thread::sleep(Duration::from_micros(sleep_us));
    }
    let mut h = key;
    for _ in 0..cost {
        h = std::hint::black_box(h.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ key);
    }
    std::hint::black_box(h);
}

/// `stream` after each record circled an iterative scope `loops` times, exchanged on every
/// iteration (the loop variant, `--loops`: a nested scope whose state the joiners receive).
fn circle(scope: &Scope<u64>, stream: &Stream<u64, u64>, loops: u64) -> Stream<u64, u64> {
    scope.iterative::<u64, _>(|inner| {
        let (handle, cycle) = inner.feedback(Product::new(0, 1));
        let (more, done) = stream
            .map(move |stamp| (stamp, loops))
            .enter(inner)
            .concat(&cycle)
            .branch(|_, &(_, left)| left == 0);
        more.map(|(stamp, left)| (stamp, left - 1))
            .exchange(|&(stamp, left)| stamp + left)
            .connect_loop(handle);
        done.leave(scope).map(|(stamp, _)| stamp)
    })
}

/// The stage every record goes through: `exchange` by key and the map, or (`--keyed`) the
/// Megaphone word count, controlled by `commands`.
fn stage(
    options: &Options,
    records: &Stream<u64, (u64, u64)>,
    commands: &Stream<u64, Command>,
) -> Stream<u64, u64> {
    let (cost, sleep_us, keys, padding) = (options.cost, options.sleep_us, options.keys, options.state_bytes);
    if options.keyed == 0 {
        return records.exchange(|&(_, key): &(u64, u64)| key).map(move |(stamp, key)| {
            work(key, cost, sleep_us);
            stamp
        });
    }
    let control = Control::new(commands).with_bins(Bins::new(options.keyed).expect("checked")).named("Count");
    records.map(move |(stamp, key)| (key % keys, stamp)).state_machine(
        &control,
        move |&key: &u64, stamp: u64, (count, pad): &mut (u64, Vec<u8>)| {
            work(key, cost, sleep_us);
            if *count == 0 {
                *pad = vec![key as u8; padding];
            }
            *count += 1;
            (false, Some(stamp))
        },
    )
}

/// One worker's run: builds the dataflow, bootstraps if it joined, then injects (if it is one
/// of the first `injectors`) and steps until the run's end.
fn run_worker(worker: &mut Worker, options: &Options, shared: &Arc<Shared>, start: Instant) {
    let index = worker.index();
    let mut input = InputHandle::new();
    let mut control = InputHandle::new();
    let probe = ProbeHandle::new();
    let measured = shared.clone();
    let loops = options.loops;
    worker.dataflow::<u64, _>(|scope| {
        let commands = scope.input_from(&mut control);
        let mapped = stage(options, &scope.input_from(&mut input), &commands);
        let looped = if loops == 0 { mapped } else { circle(scope, &mapped, loops) };
        looped
            .inspect_batch(move |_time, stamps| {
                let now = since(start);
                let mut arrivals = measured.arrivals.lock().unwrap();
                arrivals.extend(stamps.iter().map(|&stamp| (now, now.saturating_sub(stamp))));
            })
            .probe_with(&probe);
    });
    if worker.bootstrap() {
        let join = index / options.threads - options.initial;
        if index.is_multiple_of(options.threads) {
            shared.bootstrapped.lock().unwrap()[join] = Some(since(start));
        }
    }
    // Worker 0 of the keyed variant rebalances each time the cluster grows.
    let mut controller = (index == 0 && options.keyed > 0).then(|| {
        let bins = Bins::new(options.keyed).expect("checked");
        Controller::new(RoutingTable::round_robin(bins, worker.peers()).expect("workers"))
    });
    let mut peers = worker.peers();
    let per_worker = options.rate / options.injectors as f64;
    let injecting = index < options.injectors;
    let (mut sent, mut key) = (0u64, index as u64);
    let end = start + Duration::from_secs_f64(options.duration);
    let leaves_at =
        options.leave.filter(|&(process, _)| process == index / options.threads).map(|(_, at)| at);
    // With `--evacuate`, on worker 0: the time of the last evacuation step sent.
    let mut step_sent: Option<u64> = None;
    while Instant::now() < end {
        let now = since(start);
        let evacuated = !options.evacuate || shared.evacuated.lock().unwrap().1.is_some();
        if leaves_at.is_some_and(|at| now as f64 / 1e9 >= at) && evacuated {
            shared.left.lock().unwrap().0.get_or_insert(now);
            worker.leave().expect("another process stays");
            break;
        }
        if index == 0 && options.leave.is_some() && !worker.state().rescaling().leaves().departed().is_empty()
        {
            shared.left.lock().unwrap().1.get_or_insert(now);
        }
        input.advance_to((now / 1_000_000).max(*input.time()));
        control.advance_to(*input.time());
        if let Some(controller) = controller.as_mut() {
            let now = *control.time();
            if worker.peers() > peers {
                peers = worker.peers();
                controller.rebalance(0..peers, options.strategy, now + 2).expect("a plan");
            }
            // The evacuation's steps are paced by `next_step`, not handed out by `due`.
            let evacuating = options.evacuate
                && evacuate_step(
                    worker,
                    options,
                    shared,
                    controller,
                    &mut control,
                    &probe,
                    &mut step_sent,
                    start,
                );
            if !evacuating {
                controller.due(now).into_iter().for_each(|command| control.send(command));
            }
        }
        if injecting {
            let due = (per_worker * now as f64 / 1e9) as u64;
            while sent < due {
                let scheduled = (sent as f64 * 1e9 / per_worker) as u64;
                input.send((scheduled, key));
                key += options.injectors as u64;
                sent += 1;
            }
        }
        worker.step_or_park(Some(Duration::from_micros(200)));
    }
    *shared.sent.lock().unwrap() += sent;
    if worker.is_leaving() {
        // Its inputs close when they drop; it goes once nothing more can reach it.
        drop((input, control));
        while worker.step_or_park(Some(Duration::from_micros(200))) {}
    }
}

/// With `--evacuate`, on worker 0: plans the evacuation of the leaving process's bins at its
/// leave time (once every earlier plan went out), then sends one step each time the previous
/// one is complete (the probe passed its time), and notes when the last one was. True while
/// the evacuation is planned and not complete.
#[allow(clippy::too_many_arguments)]
fn evacuate_step(
    worker: &Worker,
    options: &Options,
    shared: &Shared,
    controller: &mut Controller,
    control: &mut InputHandle<u64, Command>,
    probe: &ProbeHandle<u64>,
    step_sent: &mut Option<u64>,
    start: Instant,
) -> bool {
    let Some((process, at)) = options.leave else { return false };
    let mut evacuated = shared.evacuated.lock().unwrap();
    if evacuated.1.is_some()
        || since(start) as f64 / 1e9 < at
        || !controller.is_idle() && evacuated.0.is_none()
    {
        return false;
    }
    if evacuated.0.is_none() {
        let leaving = worker.state().workers_of(process);
        let now = *control.time();
        evacuated.2 =
            controller.evacuate(leaving, worker.state().members(), options.strategy, now).expect("a stayer");
        evacuated.0 = Some(since(start));
    }
    if step_sent.is_some_and(|time| probe.less_equal(&time)) {
        return true;
    }
    let step = controller.next_step();
    if step.is_empty() {
        evacuated.1 = Some(since(start));
        return false;
    }
    *step_sent = Some(*control.time());
    step.into_iter().for_each(|command| control.send(command));
    true
}

/// `count` loopback addresses nobody listens on right now.
fn free_addresses(count: usize) -> Vec<String> {
    let listeners: Vec<TcpListener> =
        (0..count).map(|_| TcpListener::bind("127.0.0.1:0").expect("a port")).collect();
    listeners.iter().map(|l| l.local_addr().expect("an address").to_string()).collect()
}

/// The configuration of process `process` (joining, served by worker `join`, if given).
fn config(options: &Options, addresses: &[String], process: usize, join: Option<usize>) -> Config {
    let identity =
        ClusterIdentity { cluster_id: 7, secret: b"rescale latency".to_vec(), ..ClusterIdentity::default() };
    let mut config = ClusterConfig::started_together(
        addresses.to_vec(),
        process,
        options.initial,
        options.threads,
        identity,
    );
    if join.is_some() {
        config.processes = process + 1;
        config.join = join;
    }
    Config::Cluster(config)
}

/// Starts process `process` on a thread.
fn spawn_process(
    options: &Arc<Options>,
    shared: &Arc<Shared>,
    addresses: &[String],
    process: usize,
    join: Option<usize>,
    start: Instant,
) -> std::thread::JoinHandle<Result<(), String>> {
    let config = config(options, addresses, process, join);
    let trace =
        options.trace.as_ref().map(|dir| TraceSettings::to_directory(dir.join(format!("p{process}"))));
    let (options, shared) = (options.clone(), shared.clone());
    let cpu = options.pin.then_some(usize::from(join.is_some()));
    std::thread::spawn(move || {
        if let Some(cpu) = cpu {
            pin_to(cpu).map_err(|e| format!("process {process}: {e}"))?;
        }
        let program = move |worker: &mut Worker| run_worker(worker, &options, &shared, start);
        execute_traced(config, trace, program).map(|_| ()).map_err(|e| format!("process {process}: {e}"))
    })
}

/// Restricts the calling thread, and every thread it starts from now on, to CPU `cpu`.
fn pin_to(cpu: usize) -> Result<(), String> {
    // SAFETY: `cpu_set_t` is plain data, zeroed is the empty set; `CPU_SET` writes inside it
    // (cpu < CPU_SETSIZE is checked) and `sched_setaffinity` only reads it.
    unsafe {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(format!("no CPU {cpu}"));
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!("cannot run on CPU {cpu}: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// Runs the cluster and its joins; returns when every process has finished.
fn run(options: Options) -> Result<(Arc<Shared>, Vec<u64>), String> {
    let options = Arc::new(options);
    let shared = Arc::new(Shared::default());
    *shared.bootstrapped.lock().unwrap() = vec![None; options.joins.len()];
    let addresses = free_addresses(options.initial + options.joins.len());
    let start = Instant::now();
    let mut processes: Vec<_> =
        (0..options.initial).map(|p| spawn_process(&options, &shared, &addresses, p, None, start)).collect();
    let mut spawned = Vec::new();
    for (k, &at) in options.joins.iter().enumerate() {
        let at = Duration::from_secs_f64(at);
        while start.elapsed() < at || (k > 0 && shared.bootstrapped.lock().unwrap()[k - 1].is_none()) {
            if processes.iter().any(|p| p.is_finished()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        spawned.push(since(start));
        processes.push(spawn_process(&options, &shared, &addresses, options.initial + k, Some(k), start));
    }
    for process in processes {
        process.join().map_err(|_| "a process panicked".to_string())??;
    }
    Ok((shared, spawned))
}

/// The `q` quantile (0..=1) of sorted `values`.
fn quantile(sorted: &[u64], q: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Prints the per-window percentiles and the join moments.
fn report(options: &Options, shared: &Shared, spawned: &[u64]) -> bool {
    let mut arrivals = shared.arrivals.lock().unwrap().clone();
    arrivals.sort_unstable();
    let window = options.window_ms * 1_000_000;
    println!("window_s,records,p50_us,p99_us,max_us");
    for chunk in arrivals.chunk_by(|a, b| a.0 / window == b.0 / window) {
        let mut latencies: Vec<u64> = chunk.iter().map(|&(_, latency)| latency).collect();
        latencies.sort_unstable();
        let us = |ns: u64| ns as f64 / 1e3;
        println!(
            "{:.3},{},{:.1},{:.1},{:.1}",
            (chunk[0].0 / window * window) as f64 / 1e9,
            latencies.len(),
            us(quantile(&latencies, 0.5)),
            us(quantile(&latencies, 0.99)),
            us(*latencies.last().unwrap()),
        );
    }
    let bootstrapped = shared.bootstrapped.lock().unwrap();
    for (k, (spawned, done)) in spawned.iter().zip(bootstrapped.iter()).enumerate() {
        let done = done.map_or("".to_string(), |ns| format!("{:.4}", ns as f64 / 1e9));
        println!("# join,{},{:.4},{}", k + 1, *spawned as f64 / 1e9, done);
    }
    if let Some((process, _)) = options.leave {
        let (asked, gone) = *shared.left.lock().unwrap();
        let seconds = |at: Option<u64>| at.map_or(String::new(), |ns| format!("{:.4}", ns as f64 / 1e9));
        println!("# leave,{process},{},{}", seconds(asked), seconds(gone));
        if options.evacuate {
            let (planned, done, bins) = *shared.evacuated.lock().unwrap();
            println!("# evacuate,{process},{},{},{bins}", seconds(planned), seconds(done));
        }
    }
    let sent = *shared.sent.lock().unwrap();
    println!("# records,{},{}", sent, arrivals.len());
    sent == arrivals.len() as u64
}

fn main() {
    let program = flags();
    let given = program.parse_or_exit(std::env::args().skip(1));
    let options = Options::parse(&given).unwrap_or_else(|error| program.exit(&error));
    match run(options.clone()) {
        Ok((shared, spawned)) => {
            if !report(&options, &shared, &spawned) {
                eprintln!("MISMATCH: records were lost or duplicated");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("rescale_latency failed: {e}");
            std::process::exit(1);
        }
    }
}
