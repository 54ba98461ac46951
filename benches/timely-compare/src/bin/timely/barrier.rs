//! A loop with no records: one operator asks to be notified at time 0 and, at each
//! notification, at the next time, until `iterations`. Only progress tracking moves.

use crate::{Shared, Worker};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::{ConnectLoop, Feedback};
use timely_compare::add;

pub fn run(worker: &mut Worker, iterations: u64) -> Shared {
    let summary = Shared::default();
    let out = summary.clone();
    let iterations = iterations as usize;
    worker.dataflow::<usize, _, _>(move |scope| {
        let (handle, stream) = scope.feedback::<Vec<()>>(1);
        stream
            .unary_notify::<CapacityContainerBuilder<Vec<()>>, _, _>(
                Pipeline,
                "Barrier",
                vec![0],
                move |_input, _output, notificator| {
                    while let Some((capability, _count)) = notificator.next() {
                        let mut out = out.borrow_mut();
                        add(&mut out, "notifications", 1);
                        add(&mut out, "time_sum", *capability as u64);
                        let next = *capability + 1;
                        if next < iterations {
                            notificator.notify_at(capability.delayed(&next));
                        }
                    }
                },
            )
            .connect_loop(handle);
    });
    summary
}
