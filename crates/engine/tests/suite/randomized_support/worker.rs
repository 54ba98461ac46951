//! One worker's part of a run: building the program's dataflows, feeding this worker's share
//! of the records epoch by epoch with random stepping, and the worker's part in the run's
//! membership changes (asking for the join, bootstrapping as the joined worker, leaving, and
//! waiting for the join and the leave to complete while the cluster still runs).
//!
//! Every worker records what it fed (in `Run::fed`) and, whenever it waited for the probe to
//! pass an epoch, which outputs before that epoch had been seen by then (`Run::prefixes`);
//! `run.rs` compares both with the reference after the run.

use super::dataflow::{build_stages, check, Ctx};
use super::program::{mix, Program, Rng};
use super::run::{Plan, Setup};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use timely_engine::dataflow::operators::Captured;
use timely_engine::dataflow::{InputHandle, Pipeline, ProbeHandle, Stream};
use timely_engine::Worker;

/// How long a worker waits for its probe, a join or a departure before it reports a
/// violation and gives up: less than the run's deadline, so that a run that does not end says
/// what its workers waited for.
const PATIENCE: Duration = Duration::from_secs(15);

/// Stayers waiting for a leave move their inputs this far past the last epoch, so that every
/// time a leaver may hold (delays move records a few epochs later) can complete.
const FAR: u64 = 1_000;

/// `(worker, input, epoch, record)`: a record a worker fed at an epoch.
pub(super) type Fed = (usize, usize, u64, u64);

/// What a worker saw once its probe passed `next`: the outputs at earlier epochs.
pub(super) struct Prefix {
    pub worker: usize,
    pub next: u64,
    pub frontier: String,
    pub seen: Vec<(u64, u64)>,
}

/// What every worker of one run shares.
#[derive(Clone)]
pub(super) struct Run {
    pub seed: u64,
    pub program: Arc<Program>,
    pub setup: Setup,
    pub violations: Arc<Mutex<Vec<String>>>,
    pub captured: Captured<u64, u64>,
    /// Every output, as it passes the probe's `inspect`.
    pub seen: Arc<Mutex<Vec<(u64, u64)>>>,
    pub fed: Arc<Mutex<Vec<Fed>>>,
    pub prefixes: Arc<Mutex<Vec<Prefix>>>,
    /// Raised by worker 0 when it reaches the join's epoch (the test then starts the joiner).
    pub asked: Arc<AtomicBool>,
    /// What each worker is doing (reported if the run does not end).
    pub status: Arc<Mutex<BTreeMap<usize, String>>>,
}

impl Run {
    pub fn new(seed: u64, program: Arc<Program>, setup: Setup) -> Self {
        Run {
            seed,
            program,
            setup,
            violations: Arc::default(),
            captured: Captured::new(),
            seen: Arc::default(),
            fed: Arc::default(),
            prefixes: Arc::default(),
            asked: Arc::default(),
            status: Arc::default(),
        }
    }

    /// Notes what worker `worker` does now.
    pub fn status(&self, worker: usize, doing: String) {
        self.status.lock().unwrap().insert(worker, doing);
    }
}

/// The program of one worker of `run`.
pub(super) fn run_worker(worker: &mut Worker, run: &Run) {
    let program = &run.program;
    let index = worker.index();
    let ctx = Ctx { worker: index, violations: run.violations.clone() };
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
            output.capture_into(&run.captured);
            let seen = run.seen.clone();
            output
                .inspect_batch(move |time, data| {
                    seen.lock().unwrap().extend(data.iter().map(|x| (*time, *x)))
                })
                .probe_with(&probe);
        });
    }
    // A joined worker starts where its bootstrap server's inputs were: its records of earlier
    // epochs are fed at the first epoch its inputs allow.
    run.status(index, "bootstrapping".to_string());
    let joined = worker.bootstrap();
    let start = match joined {
        false => 0,
        true => handles.iter().flatten().filter(|h| !h.is_closed()).map(|h| *h.time()).min().unwrap_or(0),
    };
    let feeders = run.setup.feeders() as u64;
    let plan = run.setup.plan();
    let leave = plan.leave.filter(|leave| leave.workers().any(|w| w == index)).map(|leave| leave.epoch);
    // This worker's records: per input, per epoch.
    let mut mine: Vec<BTreeMap<u64, Vec<u64>>> = program
        .inputs
        .iter()
        .map(|records| {
            let mut by_epoch: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
            for (epoch, x, owner) in records {
                if owner % feeders == index as u64 {
                    by_epoch.entry(*epoch).or_default().push(*x);
                }
            }
            by_epoch
        })
        .collect();
    let mut rng = Rng::new(mix(mix(run.seed, feeders), index as u64 + 1));
    for epoch in start..=program.max_epoch.max(start) {
        run.status(index, format!("at epoch {}", epoch));
        if index == 0 && plan.join == Some(epoch) {
            run.asked.store(true, Ordering::SeqCst);
        }
        if leave.is_some_and(|at| at <= epoch) {
            return depart(worker, &mut handles, epoch, joined, &mut rng, &ctx, run);
        }
        for (input, copies) in handles.iter_mut().enumerate() {
            if copies[0].is_closed() || *copies[0].time() > epoch {
                continue; // (a joined worker whose inputs start later)
            }
            // Every record up to this epoch not fed yet (earlier ones only on a joined worker).
            let later = mine[input].split_off(&(epoch + 1));
            let records: Vec<u64> =
                std::mem::replace(&mut mine[input], later).into_values().flatten().collect();
            let advance = !records.is_empty() || rng.chance(1, 3);
            // (Rarely on a bootstrap server: its joined worker's inputs start closed then.)
            let odds = if plan.join.is_some() && plan.server() == index { 16 } else { 4 };
            let close = mine[input].is_empty() && rng.chance(1, odds);
            run.fed.lock().unwrap().extend(records.iter().map(|x| (index, input, epoch, *x)));
            for handle in copies.iter_mut() {
                if advance {
                    handle.advance_to(epoch);
                }
                for x in &records {
                    handle.send(*x);
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
                // Wait until every output before the next epoch is complete and note which
                // were seen by then (`run.rs` compares them with the reference).
                let next = epoch + 1;
                advance_all(&mut handles, next);
                let begun = Instant::now();
                while probe.less_than(&next) {
                    if begun.elapsed() > PATIENCE {
                        ctx.violation(format!(
                            "the output probe did not pass epoch {} within {:?} (frontier {:?})",
                            epoch,
                            PATIENCE,
                            probe.frontier()
                        ));
                        return;
                    }
                    worker.step();
                }
                let mut seen: Vec<(u64, u64)> =
                    run.seen.lock().unwrap().iter().filter(|(t, _)| *t < next).cloned().collect();
                seen.sort();
                let frontier = format!("{:?}", probe.frontier());
                run.prefixes.lock().unwrap().push(Prefix { worker: index, next, frontier, seen });
            }
        }
    }
    let end = program.max_epoch.max(start) + 1;
    if leave.is_some() {
        return depart(worker, &mut handles, end, joined, &mut rng, &ctx, run);
    }
    stay(worker, &mut handles, end, &plan, &ctx, run);
    run.status(index, "returned from its program".to_string());
}

