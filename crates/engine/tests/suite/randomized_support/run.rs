//! Running a program (on threads of one process, or on loopback processes that one joins
//! and one leaves while the program runs) and comparing what it produced with the reference.
//!
//! **The expected output is the reference over what the workers fed.** Each worker feeds the
//! records whose owner hash is its index modulo the number of workers that ever feed
//! ([`Setup::feeders`]), epoch by epoch, and records each `(input, epoch, record)` it fed. In
//! a run without membership changes that is every record of the program at its own epoch
//! (checked). A leaver stops before its leave epoch, so its later records are never fed; a
//! joined worker starts where its bootstrap server's inputs were and feeds its records of
//! earlier epochs at the first epoch its inputs allow (none if they arrived closed). Every
//! copy of the dataflow on a worker is fed the same records, so the expected output is the
//! sequential reference over the fed records, once per copy. That reference is exact only if
//! a program's output does not depend on how many workers run it: a broadcast does, so the
//! tests with membership changes leave out programs with one.
//!
//! The prefix checks are done after the run too: outputs at epochs before `e` depend only on
//! records fed before `e` (no stage moves a record to an earlier epoch), and once a worker's
//! probe passed `e` no worker can feed one (a joined worker's inputs start at or after its
//! server's), so the outputs seen then must equal the reference over the final fed records,
//! restricted to epochs before `e`.

use super::cluster;
use super::program::Program;
use super::reference::reference_over;
use super::worker::{run_worker, Run};
use super::{DEADLINE, WORK_CAP};
use std::collections::BTreeMap;
use std::sync::{mpsc, Arc};
use timely_engine::Config;

/// Where and how a program runs.
#[derive(Clone, Copy, Debug)]
pub enum Setup {
    /// On this many worker threads of one process.
    Threads(usize),
    /// On loopback processes of one worker each, with membership changes.
    Cluster(Plan),
}

/// The membership changes of a run on processes of one worker each.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Processes at the start.
    pub processes: usize,
    /// A process joins once worker 0 reaches this epoch (it becomes worker `processes`).
    pub join: Option<u64>,
    /// Then a process leaves (after the join completed, if there is one).
    pub leave: Option<Leave>,
}

/// A leave: worker `worker`'s process leaves when the worker reaches epoch `epoch` (in its
/// own loop over epochs, before feeding that epoch; `max_epoch + 1`: after the last one), and
/// so does worker `also`'s, if there is one, when it reaches the same epoch: two leaves asked
/// for at about the same moment, as processes started by hand may.
#[derive(Clone, Copy, Debug)]
pub struct Leave {
    pub worker: usize,
    pub epoch: u64,
    pub also: Option<usize>,
}

impl Leave {
    /// The workers whose process leaves.
    pub fn workers(&self) -> impl Iterator<Item = usize> {
        std::iter::once(self.worker).chain(self.also)
    }
}

impl Plan {
    /// The worker that serves the joined worker's bootstrap.
    pub fn server(&self) -> usize {
        self.join.map_or(0, |epoch| epoch as usize % self.processes)
    }
}

impl Setup {
    /// How many workers feed records over the run (the joined one included).
    pub fn feeders(&self) -> usize {
        match self {
            Setup::Threads(workers) => *workers,
            Setup::Cluster(plan) => plan.processes + usize::from(plan.join.is_some()),
        }
    }

    /// The membership changes (none on threads).
    pub fn plan(&self) -> Plan {
        match self {
            Setup::Threads(workers) => Plan { processes: *workers, join: None, leave: None },
            Setup::Cluster(plan) => *plan,
        }
    }

