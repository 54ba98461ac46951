//! Network events: the frames a process's network threads move, recorded as
//! `network_send_start` (with the sending worker) and `network_recv_end` (with each receiving
//! worker) rows. [`FrameRecorder`] is the [`FrameObserver`] a traced cluster process installs;
//! it runs on the network threads and only appends to the trace's [`NetworkSink`]. This module
//! must not decide when frames move (the transport's business) nor write files.

use std::sync::Arc;

use timely_communication::networking::MessageHeader;
use timely_communication::{FrameDirection, FrameObserver};
use timely_trace::{Kind, NetworkEvent, NetworkSink};

/// Records every data frame into a trace's network sink.
pub struct FrameRecorder {
    sink: NetworkSink,
}

impl FrameRecorder {
    /// A recorder into `sink`.
    pub fn new(sink: NetworkSink) -> Self {
        FrameRecorder { sink }
    }
}

impl FrameObserver for FrameRecorder {
    fn frame(&self, direction: FrameDirection, stamp: i64, header: &MessageHeader) {
        let event = |kind, worker: u64| NetworkEvent {
            stamp,
            kind,
            worker: worker as usize,
            channel: header.channel as i64,
            source_worker: header.source as i64,
            target_worker: worker as i64,
            seq: header.seqno as i64,
            bytes: header.length as i64,
        };
        match direction {
            FrameDirection::Sent => self.sink.record([NetworkEvent {
                worker: header.source as usize,
                ..event(Kind::NetworkSendStart, header.target_lower)
            }]),
            FrameDirection::Received => self.sink.record(
                (header.target_lower..header.target_upper).map(|target| event(Kind::NetworkRecvEnd, target)),
            ),
        }
    }
}

/// Tells two observers of every frame: a run's own and the trace's.
pub struct BothObservers(pub Arc<dyn FrameObserver>, pub Arc<dyn FrameObserver>);

impl FrameObserver for BothObservers {
    fn frame(&self, direction: FrameDirection, stamp: i64, header: &MessageHeader) {
        self.0.frame(direction, stamp, header);
        self.1.frame(direction, stamp, header);
    }
}
