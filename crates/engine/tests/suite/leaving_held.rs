//! An operator with inputs that keeps a capability on a leaving worker (`docs/rescaling.md`,
//! "A leaver's operators with inputs"): it is not released, so the leave waits for it, but
//! not silently: once every other worker sealed the leaver, the operator that holds it is
//! named (stderr, and a trace activity that ends when it drops its capability). Here a
//! `unary` operator retains the capability of its first record and keeps it until the
//! leaver's program sees the activity naming it; then it drops it and the leave completes.

use crate::common;
use crate::leaving_support::run_processes;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use timely_engine::dataflow::{InputHandle, Pipeline};
use timely_engine::logging::{Event, EventClasses};
use timely_engine::rescale::held_report::{HELD, REPORT_AFTER};
use timely_engine::Worker;

/// The longest the test may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(120);

/// The leaver's activities about operators holding its leave: (name, start).
type Held = Arc<Mutex<Vec<(String, bool)>>>;

#[test]
fn a_leave_held_by_a_retained_capability_names_the_operator_and_completes_once_dropped() {
    let held: Held = Arc::default();
    let waited = Arc::new(Mutex::new(None::<Duration>));
    let (held_seen, waited_seen) = (held.clone(), waited.clone());
    common::within(LIMIT, move || {
        let addresses = common::free_addresses(2);
        let program = move |worker: &mut Worker| {
            let leaves = worker.index() == 1;
            if leaves {
                let held = held.clone();
                worker.install_logger(EventClasses::all(), move |_, events, _| {
                    for event in events.drain(..) {
                        if let Event::Activity { name, start } = event.event {
                            if name.starts_with(HELD) {
                                held.lock().unwrap().push((name, start));
                            }
                        }
                    }
                });
            }
            let drop_it = Rc::new(Cell::new(false));
            let retained = Rc::new(RefCell::new(None));
            let mut input = InputHandle::<u64, u64>::new();
            let (drop_op, retained_op) = (drop_it.clone(), retained.clone());
            worker.dataflow(|scope| {
                scope.input_from(&mut input).unary(Pipeline, "Ticker", move |_capability, info| {
                    move |input, output| {
                        input.for_each(|capability, data| {
                            if leaves && retained_op.borrow().is_none() {
                                *retained_op.borrow_mut() = Some(capability.retain());
                            }
                            output.session(&capability).give_vec(data);
                        });
                        if drop_op.get() {
                            retained_op.borrow_mut().take();
                        } else if retained_op.borrow().is_some() {
                            info.activator.activate();
                        }
                    }
                });
            });
            input.send(1);
            input.advance_to(1);
            for _ in 0..20 {
                worker.step();
            }
            if leaves {
                worker.leave().expect("nothing refuses the leave");
                let asked = Instant::now();
                let deadline = asked + Duration::from_secs(60);
                while held.lock().unwrap().is_empty() {
                    assert!(Instant::now() < deadline, "the operator holding the leave was never named");
                    assert!(worker.step(), "the leave completed while the operator held a capability");
                    std::thread::sleep(Duration::from_millis(5));
                }
                *waited.lock().unwrap() = Some(asked.elapsed());
                drop_it.set(true);
                while worker.step() {
                    assert!(
                        Instant::now() < deadline,
                        "the leave did not complete once the capability was dropped"
                    );
                }
                return;
            }
            let deadline = Instant::now() + Duration::from_secs(60);
            while worker.state().rescaling().leaves().departed() != [1] {
                assert!(Instant::now() < deadline, "the leaver did not go");
                worker.step();
                std::thread::sleep(Duration::from_millis(1));
            }
            input.close();
            while worker.step() {}
        };
        run_processes(&addresses, 2, 1, program);
    });
    let held = held_seen.lock().unwrap().clone();
    assert_eq!(held.len(), 2, "one activity, started and stopped: {held:?}");
    assert!(held[0].1 && !held[1].1 && held[0].0 == held[1].0, "{held:?}");
    assert!(held[0].0.contains("'Ticker' at times [0]"), "the activity names the operator: {held:?}");
    let waited = waited_seen.lock().unwrap().expect("the leaver waited");
    assert!(waited >= REPORT_AFTER, "named after {waited:?}, before {REPORT_AFTER:?}");
}
