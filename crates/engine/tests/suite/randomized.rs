//! Randomized multi-worker runs of generated dataflow programs on 1, 2 and 4 worker threads.
//!
//! Each seed generates a small program (one or two inputs fed over several epochs, a random
//! pipeline of stages); its output must equal that of a sequential interpreter of the same
//! program description, checking operators must find no message behind a frontier and no early
//! notification, and the run must terminate. `reference_interpreter_basics` checks that
//! interpreter on programs worked out by hand. The generator, the interpreter and the checks
//! are in `randomized_support`; `randomized_joining.rs` runs the programs while a process joins.
//!
//! Failures name the seed, the worker count and the program. Environment variables:
//! `TIMELY_RANDOM_SEEDS=N` runs seeds `0..N` per worker count (default 60; `A..B`: seeds `A..B`),
//! `TIMELY_RANDOM_SEED=S` runs only seed `S`, `TIMELY_RANDOM_VERBOSE=1` prints each
//! program.

use crate::randomized_support::program::{generate, Program, Stage};
use crate::randomized_support::run::Setup;
use crate::randomized_support::{reference::reference, run_batch, seeds};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------
// Tests.

fn run_seeds(workers: usize, seeds: &[u64]) {
    let runs = seeds.iter().map(|&seed| (seed, Arc::new(generate(seed)), Setup::Threads(workers)));
    run_batch(&format!("on {} worker(s)", workers), runs);
}

#[test]
fn random_programs_on_one_worker() {
    run_seeds(1, &seeds());
}

#[test]
fn random_programs_on_two_workers() {
    run_seeds(2, &seeds());
}

#[test]
fn random_programs_on_four_workers() {
    run_seeds(4, &seeds());
}

#[test]
fn reference_interpreter_basics() {
    let program = Program {
        inputs: vec![vec![(0, 3, 0), (0, 4, 0), (1, 6, 0)]],
        max_epoch: 1,
        stages: vec![
            Stage::Loop { modulus: 5, max_iters: 10, body: vec![Stage::Map { mul: 1, add: 1 }] },
            Stage::Delay { max: 1 },
            Stage::Count { keys: 1 },
        ],
        checks: 0,
        copies: 1,
    };
    // The loop takes 3 and 4 to 5 and 6 to 10; the delay moves both 5s to epoch 1 and
    // keeps 10 there; one key counted three times at epoch 1.
    assert_eq!(reference(&program, 1), Some(vec![(1, 3)]));

    // A delay inside a loop body: a count after it sees records of different iterations
    // together.
    let program = Program {
        inputs: vec![vec![(0, 1, 0), (0, 2, 0)]],
        max_epoch: 0,
        stages: vec![Stage::Loop {
            modulus: 1000,
            max_iters: 2,
            body: vec![Stage::Map { mul: 1, add: 1 }, Stage::Delay { max: 1 }, Stage::Count { keys: 1 }],
        }],
        checks: 0,
        copies: 1,
    };
    // Iteration 0: 1 -> 2 (delay 0, stays at 0), 2 -> 3 (delay 1, moves to 1).
    // Count at (0, 0): one record -> 0 + 1 * 1 = 1; fed back to iteration 1.
    // Iteration 1: 1 -> 2 (delay 0, stays at 1). Count at (0, 1): records 3 and 2 -> 2;
    // fed back to iteration 2, where it leaves (max_iters 2).
    assert_eq!(reference(&program, 1), Some(vec![(0, 2)]));
}
