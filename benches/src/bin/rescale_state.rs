//! The size of the accumulated progress state over rounds (the rescaling experiment 3 of
//! `docs/rescaling.md`): what a joining worker would be sent, sampled while a workload runs.
//!
//! `rescale_state WORKLOAD [--rounds 2000] [--every 100] [--records 1000] [-w WORKERS]`
//! with WORKLOAD one of `exchange` (input -> exchange -> probe), `loop` (records circle an
//! iterative scope a few times, exchanged on every iteration) and `notify` (exchange ->
//! `unary_notify` that requests a notification per time and counts its records).
//!
//! Every worker sends `records` records per round, advances its input and steps until the
//! probe passes the round. Every `every` rounds (and after round 0) each worker reads
//! `progress_state_sizes()`; the program prints a CSV to stdout:
//! `workload,workers,round,worker,scopes,total,largest` (distinct pointstamps summed over the
//! worker's scopes, and in its largest scope). Measures only; no judgement here.

use std::collections::HashMap;
use timely_communication::{FlagError, ProgramFlags};
use timely_engine::dataflow::{InputHandle, Pipeline, ProbeHandle};
use timely_engine::{execute, Config, Product, Worker};

/// The workloads the program can run.
#[derive(Clone, Copy, Debug)]
enum Workload {
    Exchange,
    Loop,
    Notify,
}

impl Workload {
    fn parse(name: &str) -> Option<Workload> {
        match name {
            "exchange" => Some(Workload::Exchange),
            "loop" => Some(Workload::Loop),
            "notify" => Some(Workload::Notify),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Workload::Exchange => "exchange",
            Workload::Loop => "loop",
            Workload::Notify => "notify",
        }
    }

    /// Builds the workload's dataflow on `worker`, fed by `input`, observed by `probe`.
    fn build(self, worker: &mut Worker, input: &mut InputHandle<u64, u64>, probe: &ProbeHandle<u64>) {
        worker.dataflow::<u64, _>(|scope| {
            let stream = scope.input_from(input);
            match self {
                Workload::Exchange => {
                    stream.exchange(|x: &u64| *x).probe_with(probe);
                }
                Workload::Loop => {
                    scope
                        .iterative::<u64, _>(|inner| {
                            let (handle, cycle) = inner.feedback(Product::new(0, 1));
                            let (more, done) = stream
                                .map(|x| (x, x % 4))
                                .enter(inner)
                                .concat(&cycle)
                                .branch(|_, &(_, left)| left == 0);
                            more.map(|(x, left)| (x, left - 1))
                                .exchange(|&(x, left)| x + left)
                                .connect_loop(handle);
                            done.leave(scope)
                        })
                        .probe_with(probe);
                }
                Workload::Notify => {
                    stream
                        .exchange(|x: &u64| *x)
                        .unary_notify(Pipeline, "CountPerTime", |input, output, notificator| {
                            let mut counts: HashMap<u64, usize> = HashMap::new();
                            input.for_each(|time, data: &mut Vec<u64>| {
                                *counts.entry(*time.time()).or_insert(0) += data.len();
                                notificator.notify_at(time.retain());
                            });
                            notificator.for_each(|capability, _, _| {
                                output
                                    .session(&capability)
                                    .give(counts.remove(capability.time()).unwrap_or(0));
                            });
                        })
                        .probe_with(probe);
                }
            }
        });
    }
}

/// One sample: `(round, scopes, total, largest)`.
type Sample = (u64, usize, usize, usize);

/// The worker's progress state now, as a sample for `round`.
fn sample(worker: &Worker, round: u64) -> Sample {
    let sizes = worker.state().rescaling().progress_state_sizes();
    let total = sizes.iter().map(|(_, size)| size).sum();
    let largest = sizes.iter().map(|(_, size)| *size).max().unwrap_or(0);
    (round, sizes.len(), total, largest)
}

/// Runs `workload` and returns every worker's samples.
fn run(
    workload: Workload,
    config: Config,
    rounds: u64,
    every: u64,
    records: u64,
) -> Vec<(usize, Vec<Sample>)> {
    execute(config, move |worker| {
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        workload.build(worker, &mut input, &probe);
        let mut samples = Vec::new();
        for round in 0..rounds {
            input.send_batch(&mut (0..records).map(|i| (round * records + i) * peers + index).collect());
            input.advance_to(round + 1);
            worker.step_while(|| probe.less_than(input.time()));
            if round % every == 0 || round + 1 == rounds {
                samples.push(sample(worker, round));
            }
        }
        (index as usize, samples)
    })
    .unwrap_or_else(|e| {
        eprintln!("rescale_state failed: {e}");
        std::process::exit(1)
    })
}

fn main() {
    let program = ProgramFlags::new("rescale_state")
        .positional("WORKLOAD", "exchange, loop or notify")
        .flag("--rounds", "R", "rounds (default 2000)")
        .flag("--every", "N", "rounds between two samples (default 100)")
        .flag("--records", "K", "records per worker and round (default 1000)")
        .with_runtime_options();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (config, rest) = Config::from_args(args).unwrap_or_else(|error| program.exit(&error));
    let given = program.parse_or_exit(rest);
    let read = || -> Result<(Workload, u64, u64, u64), FlagError> {
        let name: String = given.positional(0, String::new())?;
        let workload = Workload::parse(&name)
            .ok_or_else(|| FlagError::bad_value("WORKLOAD", &name, "exchange, loop or notify"))?;
        let rounds = given.value("--rounds", 2000)?;
        Ok((workload, rounds, given.value::<u64>("--every", 100)?.max(1), given.value("--records", 1000)?))
    };
    let (workload, rounds, every, records) = read().unwrap_or_else(|error| program.exit(&error));
    let results = run(workload, config, rounds, every, records);
    println!("workload,workers,round,worker,scopes,total,largest");
    for (worker, samples) in &results {
        for (round, scopes, total, largest) in samples {
            println!("{},{},{round},{worker},{scopes},{total},{largest}", workload.name(), results.len());
        }
    }
}
