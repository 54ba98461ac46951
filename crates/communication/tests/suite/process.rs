//! The multi-threaded allocator: all-to-all exchange, events, wake-ups and type checks.

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use timely_communication::{initialize, Allocator, ChannelRecord, Config, Pull, Push};

const LIMIT: Duration = Duration::from_secs(60);
const MESSAGES: usize = 300;
const PAIRS: usize = 3;
const WORDS: usize = 7;
const VECTORS: usize = 11;

/// Takes the pending event ids.
fn drain_events(allocator: &Allocator) -> Vec<usize> {
    allocator.events().borrow_mut().drain(..).collect()
}

/// The sequence numbers each sender sends on a channel that carries every `stride`-th message.
fn expected(stride: usize) -> Vec<usize> {
    (0..MESSAGES).step_by(stride).collect()
}

/// Every worker sends numbered messages to every worker on three interleaved channels, then
/// receives the way an engine does: pulls only the channels named by events, parks in between.
/// Returns, per channel, the sequence numbers received from each sender in arrival order.
fn exchange_worker(mut allocator: Allocator) -> [BTreeMap<usize, Vec<usize>>; 3] {
    let (index, peers) = (allocator.index(), allocator.peers());
    let (mut pairs_out, mut pairs_in) = allocator.allocate::<(usize, usize)>(PAIRS);
    let (mut words_out, mut words_in) = allocator.allocate::<String>(WORDS);
    let (mut vectors_out, mut vectors_in) = allocator.allocate::<Vec<usize>>(VECTORS);
    assert_eq!((pairs_out.len(), words_out.len(), vectors_out.len()), (peers, peers, peers));

    for seq in 0..MESSAGES {
        for target in 0..peers {
            pairs_out[target].send((index, seq));
            if seq % 2 == 0 {
                words_out[target].send(format!("{index}:{seq}"));
            }
            if seq % 3 == 0 {
                vectors_out[target].send(vec![index, seq, target]);
            }
        }
    }
    pairs_out.iter_mut().for_each(|pusher| pusher.done());
    words_out.iter_mut().for_each(|pusher| pusher.done());
    vectors_out.iter_mut().for_each(|pusher| pusher.done());
    allocator.release();

    let wanted = [MESSAGES, expected(2).len(), expected(3).len()].map(|count| count * peers);
    let mut received: [BTreeMap<usize, Vec<usize>>; 3] = Default::default();
    let count = |received: &[BTreeMap<usize, Vec<usize>>; 3], channel: usize| -> usize {
        received[channel].values().map(Vec::len).sum()
    };
    while (0..3).any(|channel| count(&received, channel) < wanted[channel]) {
        allocator.await_events(None);
        allocator.receive();
        for id in drain_events(&allocator) {
            match id {
                PAIRS => {
                    while let Some((source, seq)) = pairs_in.recv() {
                        received[0].entry(source).or_default().push(seq);
                    }
                }
                WORDS => {
                    while let Some(word) = words_in.recv() {
                        let (source, seq) = word.split_once(':').expect("source:seq");
                        received[1].entry(source.parse().unwrap()).or_default().push(seq.parse().unwrap());
                    }
                }
                VECTORS => {
                    while let Some(vector) = vectors_in.recv() {
                        assert_eq!(vector.len(), 3);
                        assert_eq!(vector[2], index, "delivered to the wrong worker");
                        received[2].entry(vector[0]).or_default().push(vector[1]);
                    }
                }
                other => {
                    panic!("worker {index}: event for channel {other}, which was never allocated")
                }
            }
        }
    }
    assert!(pairs_in.recv().is_none() && words_in.recv().is_none() && vectors_in.recv().is_none());
    assert_eq!(
        allocator.allocations(),
        &[
            ChannelRecord { identifier: PAIRS, type_name: std::any::type_name::<(usize, usize)>() },
            ChannelRecord { identifier: WORDS, type_name: std::any::type_name::<String>() },
            ChannelRecord { identifier: VECTORS, type_name: std::any::type_name::<Vec<usize>>() },
        ]
    );
    received
}

