//! A join and a leave at the same time (`docs/rescaling.md`, "Joins and leaves at the same
//! time"), on loopback: each "process" is a thread of this test running
//! `timely_engine::execute` with its own `Config::Cluster`, one worker each. Every worker feeds
//! records each epoch into a keyed `count_by_key`.
//!
//! - A join asked for while a process is held in its leave is postponed, naming the leaver,
//!   with nothing admitted anywhere (the members run on); asked again once the leaver has gone,
//!   it joins, and the joined worker feeds.
//! - A leave asked for while a joiner is held in its bootstrap is refused with a reason naming
//!   the joiner (`LeaveRefused::waits_for_join`); asked again, it happens once the joiner has
//!   bootstrapped.
//!
//! Either way every (epoch, key) is counted once, on one worker, with the count of a sequential
//! program.

use crate::common;
use crate::common::loopback_cluster as config;
use crate::leaving_support::counted::{build_parts, check_counted, Parts, Seen};
use crate::leaving_support::hold_leaver;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use timely_engine::dataflow::{InputHandle, ProbeHandle};
use timely_engine::Worker;

/// The longest a test may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(120);
/// Epochs every worker that stays runs at least, and epochs after it saw the final membership.
const EPOCHS: u64 = 10;
const AFTER: u64 = 4;

/// The records worker `index` feeds in `epoch`.
fn records(index: usize, epoch: u64) -> Vec<u64> {
    (0..(index as u64 + epoch) % 4 + 2).map(|i| epoch * 10_000 + index as u64 * 100 + i).collect()
}

/// Builds the keyed count (after the hold of `hold_leaver`); returns the input and the probe.
fn build(worker: &mut Worker, seen: &Arc<Mutex<Seen>>) -> (InputHandle<u64, u64>, ProbeHandle<u64>) {
    build_parts(worker, seen, Parts { exchange: false, count: true, broadcast: false })
}

/// Feeds worker `index`'s records of `epoch` and notes them.
fn feed(input: &mut InputHandle<u64, u64>, seen: &Mutex<Seen>, index: usize, epoch: u64) {
    let mine = records(index, epoch);
    seen.lock().unwrap().fed.extend(mine.iter().map(|x| (epoch, *x)));
    mine.into_iter().for_each(|x| input.send(x));
}

/// True once `worker` has seen the final membership: workers 0, 1 and 3 (the joiner).
fn final_membership(worker: &Worker) -> bool {
    worker.state().members() == vec![0, 1, 3]
}

/// Checks that every (epoch, key) fed was counted once with the count of a sequential
/// program, and that the joined worker fed.
fn check(seen: &Seen) {
    check_counted(seen, "the keyed count");
    assert!(seen.fed.iter().any(|&(_, x)| x / 100 % 100 == 3), "the joined worker fed nothing");
}

/// Runs the program of a worker that stays (or joins): feeds each epoch until it has seen the
/// final membership for `AFTER` epochs; `before_bootstrap` runs once its dataflow is built,
/// `each_step` before every step while it waits.
fn stay(
    worker: &mut Worker,
    seen: &Arc<Mutex<Seen>>,
    before_bootstrap: &dyn Fn(),
    each_step: &dyn Fn(&mut Worker),
) {
    let index = worker.index();
    let (mut input, probe) = build(worker, seen);
    before_bootstrap();
    worker.bootstrap();
    let (mut epoch, mut since) = (*input.time(), None);
    while epoch < EPOCHS || since.is_none_or(|since| epoch < since + AFTER) {
        if since.is_none() && final_membership(worker) {
            since = Some(epoch);
        }
        feed(&mut input, seen, index, epoch);
        epoch += 1;
        input.advance_to(epoch);
        while probe.less_than(input.time()) {
            each_step(worker);
            worker.step_or_park(Some(Duration::from_millis(5)));
        }
    }
}

/// Starts process `process` of 3 (`join`: as a joiner through worker 0, told that `gone`
/// left) running `program`.
fn start<F>(
    addresses: &[String],
    process: usize,
    join: bool,
    gone: Vec<usize>,
    program: F,
) -> std::thread::JoinHandle<Result<(), String>>
where
    F: Fn(&mut Worker) + Clone + Send + Sync + 'static,
{
    let mut config = config(addresses, process, 3, 1, join.then_some(0));
    if let timely_communication::Config::Cluster(cluster) = &mut config {
        cluster.gone = gone;
    }
    std::thread::spawn(move || timely_engine::execute(config, program).map(|_| ()).map_err(|e| e.to_string()))
}

