//! What a leave refuses, as typed errors: a leaver that told the others it builds no more
//! dataflows cannot build one (`DataflowRefused`, nothing built), and the last process present
//! cannot leave (`LeaveRefused::LastProcess`, nothing sent). The run goes on exactly after
//! both refusals.

use crate::common;
use crate::leaving_support::counted::{build_counted, check_delivered_and_counted, Seen};
use crate::leaving_support::run_processes;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use timely_engine::rescale::leave::{DataflowRefused, LeaveRefused};
use timely_engine::Worker;

/// The longest a test may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(120);

/// What the two processes of the run were told when they asked.
#[derive(Default)]
struct Refusals {
    /// The leaver's `try_dataflow` once its `Left` was sent, and whether its closure ran.
    build: Option<(Result<(), DataflowRefused>, bool)>,
    /// The stayer's `leave()` once the leaver had gone.
    leave: Option<Result<(), LeaveRefused>>,
}

#[test]
fn a_leaver_that_said_it_builds_no_more_and_the_last_process_are_refused() {
    let (refusals, seen) = common::within(LIMIT, || {
        let addresses = common::free_addresses(2);
        let seen: Arc<Mutex<Seen>> = Arc::default();
        let refusals: Arc<Mutex<Refusals>> = Arc::default();
        let program = {
            let (seen, refusals) = (seen.clone(), refusals.clone());
            move |worker: &mut Worker| {
                let (mut input, probe) = build_counted(worker, &seen);
                for epoch in 0..6u64 {
                    if worker.index() == 1 && epoch == 2 {
                        worker.leave().expect("process 0 stays");
                        input.close();
                        // The runtime would say so once `main` returned: the `Left` goes out
                        // at the next step, and from then on nothing is built.
                        worker.program_returned();
                        let deadline = Instant::now() + Duration::from_secs(30);
                        while !worker.state().rescaling().leaves().has_left() {
                            assert!(Instant::now() < deadline, "the leaver never sent Left");
                            worker.step();
                        }
                        let mut ran = false;
                        let built = worker.try_dataflow::<u64, _>("late", |_| ran = true);
                        refusals.lock().unwrap().build = Some((built, ran));
                        return;
                    }
                    let mine: Vec<u64> =
                        (0..4).map(|i| epoch * 1_000 + worker.index() as u64 * 10 + i).collect();
                    seen.lock().unwrap().fed.extend(mine.iter().map(|&x| (epoch, x)));
                    mine.into_iter().for_each(|x| input.send(x));
                    input.advance_to(epoch + 1);
                    worker.step_while(|| probe.less_than(input.time()));
                }
                let deadline = Instant::now() + Duration::from_secs(30);
                while worker.state().rescaling().leaves().departed() != [1] {
                    assert!(Instant::now() < deadline, "the leaver did not go");
                    worker.step();
                }
                refusals.lock().unwrap().leave = Some(worker.leave());
                input.close();
                worker.step_while(|| !probe.done());
            }
        };
        run_processes(&addresses, 2, 1, program);
        let refusals = std::mem::take(&mut *refusals.lock().unwrap());
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        (refusals, seen)
    });
    assert_eq!(refusals.build, Some((Err(DataflowRefused), false)), "the leaver builds nothing after Left");
    let refused = refusals.leave.expect("the stayer asked").expect_err("the last process cannot leave");
    assert_eq!(refused, LeaveRefused::LastProcess);
    assert!(!refused.waits_for_join(), "asking again would not help");
    assert!(refused.to_string().contains("no other process is present"), "{refused}");
    check_delivered_and_counted(&seen, "a leave with refusals");
}