fn exchange(workers: usize) {
    let results =
        common::within(LIMIT, move || initialize(Config::Process(workers), exchange_worker).unwrap().join());
    assert_eq!(results.len(), workers);
    for (index, result) in results.into_iter().enumerate() {
        let received = result.unwrap_or_else(|error| panic!("{error}"));
        for (channel, stride) in [1, 2, 3].into_iter().enumerate() {
            // Exactly the expected messages from every sender, in the order that sender sent them.
            let expected: BTreeMap<usize, Vec<usize>> =
                (0..workers).map(|source| (source, expected(stride))).collect();
            assert_eq!(received[channel], expected, "worker {index}, channel #{channel}");
        }
    }
}

#[test]
fn exchange_with_one_worker() {
    exchange(1);
}

#[test]
fn exchange_with_two_workers() {
    exchange(2);
}

#[test]
fn exchange_with_four_workers() {
    exchange(4);
}

#[test]
fn mismatched_types_panic_naming_the_channel_and_both_types() {
    let results = common::within(LIMIT, || {
        initialize(Config::Process(2), |mut allocator| {
            if allocator.index() == 0 {
                drop(allocator.allocate::<u64>(5));
            } else {
                drop(allocator.allocate::<String>(5));
            }
        })
        .unwrap()
        .join()
    });
    let errors: Vec<String> =
        results.iter().filter_map(|result| result.as_ref().err()).map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 1, "exactly the second worker to allocate fails: {results:?}");
    for text in ["channel 5", "u64", "alloc::string::String"] {
        assert!(errors[0].contains(text), "{text:?} missing from {:?}", errors[0]);
    }
}

#[test]
fn allocating_a_channel_twice_on_one_worker_panics() {
    let results = common::within(LIMIT, || {
        initialize(Config::Process(2), |mut allocator| {
            drop(allocator.allocate::<u8>(9));
            if allocator.index() == 1 {
                drop(allocator.allocate::<u8>(9));
            }
        })
        .unwrap()
        .join()
    });
    assert!(results[0].is_ok());
    assert!(results[1].as_ref().unwrap_err().message.contains("channel 9 allocated twice"), "{results:?}");
}

#[test]
fn a_push_wakes_a_worker_parked_indefinitely() {
    let results = common::within(LIMIT, || {
        initialize(Config::Process(2), |mut allocator| {
            let (mut pushers, mut puller) = allocator.allocate::<u32>(0);
            if allocator.index() == 0 {
                std::thread::sleep(Duration::from_millis(200));
                pushers[1].send(42);
                return None;
            }
            let start = Instant::now();
            loop {
                allocator.receive();
                if !drain_events(&allocator).is_empty() {
                    return Some((puller.recv(), start.elapsed()));
                }
                allocator.await_events(None);
            }
        })
        .unwrap()
        .join()
    });
    let (value, waited) = results[1].clone().unwrap().expect("worker 1 received");
    assert_eq!(value, Some(42));
    assert!(waited >= Duration::from_millis(150), "woke after {waited:?}, before anything was sent");
}

#[test]
fn remote_events_arrive_through_receive() {
    let barrier = Arc::new(Barrier::new(2));
    let results = common::within(LIMIT, move || {
        initialize(Config::Process(2), move |mut allocator| {
            let (mut pushers, mut puller) = allocator.allocate::<u32>(6);
            if allocator.index() == 0 {
                pushers[1].send(7);
                barrier.wait();
                return Ok(());
            }
            barrier.wait();
            // The data is there, but its notice waits in the mailbox until `receive`.
            if !drain_events(&allocator).is_empty() {
                return Err("events before receive");
            }
            allocator.await_events(None);
            allocator.receive();
            if drain_events(&allocator) != [6] {
                return Err("receive did not report channel 6");
            }
            match puller.recv() {
                Some(7) => Ok(()),
                _ => Err("wrong data"),
            }
        })
        .unwrap()
        .join()
    });
    assert_eq!(results, vec![Ok(Ok(())), Ok(Ok(()))]);
}

#[test]
fn sending_to_a_finished_worker_is_harmless() {
    let barrier = Arc::new(Barrier::new(2));
    let results = common::within(LIMIT, move || {
        initialize(Config::Process(2), move |mut allocator| {
            let (mut pushers, _puller) = allocator.allocate::<u32>(0);
            if allocator.index() == 1 {
                drop((pushers, _puller, allocator));
                barrier.wait();
            } else {
                barrier.wait();
                pushers[1].send(1);
                pushers[0].send(2);
                assert_eq!(drain_events(&allocator), [0], "only the local push is an event");
            }
        })
        .unwrap()
        .join()
    });
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}
