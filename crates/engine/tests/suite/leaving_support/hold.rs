//! A dataflow that keeps a leaving worker in its leave until other workers built a later
//! dataflow, so that their builds fall inside the leave. Shared by the engine's and
//! Megaphone's tests of dataflows built during a leave.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use timely_engine::Worker;

/// Builds a dataflow whose source holds its capability on a worker that will leave
/// (`leaver`) until `built` reaches `builders`; elsewhere it lets it go at once.
pub fn hold_leaver(worker: &mut Worker, leaver: bool, built: &Arc<AtomicUsize>, builders: usize) {
    let built = built.clone();
    worker.dataflow::<u64, _>(|scope| {
        scope.source::<u64, _, _>("Hold", move |capability, info| {
            let mut held = Some(capability);
            move |_output| {
                if !leaver || built.load(Ordering::SeqCst) == builders {
                    held = None;
                } else if held.is_some() {
                    info.activator.activate();
                }
            }
        });
    });
}
