//! `Bytes` and `BytesSlab` across threads: pieces written and dropped on other threads, then
//! recovered; a receive thread feeding consumers that drop what they get.

use std::sync::mpsc;
use std::thread;

use crate::common::{encode, message, receive_stream, Rng};
use timely_bytes::{Bytes, BytesSlab};

#[test]
fn pieces_written_and_dropped_elsewhere_then_recovered() {
    const PIECES: usize = 8;
    const PIECE: usize = 1000;
    let mut rest = Bytes::from(vec![0u8; PIECES * PIECE]);
    let pieces: Vec<Bytes> = (0..PIECES).map(|_| rest.extract_to(PIECE)).collect();
    assert!(rest.is_empty());
    // While the pieces are alive elsewhere, the allocation cannot be recovered.
    let (release, released) = mpsc::channel::<()>();
    let (started, start) = mpsc::channel::<()>();
    let handle = thread::spawn(move || {
        let workers: Vec<_> = pieces
            .into_iter()
            .enumerate()
            .map(|(i, mut piece)| {
                thread::spawn(move || {
                    piece.iter_mut().for_each(|b| *b = i as u8 + 1);
                    piece
                })
            })
            .collect();
        let pieces: Vec<Bytes> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        started.send(()).unwrap();
        released.recv().unwrap();
        drop(pieces); // dropped on this thread, not the owner's
    });
    start.recv().unwrap();
    let rest = rest.try_recover().expect_err("the pieces are still alive");
    release.send(()).unwrap();
    handle.join().unwrap();
    let recovered = rest.try_recover().expect("all pieces were dropped");
    for (i, piece) in recovered.chunks(PIECE).enumerate() {
        assert!(piece.iter().all(|&b| b == i as u8 + 1), "piece {i} lost its writes");
    }
}

#[test]
fn concurrent_writers_never_disturb_each_other() {
    let mut rest = Bytes::from(vec![0u8; 4 * 4096]);
    let quarters: Vec<Bytes> = (0..4).map(|_| rest.extract_to(4096)).collect();
    let handles: Vec<_> = quarters
        .into_iter()
        .enumerate()
        .map(|(i, mut quarter)| {
            thread::spawn(move || {
                for round in 0..200u8 {
                    quarter.iter_mut().for_each(|b| *b = round ^ i as u8);
                    assert!(quarter.iter().all(|&b| b == round ^ i as u8));
                }
                quarter
            })
        })
        .collect();
    let mut quarters: Vec<Bytes> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    // Put the quarters back together (each follows the previous one), then recover.
    let mut whole = quarters.remove(0);
    for quarter in quarters {
        whole.try_merge(quarter).expect("quarters are adjacent");
    }
    whole.try_merge(rest).expect("the empty rest follows the last quarter");
    let vec = whole.try_recover().expect("only handle");
    assert!(vec.chunks(4096).enumerate().all(|(i, q)| q.iter().all(|&b| b == 199 ^ i as u8)));
}

/// A receive thread hands messages to a consumer thread through a bounded channel; the consumer
/// checks and drops them. Buffers come back to the slab, so it allocates only as many as the
/// messages in flight can pin, however many messages pass.
#[test]
fn receive_thread_recycles_buffers_dropped_by_a_consumer() {
    const IN_FLIGHT: usize = 4;
    const MESSAGES: usize = 3000;
    let mut rng = Rng::new(42);
    // Messages up to a quarter of a 4 KiB buffer.
    let messages: Vec<Vec<u8>> = (0..MESSAGES).map(|seq| message(seq, rng.below(1024))).collect();
    let stream = encode(&messages);
    let (send, receive) = mpsc::sync_channel::<Bytes>(IN_FLIGHT);
    let consumer = thread::spawn(move || {
        let mut count = 0;
        for (seq, body) in receive.iter().enumerate() {
            assert_eq!(&body[..], &message(seq, body.len())[..]);
            count += 1;
        }
        count
    });
    let mut slab = BytesSlab::new(12);
    let mut reads = Rng::new(7);
    receive_stream(
        &mut slab,
        &stream,
        || 1 + reads.below(3000),
        |received| {
            send.send(received.body).unwrap();
        },
    );
    drop(send);
    assert_eq!(consumer.join().unwrap(), MESSAGES);
    // Each pinned buffer holds a live message: in the channel, or held by either thread.
    let bound = 1 + IN_FLIGHT + 2;
    let stats = slab.stats();
    assert!(stats.buffers_allocated <= bound, "{stats:?}");
    assert!(stats.buffers_reused > 100, "{stats:?}");
    // Everything handed out is gone now: every buffer left behind is free again.
    slab.release_spare_buffers();
    let stats = slab.stats();
    assert_eq!((stats.buffers_pending, stats.buffers_spare), (0, 0), "{stats:?}");
}
