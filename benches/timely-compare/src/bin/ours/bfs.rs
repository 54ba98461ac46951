//! Breadth-first search from node 0 of a random graph, in a loop: an operator holds the
//! edges of the nodes it owns and, once a round is complete, marks the nodes first reached
//! in it and sends their out-neighbours to the next round. The summary counts the reached
//! nodes, sums their distances, and counts the messages sent round the loop.

use crate::Shared;
use std::collections::HashMap;
use timely_compare::{mine, pair, Adjacency};
use timely_engine::dataflow::operators::ToStream;
use timely_engine::dataflow::Exchange;
use timely_engine::Worker;

pub fn run(worker: &mut Worker, nodes: u64, edges: u64) -> Shared {
    let (index, peers) = (worker.index(), worker.peers());
    let summary = Shared::default();
    let out = summary.clone();
    worker.dataflow::<usize, _>(move |scope| {
        let graph = mine(edges, index, peers)
            .map(move |i| {
                let (source, target) = pair(i, 0, nodes);
                (source as u32, target as u32)
            })
            .to_stream(scope);
        let (handle, reached) = scope.feedback(1);
        let by_source = |edge: &(u32, u32)| u64::from(edge.0);
        let mut edge_batches: Vec<Vec<(u32, u32)>> = Vec::new();
        let mut arrivals: HashMap<usize, Vec<Vec<(u32, u32)>>> = HashMap::new();
        let mut adjacency = None;
        let mut parent = vec![u32::MAX; nodes as usize / peers + 1];
        graph
            .binary_notify(
                &reached,
                Exchange::new(by_source),
                Exchange::new(by_source),
                "BFS",
                move |input1, input2, output, notificator| {
                    input1.for_each(|time, data| {
                        notificator.notify_at(time.retain());
                        edge_batches.push(std::mem::take(data));
                    });
                    input2.for_each(|time, data| {
                        arrivals
                            .entry(*time.time())
                            .or_insert_with(|| {
                                notificator.notify_at(time.retain());
                                Vec::new()
                            })
                            .push(std::mem::take(data));
                    });
                    notificator.for_each(|time, _count, _notificator| {
                        if *time.time() == 0 {
                            let edges = edge_batches.drain(..).flatten().collect();
                            adjacency = Some(Adjacency::new(edges, nodes as usize, peers));
                        }
                        let graph = adjacency.as_ref().expect("the graph is complete at time 0");
                        let Some(batches) = arrivals.remove(time.time()) else { return };
                        let mut session = output.session(&time);
                        let mut out = out.borrow_mut();
                        timely_compare::visit(
                            batches,
                            *time.time(),
                            &mut parent,
                            graph,
                            peers,
                            &mut out,
                            |m| session.give(m),
                        );
                    });
                },
            )
            .concat(&[(0u32, 0u32)].to_stream(scope))
            .connect_loop(handle);
    });
    summary
}
