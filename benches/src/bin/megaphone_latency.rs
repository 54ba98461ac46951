//! Per-epoch latency of a keyed count while Megaphone migrates half of its bins (the
//! experiments of issue 12: the paper's figures 16-18, and the sweep over bins and state).
//!
//! `megaphone_latency [--workers 2] [--processes 1] [--bins 256] [--keys 100000]
//!  [--state-bytes 64] [--rate 200000] [--duration 4] [--migrate-at 2]
//!  [--strategy all-at-once|fluid|batched:N[@GAP|@done]]`
//!
//! `processes` "processes" (threads of this program, each running `timely_engine::execute`,
//! over loopback when more than one) of `workers` workers each run a keyed count
//! (`keyed_unary`: per key a count and a `String` of `state-bytes` bytes; serde writes a
//! string in one piece, whereas a `Vec<u8>` goes element by element, which made moving it
//! between processes about twice as slow). First every key gets
//! its state (epoch 0, waited for), then the workers start a common clock and feed records
//! of random keys at `rate` records per second in total, in epochs of 1 ms (the input's time
//! is the current millisecond plus one). At `migrate-at` seconds worker 0 sends the commands
//! that move every other group of `workers x processes` bins to the next worker (half of the
//! bins; each worker sends and receives as many), spread over epochs by `strategy`: `plan`
//! puts its steps at consecutive epochs, all sent at once; `@GAP` spaces them `GAP` epochs (ms)
//! apart instead, so that the workers can catch up between steps; `@done` sends each step
//! only once the probe has passed the previous step's epoch (the step is complete), at the
//! current epoch.
//!
//! Prints a CSV to stdout: per epoch, `epoch,t_ms,latency_ms` (`t_ms`: the epoch's nominal
//! end, when its input closes, since the clock's start; latency: from then until worker 0's
//! probe passed the epoch; epochs in flight when the feed stops are measured while the
//! dataflow drains). Then comment lines: `# migration,BINS_MOVED,START_MS,END_MS` (the first
//! command's epoch start, and when the probe passed the last command's epoch, `NaN` if never),
//! `# records,SENT,PROCESSED`, `# moved,BEFORE_ON_OLD,AFTER_ON_NEW,MISPLACED` (records of
//! moved bins processed before their move on the old owner, after it on the new owner, and
//! anywhere else) and `# state_mb,MB` (keys times their state's bytes). It exits with status 1
//! if a record was lost or processed on the wrong worker. Measures only; what the numbers
//! mean is in `docs/megaphone.md`.

use std::cell::Cell;
use std::net::TcpListener;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};
use timely_communication::initialize::ClusterConfig;
use timely_communication::networking::ClusterIdentity;
use timely_communication::{FlagError, Flags, ProgramFlags};
use timely_engine::dataflow::{InputHandle, ProbeHandle};
use timely_engine::{Config, Worker};
use timely_megaphone::{plan, Bins, Command, Context, Control, KeyedOperators, RoutingTable, Strategy};

/// What one run does (see the module docs for the flags).
#[derive(Clone, Debug)]
struct Options {
    workers: usize,
    processes: usize,
    bins: usize,
    keys: u64,
    state_bytes: usize,
    rate: f64,
    duration: f64,
    migrate_at: f64,
    strategy: Strategy,
    /// Epochs between two steps of the migration; `None`: each step once the previous is done.
    gap: Option<u64>,
}

/// `STRATEGY[@GAP|@done]`: the strategy and the epochs between its steps (1 without `@`,
/// `None` for `@done`).
fn parse_strategy(text: &str) -> Result<(Strategy, Option<u64>), FlagError> {
    let bad = |expected: &str| FlagError::bad_value("--strategy", text, expected);
    let (value, gap) = match text.split_once('@') {
        Some((strategy, "done")) => (strategy, None),
        Some((strategy, gap)) => match gap.parse() {
            Ok(gap) if gap > 0 => (strategy, Some(gap)),
            _ => return Err(bad("@GAP with a positive number of epochs, or @done")),
        },
        None => (text, Some(1)),
    };
    let strategy = match value.split_once(':') {
        None if value == "all-at-once" => Ok(Strategy::AllAtOnce),
        None if value == "fluid" => Ok(Strategy::Fluid),
        Some(("batched", n)) => match n.parse() {
            Ok(per_worker) if per_worker > 0 => Ok(Strategy::Batched { per_worker }),
            _ => Err(bad("batched:N with a positive N")),
        },
        _ => Err(bad("a strategy: all-at-once, fluid or batched:N, then @GAP or @done")),
    }?;
    Ok((strategy, gap))
}

