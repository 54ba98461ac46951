//! Workloads shared by the benchmarks of `timely-benches` and the `hello_memory` probe.
//!
//! Each function runs one complete workload and reports what the benchmark needs: the wall
//! time of the measured part (dataflow construction and thread start-up excluded), record
//! counts to check the run did what it claims, or a generated graph. Keeping the workloads
//! here lets the criterion benches, the memory binary and the unit tests run the same code.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use timely_engine::dataflow::{InputHandle, Pipeline, ProbeHandle};
use timely_engine::progress::reachability::{GraphBuilder, Summary};
use timely_engine::progress::{Source, Target};
use timely_engine::{Antichain, Config, Product};

/// The number of workers a configuration starts in this process.
pub fn workers_of(config: &Config) -> usize {
    match config {
        Config::Thread => 1,
        Config::Process(n) => *n,
        Config::Cluster(cluster) => cluster.threads,
    }
}

/// Runs the seed's hello dataflow (input -> exchange -> inspect -> probe) for `rounds`
/// rounds: in round `r` worker `r % peers` sends the record `r`, every worker advances its
/// input to `r + 1` and steps until the probe passes it. The inspect closure does not print.
///
/// Returns the slowest worker's time for the rounds alone (all workers start the clock
/// together, after building the dataflow).
pub fn hello_rounds(config: Config, rounds: u64) -> Duration {
    hello_rounds_traced(config, rounds, false)
}

/// `hello_rounds`, optionally with a logger installed on every worker that receives all
/// trace events and discards them (the cost of the event points when tracing is on).
pub fn hello_rounds_traced(config: Config, rounds: u64, traced: bool) -> Duration {
    let barrier = Arc::new(Barrier::new(workers_of(&config)));
    let times = timely_engine::execute(config, move |worker| {
        if traced {
            worker.install_logger(|_worker, events| {
                std::hint::black_box(&events);
                events.clear();
            });
        }
        let index = worker.index() as u64;
        let peers = worker.peers() as u64;
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        worker.dataflow(|scope| {
            scope
                .input_from(&mut input)
                .exchange(|x: &u64| *x)
                .inspect(|x| {
                    std::hint::black_box(x);
                })
                .probe_with(&probe);
        });
        barrier.wait();
        let start = Instant::now();
        for round in 0..rounds {
            if round % peers == index {
                input.send(round);
            }
            input.advance_to(round + 1);
            worker.step_while(|| probe.less_than(input.time()));
        }
        start.elapsed()
    })
    .expect("hello dataflow failed");
    times.into_iter().max().unwrap_or_default()
}

/// What an exchange run measured.
#[derive(Clone, Copy, Debug)]
pub struct ExchangeRun {
    /// The slowest worker's time for all rounds.
    pub elapsed: Duration,
    /// Records the counting sinks received, summed over workers.
    pub received: u64,
}

/// Pushes `batch` records (`u64`) per worker per round through `exchange` into an operator
/// that only counts them, for `rounds` rounds; each round ends when the probe after the
/// counter passes it (as in hello). Every worker sends, so a round moves `batch * peers`
/// records, about `(peers - 1) / peers` of them to another worker.
pub fn exchange_rounds(config: Config, rounds: u64, batch: u64) -> ExchangeRun {
    let barrier = Arc::new(Barrier::new(workers_of(&config)));
    let results = timely_engine::execute(config, move |worker| {
        let index = worker.index() as u64;
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        let count = std::rc::Rc::new(std::cell::Cell::new(0u64));
        let counter = count.clone();
        worker.dataflow(|scope| {
            scope
                .input_from(&mut input)
                .exchange(|x: &u64| *x)
                .unary(Pipeline, "Count", move |_capability, _info| {
                    move |input, _output: &mut timely_engine::dataflow::operators::OutputPort<u64, ()>| {
                        input.for_each(|_time, data| {
                            counter.set(counter.get() + data.len() as u64);
                            data.clear();
                        });
                    }
                })
                .probe_with(&probe);
        });
        // Distinct values per worker and round, so the hash spreads them over all workers.
        let mut buffer: Vec<u64> = Vec::with_capacity(batch as usize);
        barrier.wait();
        let start = Instant::now();
        for round in 0..rounds {
            let base = (round * 1_000_003 + index) * batch;
            buffer.extend(base..base + batch);
            input.send_batch(&mut buffer);
            input.advance_to(round + 1);
            worker.step_while(|| probe.less_than(input.time()));
        }
        let elapsed = start.elapsed();
        // The probe follows the counter, so once it passed the last round every record
        // sent has been counted.
        (elapsed, count.get())
    });
    let results = results.expect("exchange dataflow failed");
    let elapsed = results.iter().map(|(e, _)| *e).max().unwrap_or_default();
    let received = results.iter().map(|(_, c)| *c).sum();
    ExchangeRun { elapsed, received }
}

/// Timestamps of the generated tracker graphs.
pub type LoopTime = Product<u64, u64>;

