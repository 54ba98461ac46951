//! Workloads shared by the benchmarks of `timely-benches`, the `hello_memory` probe and
//! the `cluster_bench` binary, and a counting allocator those binaries install.
//!
//! Each function runs one complete workload and reports what the benchmark needs: the wall
//! time of the measured part (dataflow construction and thread start-up excluded), record
//! counts to check the run did what it claims, or a generated graph. Keeping the workloads
//! here lets the criterion benches, the memory binary and the unit tests run the same code.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use timely_engine::dataflow::operators::OutputPort;
use timely_engine::dataflow::{Data, ExchangeData, InputHandle, Pipeline, ProbeHandle};
use timely_engine::logging::EventClasses;
use timely_engine::progress::reachability::{GraphBuilder, Summary};
use timely_engine::progress::{Source, Target};
use timely_engine::{Antichain, Config, Product, Worker};

mod allocator;
pub use allocator::{
    allocations, take_watched_allocation, thread_allocations, watching_allocations, CountingAllocator,
};

/// The number of workers a configuration starts in this process.
pub fn workers_of(config: &Config) -> usize {
    match config {
        Config::Thread => 1,
        Config::Process(n) => *n,
        Config::Cluster(cluster) => cluster.threads,
    }
}

/// How a workload's rounds are measured: `warmup` untimed rounds (across processes they
/// also line the workers up, since a round ends only when every worker finished it), then
/// the workers of this process meet at a barrier, then `segments` timed segments of
/// `rounds` rounds each.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Untimed rounds before the first segment.
    pub warmup: u64,
    /// Rounds per timed segment.
    pub rounds: u64,
    /// Timed segments.
    pub segments: usize,
}

impl Plan {
    /// One timed segment of `rounds` rounds, no warm-up.
    pub fn once(rounds: u64) -> Self {
        Plan { warmup: 0, rounds, segments: 1 }
    }
}

/// What one timed segment measured in this process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    /// The slowest worker of this process.
    pub elapsed: Duration,
    /// Heap allocations of the whole process during the segment, as seen by its first
    /// worker; 0 unless the binary installs [`CountingAllocator`].
    pub allocations: u64,
    /// Heap allocations of this process's worker threads during the segment, summed (the
    /// part of [`Segment::allocations`] the dataflow's own steps make).
    pub worker_allocations: u64,
    /// Records the counting operators of this process's workers received (exchange only).
    pub received: u64,
}

/// A worker's dataflow as a workload drives it: the input, the probe after the last
/// operator, the records received per timed segment, and what to send in each round.
struct Rounds<D: Data> {
    input: InputHandle<u64, D>,
    probe: ProbeHandle<u64>,
    received: Rc<RefCell<Vec<u64>>>,
    send: Sender<D>,
}

/// What a worker sends in a round (given the round), into the workload's input.
type Sender<D> = Box<dyn FnMut(u64, &mut InputHandle<u64, D>)>;

impl<D: Data> Rounds<D> {
    /// Runs rounds `from..to`: send, advance the input, step until the probe passes.
    fn run(&mut self, worker: &mut Worker, from: u64, to: u64) {
        for round in from..to {
            (self.send)(round, &mut self.input);
            self.input.advance_to(round + 1);
            worker.step_while(|| self.probe.less_than(self.input.time()));
        }
    }
}

/// Runs `plan` on every worker of `config` in this process over the dataflow `build`
/// makes, optionally with a logger installed that discards every trace event; returns
/// each segment's figures for this process.
fn run_plan<D, B>(config: Config, plan: Plan, traced: bool, build: B) -> Vec<Segment>
where
    D: Data,
    B: Fn(&mut Worker) -> Rounds<D> + Send + Sync + 'static,
{
    let barrier = Arc::new(Barrier::new(workers_of(&config)));
    let per_worker = timely_engine::execute(config, move |worker| {
        if traced {
            worker.install_logger(EventClasses::all(), |_worker, events, _why| {
                std::hint::black_box(&events);
                events.clear();
            });
        }
        let mut rounds = build(worker);
        rounds.run(worker, 0, plan.warmup);
        barrier.wait();
        let mut segments = Vec::with_capacity(plan.segments);
        for segment in 0..plan.segments as u64 {
            let from = plan.warmup + segment * plan.rounds;
            let (allocated, own, start) = (allocations(), thread_allocations(), Instant::now());
            watching_allocations(|| rounds.run(worker, from, from + plan.rounds));
            let elapsed = start.elapsed();
            let (allocations, worker_allocations) = (allocations() - allocated, thread_allocations() - own);
            segments.push(Segment { elapsed, allocations, worker_allocations, received: 0 });
        }
        // The probe follows the counter, so once it passed the last round every record
        // sent in the timed rounds has been counted.
        for (segment, received) in segments.iter_mut().zip(rounds.received.borrow().iter()) {
            segment.received = *received;
        }
        segments
    })
    .expect("benchmark dataflow failed");
    let mut combined = per_worker[0].clone();
    for worker in &per_worker[1..] {
        for (total, segment) in combined.iter_mut().zip(worker) {
            total.elapsed = total.elapsed.max(segment.elapsed);
            total.received += segment.received;
            total.worker_allocations += segment.worker_allocations;
        }
    }
    combined
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
    hello_plan(config, Plan::once(rounds), traced)[0].elapsed
}

