//! `BytesSlab` as a network receive loop uses it: order and contents across buffer boundaries,
//! messages larger than a buffer, the copying bound, and recycling.

use std::collections::VecDeque;

use crate::common::{encode, message, receive_stream, Received, Rng, HEADER};
use proptest::prelude::*;
use timely_bytes::{Bytes, BytesSlab};

/// Receives `messages` through a slab of `1 << log2` byte buffers, reads of random sizes up to
/// `max_read`, keeping the last `window` messages alive; returns the messages in arrival order
/// (only those still kept, i.e. all of them when `window` is `usize::MAX`).
fn run(
    slab: &mut BytesSlab,
    messages: &[Vec<u8>],
    max_read: usize,
    seed: u64,
    window: usize,
    mut check: impl FnMut(&Received),
) -> VecDeque<Bytes> {
    let stream = encode(messages);
    let mut rng = Rng::new(seed);
    let mut kept = VecDeque::new();
    receive_stream(
        slab,
        &stream,
        || 1 + rng.below(max_read),
        |received| {
            check(&received);
            kept.push_back(received.body);
            if kept.len() > window {
                kept.pop_front();
            }
        },
    );
    kept
}

fn bodies(kept: &VecDeque<Bytes>) -> Vec<Vec<u8>> {
    kept.iter().map(|b| b.to_vec()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Every byte written is handed out exactly once, in order, whatever the message and read
    /// sizes, including messages several times larger than a buffer; and the copying stays within
    /// the documented bound.
    #[test]
    fn hands_out_exactly_the_stream(
        log2 in 3usize..7,
        sizes in prop::collection::vec(0usize..300, 0..40),
        max_read in 1usize..400,
        seed in any::<u64>(),
    ) {
        let messages: Vec<Vec<u8>> =
            sizes.iter().enumerate().map(|(seq, &len)| message(seq, len)).collect();
        let default = 1usize << log2;
        let mut slab = BytesSlab::new(log2);
        let mut copied_total = 0;
        let kept = run(&mut slab, &messages, max_read, seed, usize::MAX, |received| {
            let framed = HEADER + received.body.len();
            // Bytes received before the length was known (< HEADER) may move once more;
            // everything else moves at most once, and only a strict prefix of the message.
            assert!(received.copied < framed + HEADER, "copied {} of {framed}", received.copied);
            if framed <= default {
                assert!(received.switches <= 1, "{} switches for {framed} bytes", received.switches);
                assert!(received.copied < framed.max(1));
            } else {
                assert!(received.switches <= 2);
            }
            copied_total += received.copied;
        });
        prop_assert_eq!(bodies(&kept), messages);
        prop_assert_eq!(slab.stats().bytes_copied, copied_total);
    }
}

#[test]
fn message_much_larger_than_buffer() {
    let big = message(7, 10_000);
    let mut slab = BytesSlab::new(6); // 64-byte buffers
    let kept = run(&mut slab, &[message(1, 50), big.clone(), message(2, 3)], 100, 1, usize::MAX, |_| {});
    assert_eq!(bodies(&kept), vec![message(1, 50), big, message(2, 3)]);
    assert!(slab.stats().bytes_allocated >= 10_004);
}

/// Counts the buffers the slab has allocated after each of `rounds` rounds of `pattern`.
fn allocations_per_round(log2: usize, pattern: &[usize], rounds: usize, window: usize) -> Vec<usize> {
    let mut slab = BytesSlab::new(log2);
    let mut kept: VecDeque<Bytes> = VecDeque::new();
    let mut counts = Vec::new();
    for round in 0..rounds {
        let messages: Vec<Vec<u8>> =
            pattern.iter().enumerate().map(|(seq, &len)| message(round + seq, len)).collect();
        let got = run(&mut slab, &messages, 97, round as u64, window, |_| {});
        // Keep the window across rounds too: the oldest messages are dropped as new ones come.
        for body in got {
            kept.push_back(body);
            if kept.len() > window {
                kept.pop_front();
            }
        }
        counts.push(slab.buffers_allocated());
    }
    counts
}

#[test]
fn steady_state_allocates_nothing_when_messages_are_dropped_at_once() {
    let pattern = [10, 200, 0, 63, 64, 65, 1000, 5, 300];
    let counts = allocations_per_round(8, &pattern, 30, 0);
    assert_eq!(counts[2], counts[29], "allocations per round: {counts:?}");
    // Dropped at once, a buffer is reused in place: only growth allocates.
    assert!(counts[29] <= 3, "{counts:?}");
}

#[test]
fn steady_state_allocates_nothing_with_messages_held_for_a_while() {
    let pattern = [10, 200, 0, 63, 64, 65, 1000, 5, 300, 17, 250];
    for window in [1, 4, 16] {
        let counts = allocations_per_round(8, &pattern, 30, window);
        assert_eq!(counts[10], counts[29], "window {window}: {counts:?}");
    }
}

/// Receives `data` as one read and hands it out as one message.
fn pass(slab: &mut BytesSlab, data: &[u8]) -> Bytes {
    slab.ensure_capacity(data.len());
    slab.empty()[..data.len()].copy_from_slice(data);
    slab.make_valid(data.len());
    slab.extract(data.len())
}

#[test]
fn recycles_buffers_left_behind_once_all_their_bytes_are_dropped() {
    let mut slab = BytesSlab::new(4); // 16 bytes: two 8-byte messages per buffer
    let mut held: Vec<Bytes> = (0..16).map(|seq| pass(&mut slab, &message(seq, 8))).collect();
    assert_eq!(slab.buffers_allocated(), 8);
    assert_eq!(slab.stats().buffers_pending, 7);
    // Free buffers 0, 1 and 2 entirely, and buffer 3 only half.
    drop(held.drain(..7));
    let again: Vec<Bytes> = (0..4).map(|seq| pass(&mut slab, &message(100 + seq, 16))).collect();
    let stats = slab.stats();
    assert_eq!(stats.buffers_reused, 3, "{stats:?}");
    assert_eq!(stats.buffers_allocated, 9, "the half-held buffer is not reused: {stats:?}");
    assert_eq!(stats.bytes_copied, 0);
    for (seq, body) in (7..).zip(&held) {
        assert_eq!(&body[..], &message(seq, 8)[..], "held messages are untouched");
    }
    for (seq, body) in (100..).zip(&again) {
        assert_eq!(&body[..], &message(seq, 16)[..]);
    }
}