/// The command line.
fn flags() -> ProgramFlags {
    ProgramFlags::new("megaphone_latency")
        .flag("--workers", "N", "workers per process (default 2)")
        .flag("--processes", "N", "processes (default 1)")
        .flag("--bins", "B", "Megaphone bins, a power of two (default 256)")
        .flag("--keys", "K", "distinct keys (default 100000)")
        .flag("--state-bytes", "S", "bytes of state per key (default 64)")
        .flag("--rate", "R", "records per second (default 200000)")
        .flag("--duration", "S", "seconds of input (default 4)")
        .flag("--migrate-at", "S", "seconds before the migration starts (default 2)")
        .flag("--strategy", "S", "all-at-once, fluid or batched:N, then @GAP or @done (default all-at-once)")
}

impl Options {
    /// The options `flags` give, with their defaults; numbers are read as `f64` (`--rate 2e5`).
    fn parse(flags: &Flags) -> Result<Options, FlagError> {
        let number = |flag: &str, default: f64| flags.value(flag, default);
        let (strategy, gap) =
            flags.value_with("--strategy", (Strategy::AllAtOnce, Some(1)), parse_strategy)?;
        let options = Options {
            workers: number("--workers", 2.0)? as usize,
            processes: number("--processes", 1.0)? as usize,
            bins: number("--bins", 256.0)? as usize,
            keys: number("--keys", 100_000.0)? as u64,
            state_bytes: number("--state-bytes", 64.0)? as usize,
            rate: number("--rate", 200_000.0)?,
            duration: number("--duration", 4.0)?,
            migrate_at: number("--migrate-at", 2.0)?,
            strategy,
            gap,
        };
        Bins::new(options.bins).map_err(|e| FlagError::bad_value("--bins", &options.bins.to_string(), e))?;
        let combination = |problem: &str| Err(FlagError::Combination(problem.to_string()));
        if options.workers == 0 || options.processes == 0 || options.workers * options.processes < 2 {
            return combination("--workers x --processes must be at least 2 (a migration needs two workers)");
        }
        if options.keys == 0 || options.rate <= 0.0 {
            return combination("--keys and --rate must be positive");
        }
        if !(0.0..options.duration).contains(&options.migrate_at) {
            return combination("--migrate-at must be within --duration");
        }
        Ok(options)
    }

    fn peers(&self) -> usize {
        self.workers * self.processes
    }

    /// The epoch of the first command: the migration starts at `migrate-at` seconds.
    fn migration_epoch(&self) -> u64 {
        (self.migrate_at * 1e3) as u64 + 1
    }

    /// The migration's steps: `plan`'s commands grouped by time, the times `gap` epochs apart
    /// (with `@done`, the times are decided while the dataflow runs).
    fn steps(&self) -> Vec<(u64, Vec<Command>)> {
        let bins = Bins::new(self.bins).expect("checked");
        let initial = RoutingTable::round_robin(bins, self.peers()).expect("a table");
        let start = self.migration_epoch();
        let planned =
            plan(&initial, &target_table(bins, self.peers()), self.strategy, start).expect("a plan");
        let mut steps: Vec<(u64, Vec<Command>)> = Vec::new();
        for (time, command) in planned {
            let time = start + (time - start) * self.gap.unwrap_or(1);
            match steps.last_mut() {
                Some((last, commands)) if *last == time => commands.push(command),
                _ => steps.push((time, vec![command])),
            }
        }
        steps
    }
}

