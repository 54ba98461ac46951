//! Shared by the integration tests: workloads, a driver that feeds them into a dataflow on
//! every worker, sequential references, and loopback clusters of "processes" that are
//! threads of the test.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use timely_engine::dataflow::operators::Captured;
use timely_engine::dataflow::{ExchangeData, InputHandle, ProbeHandle, Stream};
use timely_engine::{Config, Worker};
use timely_megaphone::{Bins, Command, Control, KeyedOperators, StateMachine};

/// Records `(time, key, value)` and commands `(time, command)` for rounds `0..rounds`.
#[derive(Clone, Debug)]
pub struct Workload {
    pub rounds: u64,
    pub records: Vec<(u64, u64, u64)>,
    pub commands: Vec<(u64, Command)>,
    /// Every how many rounds the driver waits until the output has caught up (0: never
    /// before the end), so that migrations happen both with and without work in flight.
    pub sync_every: u64,
}

/// A small deterministic random number generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `per_round` records per round over `keys` keys with values below 100.
pub fn records(rng: &mut Rng, rounds: u64, per_round: u64, keys: u64) -> Vec<(u64, u64, u64)> {
    (0..rounds)
        .flat_map(|t| (0..per_round).map(move |_| t))
        .map(|t| (t, rng.below(keys), rng.below(100)))
        .collect()
}

/// Runs `build` over a data stream of `(key, value)` and a control stream on every worker of
/// `config`, feeds `workload`, and returns every `(time, output)` of every worker, sorted.
pub fn run<O, B>(config: Config, bins: Bins, workload: Workload, build: B) -> Vec<(u64, O)>
where
    O: ExchangeData + Ord + Send,
    B: Fn(&Stream<u64, (u64, u64)>, &Control, usize) -> Stream<u64, O> + Send + Sync + 'static,
{
    run_processes(vec![config], bins, workload, build)
}

