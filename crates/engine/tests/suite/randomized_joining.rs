//! Randomized runs of generated dataflow programs on a cluster that a process joins while the
//! program runs (two processes of one worker, a third joining at a random epoch).
//!
//! The programs, the sequential reference and the checking operators are those of
//! `randomized.rs`, in `randomized_support`. `TIMELY_RANDOM_SEEDS=N` runs the first `N / 3`
//! seeds whose programs qualify (default 20), `TIMELY_RANDOM_SEED=S` runs only seed `S`.

use crate::randomized_support::program::{generate, Rng};
use crate::randomized_support::{reference::reference, run::run, seeds};
use std::sync::Arc;

/// Programs on two processes of one worker, a third process joining at a random epoch:
/// outputs equal the reference, and every checking operator (no message behind a frontier,
/// no early notification) holds on every worker, the joined one included. Per-key counts and
/// sums (`count_by_key`, `aggregate`) go through a keyed exchange and must stay exact across
/// the join. Programs whose output depends on the number of workers (broadcasts) are left out.
#[test]
fn random_programs_with_a_process_joining() {
    let mut failures = Vec::new();
    let mut ran = 0;
    let wanted = (seeds().len() / 3).max(1);
    let candidates: Vec<u64> = match std::env::var("TIMELY_RANDOM_SEED") {
        Ok(_) => seeds(),
        Err(_) => (0..5_000).collect(),
    };
    for seed in candidates {
        if ran == wanted {
            break;
        }
        let program = Arc::new(generate(seed));
        let description = program.describe();
        if ["broadcast"].iter().any(|stage| description.contains(stage)) {
            continue;
        }
        let one = reference(&program, 2).expect("generated programs stay small");
        let mut expected: Vec<(u64, u64)> =
            one.iter().cloned().cycle().take(one.len() * program.copies).collect();
        expected.sort();
        let epoch = Rng::new(seed).below(program.max_epoch + 1);
        ran += 1;
        if let Err(failure) = run(seed, &program, 2, &Arc::new(expected), Some(epoch)) {
            failures.push(format!("(join after epoch {epoch}) {failure}"));
        }
    }
    assert_eq!(ran, wanted, "too few generated programs qualify");
    assert!(failures.is_empty(), "{} of {ran} programs failed:\n{}", failures.len(), failures.join("\n"));
}
