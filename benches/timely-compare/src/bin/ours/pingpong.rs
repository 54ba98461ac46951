//! Records go round a loop, each round through an exchange and a `+1`, until their time
//! reaches `iterations`; the summary counts and sums the records that leave.

use crate::Shared;
use timely_compare::add;
use timely_engine::dataflow::operators::ToStream;
use timely_engine::Worker;

pub fn run(worker: &mut Worker, iterations: u64, elements: u64) -> Shared {
    let (index, peers) = (worker.index(), worker.peers());
    let summary = Shared::default();
    let out = summary.clone();
    worker.dataflow::<u64, _>(move |scope| {
        let (handle, cycle) = scope.feedback(1);
        let (done, again) = timely_compare::mine(elements, index, peers)
            .to_stream(scope)
            .concat(&cycle)
            .exchange(|x| *x)
            .map_in_place(|x| *x += 1)
            .branch_when(move |time| *time < iterations);
        again.connect_loop(handle);
        done.inspect_batch(move |_time, records| {
            let mut out = out.borrow_mut();
            add(&mut out, "records", records.len() as u64);
            add(&mut out, "sum", records.iter().sum());
        });
    });
    summary
}
