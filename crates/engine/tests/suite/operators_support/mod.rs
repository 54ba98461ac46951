//! Shared by the operator tests (`operators_*.rs`), which test every operator and handle
//! through the public API only.
//!
//! Most tests build a dataflow around one or two inputs fed with `(time, record)` pairs
//! (`dataflow_output`), capture what reaches the end on every worker, and compare it with
//! a sequential reference computed in the test. Tests that must watch the engine step by
//! step (probes, capabilities, notifications, input handles) drive one worker in the test's
//! thread with `timely_engine::example` and the stepping helpers here.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};
use timely_engine::dataflow::operators::{Capability, Captured};
use timely_engine::dataflow::{ExchangeData, InputHandle, ProbeHandle, Scope, Stream};
use timely_engine::scheduling::Activator;
use timely_engine::{Config, Timestamp, Worker};

/// `(time, record)` pairs in time order.
pub type Timed = Vec<(u64, u64)>;

fn config(workers: usize) -> Config {
    if workers == 1 {
        Config::Thread
    } else {
        Config::Process(workers)
    }
}

/// Runs `func` on `workers` workers; fails the test if a worker fails.
pub fn run<R: Send + 'static>(
    workers: usize,
    func: impl Fn(&mut Worker) -> R + Send + Sync + 'static,
) -> Vec<R> {
    timely_engine::execute(config(workers), func).expect("execute failed")
}

/// `count` records over times 0, 1, 2, ... (ten per time), with repeated values.
pub fn sample(count: u64) -> Timed {
    (0..count).map(|i| (i / 10, (i * 37 + 11) % 53)).collect()
}

/// Feeds `records` into `input` and closes it: every worker advances through the same
/// times, worker `index` sends every `peers`-th record.
pub fn feed(input: &mut InputHandle<u64, u64>, records: &[(u64, u64)], index: usize, peers: usize) {
    for (i, &(time, record)) in records.iter().enumerate() {
        if time > *input.time() {
            input.advance_to(time);
        }
        if i % peers == index {
            input.send(record);
        }
    }
    input.close();
}

/// Builds `build` over one input per element of `inputs` on `workers` workers, feeds the
/// inputs, and returns the `(time, record)`s that reach the stream `build` returns.
pub fn dataflow_output<D, F>(workers: usize, inputs: Vec<Timed>, build: F) -> Vec<(u64, D)>
where
    D: ExchangeData + Ord,
    F: Fn(&[Stream<u64, u64>]) -> Stream<u64, D> + Send + Sync + 'static,
{
    let captured = Captured::new();
    let shared = captured.clone();
    run(workers, move |worker| {
        let mut handles: Vec<InputHandle<u64, u64>> = inputs.iter().map(|_| InputHandle::new()).collect();
        worker.dataflow(|scope| {
            let streams: Vec<_> = handles.iter_mut().map(|h| scope.input_from(h)).collect();
            build(&streams).capture_into(&shared);
        });
        for (handle, records) in handles.iter_mut().zip(inputs.iter()) {
            feed(handle, records, worker.index(), worker.peers());
        }
    });
    captured.extract()
}

/// `dataflow_output` for one input.
pub fn unary_output<D, F>(workers: usize, records: Timed, build: F) -> Vec<(u64, D)>
where
    D: ExchangeData + Ord,
    F: Fn(&Stream<u64, u64>) -> Stream<u64, D> + Send + Sync + 'static,
{
    dataflow_output(workers, vec![records], move |streams| build(&streams[0]))
}

/// The sorted `(time, output)` pairs of applying `logic` to each record sequentially.
pub fn reference<D: Ord, I: IntoIterator<Item = (u64, D)>>(
    records: &[(u64, u64)],
    logic: impl Fn(u64, u64) -> I,
) -> Vec<(u64, D)> {
    let mut out: Vec<_> = records.iter().flat_map(|&(t, x)| logic(t, x)).collect();
    out.sort();
    out
}

/// Steps `worker` until `condition` holds; fails after a minute. (A bound on the number of
/// steps failed on a loaded machine: a worker that does not park can take thousands of steps
/// while another worker's thread waits for a core.)
pub fn step_until(worker: &mut Worker, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < deadline, "condition still false after 60 s of steps");
        worker.step_or_park(Some(Duration::from_millis(1)));
    }
}

/// Steps `worker` a few times, to let anything that could happen happen.
pub fn step_a_while(worker: &mut Worker) {
    for _ in 0..50 {
        worker.step();
    }
}

/// A source that sends nothing and hands its capability and activator to the test, which
/// then controls the source's output frontier from outside (as an input handle does).
#[allow(clippy::type_complexity)]
pub fn held_capability<T: Timestamp>(
    scope: &Scope<T>,
) -> (Stream<T, u64>, Rc<RefCell<Option<Capability<T>>>>, Activator) {
    let slot = Rc::new(RefCell::new(None));
    let activator = Rc::new(RefCell::new(None));
    let (s, a) = (slot.clone(), activator.clone());
    let stream = scope.source("Held", move |capability, info| {
        *s.borrow_mut() = Some(capability);
        *a.borrow_mut() = Some(info.activator);
        |_output| {}
    });
    let activator = activator.borrow_mut().take().expect("the source's constructor ran");
    (stream, slot, activator)
}

/// The probe's frontier as a sorted vector.
pub fn frontier<T: Timestamp>(probe: &ProbeHandle<T>) -> Vec<T> {
    let mut elements = probe.frontier().into_elements();
    elements.sort();
    elements
}

/// Per-time sums of `value(x)` grouped by `key(x)`, sorted.
pub fn grouped(
    records: &[(u64, u64)],
    key: impl Fn(u64) -> u64,
    value: impl Fn(u64) -> u64,
) -> Vec<(u64, (u64, u64))> {
    let mut groups: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for &(t, x) in records {
        *groups.entry((t, key(x))).or_insert(0) += value(x);
    }
    groups.into_iter().map(|((t, k), v)| (t, (k, v))).collect()
}
