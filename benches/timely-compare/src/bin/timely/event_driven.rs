//! Many small dataflows (an input, a region of `length` maps, a probe); round `r` feeds
//! dataflow `r % dataflows` (one record if `record`) and steps until it has caught up, so
//! each step should only touch the dataflow with work.

use crate::{Shared, Worker};
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::{Enter, Input, Inspect, Leave, Probe};
use timely_compare::add;

pub fn run(worker: &mut Worker, dataflows: u64, length: u64, rounds: u64, record: bool) -> Shared {
    let summary = Shared::default();
    let mut inputs = Vec::new();
    let mut probes = Vec::new();
    for _ in 0..dataflows {
        let out = summary.clone();
        worker.dataflow::<usize, _, _>(|scope| {
            let (input, stream) = scope.new_input::<Vec<()>>();
            let stream = scope.region(|inner| {
                let mut stream = stream.enter(inner);
                for _ in 0..length {
                    stream = stream.map(|x| x);
                }
                stream.leave(scope)
            });
            let (probe, _stream) = stream
                .inspect_batch(move |time, records: &Vec<()>| {
                    let mut out = out.borrow_mut();
                    add(&mut out, "records", records.len() as u64);
                    add(&mut out, "time_sum", (*time * records.len()) as u64);
                })
                .probe();
            inputs.push(input);
            probes.push(probe);
        });
    }
    for round in 0..rounds as usize {
        let dataflow = round % dataflows as usize;
        if record {
            inputs[dataflow].send(());
        }
        inputs[dataflow].advance_to(round);
        while probes[dataflow].less_than(&round) {
            worker.step();
        }
    }
    summary
}
