//! The six programs on `timely_engine`: `compare-ours PROGRAM [PARAMETERS] [-w N] [-n N -p I]`
//! (see the crate's documentation for what is printed).

mod barrier;
mod bfs;
mod event_driven;
mod hashjoin;
mod pagerank;
mod pingpong;

use std::time::Instant;
use timely_compare::{report, Run, Summary};
use timely_engine::Worker;

fn main() {
    let run = Run::from_args("compare-ours");
    let (program, p) = (run.program, run.params);
    let results = timely_engine::execute_from_args(run.runtime, move |worker| {
        let start = Instant::now();
        let summary = match program.as_str() {
            "pingpong" => pingpong::run(worker, p[0], p[1]),
            "hashjoin" => hashjoin::run(worker, p[0], p[1], p[2]),
            "bfs" => bfs::run(worker, p[0], p[1]),
            "barrier" => barrier::run(worker, p[0]),
            "event_driven" => event_driven::run(worker, p[0], p[1], p[2], p[3] != 0),
            "pagerank" => pagerank::run(worker, p[0], p[1], p[2], p[3]),
            other => unreachable!("unknown program {other}"),
        };
        finish(worker);
        let elapsed = start.elapsed();
        let summary = summary.take();
        (summary, elapsed)
    });
    match results {
        Ok(results) => report(results),
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(1);
        }
    }
}

/// Steps the worker until its dataflows are complete.
fn finish(worker: &mut Worker) {
    while worker.step_or_park(None) {}
}

/// A summary the dataflow's operators add to while the worker runs.
type Shared = std::rc::Rc<std::cell::RefCell<Summary>>;
