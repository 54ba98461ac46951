//! Numbers sent round by round through an exchange and a `+1`: a program on timely-engine
//! with its default features, built without trace files, as any program that does not trace
//! builds it.
//!
//! `lean-engine-example [-w WORKERS] [-n PROCESSES -p INDEX -h HOSTFILE]` prints `records R`
//! and `sum S` of the numbers the workers saw. Asking it for a trace (`--trace DIR`,
//! `TIMELY_TRACE_DIR`) fails, saying the program was built without trace files.
//!
//! Nothing here names the timestamp type: `worker.dataflow(|scope| ...)` takes it from
//! `input.time() + 1`, the literal's type. With Arrow and Parquet among the engine's
//! dependencies that did not compile (num-bigint's `impl Add<i32> for &BigInt` made
//! `&_: Add<i32>` ambiguous), and `worker.dataflow::<u64, _>` had to be written out
//! (docs/design.md, "Crates").

use std::cell::Cell;
use std::process::ExitCode;
use std::rc::Rc;

use timely_engine::dataflow::{InputHandle, ProbeHandle};
use timely_engine::execute_from_args;

/// The numbers sent: 0 to NUMBERS - 1, ROUNDS of them a round.
const NUMBERS: u64 = 100;
const ROUNDS: u64 = 10;

fn main() -> ExitCode {
    let outcome = execute_from_args(std::env::args().skip(1), |worker| {
        let (index, peers) = (worker.index() as u64, worker.peers() as u64);
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        let summary = Rc::new(Cell::new((0, 0)));
        let out = summary.clone();
        worker.dataflow(|scope| {
            scope
                .input_from(&mut input)
                .exchange(|x| *x)
                .map(|x| x + 1)
                .inspect_batch(move |_time, numbers| {
                    let (records, sum) = out.get();
                    out.set((records + numbers.len() as u64, sum + numbers.iter().sum::<u64>()));
                })
                .probe_with(&probe);
        });
        for round in (0..NUMBERS).collect::<Vec<_>>().chunks(ROUNDS as usize) {
            round.iter().filter(|x| *x % peers == index).for_each(|x| input.send(*x));
            let next = input.time() + 1;
            input.advance_to(next);
            worker.step_while(|| probe.less_than(input.time()));
        }
        summary.get()
    });
    match outcome {
        Ok(results) => {
            let records: u64 = results.iter().map(|(records, _)| records).sum();
            let sum: u64 = results.iter().map(|(_, sum)| sum).sum();
            println!("records {records}\nsum {sum}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("lean-engine-example: {error}");
            ExitCode::FAILURE
        }
    }
}
