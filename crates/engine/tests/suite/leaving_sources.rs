//! Sources on a leaving process (`docs/rescaling.md`, "A leaver's sources"), on loopback
//! clusters: every worker builds a `source` that gives numbered records every epoch, forever,
//! into a plain `exchange`. The leaving process's sources never stop and never look at the
//! leave: they give through `output.session` (which drops records once the source is
//! released) or keep trying `output.try_session` (which then says `Released`), and its
//! program does not return at the leave: it steps until its worker is done. The leave must
//! complete (before, the source's capability held it forever), and every record a source gave
//! (as it reports it) must reach exactly one worker, once. A process of two workers leaves as
//! a whole, so the leave that one of them asks for releases the other's source wherever it
//! is, even before it gave anything (`Others::Late`): a released source gives no more epochs,
//! so the program of that other worker must not wait for them.

use crate::common;
use crate::leaving_support::run_processes;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use timely_engine::dataflow::operators::CapabilityError;
use timely_engine::dataflow::ProbeHandle;
use timely_engine::Worker;

/// The longest a test may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(120);

/// The longest the leave may take once asked for, or a stayer may wait for it.
const LEAVE_LIMIT: Duration = Duration::from_secs(60);

/// Records a source gives per epoch.
const PER_EPOCH: u64 = 3;

/// How the leaving process's sources give their records.
#[derive(Clone, Copy, Debug)]
enum Giving {
    /// Through `output.session`, every run. They note a record as given only while their
    /// capability is not released: a session drops what it is given once it is.
    Session,
    /// Through `output.try_session`, trying again every run after it says `Released`.
    TrySession,
}

/// When the leaving process's workers other than the one that asks for the leave start.
#[derive(Clone, Copy, Debug)]
enum Others {
    /// With the one that asks: their sources give epochs alongside its source's.
    Together,
    /// Only once the leave was asked for (and sent): their sources are released at their first
    /// run, before they gave anything, while the one that asked goes on to its leave.
    Late,
}

/// A record: the worker whose source gave it, its epoch, its number in the epoch.
type Record = (usize, u64, u64);

/// What the workers of one run did.
#[derive(Default)]
struct Seen {
    /// Every record a source gave.
    given: Vec<Record>,
    /// Every record received after the exchange, with the worker that received it.
    received: Vec<(usize, Record)>,
    /// The workers whose source ran with its capability released.
    released: Vec<usize>,
}

