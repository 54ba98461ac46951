//! Processes joining a running cluster (`docs/rescaling.md`), on loopback: each "process" is a
//! thread of this test running `timely_engine::execute` with its own `Config::Cluster`; the
//! joining one has `join: Some(server)`.

use crate::common;

/// The configuration of process `process` of a cluster that starts with `initial` processes
/// (`join`: this process joins, served by that worker).
use crate::common::loopback_cluster as config;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use timely_engine::dataflow::{InputHandle, Pipeline, ProbeHandle};
use timely_engine::{Product, Worker};

/// The longest a test may take before it counts as hung.
const LIMIT: Duration = Duration::from_secs(120);

/// Steps `worker` until the cluster has `peers` workers.
fn await_peers(worker: &mut Worker, peers: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while worker.peers() < peers {
        assert!(Instant::now() < deadline, "worker {}: no join within 30 s", worker.index());
        worker.step();
    }
}

/// Runs the hello dataflow (input -> exchange -> inspect -> probe) for `rounds` rounds on
/// `initial` processes of `threads` workers, where process `initial + k` joins after round
/// `joins[k]` (served by worker `k`); returns which worker saw each record.
fn hello_with_joins(initial: usize, threads: usize, rounds: u64, joins: &[u64]) -> Vec<(usize, u64)> {
    let processes = initial + joins.len();
    let addresses = common::free_addresses(processes);
    let seen: Arc<Mutex<Vec<(usize, u64)>>> = Arc::default();
    let reached = Arc::new(AtomicUsize::new(0));
    let joins = Arc::new(joins.to_vec());
    let program = {
        let (seen, reached, joins) = (seen.clone(), reached.clone(), joins.clone());
        move |worker: &mut Worker| {
            let index = worker.index();
            let mut input = InputHandle::new();
            let probe = ProbeHandle::new();
            let log = seen.clone();
            worker.dataflow(|scope| {
                scope
                    .input_from(&mut input)
                    .exchange(|x: &u64| *x)
                    .inspect(move |x| log.lock().unwrap().push((index, *x)))
                    .probe_with(&probe);
            });
            if worker.bootstrap() {
                return;
            }
            for round in 0..rounds {
                if index == 0 {
                    input.send(round);
                }
                input.advance_to(round + 1);
                worker.step_while(|| probe.less_than(input.time()));
                if let Some(k) = joins.iter().position(|&after| after == round) {
                    reached.fetch_add(1, Ordering::SeqCst);
                    await_peers(worker, (initial + k + 1) * threads);
                }
            }
        }
    };
    let mut runs: Vec<_> = (0..initial)
        .map(|process| {
            let (config, program) = (config(&addresses, process, initial, threads, None), program.clone());
            std::thread::spawn(move || timely_engine::execute(config, program))
        })
        .collect();
    for k in 0..joins.len() {
        // Every initial worker (joined ones only bootstrap and step) waits at the join's round.
        let deadline = Instant::now() + Duration::from_secs(30);
        while reached.load(Ordering::SeqCst) < initial * threads * (k + 1) {
            assert!(Instant::now() < deadline, "the cluster did not reach join {k}");
            std::thread::sleep(Duration::from_millis(5));
        }
        let config = config(&addresses, initial + k, initial, threads, Some(k));
        let program = program.clone();
        runs.push(std::thread::spawn(move || timely_engine::execute(config, program)));
    }
    // Every process's outcome, so that a failure names its cause (a joiner that failed first
    // makes the others report it lost).
    let outcomes: Vec<String> = runs
        .into_iter()
        .enumerate()
        .filter_map(|(process, run)| match run.join().expect("process thread") {
            Ok(_) => None,
            Err(error) => Some(format!("process {process}: {error:?}")),
        })
        .collect();
    assert!(outcomes.is_empty(), "process runs failed:\n{}", outcomes.join("\n"));
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by_key(|&(_, x)| x);
    seen
}

