//! An incrementally maintained PageRank: edge changes arrive from an input (all edges at
//! round 0, then `changes` additions and removals per round), rank changes go round a loop,
//! and an operator applies each time's changes once both inputs have passed it. The summary
//! counts and sums the rank changes applied and the changes sent.

use crate::{Shared, Worker};
use std::collections::HashMap;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::{Capability, ConnectLoop, Feedback, Input, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};
use timely_compare::{edge_changes, Ranks};

type Stash<D> = HashMap<Capability<usize>, Vec<D>>;

// Capabilities key the stashes: they hash by their time, which never changes.
#[allow(clippy::mutable_key_type)]
pub fn run(worker: &mut Worker, nodes: u64, edges: u64, rounds: u64, changes: u64) -> Shared {
    assert!(changes <= edges, "pagerank removes edges it added: changes must not exceed edges");
    let (index, peers) = (worker.index(), worker.peers());
    let summary = Shared::default();
    let out = summary.clone();
    let mut input = InputHandle::new();
    let probe = ProbeHandle::new();
    worker.dataflow::<usize, _, _>(|scope| {
        let edge_stream = scope.input_from(&mut input);
        let (handle, rank_stream) = scope.feedback(1);
        let by_edge_source = |change: &((usize, usize), i64)| change.0 .0 as u64;
        let by_node = |change: &(usize, i64)| change.0 as u64;
        edge_stream
            .binary_frontier(
                rank_stream,
                Exchange::new(by_edge_source),
                Exchange::new(by_node),
                "PageRank",
                |_capability, _info| {
                    let mut edge_stash: Stash<((usize, usize), i64)> = HashMap::new();
                    let mut rank_stash: Stash<(usize, i64)> = HashMap::new();
                    let mut ranks = Ranks::default();
                    move |(input1, frontier1), (input2, frontier2), output| {
                        input1.for_each_time(|time, data| {
                            let entry = edge_stash.entry(time.retain(output.output_index())).or_default();
                            data.for_each(|data| entry.append(data));
                        });
                        input2.for_each_time(|time, data| {
                            let entry = rank_stash.entry(time.retain(output.output_index())).or_default();
                            data.for_each(|data| entry.append(data));
                        });
                        let frontiers = [frontier1, frontier2];
                        let complete =
                            |time: &Capability<usize>| frontiers.iter().all(|f| !f.less_equal(time));
                        let mut out = out.borrow_mut();
                        for (time, changes) in edge_stash.iter_mut().filter(|(time, _)| complete(time)) {
                            let mut session = output.session(time);
                            ranks.apply_edges(changes, |node, diff| session.give((node, diff)));
                        }
                        edge_stash.retain(|_time, changes| !changes.is_empty());
                        for (time, changes) in rank_stash.iter_mut().filter(|(time, _)| complete(time)) {
                            let mut session = output.session(time);
                            ranks.apply_ranks(changes, **time, &mut out, |node, diff| {
                                session.give((node, diff))
                            });
                        }
                        rank_stash.retain(|_time, changes| !changes.is_empty());
                    }
                },
            )
            .probe_with(&probe)
            .connect_loop(handle);
    });
    for round in 0..rounds {
        for change in edge_changes(round, edges, changes, nodes, index, peers) {
            input.send(change);
        }
        input.advance_to(round as usize + 1);
        worker.step_while(|| probe.less_than(input.time()));
    }
    summary
}
