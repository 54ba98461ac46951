//! What a leaving worker does in the tests of dataflows built around a leave: a dataflow that
//! keeps it in its leave until other workers built a later dataflow, so that their builds fall
//! inside the leave; or a program that leaves without building anything. Shared by the
//! engine's and Megaphone's tests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use timely_engine::dataflow::operators::OperatorBuilder;
use timely_engine::Worker;

/// Builds a dataflow whose operator holds its capability on a worker that will leave
/// (`leaver`) until `built` reaches `builders`; elsewhere it lets it go at once. It is built
/// with the `OperatorBuilder`, not as a `source`: a source is released when its worker
/// leaves, and this one must keep the leaver in its leave.
pub fn hold_leaver(worker: &mut Worker, leaver: bool, built: &Arc<AtomicUsize>, builders: usize) {
    let built = built.clone();
    worker.dataflow::<u64, _>(|scope| {
        let mut builder = OperatorBuilder::new("Hold", scope);
        let (_output, _stream) = builder.new_output::<u64>();
        let activator = builder.info().activator.clone();
        builder.build(move |capability| {
            let mut held = Some(capability);
            move |_frontiers| {
                if !leaver || built.load(Ordering::SeqCst) == builders {
                    held = None;
                } else if held.is_some() {
                    activator.activate();
                }
                false
            }
        });
    });
}

/// The program of a worker of the leaving process that never builds a dataflow: it steps
/// until `ready` reaches `stayers` (the other workers built theirs), asks for the leave if it
/// is the process's first worker (`first`), and returns.
pub fn leave_without_building(worker: &mut Worker, first: bool, ready: &AtomicUsize, stayers: usize) {
    while ready.load(Ordering::SeqCst) < stayers {
        worker.step();
        std::thread::sleep(Duration::from_millis(1));
    }
    if first {
        worker.leave().expect("nothing refuses the leave");
    }
    // The other worker of the process returns at once, maybe before it hears of the leave:
    // it still takes part in it (`timely_engine::ReturnedWorkers`).
}

/// Like [`leave_without_building`], but the program does not return during its leave: it goes
/// on stepping, as a program that ignores `is_leaving` does, until its worker says it has
/// nothing more to do (its leave is complete), and returns only then.
pub fn leave_without_building_stepping_on(
    worker: &mut Worker,
    first: bool,
    ready: &AtomicUsize,
    stayers: usize,
) {
    leave_without_building(worker, first, ready, stayers);
    // The other worker of the process may hear of the leave a few steps later.
    while !worker.is_leaving() {
        worker.step();
        std::thread::sleep(Duration::from_millis(1));
    }
    while worker.step() {
        std::thread::sleep(Duration::from_millis(1));
    }
}