/// The hello dataflow of [`hello_rounds`], measured by `plan`.
pub fn hello_plan(config: Config, plan: Plan, traced: bool) -> Vec<Segment> {
    run_plan(config, plan, traced, |worker| {
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
        let send = Box::new(move |round: u64, input: &mut InputHandle<u64, u64>| {
            if round % peers == index {
                input.send(round);
            }
        });
        Rounds { input, probe, received: Rc::default(), send }
    })
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
    let segment = exchange_plan(config, Plan::once(rounds), batch, Routing::Spread, |v| v, |x: &u64| *x)[0];
    ExchangeRun { elapsed: segment.elapsed, received: segment.received }
}

/// Where the records of an exchange workload go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    /// Distinct values hashed by value: spread over all workers, this one included.
    Spread,
    /// Every record to the next worker (`(index + 1) % peers`): with two workers, all of
    /// them to the other one.
    Next,
}

/// The exchange workload of [`exchange_rounds`] for records made by `record` from a `u64`
/// value whose `key` is that value, routed as `routing` says, measured by `plan`.
pub fn exchange_plan<D: ExchangeData>(
    config: Config,
    plan: Plan,
    batch: u64,
    routing: Routing,
    record: fn(u64) -> D,
    key: fn(&D) -> u64,
) -> Vec<Segment> {
    run_plan(config, plan, false, move |worker| {
        let index = worker.index() as u64;
        let peers = worker.peers() as u64;
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        // Records received per timed segment, by their time: a worker of another process
        // may be a round ahead, so counts taken at segment boundaries would be off.
        let count = Rc::new(RefCell::new(vec![0u64; plan.segments]));
        let counter = count.clone();
        worker.dataflow(|scope| {
            scope
                .input_from(&mut input)
                .exchange(key)
                .unary(Pipeline, "Count", move |_capability, _info| {
                    move |input, _output: &mut OutputPort<u64, ()>| {
                        input.for_each(|time, data| {
                            if let Some(timed) = time.time().checked_sub(plan.warmup) {
                                let segment = (timed / plan.rounds.max(1)) as usize;
                                if let Some(total) = counter.borrow_mut().get_mut(segment) {
                                    *total += data.len() as u64;
                                }
                            }
                            data.clear();
                        });
                    }
                })
                .probe_with(&probe);
        });
        // Distinct values per worker and round, so that `Spread` reaches every worker.
        let mut buffer: Vec<D> = Vec::with_capacity(batch as usize);
        let send = Box::new(move |round: u64, input: &mut InputHandle<u64, D>| {
            let base = (round * 1_000_003 + index) * batch;
            let values = base..base + batch;
            match routing {
                Routing::Spread => buffer.extend(values.map(record)),
                Routing::Next => buffer.extend(values.map(|v| record(v * peers + (index + 1) % peers))),
            }
            input.send_batch(&mut buffer);
        });
        Rounds { input, probe, received: count, send }
    })
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
    let is_loop_head = |i: usize| i.is_multiple_of(loop_every) && i + loop_span <= length;
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
    fn plans_measure_every_segment_and_route_to_the_next_worker() {
        let plan = Plan { warmup: 5, rounds: 10, segments: 2 };
        assert_eq!(hello_plan(Config::Process(2), plan, false).len(), 2);
        let segments = exchange_plan(Config::Process(2), plan, 100, Routing::Next, |v| v, |x: &u64| *x);
        assert!(segments.iter().all(|s| s.received == 10 * 100 * 2), "{segments:?}");
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