/// The table after the migration: every other group of `peers` bins moves to the next worker.
fn target_table(bins: Bins, peers: usize) -> RoutingTable {
    let owners = (0..bins.count())
        .map(|bin| if (bin / peers).is_multiple_of(2) { (bin + 1) % peers } else { bin % peers })
        .collect();
    RoutingTable::from_owners(owners).expect("a valid table")
}

/// What the workers of every process share: the clock and the measurements.
struct Shared {
    barrier: Barrier,
    start: Mutex<Option<Instant>>,
    /// Worker 0's `(epoch, latency_ns, passed_ns)` per epoch.
    epochs: Mutex<Vec<(u64, u64, u64)>>,
    sent: Mutex<u64>,
    processed: Mutex<u64>,
    /// Records of moved bins: before the move on the old owner, after it on the new one,
    /// anywhere else.
    moved: Mutex<[u64; 3]>,
    /// Per bin, the time of its move once worker 0 sent it (`u64::MAX` before).
    move_times: Vec<AtomicU64>,
}

/// Worker 0's side of the migration: sends its steps when they are due and publishes each
/// bin's move time in [`Shared::move_times`] first.
struct Controller {
    steps: Vec<(u64, Vec<Command>)>,
    next: usize,
    after_done: bool,
}

impl Controller {
    /// Sends what is due at `epoch`, before the inputs advance to it: every step at its time
    /// once `epoch` reaches the first, or (`@done`) the next step at `epoch` once the probe
    /// has passed the previous one.
    fn poll(
        &mut self,
        epoch: u64,
        control: &mut InputHandle<u64, Command>,
        probe: &ProbeHandle<u64>,
        shared: &Shared,
    ) {
        let Some(first) = self.steps.first().map(|s| s.0) else { return };
        while self.next < self.steps.len() && epoch >= first {
            if self.after_done {
                if self.next > 0 && probe.less_than(&(self.steps[self.next - 1].0 + 1)) {
                    return;
                }
                self.steps[self.next].0 = epoch.max(*control.time());
            }
            let (time, commands) = &self.steps[self.next];
            control.advance_to(*time);
            for &command in commands {
                let Command::Move { bin, .. } = command;
                shared.move_times[bin].store(*time, Ordering::SeqCst);
                control.send(command);
            }
            self.next += 1;
            if self.after_done {
                return;
            }
        }
    }
}

/// Where the records of moved bins were processed, on one worker.
#[derive(Default)]
struct Tally {
    processed: Cell<u64>,
    moved: [Cell<u64>; 3],
}

/// Per bin: `Some((from, to))` if the migration moves it.
fn moves_of(options: &Options) -> Vec<Option<(usize, usize)>> {
    let bins = Bins::new(options.bins).expect("checked");
    let initial = RoutingTable::round_robin(bins, options.peers()).expect("a table");
    let target = target_table(bins, options.peers());
    (0..bins.count())
        .map(|bin| (initial.owner(bin) != target.owner(bin)).then(|| (initial.owner(bin), target.owner(bin))))
        .collect()
}

