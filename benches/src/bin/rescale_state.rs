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
    let usage =
        "usage: rescale_state exchange|loop|notify [--rounds R] [--every N] [--records K] [-w WORKERS]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (config, rest) = Config::from_args(args).unwrap_or_else(|e| fail(&e.to_string(), usage));
    let workload =
        rest.first().and_then(|name| Workload::parse(name)).unwrap_or_else(|| fail("no workload", usage));
    let mut numbers = HashMap::from([("--rounds", 2000u64), ("--every", 100), ("--records", 1000)]);
    for pair in rest[1..].chunks(2) {
        let value = pair.get(1).and_then(|v| v.parse::<u64>().ok());
        match (numbers.get_mut(pair[0].as_str()), value) {
            (Some(slot), Some(value)) => *slot = value,
            _ => fail(&format!("bad option {:?}", pair.join(" ")), usage),
        }
    }
    let (rounds, every) = (numbers["--rounds"], numbers["--every"].max(1));
    let results = run(workload, config, rounds, every, numbers["--records"]);
    println!("workload,workers,round,worker,scopes,total,largest");
    for (worker, samples) in &results {
        for (round, scopes, total, largest) in samples {
            println!("{},{},{round},{worker},{scopes},{total},{largest}", workload.name(), results.len());
        }
    }
}

fn fail(message: &str, usage: &str) -> ! {
    eprintln!("{message}\n{usage}");
    std::process::exit(2)
}
