//! Running a program on a number of workers (or processes, one joining) and comparing its
//! output with the reference.

use super::common;
use super::dataflow::{build_stages, check, Ctx};
use super::program::{mix, Program, Rng};
use super::DEADLINE;
use std::collections::BTreeMap;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use timely_engine::dataflow::operators::Captured;
use timely_engine::dataflow::{InputHandle, Pipeline, ProbeHandle, Stream};
use timely_engine::Config;

// ---------------------------------------------------------------------------------------
// Running a program.

/// Runs `program` on `workers` workers; returns a description of every problem found.
pub fn run(
    seed: u64,
    program: &Arc<Program>,
    workers: usize,
    expected: &Arc<Vec<(u64, u64)>>,
    join: Option<u64>,
) -> Result<(), String> {
    let violations: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let captured: Captured<u64, u64> = Captured::new();
    let seen: Arc<Mutex<Vec<(u64, u64)>>> = Arc::new(Mutex::new(Vec::new()));
    let (sender, receiver) = mpsc::channel();
    {
        let program = program.clone();
        let expected = expected.clone();
        let violations = violations.clone();
        let captured = captured.clone();
        let seen = seen.clone();
        std::thread::Builder::new()
            .name(format!("randomized-{}-{}", seed, workers))
            .spawn(move || {
                let run = Run { seed, program, expected, violations, captured, seen, join: None };
                let result = match join {
                    None => {
                        let config = if workers == 1 { Config::Thread } else { Config::Process(workers) };
                        timely_engine::execute(config, move |worker| run_worker(worker, &run)).map(drop)
                    }
                    Some(epoch) => joined::execute(workers, epoch, run),
                };
                let _ = sender.send(result);
            })
            .expect("spawn a run thread");
    }
    let mut problems = Vec::new();
    match receiver.recv_timeout(DEADLINE) {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => problems.push(format!("the run failed: {}", error)),
        Err(_) => problems.push(format!("the run did not terminate within {:?}", DEADLINE)),
    }
    problems.extend(violations.lock().unwrap().iter().cloned());
    if problems.is_empty() {
        let got = captured.extract();
        if &got != expected.as_ref() {
            problems.push(format!("output differs from the reference: {}", diff(expected, &got)));
        }
        let mut got_seen = seen.lock().unwrap().clone();
        got_seen.sort();
        if &got_seen != expected.as_ref() {
            problems.push(format!(
                "records seen before the probe differ from the reference: {}",
                diff(expected, &got_seen)
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "seed {} on {} worker(s): {}\n  program: {}",
            seed,
            workers,
            problems.join("\n  "),
            program.describe()
        ))
    }
}

/// Multiset difference, abbreviated.
fn diff(expected: &[(u64, u64)], got: &[(u64, u64)]) -> String {
    let mut counts: BTreeMap<(u64, u64), i64> = BTreeMap::new();
    for r in expected {
        *counts.entry(*r).or_default() += 1;
    }
    for r in got {
        *counts.entry(*r).or_default() -= 1;
    }
    let missing: Vec<String> = counts
        .iter()
        .filter(|(_, c)| **c > 0)
        .map(|((t, x), c)| format!("{}@{}x{}", x, t, c))
        .take(12)
        .collect();
    let extra: Vec<String> = counts
        .iter()
        .filter(|(_, c)| **c < 0)
        .map(|((t, x), c)| format!("{}@{}x{}", x, t, -c))
        .take(12)
        .collect();
    format!(
        "expected {} records, got {}; missing [{}], unexpected [{}]",
        expected.len(),
        got.len(),
        missing.join(" "),
        extra.join(" ")
    )
}

/// What every worker of one run shares.
#[derive(Clone)]
struct Run {
    seed: u64,
    program: Arc<Program>,
    expected: Arc<Vec<(u64, u64)>>,
    violations: Arc<Mutex<Vec<String>>>,
    captured: Captured<u64, u64>,
    seen: Arc<Mutex<Vec<(u64, u64)>>>,
    /// In a run with a join: the epoch after which worker 0 asks for it, the flag it raises,
    /// and the number of workers before the join.
    join: Option<(u64, Arc<std::sync::atomic::AtomicBool>, usize)>,
}

fn run_worker(worker: &mut timely_engine::Worker, run: &Run) {
    let Run { seed, program, expected, violations, captured, seen, .. } = run;
    let (seed, captured) = (*seed, captured);
    let index = worker.index();
    let peers = run.join.as_ref().map_or(worker.peers(), |(_, _, initial)| *initial);
    let ctx = Ctx { worker: index, violations: violations.clone() };
    // handles[input][copy]
    let mut handles: Vec<Vec<InputHandle<u64, u64>>> =
        program.inputs.iter().map(|_| (0..program.copies).map(|_| InputHandle::new()).collect()).collect();
    let probe = ProbeHandle::new();
    for copy in 0..program.copies {
        worker.dataflow::<u64, _>(|scope| {
            let streams: Vec<Stream<u64, u64>> =
                handles.iter_mut().map(|h| scope.input_from(&mut h[copy])).collect();
            let output = build_stages(&streams[0], &program.stages, &ctx, streams.get(1));
            let output = check(&output, Pipeline, &ctx, program.checks + 1);
            output.capture_into(captured);
            let seen = seen.clone();
            output
                .inspect_batch(move |time, data| {
                    seen.lock().unwrap().extend(data.iter().map(|x| (*time, *x)))
                })
                .probe_with(&probe);
        });
    }

    if worker.bootstrap() {
        return;
    }
    // This worker's records: per input, per epoch.
    let mine: Vec<BTreeMap<u64, Vec<u64>>> = program
        .inputs
        .iter()
        .map(|records| {
            let mut by_epoch: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
            for (epoch, x, owner) in records {
                if (*owner % peers as u64) as usize == index {
                    by_epoch.entry(*epoch).or_default().push(*x);
                }
            }
            by_epoch
        })
        .collect();
    let mut rng = Rng::new(mix(mix(seed, peers as u64), index as u64 + 1));
    for epoch in 0..=program.max_epoch {
        if let Some((at, asked, _)) = &run.join {
            if *at == epoch && index == 0 {
                asked.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        for (input, copies) in handles.iter_mut().enumerate() {
            if copies[0].is_closed() {
                continue;
            }
            let records = mine[input].get(&epoch);
            let advance = records.is_some() || rng.chance(1, 3);
            let more = mine[input].range(epoch + 1..).next().is_some();
            let close = !more && rng.chance(1, 4);
            for handle in copies.iter_mut() {
                if advance {
                    handle.advance_to(epoch);
                }
                if let Some(records) = records {
                    for x in records {
                        handle.send(*x);
                    }
                }
                if close {
                    handle.close();
                }
            }
        }
        match rng.below(5) {
            0 => {}
            1 => {
                worker.step();
            }
            2 => {
                for _ in 0..rng.range(1, 4) {
                    worker.step();
                }
            }
            _ => {
                // Wait until every output before the next epoch is complete, and check
                // that all of them were seen by then.
                let next = epoch + 1;
                for handle in handles.iter_mut().flatten().filter(|h| !h.is_closed()) {
                    handle.advance_to(next);
                }
                let start = Instant::now();
                while probe.less_than(&next) {
                    if start.elapsed() > DEADLINE {
                        ctx.violation(format!(
                            "the output probe did not pass epoch {} within {:?} (frontier {:?})",
                            epoch,
                            DEADLINE,
                            probe.frontier()
                        ));
                        return;
                    }
                    worker.step();
                }
                let mut got: Vec<(u64, u64)> =
                    seen.lock().unwrap().iter().filter(|(t, _)| *t < next).cloned().collect();
                got.sort();
                let want: Vec<(u64, u64)> = expected.iter().filter(|(t, _)| *t < next).cloned().collect();
                if got != want {
                    ctx.violation(format!(
                        "the output probe passed time {} (frontier {:?}) before all outputs at earlier times were seen: {}",
                        epoch,
                        probe.frontier(),
                        diff(&want, &got)
                    ));
                }
            }
        }
    }
    if let Some((_, _, initial)) = &run.join {
        // The join happens while this worker still holds its inputs, moved past every epoch
        // so that the others' probes can pass (worker 0 asks for the join only once it gets
        // to the join's epoch).
        for handle in handles.iter_mut().flatten().filter(|h| !h.is_closed()) {
            handle.advance_to(program.max_epoch + 1);
        }
        let start = Instant::now();
        while worker.peers() == *initial && start.elapsed() < DEADLINE {
            worker.step();
        }
    }
    for handle in handles.iter_mut().flatten() {
        handle.close();
    }
}

/// Runs with a process joining the cluster while the program runs.
mod joined {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn config(addresses: &[String], process: usize, initial: usize, join: Option<usize>) -> Config {
        super::common::loopback_cluster(addresses, process, initial, 1, join)
    }

    /// `processes` processes of one worker run the program; after worker 0 reaches `epoch`, one
    /// more process joins (served by worker `epoch % processes`).
    pub(super) fn execute(processes: usize, epoch: u64, run: Run) -> Result<(), timely_engine::ExecuteError> {
        let addresses = super::common::free_addresses(processes + 1);
        let asked = Arc::new(AtomicBool::new(false));
        let run = Run { join: Some((epoch, asked.clone(), processes)), ..run };
        let start = |process: usize, join: Option<usize>| {
            let (config, run) = (config(&addresses, process, processes, join), run.clone());
            std::thread::spawn(move || timely_engine::execute(config, move |worker| run_worker(worker, &run)))
        };
        let mut runs: Vec<_> = (0..processes).map(|process| start(process, None)).collect();
        let begun = Instant::now();
        while !asked.load(Ordering::SeqCst) && begun.elapsed() < DEADLINE {
            std::thread::sleep(Duration::from_millis(1));
        }
        runs.push(start(processes, Some(epoch as usize % processes)));
        let results: Vec<_> = runs.into_iter().map(|run| run.join().expect("a process thread")).collect();
        // The last failure is the joiner's if it failed: it explains the others' (a lost peer).
        match results.into_iter().filter_map(Result::err).next_back() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}