/// Runs `program` on 2 processes of `threads` workers; once each of their workers has counted
/// itself in `ready`, a third process joins, served by worker `server`. Returns when all three
/// processes have ended.
fn two_processes_then_a_join<F>(program: F, threads: usize, ready: &Arc<AtomicUsize>, server: usize)
where
    F: Fn(&mut Worker) + Clone + Send + Sync + 'static,
{
    let addresses = common::free_addresses(3);
    let mut runs: Vec<_> = (0..2)
        .map(|process| {
            let (config, program) = (config(&addresses, process, 2, threads, None), program.clone());
            std::thread::spawn(move || timely_engine::execute(config, program))
        })
        .collect();
    common::within(LIMIT, {
        let ready = ready.clone();
        move || {
            while ready.load(Ordering::SeqCst) < 2 * threads {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    let config = config(&addresses, 2, 2, threads, Some(server));
    runs.push(std::thread::spawn(move || timely_engine::execute(config, program)));
    for run in runs {
        run.join().expect("process thread").expect("process run");
    }
}

/// The worker that must see record `x`: `x mod peers`, with the peers after the joins whose
/// round came before `x` was sent.
fn owner(x: u64, initial: usize, threads: usize, joins: &[u64]) -> usize {
    let processes = initial + joins.iter().filter(|&&after| after < x).count();
    (x % (processes * threads) as u64) as usize
}

/// The seed's section 4.1.1: records go to `x mod 2` before the join, to `x mod 3` after it;
/// the joined worker sees its share, and every record is seen exactly once.
#[test]
fn a_third_process_joins_a_running_hello() {
    let seen = common::within(LIMIT, || hello_with_joins(2, 1, 10, &[4]));
    let expected: Vec<(usize, u64)> = (0..10u64).map(|x| (owner(x, 2, 1, &[4]), x)).collect();
    assert_eq!(seen, expected);
    assert!(seen.iter().any(|&(worker, _)| worker == 2), "the joined worker saw nothing");
}

/// 2x2 workers, then two joins of 2 workers each (2 -> 3 -> 4 processes), served by
/// different workers.
#[test]
fn successive_joins_of_processes_with_two_workers() {
    let joins = [3, 7];
    let seen = common::within(LIMIT, move || hello_with_joins(2, 2, 12, &joins));
    let expected: Vec<(usize, u64)> = (0..12u64).map(|x| (owner(x, 2, 2, &joins), x)).collect();
    assert_eq!(seen, expected);
}

/// What the dataflows of [`two_dataflows_with_a_loop_broadcasts_and_notifications`] record.
#[derive(Default)]
struct Observed {
    /// `(worker, record)` leaving the loop of the first dataflow.
    looped: Vec<(usize, u64)>,
    /// `(worker, time, records)` per notification of the second dataflow.
    notified: Vec<(usize, u64, usize)>,
    /// `(time, records)` sent to the second dataflow, by every worker.
    sent: Vec<(u64, usize)>,
}

/// Two dataflows: records go around a loop (`x % 3` times, exchanged each time) in the first;
/// the second broadcasts records and counts them per time at notifications. Process 2 joins
/// after round 3 and feeds both inputs itself. Every record leaves the loop once, and every
/// worker, the joined one from its first notification on, counts every record of a time, so
/// no notification came early.
#[test]
fn two_dataflows_with_a_loop_broadcasts_and_notifications() {
    const ROUNDS: u64 = 10;
    let observed: Arc<Mutex<Observed>> = Arc::default();
    let reached = Arc::new(AtomicUsize::new(0));
    let program = {
        let (observed, reached) = (observed.clone(), reached.clone());
        move |worker: &mut Worker| {
            let index = worker.index();
            let (mut numbers, mut words) = (InputHandle::new(), InputHandle::new());
            let probe = ProbeHandle::new();
            let log = observed.clone();
            worker.dataflow::<u64, _>(|scope| {
                let start = scope.input_from(&mut numbers).map(|x: u64| (x, x % 3));
                scope
                    .iterative::<u64, _>(|inner| {
                        let (handle, cycle) = inner.feedback(Product::new(0, 1));
                        let (more, done) =
                            start.enter(inner).concat(&cycle).branch(|_, &(_, left)| left == 0);
                        more.map(|(x, left)| (x, left - 1))
                            .exchange(|&(x, left)| x + left)
                            .connect_loop(handle);
                        done.leave(scope)
                    })
                    .inspect(move |&(x, _)| log.lock().unwrap().looped.push((index, x)))
                    .probe_with(&probe);
            });
            let log = observed.clone();
            worker.dataflow::<u64, _>(|scope| {
                scope
                    .input_from(&mut words)
                    .broadcast()
                    .unary_notify(Pipeline, "Count", move |input, output, notificator| {
                        let mut counts = std::collections::HashMap::new();
                        input.for_each(|time, data: &mut Vec<u64>| {
                            *counts.entry(*time.time()).or_insert(0) += data.len();
                            notificator.notify_at(time.retain());
                        });
                        let mut log = log.lock().unwrap();
                        for (time, count) in counts {
                            log.notified.push((index, time, count));
                        }
                        notificator.for_each(|capability, _, _| {
                            log.notified.push((index, *capability.time(), usize::MAX));
                            output.session(&capability).give(());
                        });
                    })
                    .probe_with(&probe);
            });
            let joined = worker.bootstrap();
            let first = *numbers.time();
            for round in first..ROUNDS {
                let sent = if joined { 2 } else { 1 };
                for k in 0..sent {
                    numbers.send(100 * round + 10 * index as u64 + k);
                    words.send(round);
                }
                observed.lock().unwrap().sent.push((round, sent as usize));
                numbers.advance_to(round + 1);
                words.advance_to(round + 1);
                worker.step_while(|| probe.less_than(numbers.time()));
                if round == 3 && !joined {
                    reached.fetch_add(1, Ordering::SeqCst);
                    await_peers(worker, 3);
                }
            }
        }
    };
    two_processes_then_a_join(program, 1, &reached, 0);
    let observed = observed.lock().unwrap();
    let mut looped: Vec<u64> = observed.looped.iter().map(|&(_, x)| x).collect();
    looped.sort();
    let sent_total: usize = observed.sent.iter().map(|&(_, n)| n).sum();
    assert_eq!(looped.len(), sent_total, "every record leaves the loop once");
    looped.dedup();
    assert_eq!(looped.len(), sent_total, "no record leaves the loop twice");
    assert!(observed.looped.iter().any(|&(w, _)| w == 2), "the joined worker took part in the loop");
    // Per time, the records broadcast, and what each worker had counted when notified.
    let mut per_time = std::collections::BTreeMap::new();
    for &(round, sent) in &observed.sent {
        *per_time.entry(round).or_insert(0) += sent;
    }
    let mut notified_workers = std::collections::BTreeMap::new();
    for worker in 0..3 {
        let mut counted = std::collections::BTreeMap::new();
        for &(w, time, count) in observed.notified.iter().filter(|&&(w, _, _)| w == worker) {
            if count == usize::MAX {
                assert_eq!(
                    counted.get(&time).copied().unwrap_or(0),
                    per_time[&time],
                    "worker {w} was notified at {time} before it counted every broadcast record"
                );
                *notified_workers.entry(time).or_insert(0) += 1;
            } else {
                *counted.entry(time).or_insert(0) += count;
            }
        }
    }
    assert!(notified_workers.values().any(|&n| n == 3), "the joined worker was notified too");
}

/// Records flow without pause (each worker keeps up to 4 rounds in flight) while a process of
/// two workers joins at a moment that differs from run to run; every record reaches the end of
/// the exchange exactly once and every worker's probe reaches the last round.
#[test]
fn joins_under_load_lose_and_duplicate_nothing() {
    for (seed, join_after) in [(1u64, 3u64), (2, 17), (3, 40)] {
        let seen: Arc<Mutex<Vec<u64>>> = Arc::default();
        let sent = Arc::new(AtomicUsize::new(0));
        let reached = Arc::new(AtomicUsize::new(0));
        // Joined workers that finished their bootstrap: the others run on until both have, so
        // that the join happens under load (a dataflow the cluster completed before the join
        // would start complete on the joiner, its input closed).
        let joined = Arc::new(AtomicUsize::new(0));
        let program = {
            let (seen, sent, reached, joined) = (seen.clone(), sent.clone(), reached.clone(), joined.clone());
            move |worker: &mut Worker| {
                let index = worker.index() as u64;
                let mut input = InputHandle::new();
                let probe = ProbeHandle::new();
                let log = seen.clone();
                worker.dataflow::<u64, _>(|scope| {
                    scope
                        .input_from(&mut input)
                        .exchange(move |x: &u64| x.wrapping_mul(seed | 1))
                        .inspect_batch(move |_, xs| log.lock().unwrap().extend_from_slice(xs))
                        .probe_with(&probe);
                });
                if worker.bootstrap() {
                    joined.fetch_add(1, Ordering::SeqCst);
                }
                let (mut round, mut last) = (*input.time(), u64::MAX);
                while round < last {
                    for k in 0..500 {
                        input.send((round << 24) | (index << 16) | k);
                    }
                    sent.fetch_add(500, Ordering::SeqCst);
                    round += 1;
                    input.advance_to(round);
                    worker.step_while(|| probe.less_than(&round.saturating_sub(4)));
                    if round == join_after {
                        reached.fetch_add(1, Ordering::SeqCst);
                    }
                    if last == u64::MAX && joined.load(Ordering::SeqCst) == 2 {
                        last = round.max(join_after) + 20;
                    }
                }
                worker.step_while(|| probe.less_than(&last));
            }
        };
        two_processes_then_a_join(program, 2, &reached, seed as usize % 4);
        let mut seen = seen.lock().unwrap().clone();
        let total = seen.len();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), total, "seed {seed}: a record arrived twice");
        assert_eq!(total, sent.load(Ordering::SeqCst), "seed {seed}: records were lost");
    }
}

/// A dataflow the cluster completed before the join starts complete on the joined workers:
/// its input is closed (sending fails with an error, nothing is silently dropped) and its
/// probe completes, while a second dataflow that still runs takes the joined workers' records.
#[test]
fn a_dataflow_completed_before_the_join_is_complete_on_the_joiner() {
    let seen: Arc<Mutex<Vec<u64>>> = Arc::default();
    let finished = Arc::new(AtomicUsize::new(0));
    let joiner_saw: Arc<Mutex<Vec<(bool, bool, bool)>>> = Arc::default();
    let joined = Arc::new(AtomicBool::new(false));
    let program = {
        let (seen, finished, joiner_saw, joined) =
            (seen.clone(), finished.clone(), joiner_saw.clone(), joined.clone());
        move |worker: &mut Worker| {
            let (mut early, mut late) = (InputHandle::<u64, u64>::new(), InputHandle::<u64, u64>::new());
            let (early_probe, late_probe) = (ProbeHandle::new(), ProbeHandle::new());
            worker.dataflow::<u64, _>(|scope| {
                scope.input_from(&mut early).exchange(|x| *x).probe_with(&early_probe);
            });
            let log = seen.clone();
            worker.dataflow::<u64, _>(|scope| {
                let inspected = scope.input_from(&mut late).exchange(|x| *x);
                inspected.inspect(move |x| log.lock().unwrap().push(*x)).probe_with(&late_probe);
            });
            if worker.bootstrap() {
                let closed = early.try_send(7).is_err();
                let deadline = Instant::now() + Duration::from_secs(30);
                worker.step_while(|| !early_probe.done() && Instant::now() < deadline);
                joiner_saw.lock().unwrap().push((early.is_closed(), closed, early_probe.done()));
                late.send(100 + worker.index() as u64);
                joined.store(true, Ordering::SeqCst);
                return;
            }
            early.send(worker.index() as u64);
            early.close();
            worker.step_while(|| !early_probe.done());
            finished.fetch_add(1, Ordering::SeqCst);
            // The late dataflow runs on until the joined worker took part in it.
            worker.step_while(|| !joined.load(Ordering::SeqCst));
            late.send(worker.index() as u64);
        }
    };
    two_processes_then_a_join(program, 1, &finished, 1);
    assert_eq!(
        *joiner_saw.lock().unwrap(),
        vec![(true, true, true)],
        "closed input, error on send, probe done"
    );
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_unstable();
    assert_eq!(seen, vec![0, 1, 102]);
}

/// CPU time of the calling thread.
fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec for the call to write; the clock exists on Linux.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// A joining worker that waits for its welcome parks until something arrives: while its
/// server does not step (here for `PAUSE`), it takes almost no CPU. (It used to poll without
/// parking, taking a core from the cluster for the whole wait.)
#[test]
fn a_joining_worker_parks_while_it_waits_for_its_welcome() {
    const PAUSE: Duration = Duration::from_millis(400);
    let reached = Arc::new(AtomicUsize::new(0));
    let waited: Arc<Mutex<Vec<(Duration, Duration)>>> = Arc::default();
    let program = {
        let (reached, waited) = (reached.clone(), waited.clone());
        move |worker: &mut Worker| {
            let mut input = InputHandle::<u64, u64>::new();
            let probe = ProbeHandle::new();
            let (cpu, wall) = (thread_cpu_time(), Instant::now());
            // On the joining worker, building the first dataflow waits for the welcome.
            worker.dataflow(|scope| {
                scope.input_from(&mut input).exchange(|x| *x).probe_with(&probe);
            });
            if worker.bootstrap() {
                waited.lock().unwrap().push((thread_cpu_time() - cpu, wall.elapsed()));
                return;
            }
            for round in 0..4 {
                input.send(round);
                input.advance_to(round + 1);
                worker.step_while(|| probe.less_than(input.time()));
            }
            reached.fetch_add(1, Ordering::SeqCst);
            if worker.index() == 0 {
                // The server does not step for a while: the joiner's welcome waits.
                std::thread::sleep(PAUSE);
            }
            await_peers(worker, 3);
        }
    };
    two_processes_then_a_join(program, 1, &reached, 0);
    let waited = waited.lock().unwrap();
    let [(cpu, wall)] = waited[..] else { panic!("one joining worker reports, not {}", waited.len()) };
    assert!(wall >= PAUSE / 2, "the welcome did not wait for the paused server ({wall:?})");
    assert!(cpu * 10 < wall, "the joining worker took {cpu:?} of CPU in {wall:?} of waiting");
}