/// Like [`run`], for several configurations run at once (the processes of one cluster).
pub fn run_processes<O, B>(configs: Vec<Config>, bins: Bins, workload: Workload, build: B) -> Vec<(u64, O)>
where
    O: ExchangeData + Ord + Send,
    B: Fn(&Stream<u64, (u64, u64)>, &Control, usize) -> Stream<u64, O> + Send + Sync + 'static,
{
    let captured = Captured::new();
    let (workload, build) = (Arc::new(workload), Arc::new(build));
    let handles: Vec<_> = configs
        .into_iter()
        .map(|config| {
            let (captured, workload, build) = (captured.clone(), workload.clone(), build.clone());
            std::thread::spawn(move || {
                timely_engine::execute(config, move |worker| {
                    drive(worker, bins, &workload, &captured, &*build)
                })
                .expect("execute failed")
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("a process panicked");
    }
    captured.extract()
}

/// Builds the dataflow on `worker` and feeds its share of `workload` (worker 0 sends the
/// commands), round by round.
fn drive<O, B>(worker: &mut Worker, bins: Bins, workload: &Workload, captured: &Captured<u64, O>, build: &B)
where
    O: ExchangeData + Ord + Send,
    B: Fn(&Stream<u64, (u64, u64)>, &Control, usize) -> Stream<u64, O>,
{
    let (index, peers) = (worker.index(), worker.peers());
    let mut data: InputHandle<u64, (u64, u64)> = InputHandle::new();
    let mut control: InputHandle<u64, Command> = InputHandle::new();
    let probe = ProbeHandle::new();
    worker.dataflow(|scope| {
        let commands = scope.input_from(&mut control);
        let control = Control::new(&commands).with_bins(bins);
        build(&scope.input_from(&mut data), &control, index).probe_with(&probe).capture_into(captured);
    });
    let mut records = workload.records.iter().enumerate().peekable();
    let mut commands = workload.commands.iter().peekable();
    for round in 0..workload.rounds {
        while let Some((i, &(_, key, value))) = records.next_if(|(_, r)| r.0 == round) {
            if i % peers == index {
                data.send((key, value));
            }
        }
        while let Some(&(_, command)) = commands.next_if(|c| c.0 == round) {
            if index == 0 {
                control.send(command);
            }
        }
        data.advance_to(round + 1);
        control.advance_to(round + 1);
        worker.step();
        if workload.sync_every > 0 && round % workload.sync_every == 0 {
            worker.step_while(|| probe.less_than(&(round + 1)));
        }
    }
    data.close();
    control.close();
    worker.step_while(|| !probe.done());
}

/// Per key, the sum of its values over every record at time `<= t`, reported at `t + lag`
/// for every time `t` at which the key had a record: what `keyed_sum` must output.
pub fn sums_reference(records: &[(u64, u64, u64)], lag: u64) -> Vec<(u64, (u64, u64))> {
    let mut by_key: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for &(time, key, value) in records {
        by_key.entry(key).or_default().push((time, value));
    }
    let mut expected = Vec::new();
    for (key, mut history) in by_key {
        history.sort();
        let mut times: Vec<u64> = history.iter().map(|(t, _)| t + lag).collect();
        times.dedup();
        for at in times {
            let sum = history.iter().filter(|(t, _)| *t <= at).map(|(_, v)| v).sum();
            expected.push((at, (key, sum)));
        }
    }
    expected.sort();
    expected
}

/// The keyed running sum under test: per key, the sum of its values, reported `lag` times
/// after each time the key had a record (through a per-key notification), with the worker
/// that reported it.
pub fn keyed_sum(
    data: &Stream<u64, (u64, u64)>,
    control: &Control,
    worker: usize,
    lag: u64,
) -> Stream<u64, (u64, u64, usize)> {
    data.keyed_unary(
        control,
        |&(key, _): &(u64, u64)| key,
        move |_key, (_, value), sum: &mut u64, context| {
            *sum += value;
            context.notify_at(context.time() + lag);
        },
        move |&key, sum, context| context.give((key, *sum, worker)),
    )
}

/// The inputs and probe of the keyed dataflow on one worker.
pub struct Keyed {
    pub data: InputHandle<u64, (u64, u64)>,
    pub control: InputHandle<u64, Command>,
    pub probe: ProbeHandle<u64>,
}

/// Builds word count (a counting state machine) and `keyed_sum` (lag 2) on `worker`, both
/// under one control with `bins` bins, their outputs captured.
pub fn build_keyed(
    worker: &mut Worker,
    bins: Bins,
    counts: &Captured<u64, (u64, u64)>,
    sums: &Captured<u64, (u64, u64, usize)>,
) -> Keyed {
    let (mut data, mut control) = (InputHandle::new(), InputHandle::new());
    let probe = ProbeHandle::new();
    let index = worker.index();
    worker.dataflow(|scope| {
        let control = Control::new(&scope.input_from(&mut control)).with_bins(bins);
        let words: Stream<u64, (u64, u64)> = scope.input_from(&mut data);
        words
            .state_machine(&control.clone().named("Words"), |word: &u64, _: u64, n: &mut u64| {
                *n += 1;
                (false, Some((*word, *n)))
            })
            .probe_with(&probe)
            .capture_into(counts);
        keyed_sum(&words, &control.named("Sums"), index, 2).probe_with(&probe).capture_into(sums);
    });
    Keyed { data, control, probe }
}

/// Drops the worker from `keyed_sum`'s outputs.
pub fn without_workers(outputs: &[(u64, (u64, u64, usize))]) -> Vec<(u64, (u64, u64))> {
    outputs.iter().map(|&(time, (key, sum, _))| (time, (key, sum))).collect()
}

/// For each record, the key and its count so far: what a counting state machine outputs
/// (the multiset per time does not depend on the order within a time).
pub fn counts_reference(records: &[(u64, u64, u64)]) -> Vec<(u64, (u64, u64))> {
    let mut sorted = records.to_vec();
    sorted.sort();
    let mut counts: HashMap<u64, u64> = HashMap::new();
    let mut expected: Vec<_> = sorted
        .iter()
        .map(|&(time, key, _)| {
            let count = counts.entry(key).or_default();
            *count += 1;
            (time, (key, *count))
        })
        .collect();
    expected.sort();
    expected
}

/// The engine's helper that holds a leaver in its leave.
#[path = "../../../../engine/tests/suite/leaving_support/hold.rs"]
mod hold;
pub use hold::{hold_leaver, leave_without_building, leave_without_building_stepping_on};

/// The communication crate's test helpers (free loopback addresses).
#[path = "../../../../communication/tests/common/mod.rs"]
mod net;
pub use net::{free_addresses, within};

/// The configurations of a cluster of `processes` processes of `threads` workers each.
pub fn cluster(processes: usize, threads: usize) -> Vec<Config> {
    let addresses = free_addresses(processes);
    (0..processes).map(|process| cluster_config(&addresses, process, processes, threads, None)).collect()
}

/// The configuration of process `process` of a cluster on `addresses` that starts with
/// `initial` processes of `threads` workers; `join`: the process joins the running cluster,
/// served by that worker.
pub use net::loopback_cluster as cluster_config;

/// Starts `program` on each of `processes` processes of `threads` workers on `addresses`, each
/// process on a thread of this test; [`outcomes`] waits for them.
pub fn start_processes<F>(
    addresses: &[String],
    processes: usize,
    threads: usize,
    program: F,
) -> Vec<std::thread::JoinHandle<Result<(), String>>>
where
    F: Fn(&mut Worker) + Clone + Send + Sync + 'static,
{
    (0..processes)
        .map(|process| {
            let config = cluster_config(addresses, process, processes, threads, None);
            let program = program.clone();
            std::thread::spawn(move || {
                timely_engine::execute(config, program).map(|_| ()).map_err(|e| e.to_string())
            })
        })
        .collect()
}

/// Each process's outcome, in process order (a panicked process thread as an error).
pub fn outcomes(runs: Vec<std::thread::JoinHandle<Result<(), String>>>) -> Vec<Result<(), String>> {
    runs.into_iter().map(|run| run.join().unwrap_or_else(|_| Err("panicked".to_owned()))).collect()
}