/// One worker's run: builds the dataflow, creates every key's state, then feeds records
/// until the end, sending the migration's commands (worker 0) and measuring (worker 0).
fn run_worker(worker: &mut Worker, options: &Options, shared: &Arc<Shared>) {
    let index = worker.index();
    let bins = Bins::new(options.bins).expect("checked");
    let (moves, times) = (moves_of(options), shared.clone());
    let tally = Rc::new(Tally::default());
    let mut data = InputHandle::<u64, u64>::new();
    let mut control = InputHandle::<u64, Command>::new();
    let probe = ProbeHandle::new();
    let (counted, state_bytes) = (tally.clone(), options.state_bytes);
    worker.dataflow::<u64, _>(|scope| {
        let control = Control::new(&scope.input_from(&mut control)).with_bins(bins).named("Count");
        let on_record = move |key: &u64, _: u64, state: &mut (u64, String), context: &mut Context<()>| {
            if state.1.len() != state_bytes {
                state.1 = "x".repeat(state_bytes);
            }
            state.0 += 1;
            counted.processed.set(counted.processed.get() + 1);
            let bin = bins.of(key);
            if let Some((from, to)) = moves[bin] {
                let slot = match (context.time() < times.move_times[bin].load(Ordering::SeqCst), index) {
                    (true, w) if w == from => 0,
                    (false, w) if w == to => 1,
                    _ => 2,
                };
                counted.moved[slot].set(counted.moved[slot].get() + 1);
            }
        };
        scope
            .input_from(&mut data)
            .keyed_unary(&control, |&key: &u64| key, on_record, |_, _, _| {})
            .probe_with(&probe);
    });
    let mut sent = populate(worker, options, &mut data, &mut control, &probe);
    let is_leader = shared.barrier.wait().is_leader();
    if is_leader {
        *shared.start.lock().unwrap() = Some(Instant::now());
    }
    shared.barrier.wait();
    let start = shared.start.lock().unwrap().expect("set by the leader");
    let mut controller = (index == 0).then(|| Controller {
        steps: options.steps(),
        next: 0,
        after_done: options.gap.is_none(),
    });
    sent += feed(worker, options, shared, start, (&mut data, &mut control), &probe, controller.as_mut());
    *shared.sent.lock().unwrap() += sent;
    *shared.processed.lock().unwrap() += tally.processed.get();
    let mut moved = shared.moved.lock().unwrap();
    for (total, mine) in moved.iter_mut().zip(&tally.moved) {
        *total += mine.get();
    }
}

/// Epoch 0: this worker's share of the keys, once each, waited for. Returns the records sent.
fn populate(
    worker: &mut Worker,
    options: &Options,
    data: &mut InputHandle<u64, u64>,
    control: &mut InputHandle<u64, Command>,
    probe: &ProbeHandle<u64>,
) -> u64 {
    let (index, peers) = (worker.index() as u64, worker.peers() as u64);
    let mine: Vec<u64> = (index..options.keys).step_by(peers as usize).collect();
    for &key in &mine {
        data.send(key);
    }
    data.advance_to(1);
    control.advance_to(1);
    worker.step_while(|| probe.less_than(&1));
    mine.len() as u64
}

/// The timed part: records at the fixed rate in 1 ms epochs, the commands at their epochs
/// (worker 0), latencies (worker 0). Closes the inputs at the end. Returns the records sent.
fn feed(
    worker: &mut Worker,
    options: &Options,
    shared: &Shared,
    start: Instant,
    (data, control): (&mut InputHandle<u64, u64>, &mut InputHandle<u64, Command>),
    probe: &ProbeHandle<u64>,
    mut controller: Option<&mut Controller>,
) -> u64 {
    let (index, peers) = (worker.index(), worker.peers());
    let per_worker = options.rate / peers as f64;
    let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (index as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D);
    let (mut sent, mut next_epoch) = (0u64, 1u64);
    let end = start + Duration::from_secs_f64(options.duration);
    let mut epochs = Vec::new();
    while Instant::now() < end {
        let now = start.elapsed();
        let epoch = now.as_millis() as u64 + 1;
        if let Some(controller) = controller.as_mut() {
            controller.poll(epoch, control, probe, shared);
        }
        data.advance_to(epoch.max(*data.time()));
        control.advance_to(epoch.max(*control.time()));
        let due = (per_worker * now.as_secs_f64()) as u64;
        while sent < due {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            data.send(rng % options.keys);
            sent += 1;
        }
        worker.step_or_park(Some(Duration::from_micros(100)));
        if index == 0 {
            measure(start, probe, *data.time(), &mut next_epoch, &mut epochs);
        }
    }
    // Epochs still in flight when the feed stops (a migration's backlog) are measured too.
    let last = *data.time();
    data.close();
    control.close();
    while !probe.done() {
        worker.step();
        if index == 0 {
            measure(start, probe, last, &mut next_epoch, &mut epochs);
        }
    }
    shared.epochs.lock().unwrap().extend(epochs);
    sent
}

/// Records every epoch before `current` that the probe has passed since the last call.
fn measure(
    start: Instant,
    probe: &ProbeHandle<u64>,
    current: u64,
    next: &mut u64,
    epochs: &mut Vec<(u64, u64, u64)>,
) {
    let passed = start.elapsed().as_nanos() as u64;
    while *next < current && !probe.less_than(&(*next + 1)) {
        let closed = *next * 1_000_000;
        epochs.push((*next, passed.saturating_sub(closed), passed));
        *next += 1;
    }
}

