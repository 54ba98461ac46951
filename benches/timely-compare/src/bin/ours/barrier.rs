//! A loop with no records: one operator asks to be notified at time 0 and, at each
//! notification, at the next time, until `iterations`. Only progress tracking moves.

use crate::Shared;
use timely_compare::add;
use timely_engine::dataflow::Pipeline;
use timely_engine::Worker;

pub fn run(worker: &mut Worker, iterations: u64) -> Shared {
    let summary = Shared::default();
    let out = summary.clone();
    let iterations = iterations as usize;
    worker.dataflow::<usize, _>(move |scope| {
        let (handle, stream) = scope.feedback::<()>(1);
        stream
            .unary_notify_from(Pipeline, "Barrier", [0], move |_input, _output: &mut _, notificator| {
                while let Some((capability, _count)) = notificator.next() {
                    let mut out = out.borrow_mut();
                    add(&mut out, "notifications", 1);
                    add(&mut out, "time_sum", *capability.time() as u64);
                    let next = capability.time() + 1;
                    if next < iterations {
                        notificator.notify_at(capability.delayed(&next));
                    }
                }
            })
            .connect_loop(handle);
    });
    summary
}
