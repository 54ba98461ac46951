//! Breadth-first search in an iterative scope: a loop with product timestamps.
//!
//! `cargo run --release --example loops -- [NODES] [EDGES] [SEED] [-w WORKERS]`
//! (defaults: 100000 nodes, 200000 edges, seed 1).
//!
//! The program generates a random directed graph with a xorshift generator (each worker
//! generates every edge whose index it owns), and computes every node's distance from node
//! 0. The edges and the root enter a nested scope with timestamps `(epoch, iteration)`.
//! There a `BFS` operator, fed by an exchange by node, keeps the out-edges of its nodes and
//! the nodes it has reached; once an iteration is complete (a notification), it marks the
//! new nodes of that iteration with the iteration as their distance and sends their
//! neighbours around the loop (`feedback(Product::new(0, 1))`, `connect_loop`) to the next
//! iteration. Reached nodes `leave` the scope and are gathered on worker 0 (one exchange),
//! so the process that holds worker 0 sees every distance however many processes run.
//!
//! That process prints the number of reached nodes and the histogram of distances, checks them
//! against a sequential BFS of the same graph, and prints `ok` (or exits with status 1). The
//! other processes say that the results are gathered elsewhere and check nothing.

mod common;

use std::collections::{HashMap, VecDeque};
use timely_communication::ProgramFlags;
use timely_engine::dataflow::operators::Captured;
use timely_engine::dataflow::{Exchange, InputHandle};
use timely_engine::Product;

/// A xorshift64* generator: deterministic, no dependencies.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> Self {
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// The edges of the graph, in generation order.
fn generate_edges(nodes: u32, edges: usize, seed: u64) -> impl Iterator<Item = (u32, u32)> {
    let mut rng = XorShift::new(seed);
    (0..edges).map(move |_| ((rng.next() % nodes as u64) as u32, (rng.next() % nodes as u64) as u32))
}

/// Distances from node 0, computed sequentially.
fn sequential_bfs(nodes: u32, edges: usize, seed: u64) -> HashMap<u32, u64> {
    let mut adjacency: HashMap<u32, Vec<u32>> = HashMap::new();
    for (src, dst) in generate_edges(nodes, edges, seed) {
        adjacency.entry(src).or_default().push(dst);
    }
    let mut distance = HashMap::from([(0u32, 0u64)]);
    let mut queue = VecDeque::from([0u32]);
    while let Some(node) = queue.pop_front() {
        let next = distance[&node] + 1;
        for &neighbour in adjacency.get(&node).into_iter().flatten() {
            distance.entry(neighbour).or_insert_with(|| {
                queue.push_back(neighbour);
                next
            });
        }
    }
    distance
}

/// Counts of nodes per distance.
fn histogram<'a>(distances: impl Iterator<Item = &'a u64>) -> Vec<usize> {
    let mut histogram = Vec::new();
    for &d in distances {
        if histogram.len() <= d as usize {
            histogram.resize(d as usize + 1, 0);
        }
        histogram[d as usize] += 1;
    }
    histogram
}

fn parse_args() -> (common::Runtime, u32, usize, u64) {
    let program = ProgramFlags::new("loops")
        .positional("NODES", "nodes of the random graph (default 100000)")
        .positional("EDGES", "edges (default 200000)")
        .positional("SEED", "the random seed (default 1)");
    let (runtime, numbers, _) = common::runtime_and_numbers(program, &[100_000, 200_000, 1]);
    let (nodes, edges, seed) = (numbers[0], numbers[1] as usize, numbers[2]);
    if nodes == 0 || nodes > u32::MAX as u64 {
        eprintln!("NODES must be between 1 and {}", u32::MAX);
        std::process::exit(2);
    }
    (runtime, nodes as u32, edges, seed)
}

/// A record of the loop: a node and whether it was reached (true) or is a candidate for
/// the next iteration (false).
type Step = (u32, bool);