/// Runs `processes` processes of `threads` workers; process `leaver` leaves once its first
/// worker's source gave `leave_at` epochs.
fn run(
    processes: usize,
    threads: usize,
    leaver: usize,
    leave_at: u64,
    giving: Giving,
    others: Others,
) -> Seen {
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let asked = Arc::new(AtomicBool::new(false));
    let shared = seen.clone();
    let program = {
        let seen = shared;
        move |worker: &mut Worker| {
            let index = worker.index();
            let leaves = index / threads == leaver;
            let stop = Rc::new(Cell::new(false));
            let epochs = Rc::new(Cell::new(0u64));
            let probe = ProbeHandle::new();
            let (given, received) = (seen.clone(), seen.clone());
            let (stop_source, epochs_source) = (stop.clone(), epochs.clone());
            worker.dataflow::<u64, _>(|scope| {
                scope
                    .source("Ticks", move |capability, info| {
                        let mut held = Some(capability);
                        move |output| {
                            let Some(capability) = held.as_mut() else { return };
                            if stop_source.get() {
                                held = None;
                                return;
                            }
                            let epoch = *capability.time();
                            let records: Vec<Record> = (0..PER_EPOCH).map(|i| (index, epoch, i)).collect();
                            let accepted = match giving {
                                Giving::Session => {
                                    let accepted = !capability.is_released();
                                    output.session(capability).give_iterator(records.iter().copied());
                                    accepted
                                }
                                Giving::TrySession => match output.try_session(capability) {
                                    Ok(mut session) => {
                                        session.give_iterator(records.iter().copied());
                                        true
                                    }
                                    Err(CapabilityError::Released) => false,
                                    Err(error) => panic!("worker {index}: {error}"),
                                },
                            };
                            let mut seen = given.lock().unwrap();
                            match accepted {
                                true => seen.given.extend(records),
                                false => seen.released.push(index),
                            }
                            drop(seen);
                            capability.downgrade(&(epoch + 1));
                            epochs_source.set(epoch + 1);
                            info.activator.activate();
                        }
                    })
                    .exchange(|(worker, epoch, i): &Record| {
                        (*worker as u64 * 7919 + epoch * 31 + i).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7
                    })
                    .inspect(move |record| received.lock().unwrap().received.push((index, *record)))
                    .probe_with(&probe);
            });
            // Paces the sources (one epoch a run, one run a step).
            let pace = || std::thread::sleep(Duration::from_micros(200));
            let asks = index.is_multiple_of(threads);
            if leaves && !asks && matches!(others, Others::Late) {
                let deadline = Instant::now() + LEAVE_LIMIT;
                while !asked.load(Ordering::SeqCst) {
                    assert!(Instant::now() < deadline, "worker {index}: the leave was never asked for");
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            if leaves {
                // Until its source gave `leave_at` epochs, or its process's leave (which
                // another worker of it may start first) released the source: a released source
                // gives no more epochs, so waiting for them would never return and the process
                // would never say goodbye.
                let deadline = Instant::now() + LEAVE_LIMIT;
                while epochs.get() < leave_at && !worker.is_leaving() {
                    assert!(
                        Instant::now() < deadline,
                        "worker {index}: its source did not reach epoch {leave_at}"
                    );
                    worker.step();
                    pace();
                }
                if asks {
                    worker.leave().expect("nothing refuses the leave");
                }
                // The program does not stop at the leave: it steps until its worker is done.
                let deadline = Instant::now() + LEAVE_LIMIT;
                while worker.step() {
                    assert!(Instant::now() < deadline, "worker {index}: the leave did not complete");
                    // The notice has left with this step: late workers may start.
                    asked.store(true, Ordering::SeqCst);
                    pace();
                }
                assert!(worker.state().rescaling().leaves().is_drained());
                return;
            }
            let gone: Vec<usize> = (leaver * threads..(leaver + 1) * threads).collect();
            let deadline = Instant::now() + LEAVE_LIMIT;
            while worker.state().rescaling().leaves().departed() != gone {
                assert!(Instant::now() < deadline, "worker {index}: the leaver did not go");
                worker.step();
                pace();
            }
            // The leaver went while this worker's source was still giving; a few more epochs.
            let until = epochs.get() + 5;
            while epochs.get() < until {
                worker.step();
                pace();
            }
            stop.set(true);
            worker.step_while(|| !probe.done());
        }
    };
    run_processes(&common::free_addresses(processes), processes, threads, program);
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    seen
}

/// Checks that every record given was received once, and nothing else; that the leaver's
/// sources gave records before the leave and ran once released.
fn check(seen: &Seen, threads: usize, leaver: usize, leave_at: u64) {
    let mut received: BTreeMap<Record, Vec<usize>> = BTreeMap::new();
    for &(worker, record) in &seen.received {
        received.entry(record).or_default().push(worker);
    }
    let twice: Vec<_> = received.iter().filter(|(_, workers)| workers.len() > 1).take(5).collect();
    assert!(twice.is_empty(), "records received more than once: {twice:?}");
    let mut given: Vec<Record> = seen.given.clone();
    given.sort_unstable();
    let before = given.len();
    given.dedup();
    assert_eq!(given.len(), before, "a source gave a record twice");
    let got: Vec<Record> = received.keys().copied().collect();
    let missing: Vec<_> = given.iter().filter(|r| !received.contains_key(r)).take(5).collect();
    assert!(missing.is_empty(), "records given and never received (of {}): {missing:?}", given.len());
    assert_eq!(got, given, "records received that no source reports as given");
    let leavers: Vec<usize> = (leaver * threads..(leaver + 1) * threads).collect();
    let first = leaver * threads;
    let gave = seen.given.iter().filter(|(worker, _, _)| *worker == first).count() as u64;
    assert!(gave >= leave_at * PER_EPOCH, "the leaver's source gave {gave} records before its leave");
    for worker in leavers {
        assert!(seen.released.contains(&worker), "worker {worker}'s source never saw its release");
    }
    let stayers_released: Vec<_> = seen.released.iter().filter(|w| **w / threads != leaver).collect();
    assert!(stayers_released.is_empty(), "stayers' sources released: {stayers_released:?}");
}

/// Runs one case within [`LIMIT`] and checks it.
fn case(processes: usize, threads: usize, leaver: usize, leave_at: u64, giving: Giving, others: Others) {
    let seen = common::within(LIMIT, move || run(processes, threads, leaver, leave_at, giving, others));
    check(&seen, threads, leaver, leave_at);
}

#[test]
fn a_source_giving_forever_through_session_leaves_with_its_process() {
    case(2, 1, 1, 20, Giving::Session, Others::Together);
}

#[test]
fn a_source_trying_forever_leaves_with_process_zero() {
    case(3, 1, 0, 15, Giving::TrySession, Others::Together);
}

#[test]
fn sources_of_two_workers_leave_with_their_process() {
    case(2, 2, 0, 25, Giving::TrySession, Others::Together);
}

#[test]
fn sources_of_a_middle_process_leave_while_the_others_give() {
    case(3, 2, 1, 10, Giving::Session, Others::Together);
}

#[test]
fn sources_released_before_they_gave_leave_with_their_process() {
    case(3, 2, 1, 10, Giving::TrySession, Others::Late);
}
