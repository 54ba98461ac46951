//! A symmetric hash join of two inputs of `(key, value)` pairs, fed in batches of `batch`
//! records per worker; the summary counts the joined pairs and sums a hash of each.

use crate::{Shared, Worker};
use std::collections::HashMap;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};
use timely_compare::{mine, pair};

pub fn run(worker: &mut Worker, keys: u64, values: u64, batch: u64) -> Shared {
    let (index, peers) = (worker.index(), worker.peers());
    let summary = Shared::default();
    let out = summary.clone();
    let mut input1 = InputHandle::new();
    let mut input2 = InputHandle::new();
    let probe = ProbeHandle::new();
    worker.dataflow::<u64, _, _>(|scope| {
        let stream1 = scope.input_from(&mut input1);
        let stream2 = scope.input_from(&mut input2);
        let by_key = |pair: &(u64, u64)| pair.0;
        stream1
            .binary(
                stream2,
                Exchange::new(by_key),
                Exchange::new(by_key),
                "HashJoin",
                |_capability, _info| {
                    let mut map1 = HashMap::<u64, Vec<u64>>::new();
                    let mut map2 = HashMap::<u64, Vec<u64>>::new();
                    move |input1, input2, output| {
                        input1.for_each_time(|time, data| {
                            let mut session = output.session(&time);
                            for (key, value1) in data.flat_map(|d| d.drain(..)) {
                                timely_compare::join_one(key, value1, &mut map1, &map2, |other| {
                                    session.give((value1, other))
                                });
                            }
                        });
                        input2.for_each_time(|time, data| {
                            let mut session = output.session(&time);
                            for (key, value2) in data.flat_map(|d| d.drain(..)) {
                                timely_compare::join_one(key, value2, &mut map2, &map1, |other| {
                                    session.give((other, value2))
                                });
                            }
                        });
                    }
                },
            )
            .inspect_batch(move |_time, pairs: &Vec<(u64, u64)>| {
                timely_compare::count_pairs(&mut out.borrow_mut(), pairs);
            })
            .probe_with(&probe);
    });
    let indices: Vec<u64> = mine(values, index, peers).collect();
    for chunk in indices.chunks(batch.max(1) as usize) {
        for &i in chunk {
            input1.send(pair(i, 0, keys));
            input2.send(pair(i, 1, keys));
        }
        let next = input1.time() + 1;
        input1.advance_to(next);
        input2.advance_to(next);
        worker.step_while(|| probe.less_than(input1.time()));
    }
    summary
}
