//! The dataflow that the tests of dataflows built during leaves build, feed and check: an
//! exchange and a keyed count of what the workers feed, recorded so that a test can compare
//! them with a sequential program's results. Shared by `leaving_dataflows.rs` and
//! `leaving_joined_dataflows.rs`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use timely_engine::dataflow::{InputHandle, ProbeHandle};
use timely_engine::Worker;

/// Distinct keys of the count.
pub const KEYS: u64 = 5;

/// What the workers saw of one counted dataflow.
#[derive(Default)]
pub struct Seen {
    /// `(time, record)` of every record fed, and of every record received.
    pub fed: Vec<(u64, u64)>,
    pub received: Vec<(u64, u64)>,
    /// `(time, key, count)`.
    pub counts: Vec<(u64, u64, u64)>,
    /// `(worker, time, record)` of every broadcast copy received.
    pub broadcast: Vec<(usize, u64, u64)>,
    /// Per worker that built it during a leave: the workers leaving and gone when it did.
    pub built_during: Vec<(usize, Vec<usize>, Vec<usize>)>,
}

/// Builds the counted dataflow on `worker`: an exchange and a keyed count of what it feeds.
pub fn build_counted(
    worker: &mut Worker,
    seen: &Arc<Mutex<Seen>>,
) -> (InputHandle<u64, u64>, ProbeHandle<u64>) {
    build_parts(worker, seen, Parts { exchange: true, count: true, broadcast: false })
}

/// Feeds `rounds` rounds into `input`: in each up to `records` new records (increasing from
/// `*next`, so distinct across workers that start apart), recorded in `seen`, stepping until
/// `probe` passes the round in half of them (at random); then closes the input and steps
/// until the dataflow completes.
#[allow(clippy::too_many_arguments)]
pub fn feed_random_rounds(
    worker: &mut Worker,
    mut input: InputHandle<u64, u64>,
    probe: &ProbeHandle<u64>,
    seen: &Mutex<Seen>,
    rng: &mut Rng,
    rounds: u64,
    records: u64,
    next: &mut u64,
) {
    for round in 0..rounds {
        let mine: Vec<u64> = (0..rng.below(records + 1))
            .map(|_| {
                *next += 1 + rng.below(3);
                *next
            })
            .collect();
        seen.lock().unwrap().fed.extend(mine.iter().map(|&x| (round, x)));
        mine.into_iter().for_each(|x| input.send(x));
        input.advance_to(round + 1);
        if rng.below(2) == 0 {
            worker.step_while(|| probe.less_than(&(round + 1)));
        }
    }
    input.close();
    worker.step_while(|| !probe.done());
}

/// Which parts of the counted dataflow to build.
#[derive(Clone, Copy, Debug)]
pub struct Parts {
    /// A plain exchange of the records, which are recorded where they arrive.
    pub exchange: bool,
    /// A keyed count (`count_by_key`) of the records modulo [`KEYS`].
    pub count: bool,
    /// A broadcast of the records, recorded with the worker that received each copy.
    pub broadcast: bool,
}

/// Builds the `parts` of the counted dataflow on `worker`.
pub fn build_parts(
    worker: &mut Worker,
    seen: &Arc<Mutex<Seen>>,
    parts: Parts,
) -> (InputHandle<u64, u64>, ProbeHandle<u64>) {
    let mut input = InputHandle::new();
    let probe = ProbeHandle::new();
    let (received, counted, copies) = (seen.clone(), seen.clone(), seen.clone());
    let index = worker.index();
    worker.dataflow(|scope| {
        let records = scope.input_from(&mut input);
        if parts.exchange {
            records
                .exchange(|x: &u64| x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 9)
                .inspect_time(move |t, x| received.lock().unwrap().received.push((*t, *x)))
                .probe_with(&probe);
        }
        if parts.count {
            records
                .map(|x| x % KEYS)
                .count_by_key()
                .inspect_time(move |t, (key, n)| counted.lock().unwrap().counts.push((*t, *key, *n)))
                .probe_with(&probe);
        }
        if parts.broadcast {
            records
                .broadcast()
                .inspect_time(move |t, x| copies.lock().unwrap().broadcast.push((index, *t, *x)))
                .probe_with(&probe);
        }
    });
    (input, probe)
}

/// Checks that every record fed to the counted dataflow was delivered once and that every
/// key was counted once per time, with a sequential program's count. `what` names the
/// dataflow in the messages.
pub fn check_delivered_and_counted(seen: &Seen, what: &str) {
    check_delivered(seen, what);
    check_counted(seen, what);
}

/// Checks that every record fed was delivered once (by the exchange).
pub fn check_delivered(seen: &Seen, what: &str) {
    let (mut fed, mut received) = (seen.fed.clone(), seen.received.clone());
    fed.sort();
    received.sort();
    assert_eq!(received, fed, "{what}: every record fed is delivered once");
}

/// Checks that every key was counted once per time with a sequential program's count.
pub fn check_counted(seen: &Seen, what: &str) {
    let mut fed = seen.fed.clone();
    fed.sort();
    let mut expected: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    fed.iter().for_each(|&(time, x)| *expected.entry((time, x % KEYS)).or_default() += 1);
    let mut counts = seen.counts.clone();
    counts.sort();
    let expected: Vec<(u64, u64, u64)> =
        expected.into_iter().map(|((time, key), n)| (time, key, n)).collect();
    assert_eq!(counts, expected, "{what}: one count per time and key");
}

/// Checks that each of `workers` received one broadcast copy of every record fed, and that
/// no other worker received any.
pub fn check_broadcast(seen: &Seen, workers: &[usize], what: &str) {
    let mut fed = seen.fed.clone();
    fed.sort();
    for &worker in workers {
        let mut copies: Vec<(u64, u64)> =
            seen.broadcast.iter().filter(|(w, ..)| *w == worker).map(|&(_, t, x)| (t, x)).collect();
        copies.sort();
        assert_eq!(copies, fed, "{what}: worker {worker} receives one copy of every record fed");
    }
    let other = seen.broadcast.iter().find(|(w, ..)| !workers.contains(w));
    assert!(other.is_none(), "{what}: a copy reached a worker that never built the dataflow: {other:?}");
}

/// Checks the `parts` of a counted dataflow against a sequential program: records were fed,
/// each delivered once (exchange), each key counted once per time (count), and one copy of
/// each record reached every one of `workers` (broadcast).
pub fn check_parts(seen: &Seen, parts: Parts, workers: &[usize], what: &str) {
    assert!(!seen.fed.is_empty(), "{what}: records were fed");
    if parts.exchange {
        check_delivered(seen, what);
    }
    if parts.count {
        check_counted(seen, what);
    }
    if parts.broadcast {
        check_broadcast(seen, workers, what);
    }
}

/// A small deterministic random number generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    /// A generator seeded from `seed` (any value).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}