    fn describe(&self) -> String {
        match self {
            Setup::Threads(workers) => format!("on {} worker(s)", workers),
            Setup::Cluster(plan) => {
                let mut text = format!("on {} processes", plan.processes);
                if let Some(epoch) = plan.join {
                    text += &format!(", one joining after worker 0 reaches epoch {}", epoch);
                }
                if let Some(Leave { worker, epoch, also }) = plan.leave {
                    text += &format!(", worker {}'s process leaving at epoch {}", worker, epoch);
                    if let Some(also) = also {
                        text += &format!(", worker {}'s too", also);
                    }
                }
                text
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Running a program.

/// Runs `program` as `setup` says; returns a description of every problem found.
pub fn run(seed: u64, program: &Arc<Program>, setup: Setup) -> Result<(), String> {
    let run = Run::new(seed, program.clone(), setup);
    let (sender, receiver) = mpsc::channel();
    {
        let run = run.clone();
        std::thread::Builder::new()
            .name(format!("randomized-{}", seed))
            .spawn(move || {
                let result = match setup {
                    Setup::Threads(workers) => {
                        let config = if workers == 1 { Config::Thread } else { Config::Process(workers) };
                        timely_engine::execute(config, move |worker| run_worker(worker, &run))
                            .map(drop)
                            .map_err(|error| error.to_string())
                    }
                    Setup::Cluster(plan) => cluster::execute(plan, run),
                };
                let _ = sender.send(result);
            })
            .expect("spawn a run thread");
    }
    let mut problems = Vec::new();
    match receiver.recv_timeout(DEADLINE) {
        Ok(Ok(())) => {}
        Ok(Err(error)) => problems.push(format!("the run failed: {}", error)),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            problems.push("the run panicked (its message is on stderr)".to_string())
        }
        Err(mpsc::RecvTimeoutError::Timeout) => problems.push(format!(
            "the run did not terminate within {:?}; the workers: {:?}",
            DEADLINE,
            run.status.lock().unwrap()
        )),
    }
    problems.extend(run.violations.lock().unwrap().iter().cloned());
    if problems.is_empty() {
        problems.extend(compare(&run));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "seed {} {}: {}\n  program: {}",
            seed,
            setup.describe(),
            problems.join("\n  "),
            program.describe()
        ))
    }
}

/// Compares what a finished run produced with the reference over what it fed.
fn compare(run: &Run) -> Vec<String> {
    let program = &run.program;
    let mut problems = Vec::new();
    let mut inputs: Vec<Vec<(u64, u64)>> = vec![Vec::new(); program.inputs.len()];
    for &(_, input, epoch, x) in run.fed.lock().unwrap().iter() {
        inputs[input].push((epoch, x));
    }
    inputs.iter_mut().for_each(|records| records.sort());
    if let Setup::Threads(_) = run.setup {
        // Without membership changes every record is fed once, at its epoch.
        let all: Vec<Vec<(u64, u64)>> =
            program.inputs.iter().map(|records| records.iter().map(|(e, x, _)| (*e, *x)).collect()).collect();
        if inputs != all {
            problems.push(format!("the workers fed {:?}, not the program's records", inputs));
        }
    }
    let peers = run.setup.plan().processes as u64;
    let Some(one) = reference_over(program, &inputs, peers, 4 * WORK_CAP) else {
        return vec!["the reference over the records fed does too much work".to_string()];
    };
    let mut expected: Vec<(u64, u64)> =
        one.iter().cloned().cycle().take(one.len() * program.copies).collect();
    expected.sort();
    let got = run.captured.extract();
    if got != expected {
        problems.push(format!("output differs from the reference: {}", diff(&expected, &got)));
    }
    let mut seen = run.seen.lock().unwrap().clone();
    seen.sort();
    if seen != expected {
        problems.push(format!(
            "records seen before the probe differ from the reference: {}",
            diff(&expected, &seen)
        ));
    }
    for prefix in run.prefixes.lock().unwrap().iter() {
        let want: Vec<(u64, u64)> = expected.iter().filter(|(t, _)| *t < prefix.next).cloned().collect();
        if prefix.seen != want {
            problems.push(format!(
                "worker {}: the output probe passed time {} (frontier {}) before all outputs at earlier times were seen: {}",
                prefix.worker,
                prefix.next - 1,
                prefix.frontier,
                diff(&want, &prefix.seen)
            ));
        }
    }
    if std::env::var("TIMELY_RANDOM_VERBOSE").is_ok() {
        let mut per_worker: BTreeMap<usize, usize> = BTreeMap::new();
        for &(worker, ..) in run.fed.lock().unwrap().iter() {
            *per_worker.entry(worker).or_default() += 1;
        }
        eprintln!("seed {} {}: records fed per worker {:?}", run.seed, run.setup.describe(), per_worker);
    }
    problems
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