fn main() {
    let (runtime, nodes, edge_count, seed) = parse_args();
    let reached: Captured<u64, (u32, u64)> = Captured::new();
    let shared = reached.clone();
    let start = std::time::Instant::now();
    let workers = runtime
        .execute(move |worker| {
            let (index, peers) = (worker.index(), worker.peers());
            let mut edges = InputHandle::new();
            let mut roots = InputHandle::new();
            worker.dataflow::<u64, _>(|scope| {
                let edge_stream = scope.input_from(&mut edges);
                let root_stream = scope.input_from(&mut roots);
                let found = scope.iterative::<u64, _>(|inner| {
                    let (handle, candidates) = inner.feedback::<u32>(Product::new(0, 1));
                    let frontier = root_stream.enter(inner).concat(&candidates);
                    let mut adjacency: HashMap<u32, Vec<u32>> = HashMap::new();
                    let mut visited: HashMap<u32, u64> = HashMap::new();
                    let mut stash: HashMap<Product<u64, u64>, Vec<u32>> = HashMap::new();
                    let steps = edge_stream.enter(inner).binary_notify(
                        &frontier,
                        Exchange::new(|&(src, _): &(u32, u32)| src as u64),
                        Exchange::new(|&node: &u32| node as u64),
                        "BFS",
                        move |edge_input, node_input, output, notificator| {
                            edge_input.for_each(|_time, data| {
                                for (src, dst) in data.drain(..) {
                                    adjacency.entry(src).or_default().push(dst);
                                }
                            });
                            node_input.for_each(|time, data| {
                                let pending = stash.entry(*time.time()).or_default();
                                if pending.is_empty() {
                                    notificator.notify_at(time.retain());
                                }
                                pending.append(data);
                            });
                            notificator.for_each(|time, _requests, _notificator| {
                                let iteration = time.time().inner;
                                let mut session = output.session(&time);
                                for node in stash.remove(time.time()).unwrap_or_default() {
                                    if let std::collections::hash_map::Entry::Vacant(entry) =
                                        visited.entry(node)
                                    {
                                        entry.insert(iteration);
                                        session.give((node, true));
                                        for &neighbour in adjacency.get(&node).into_iter().flatten() {
                                            session.give((neighbour, false));
                                        }
                                    }
                                }
                            });
                        },
                    );
                    let (next, new) = steps.branch(|_time, &(_, reached): &Step| reached);
                    next.map(|(node, _)| node).connect_loop(handle);
                    new.unary(timely_engine::dataflow::Pipeline, "Distance", |_capability, _info| {
                        |input, output| {
                            input.for_each(|time, data| {
                                let iteration = time.time().inner;
                                output
                                    .session(&time)
                                    .give_iterator(data.drain(..).map(|(node, _)| (node, iteration)));
                            })
                        }
                    })
                    .leave(scope)
                });
                found.exchange(|_| 0).capture_into(&shared);
            });
            // Each worker contributes the edges whose index it owns; worker 0 sends the root.
            let mut mine: Vec<(u32, u32)> = generate_edges(nodes, edge_count, seed)
                .enumerate()
                .filter(|(i, _)| i % peers == index)
                .map(|(_, e)| e)
                .collect();
            edges.send_batch(&mut mine);
            if index == 0 {
                roots.send(0u32);
            }
            edges.close();
            roots.close();
            index
        })
        .unwrap_or_else(|e| {
            eprintln!("loops failed: {}", e);
            std::process::exit(1)
        });
    let elapsed = start.elapsed();
    if !workers.contains(&0) {
        println!("the distances are gathered on worker 0, in another process");
        return;
    }
    let records = reached.extract();
    let distances: HashMap<u32, u64> = records.iter().map(|&(_, node_distance)| node_distance).collect();
    let found = histogram(distances.values());
    println!("{} of {} nodes reached from node 0 in {:.3?}", distances.len(), nodes, elapsed);
    println!("distance histogram: {:?}", found);
    let expected = sequential_bfs(nodes, edge_count, seed);
    if distances == expected && records.len() == distances.len() {
        println!("ok");
    } else {
        println!(
            "MISMATCH: {} records for {} nodes; sequential BFS reaches {} nodes, histogram {:?}",
            records.len(),
            distances.len(),
            expected.len(),
            histogram(expected.values())
        );
        std::process::exit(1);
    }
}
