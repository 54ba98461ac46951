//! Tests of the send side: whole frames per buffer, frames reported to an observer, partial writes.
use super::*;

/// Accepts at most `limit` bytes per call, to exercise partial writes.
struct Trickle {
    written: Vec<u8>,
    limit: usize,
}

impl Write for Trickle {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let take = bytes.len().min(self.limit);
        self.written.extend_from_slice(&bytes[..take]);
        Ok(take)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A sender from worker 0 to process 1 (workers 2 and 3) whose shipped buffers wait in the
/// returned queue.
fn sender_to_process_1() -> (ProcessSender, Receiver<Command>) {
    let (commands, pending) = crossbeam_channel::unbounded();
    let (_recycle, spare) = crossbeam_channel::unbounded();
    let sender = ProcessSender::new(
        1,
        2..4,
        0..2,
        &Queue { commands, spare, departed: Arc::default() },
        NetworkHealth::new(),
    );
    (sender, pending)
}

#[test]
fn shipped_buffers_hold_whole_frames_only() {
    let (mut sender, pending) = sender_to_process_1();
    // Sizes that fill a buffer exactly, overflow it, and exceed it alone.
    let lengths = [0, 10, SEND_BUFFER_BYTES - 3 * HEADER_BYTES - 10, 1, 70_000, 5, SEND_BUFFER_BYTES, 3];
    let mut sent = Vec::new();
    for (seqno, &length) in lengths.iter().enumerate() {
        let header = MessageHeader {
            channel: 7,
            source: 1,
            target_lower: 2,
            target_upper: 2 + seqno as u64 % 2 + 1,
            length: 0,
            seqno: seqno as u64,
        };
        // A writer that unwinds halfway leaves nothing behind for the walk to trip on.
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = sender.send_with(header, |out| {
                out.extend_from_slice(&[9; 100]);
                panic!("the encoder failed");
            });
        }));
        assert!(unwound.is_err());
        sender.send(header, &vec![seqno as u8; length]).expect("send");
        sent.push(MessageHeader { length: length as u64, ..header });
    }
    drop(sender);
    let buffers: Vec<Vec<u8>> = pending
        .try_iter()
        .map(|command| match command {
            Command::Data(buffer) => buffer,
            _ => panic!("a sender ships data only"),
        })
        .collect();
    assert!(buffers.len() >= 3, "several buffers shipped: {}", buffers.len());
    for buffer in &buffers {
        let walked: usize = headers_in(buffer).map(|header| header.required_bytes()).sum();
        assert_eq!(walked, buffer.len(), "a buffer ends at a frame boundary");
    }
    let walked: Vec<MessageHeader> = buffers.iter().flat_map(|buffer| headers_in(buffer)).collect();
    assert_eq!(walked, sent);
}

/// Records what it is told.
#[derive(Default)]
struct Log(std::sync::Mutex<Vec<(FrameDirection, i64, MessageHeader)>>);

impl FrameObserver for Log {
    fn frame(&self, direction: FrameDirection, time_ns: i64, header: &MessageHeader) {
        self.0.lock().expect("log").push((direction, time_ns, *header));
    }
}

#[test]
fn every_frame_of_a_batch_is_reported_sent_with_one_time() {
    let (mut sender, pending) = sender_to_process_1();
    let headers: Vec<MessageHeader> = (0..5)
        .map(|seqno| MessageHeader {
            channel: 4,
            source: 0,
            target_lower: 3,
            target_upper: 4,
            length: seqno,
            seqno,
        })
        .collect();
    for (index, header) in headers.iter().enumerate() {
        sender.send(*header, &vec![1; index]).expect("send");
        if index % 2 == 1 {
            sender.flush().expect("flush");
        }
    }
    drop(sender);
    let buffers: Vec<Vec<u8>> = pending
        .try_iter()
        .filter_map(|command| if let Command::Data(b) = command { Some(b) } else { None })
        .collect();
    assert_eq!(buffers.len(), 3);
    let log = Log::default();
    let before = clock::now_ns();
    report_sent(&log, before, &buffers);
    let reported = log.0.into_inner().expect("log");
    let expected: Vec<_> = headers.iter().map(|header| (FrameDirection::Sent, before, *header)).collect();
    assert_eq!(reported, expected);
}

#[test]
fn partial_vectored_writes_write_everything_in_order() {
    let buffers: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 3 + i as usize]).collect();
    let expected: Vec<u8> = buffers.concat();
    for limit in 1..8 {
        let mut sink = Trickle { written: Vec::new(), limit };
        write_all_vectored(&mut sink, &buffers).expect("a trickle accepts everything");
        assert_eq!(sink.written, expected, "limit {limit}");
    }
}
