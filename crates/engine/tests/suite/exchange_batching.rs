//! An exchanging edge sends records for a worker in batches of about an output buffer's size,
//! also when every batch it is given is split over several workers, and loses none.

use crate::common;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use timely_engine::dataflow::{InputHandle, ProbeHandle};
use timely_engine::logging::{Event, EventClasses};
use timely_engine::Config;

const LIMIT: Duration = Duration::from_secs(60);

/// Records worker 0 sends, at one time, through an exchange by `x % 2` to 2 workers.
const RECORDS: u64 = 20_480;

/// Per worker: the records it received (count, sum); and per `(source, target)`, the messages
/// of the exchange's channel and the records they carried.
type Outcome = (Vec<(u64, u64)>, HashMap<(usize, usize), (usize, usize)>);

fn exchange_once() -> Outcome {
    let sends: Arc<Mutex<Vec<(usize, usize, usize, usize)>>> = Arc::default();
    let shared = sends.clone();
    let received = timely_engine::execute(Config::Process(2), move |worker| {
        let sink = shared.clone();
        worker.install_logger(EventClasses::all(), move |_, events, _| {
            let mut sink = sink.lock().unwrap();
            for event in events.drain(..) {
                if let Event::Messages { send: true, channel, source, target, length, .. } = event.event {
                    sink.push((channel, source, target, length));
                }
            }
        });
        let mut input = InputHandle::new();
        let probe = ProbeHandle::new();
        let seen = Arc::new(Mutex::new((0u64, 0u64)));
        let counted = seen.clone();
        worker.dataflow(|scope| {
            scope
                .input_from(&mut input)
                .exchange(|x: &u64| *x % 2)
                .inspect(move |x| {
                    let mut seen = counted.lock().unwrap();
                    seen.0 += 1;
                    seen.1 += *x;
                })
                .probe_with(&probe);
        });
        if worker.index() == 0 {
            (0..RECORDS).for_each(|x| input.send(x));
        }
        input.advance_to(1);
        worker.step_while(|| probe.less_than(input.time()));
        let seen = *seen.lock().unwrap();
        seen
    })
    .unwrap();
    // The exchange's channel is the one with the most records sent on it.
    let sends = sends.lock().unwrap();
    let mut per_channel: HashMap<usize, usize> = HashMap::new();
    sends.iter().for_each(|&(channel, _, _, length)| *per_channel.entry(channel).or_default() += length);
    let exchange = per_channel.into_iter().max_by_key(|&(_, records)| records).unwrap().0;
    let mut messages: HashMap<(usize, usize), (usize, usize)> = HashMap::new();
    for &(_, source, target, length) in sends.iter().filter(|s| s.0 == exchange) {
        let entry = messages.entry((source, target)).or_default();
        entry.0 += 1;
        entry.1 += length;
    }
    (received, messages)
}

#[test]
fn split_batches_go_on_in_full_messages() {
    let (received, messages) = common::within(LIMIT, exchange_once);
    let half = RECORDS / 2;
    let evens: u64 = (0..RECORDS).step_by(2).sum();
    let odds: u64 = (1..RECORDS).step_by(2).sum();
    assert_eq!(received, vec![(half, evens), (half, odds)], "every record reaches its worker once");
    for target in 0..2 {
        let (count, records) = messages[&(0, target)];
        assert_eq!(records as u64, half, "records from worker 0 to worker {target}");
        // 10,240 records in batches of 1,024: 10 messages, not the 20 halves of the input's
        // 20 buffers.
        assert!(count <= 11, "worker 0 sent worker {target} {count} messages for {records} records");
    }
}