/// `count` loopback addresses nobody listens on right now.
fn free_addresses(count: usize) -> Vec<String> {
    let listeners: Vec<TcpListener> =
        (0..count).map(|_| TcpListener::bind("127.0.0.1:0").expect("a port")).collect();
    listeners.iter().map(|l| l.local_addr().expect("an address").to_string()).collect()
}

/// The configuration of every process.
fn configs(options: &Options) -> Vec<Config> {
    if options.processes == 1 {
        return vec![Config::Process(options.workers)];
    }
    let addresses = free_addresses(options.processes);
    (0..options.processes)
        .map(|process| {
            let identity = ClusterIdentity {
                cluster_id: 12,
                secret: b"megaphone latency".to_vec(),
                ..ClusterIdentity::default()
            };
            let (workers, processes) = (options.workers, options.processes);
            Config::Cluster(ClusterConfig::started_together(
                addresses.clone(),
                process,
                processes,
                workers,
                identity,
            ))
        })
        .collect()
}

/// Runs every process on a thread; returns the measurements once all finished.
fn run(options: Options) -> Result<Arc<Shared>, String> {
    let shared = Arc::new(Shared {
        barrier: Barrier::new(options.peers()),
        start: Mutex::new(None),
        epochs: Mutex::new(Vec::new()),
        sent: Mutex::new(0),
        processed: Mutex::new(0),
        moved: Mutex::new([0; 3]),
        move_times: (0..options.bins).map(|_| AtomicU64::new(u64::MAX)).collect(),
    });
    let options = Arc::new(options);
    let processes: Vec<_> = configs(&options)
        .into_iter()
        .enumerate()
        .map(|(process, config)| {
            let (options, shared) = (options.clone(), shared.clone());
            std::thread::spawn(move || {
                timely_engine::execute(config, move |worker| run_worker(worker, &options, &shared))
                    .map(|_| ())
                    .map_err(|e| format!("process {process}: {e}"))
            })
        })
        .collect();
    for process in processes {
        process.join().map_err(|_| "a process panicked".to_string())??;
    }
    Ok(shared)
}

/// Prints the CSV and the summary lines; returns whether every record was processed once,
/// on the right worker.
fn report(options: &Options, shared: &Shared) -> bool {
    let mut epochs = shared.epochs.lock().unwrap().clone();
    epochs.sort_unstable();
    println!("epoch,t_ms,latency_ms");
    for &(epoch, latency, _) in &epochs {
        println!("{epoch},{},{:.3}", epoch, latency as f64 / 1e6);
    }
    let times: Vec<u64> =
        shared.move_times.iter().map(|t| t.load(Ordering::SeqCst)).filter(|&t| t != u64::MAX).collect();
    let (first, last) = (times.iter().min().copied().unwrap_or(1), times.iter().max().copied().unwrap_or(1));
    let done = epochs.iter().find(|e| e.0 >= last).map_or(f64::NAN, |e| e.2 as f64 / 1e6);
    println!("# migration,{},{},{:.3}", times.len(), (first - 1) as f64, done);
    let (sent, processed) = (*shared.sent.lock().unwrap(), *shared.processed.lock().unwrap());
    println!("# records,{sent},{processed}");
    let moved = *shared.moved.lock().unwrap();
    println!("# moved,{},{},{}", moved[0], moved[1], moved[2]);
    println!("# state_mb,{:.1}", options.keys as f64 * (options.state_bytes + 8) as f64 / 1e6);
    sent == processed && moved[2] == 0
}

fn main() {
    let program = flags();
    let given = program.parse_or_exit(std::env::args().skip(1));
    let options = Options::parse(&given).unwrap_or_else(|error| program.exit(&error));
    match run(options.clone()) {
        Ok(shared) => {
            if !report(&options, &shared) {
                eprintln!("a record was lost, duplicated or processed on the wrong worker");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("megaphone_latency: {e}");
            std::process::exit(1);
        }
    }
}