#[test]
fn a_join_asked_while_a_process_is_held_in_its_leave_is_postponed_then_joins() {
    let seen = common::within(LIMIT, || {
        let addresses = common::free_addresses(4);
        let seen: Arc<Mutex<Seen>> = Arc::default();
        let release = Arc::new(AtomicUsize::new(0));
        let (noticed, departed) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let program = {
            let (seen, release, noticed, departed) =
                (seen.clone(), release.clone(), noticed.clone(), departed.clone());
            move |worker: &mut Worker| {
                let index = worker.index();
                // Process 2's leave is held until the test releases it.
                hold_leaver(worker, index == 2, &release, 1);
                if index != 2 {
                    let watch = |worker: &mut Worker| {
                        if worker.index() == 0 && !worker.state().members().contains(&2) {
                            noticed.store(true, Ordering::SeqCst);
                        }
                        if worker.index() == 0 && worker.state().rescaling().leaves().departed() == vec![2] {
                            departed.store(true, Ordering::SeqCst);
                        }
                    };
                    return stay(worker, &seen, &|| {}, &watch);
                }
                let (mut input, probe) = build(worker, &seen);
                for epoch in 0..2 {
                    feed(&mut input, &seen, index, epoch);
                    input.advance_to(epoch + 1);
                    worker.step_while(|| probe.less_than(input.time()));
                }
                worker.leave().expect("nothing refuses the leave");
                input.close();
            }
        };
        let mut runs: Vec<_> =
            (0..3).map(|p| start(&addresses, p, false, Vec::new(), program.clone())).collect();
        while !noticed.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let early = start(&addresses, 3, true, Vec::new(), program.clone()).join().expect("joiner thread");
        let refusal = early.expect_err("a join while process 2 leaves is postponed");
        for needed in ["postponed, nothing was admitted", "process(es) 2 is leaving the cluster"] {
            assert!(refusal.contains(needed), "expected {needed:?} in: {refusal}");
        }
        release.store(1, Ordering::SeqCst);
        while !departed.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        // Worker 0 saw the goodbye; process 1 may not have yet, and postpones this join too:
        // asked again, as the launcher does, until no member knows of a leave.
        let joiner = std::thread::spawn(move || loop {
            match start(&addresses, 3, true, vec![2], program.clone()).join().expect("joiner thread") {
                Err(error) if error.contains("postponed, nothing was admitted") => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                other => return other,
            }
        });
        runs.push(joiner);
        for (process, run) in runs.into_iter().enumerate() {
            run.join().expect("process thread").unwrap_or_else(|error| panic!("process {process}: {error}"));
        }
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        seen
    });
    check(&seen);
}

#[test]
fn a_leave_asked_while_a_joiner_is_held_in_its_bootstrap_waits_for_it() {
    let (seen, refusal) = common::within(LIMIT, || {
        let addresses = common::free_addresses(4);
        let seen: Arc<Mutex<Seen>> = Arc::default();
        let refusal: Arc<Mutex<Option<String>>> = Arc::default();
        let refused = Arc::new(AtomicBool::new(false));
        let program = {
            let (seen, refusal, refused) = (seen.clone(), refusal.clone(), refused.clone());
            move |worker: &mut Worker| {
                let index = worker.index();
                if index == 3 {
                    // The joiner holds its bootstrap (it runs nothing) until the leave was refused.
                    let wait = || {
                        let deadline = Instant::now() + Duration::from_secs(60);
                        while !refused.load(Ordering::SeqCst) {
                            assert!(Instant::now() < deadline, "process 2 never asked to leave");
                            std::thread::sleep(Duration::from_millis(5));
                        }
                    };
                    return stay(worker, &seen, &wait, &|_| {});
                }
                if index != 2 {
                    return stay(worker, &seen, &|| {}, &|_| {});
                }
                let (mut input, probe) = build(worker, &seen);
                let mut epoch = 0;
                // Feeds until the join reached this worker, then asks to leave until it may.
                let left = loop {
                    feed(&mut input, &seen, index, epoch);
                    epoch += 1;
                    input.advance_to(epoch);
                    let mut asked = false;
                    while probe.less_than(input.time()) {
                        if worker.peers() == 4 {
                            match worker.leave() {
                                Ok(()) => {
                                    asked = true;
                                    break;
                                }
                                Err(refused_now) => {
                                    assert!(refused_now.waits_for_join(), "{refused_now}");
                                    refusal.lock().unwrap().get_or_insert(refused_now.to_string());
                                    refused.store(true, Ordering::SeqCst);
                                }
                            }
                        }
                        worker.step_or_park(Some(Duration::from_millis(5)));
                    }
                    if asked {
                        break epoch;
                    }
                };
                assert!(left >= 1 && worker.is_leaving());
                input.close();
            }
        };
        let mut runs: Vec<_> =
            (0..3).map(|p| start(&addresses, p, false, Vec::new(), program.clone())).collect();
        std::thread::sleep(Duration::from_millis(50));
        runs.push(start(&addresses, 3, true, Vec::new(), program));
        for (process, run) in runs.into_iter().enumerate() {
            run.join().expect("process thread").unwrap_or_else(|error| panic!("process {process}: {error}"));
        }
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        let refusal = refusal.lock().unwrap().take();
        (seen, refusal)
    });
    let refusal = refusal.expect("the leave was refused while process 3 joined");
    for needed in ["a join is in progress (process(es) 3", "ask again after the join"] {
        assert!(refusal.contains(needed), "expected {needed:?} in: {refusal}");
    }
    check(&seen);
}