/// Moves every open input to `time` (if it is not there yet).
fn advance_all(handles: &mut [Vec<InputHandle<u64, u64>>], time: u64) {
    for handle in handles.iter_mut().flatten().filter(|h| !h.is_closed() && *h.time() < time) {
        handle.advance_to(time);
    }
}

/// Steps `worker` until `done`; a violation naming `what` if that takes longer than
/// `PATIENCE`.
fn step_until(
    worker: &mut Worker,
    ctx: &Ctx,
    run: &Run,
    what: &str,
    mut done: impl FnMut(&Worker) -> bool,
) -> bool {
    run.status(ctx.worker, format!("waiting for {}", what));
    let begun = Instant::now();
    while !done(worker) {
        if begun.elapsed() > PATIENCE {
            ctx.violation(format!(
                "{} did not happen within {:?} (workers present {:?}, leaving {:?}, gone {:?})",
                what,
                PATIENCE,
                worker.state().members(),
                worker.state().rescaling().leaves().leaving(),
                worker.state().rescaling().leaves().departed()
            ));
            return false;
        }
        worker.step();
    }
    true
}

/// True once the planned join happened and the joined worker finished its bootstrap, as
/// far as `worker` knows (every worker admits it and hears that it is done).
fn joined_here(worker: &Worker, plan: &Plan) -> bool {
    worker.peers() == plan.processes + 1 && !worker.state().rescaling().is_busy()
}

/// This worker's process leaves at `epoch` (once the planned join completed: joins and
/// leaves happen one at a time): stop feeding, sometimes step a little with the inputs still
/// open, close them.
fn depart(
    worker: &mut Worker,
    handles: &mut [Vec<InputHandle<u64, u64>>],
    epoch: u64,
    joined: bool,
    rng: &mut Rng,
    ctx: &Ctx,
    run: &Run,
) {
    let plan = run.setup.plan();
    if plan.join.is_some() && !joined {
        // Worker 0 asks for the join at an epoch up to this one, and may first wait for its
        // probe to pass the epochs before: let them pass here.
        advance_all(handles, epoch);
        if !step_until(worker, ctx, run, "the join", |w| joined_here(w, &plan)) {
            return;
        }
    }
    run.status(ctx.worker, "leaving".to_string());
    // Refused only when no other process is present: every plan keeps one that stays.
    if let Err(refused) = worker.leave() {
        ctx.violation(format!("leave() failed: {refused}"));
    }
    if !worker.is_leaving() {
        ctx.violation("is_leaving() is false after leave()".to_string());
    }
    if rng.chance(1, 3) {
        for _ in 0..rng.range(1, 4) {
            worker.step();
        }
    }
    for handle in handles.iter_mut().flatten() {
        handle.close();
    }
    run.status(ctx.worker, "left its program (leaving)".to_string());
}

/// A worker that stays: its inputs stay open (moved past every epoch, so that the others'
/// probes can pass) until the planned join completed here and the leaver left, so that both
/// happen in a running cluster; then it closes them.
fn stay(
    worker: &mut Worker,
    handles: &mut [Vec<InputHandle<u64, u64>>],
    end: u64,
    plan: &Plan,
    ctx: &Ctx,
    run: &Run,
) {
    advance_all(handles, end);
    // The whole join (the joined worker's bootstrap) completes first: the joined worker's
    // inputs start at its server's time, which is at most `end` until then.
    if plan.join.is_some() && !step_until(worker, ctx, run, "the join", |w| joined_here(w, plan)) {
        return;
    }
    if let Some(leave) = plan.leave {
        advance_all(handles, end + FAR);
        // (Other processes that ended count as departed too.)
        let gone = |w: &Worker| {
            let departed = w.state().rescaling().leaves().departed();
            leave.workers().all(|leaver| departed.contains(&leaver))
        };
        let leavers: Vec<usize> = leave.workers().collect();
        if !step_until(worker, ctx, run, &format!("the departure of workers {leavers:?}"), gone) {
            return;
        }
        let members = worker.state().members();
        if leave.workers().any(|leaver| members.contains(&leaver)) {
            ctx.violation(format!("workers {leavers:?} departed but one is still a member: {members:?}"));
        }
    }
    for handle in handles.iter_mut().flatten() {
        handle.close();
    }
}