/// A generated scope graph for the tracker benchmarks, and where its first capability lives.
pub struct ChainGraph {
    /// The graph, ready to `build`.
    pub builder: GraphBuilder<LoopTime>,
    /// Operators in the graph, node 0 (the outside world) included.
    pub nodes: usize,
    /// Ports (inputs plus outputs) over all nodes.
    pub ports: usize,
    /// The output of the chain's first operator.
    pub head: Source,
    /// The output of every operator except node 0 and the feedback nodes.
    pub operator_outputs: Vec<Source>,
}

/// Builds a chain of `length` operators with product timestamps, fed by the scope's input
/// and feeding its output. Every `loop_every` operators a loop is closed: a feedback node
/// with summary `(0, 1)` takes the output of the operator `loop_span - 1` positions ahead
/// and returns it to a second input of the loop's first operator. Loops do not nest but
/// follow one another, so the graph is a DAG of strongly connected pieces of `loop_span`
/// operators plus a feedback node each. All other summaries are the identity `(0, 0)`.
pub fn chain_graph(length: usize, loop_every: usize, loop_span: usize) -> ChainGraph {
    assert!(length >= 1 && loop_span >= 1 && loop_span <= loop_every);
    let identity = || Antichain::from_elem(Product::new(0u64, 0u64));
    let mut builder = GraphBuilder::<LoopTime>::new();
    // Node 0: one output (the scope input) and one input (the scope output).
    builder.add_node(0, 1, 1, vec![vec![Antichain::new()]]);
    let mut ports = 2;
    let is_loop_head = |i: usize| i % loop_every == 0 && i + loop_span <= length;
    // Chain operators are nodes 1..=length; feedback nodes follow.
    let mut next_node = length + 1;
    let mut operator_outputs = Vec::with_capacity(length);
    for i in 0..length {
        let node = i + 1;
        let inputs = if is_loop_head(i) { 2 } else { 1 };
        let summary: Summary<LoopTime> = (0..inputs).map(|_| vec![identity()]).collect();
        builder.add_node(node, inputs, 1, summary);
        ports += inputs + 1;
        operator_outputs.push(Source::new(node, 0));
        let from = if i == 0 { Source::new(0, 0) } else { Source::new(node - 1, 0) };
        builder.add_edge(from, Target::new(node, 0));
        if is_loop_head(i) {
            let tail = node + loop_span - 1;
            let feedback = next_node;
            next_node += 1;
            builder.add_node(feedback, 1, 1, vec![vec![Antichain::from_elem(Product::new(0, 1))]]);
            ports += 2;
            builder.add_edge(Source::new(tail, 0), Target::new(feedback, 0));
            builder.add_edge(Source::new(feedback, 0), Target::new(node, 1));
        }
    }
    builder.add_edge(Source::new(length, 0), Target::new(0, 0));
    ChainGraph { builder, nodes: next_node, ports, head: Source::new(1, 0), operator_outputs }
}

/// Peak resident set size of this process in KiB (`VmHWM` from `/proc/self/status`), or
/// `None` where that file is unavailable.
pub fn peak_rss_kib() -> Option<u64> {
    status_field_kib("VmHWM:")
}

/// Current resident set size of this process in KiB (`VmRSS`).
pub fn current_rss_kib() -> Option<u64> {
    status_field_kib("VmRSS:")
}

fn status_field_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].trim().trim_end_matches("kB").trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_runs_on_one_and_two_workers() {
        assert!(hello_rounds(Config::Thread, 100) > Duration::ZERO);
        assert!(hello_rounds(Config::Process(2), 100) > Duration::ZERO);
    }

    #[test]
    fn exchange_delivers_every_record() {
        for config in [Config::Thread, Config::Process(2)] {
            let workers = workers_of(&config) as u64;
            let run = exchange_rounds(config, 20, 1_000);
            assert_eq!(run.received, 20 * 1_000 * workers);
        }
    }

    #[test]
    fn chain_graph_builds_and_tracks_a_moving_capability() {
        let graph = chain_graph(100, 10, 5);
        let head = graph.head;
        let (mut tracker, scope_summary) = graph.builder.build().expect("graph builds");
        // The scope input reaches the scope output with the identity summary.
        assert_eq!(scope_summary[0][0].elements(), &[Product::new(0, 0)]);
        tracker.update_source(head, Product::new(0, 0), 1);
        tracker.propagate_all();
        tracker.pushed().clear();
        tracker.update_source(head, Product::new(1, 0), 1);
        tracker.update_source(head, Product::new(0, 0), -1);
        tracker.propagate_all();
        assert!(!tracker.pushed().is_empty());
        assert_eq!(tracker.frontier(Target::new(100, 0)).frontier(), &[Product::new(1, 0)]);
    }

    #[test]
    fn rss_is_readable_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(peak_rss_kib().unwrap() > 0);
            assert!(current_rss_kib().unwrap() > 0);
        }
    }
}
