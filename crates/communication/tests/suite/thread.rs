//! The single-worker allocator: local FIFO channels and their events.

use crate::common;

use std::time::Duration;

use timely_communication::allocator::thread::ThreadBuilder;
use timely_communication::{Allocator, AllocatorBuilder, ChannelRecord, Config, Pull, Push};

fn allocator() -> Allocator {
    AllocatorBuilder::Thread(ThreadBuilder).build()
}

fn drain_events(allocator: &Allocator) -> Vec<usize> {
    allocator.events().borrow_mut().drain(..).collect()
}

#[test]
fn one_worker_with_index_zero() {
    let allocator = allocator();
    assert_eq!((allocator.index(), allocator.peers()), (0, 1));
    let builders = Config::Thread.try_build().unwrap();
    assert_eq!(builders.len(), 1);
    assert!(matches!(builders.into_iter().next().unwrap().build(), Allocator::Thread(_)));
}

#[test]
fn push_pull_is_fifo_and_records_events() {
    let mut allocator = allocator();
    let (mut pushers, mut puller) = allocator.allocate::<u64>(3);
    assert_eq!(pushers.len(), 1);
    assert!(puller.recv().is_none());
    assert!(drain_events(&allocator).is_empty());

    for value in 0..100 {
        pushers[0].send(value);
    }
    let events = drain_events(&allocator);
    assert!(!events.is_empty() && events.iter().all(|&id| id == 3), "events {events:?}");

    let received: Vec<u64> = std::iter::from_fn(|| puller.recv()).collect();
    assert_eq!(received, (0..100).collect::<Vec<_>>());
    assert!(puller.pull().is_none());
}

#[test]
fn push_takes_the_element_and_flush_records_nothing() {
    let mut allocator = allocator();
    let (mut pushers, mut puller) = allocator.allocate::<String>(0);
    let mut slot = Some("hello".to_string());
    pushers[0].push(&mut slot);
    assert!(slot.is_none());
    assert_eq!(drain_events(&allocator), vec![0]);
    pushers[0].done();
    assert!(drain_events(&allocator).is_empty());
    assert_eq!(puller.pull().take().as_deref(), Some("hello"));
}

#[test]
fn channels_are_separate_and_events_name_them() {
    let mut allocator = allocator();
    let (mut numbers, mut numbers_in) = allocator.allocate::<u32>(1);
    let (mut words, mut words_in) = allocator.allocate::<String>(2);
    numbers[0].send(10);
    words[0].send("a".to_string());
    numbers[0].send(11);
    assert_eq!(drain_events(&allocator), vec![1, 2, 1]);
    assert_eq!(numbers_in.recv(), Some(10));
    assert_eq!(numbers_in.recv(), Some(11));
    assert_eq!(numbers_in.recv(), None);
    assert_eq!(words_in.recv().as_deref(), Some("a"));
    assert_eq!(words_in.recv(), None);
}

#[test]
fn allocations_are_recorded_in_order() {
    let mut allocator = allocator();
    let _ = allocator.allocate::<u32>(5);
    let _ = allocator.allocate::<Vec<String>>(2);
    assert_eq!(
        allocator.allocations(),
        &[
            ChannelRecord { identifier: 5, type_name: "u32" },
            ChannelRecord { identifier: 2, type_name: std::any::type_name::<Vec<String>>() },
        ]
    );
}

#[test]
#[should_panic(expected = "channel 4 allocated twice")]
fn allocating_a_channel_twice_panics() {
    let mut allocator = allocator();
    let _ = allocator.allocate::<u32>(4);
    let _ = allocator.allocate::<u32>(4);
}

#[test]
fn await_events_returns_when_events_are_pending() {
    common::within(Duration::from_secs(10), || {
        let mut allocator = allocator();
        let (mut pushers, _puller) = allocator.allocate::<u8>(0);
        pushers[0].send(1);
        // Would park forever if pending events were ignored.
        allocator.await_events(None);
    });
}

#[test]
fn await_events_returns_after_the_timeout() {
    common::within(Duration::from_secs(10), || {
        allocator().await_events(Some(Duration::from_millis(20)));
    });
}
