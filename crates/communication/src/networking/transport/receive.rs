//! The receive side of a connection: the thread `timely:recv-{q}`.
//!
//! This module owns the loop that reads a connection into a [`BytesSlab`], cuts it into
//! messages, and hands each payload, without copying it, to the local workers its header
//! targets, waking them once per read; and the watch for a silent peer: reads
//! time out every [`Liveness::check_interval`], and a peer from which no byte (data or
//! heartbeat) arrived for longer than the peer timeout is lost. Heartbeats are consumed here
//! and never reach a worker. It must not write to the socket nor interpret payloads.
//!
//! A message is checked before delivery: a valid header ([`MessageHeader::try_read`]), a
//! source worker of the sending process, and at least one target worker in this process (only
//! those are delivered to). Anything else, or an end of stream without a goodbye frame, ends
//! the connection and is reported as a lost peer.

use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::Sender;
use timely_bytes::{Bytes, BytesSlab};

use super::{Alarm, Delivery, Payload};
use crate::networking::liveness::Silences;
use crate::networking::{Liveness, MessageHeader, NetworkError, HEADER_BYTES};
use crate::queue::QueueSender;

/// Receive buffers hold `1 << SLAB_LOG2` bytes (1 MiB), or more for a larger message.
pub const SLAB_LOG2: usize = 20;

/// What a receive thread has done, from [`super::Transport::receive_stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiveStats {
    /// Messages delivered (a broadcast counts once).
    pub messages: u64,
    /// Payload bytes delivered.
    pub payload_bytes: u64,
    /// Bytes the receive buffer copied: only the received part of a message that straddled the
    /// end of a buffer, never a complete message.
    pub bytes_copied: u64,
    /// Receive buffers allocated (constant once consumers keep up and drop their messages).
    pub buffers_allocated: u64,
    /// Heartbeat frames received (not delivered to anyone, not counted in `messages`).
    pub heartbeats: u64,
}

/// [`ReceiveStats`] written by the receive thread and read by anyone.
#[derive(Default)]
pub(super) struct SharedStats {
    messages: AtomicU64,
    payload_bytes: AtomicU64,
    bytes_copied: AtomicU64,
    buffers_allocated: AtomicU64,
    heartbeats: AtomicU64,
}

impl SharedStats {
    pub(super) fn snapshot(&self) -> ReceiveStats {
        ReceiveStats {
            messages: self.messages.load(Ordering::Relaxed),
            payload_bytes: self.payload_bytes.load(Ordering::Relaxed),
            bytes_copied: self.bytes_copied.load(Ordering::Relaxed),
            buffers_allocated: self.buffers_allocated.load(Ordering::Relaxed),
            heartbeats: self.heartbeats.load(Ordering::Relaxed),
        }
    }

    /// Publishes the totals so far.
    fn publish(&self, totals: &ReceiveStats) {
        self.messages.store(totals.messages, Ordering::Relaxed);
        self.payload_bytes.store(totals.payload_bytes, Ordering::Relaxed);
        self.bytes_copied.store(totals.bytes_copied, Ordering::Relaxed);
        self.buffers_allocated.store(totals.buffers_allocated, Ordering::Relaxed);
        self.heartbeats.store(totals.heartbeats, Ordering::Relaxed);
    }
}

/// Where a receive thread delivers messages from process `remote`.
pub(super) struct Inbound {
    remote: usize,
    /// Global indices of this process's workers (delivery targets).
    local_workers: Range<u64>,
    /// Global indices of the remote process's workers (valid sources).
    remote_workers: Range<u64>,
    /// One channel per local worker.
    deliver: Vec<QueueSender<Delivery>>,
    /// Local workers that received something since they were last woken.
    to_wake: Vec<bool>,
    alarm: Arc<Alarm>,
    totals: ReceiveStats,
    stats: Arc<SharedStats>,
    liveness: Liveness,
}

/// Starts the receive thread for `inbound` over `stream`; it posts its peer's index to `done`
/// when it ends.
pub(super) fn spawn(
    mut inbound: Inbound,
    mut stream: TcpStream,
    done: Sender<usize>,
) -> Result<JoinHandle<()>, NetworkError> {
    let remote = inbound.remote;
    stream.set_read_timeout(Some(inbound.liveness.check_interval())).map_err(|error| {
        NetworkError::io(format!("cannot set a read timeout on the socket to process {remote}"), &error)
    })?;
    std::thread::Builder::new()
        .name(format!("timely:recv-{remote}"))
        .spawn(move || {
            if let Err(reason) = inbound.run(&mut stream) {
                inbound.alarm.raise(remote, reason);
            }
            let _ = done.send(remote);
        })
        .map_err(|error| NetworkError::io(format!("cannot spawn thread timely:recv-{remote}"), &error))
}

impl Inbound {
    pub(super) fn new(
        remote: usize,
        local_workers: Range<u64>,
        remote_workers: Range<u64>,
        deliver: Vec<QueueSender<Delivery>>,
        alarm: Arc<Alarm>,
        stats: Arc<SharedStats>,
        liveness: Liveness,
    ) -> Inbound {
        Inbound {
            remote,
            to_wake: vec![false; deliver.len()],
            local_workers,
            remote_workers,
            deliver,
            alarm,
            totals: ReceiveStats::default(),
            stats,
            liveness,
        }
    }

    /// Receives until the peer's goodbye and end of stream (`Ok`), or fails with the reason.
    fn run(&mut self, stream: &mut TcpStream) -> Result<(), String> {
        let mut slab = BytesSlab::new(SLAB_LOG2);
        let alarm = Arc::clone(&self.alarm);
        let silence = Watch { silences: &alarm.silences, remote: self.remote };
        loop {
            let goodbye = self.deliver_complete(&mut slab);
            self.wake();
            self.publish(&slab);
            if goodbye.map_err(|error| error.to_string())? {
                return expect_end(stream, &slab, &silence);
            }
            slab.ensure_capacity(missing_bytes(slab.valid()));
            let read = read_some(stream, slab.empty(), &silence)?;
            if read == 0 {
                return Err("the connection closed without a goodbye".into());
            }
            slab.make_valid(read);
        }
    }

    /// Makes the totals so far, with the slab's, readable by other threads.
    fn publish(&mut self, slab: &BytesSlab) {
        let slab_stats = slab.stats();
        self.totals.bytes_copied = slab_stats.bytes_copied as u64;
        self.totals.buffers_allocated = slab_stats.buffers_allocated as u64;
        self.stats.publish(&self.totals);
    }

    /// Delivers every complete message at the front of the slab; `Ok(true)` after a goodbye.
    fn deliver_complete(&mut self, slab: &mut BytesSlab) -> Result<bool, NetworkError> {
        while let Some(header) = MessageHeader::try_read(slab.valid())? {
            if slab.valid().len() < header.required_bytes() {
                break;
            }
            drop(slab.extract(HEADER_BYTES));
            let payload = slab.extract(header.required_bytes() - HEADER_BYTES);
            if header.is_goodbye() {
                return Ok(true);
            }
            if header.is_heartbeat() {
                self.totals.heartbeats += 1;
                continue;
            }
            self.deliver(header, payload)?;
        }
        Ok(false)
    }

    /// Hands `payload` to every local worker in the header's targets.
    fn deliver(&mut self, header: MessageHeader, payload: Bytes) -> Result<(), NetworkError> {
        let targets = self.targets(&header)?;
        self.totals.messages += 1;
        self.totals.payload_bytes += header.length;
        if targets.len() == 1 {
            self.post(targets.start, header, Payload::Owned(payload));
        } else {
            let shared = Arc::new(payload);
            for local in targets {
                self.post(local, header, Payload::Shared(Arc::clone(&shared)));
            }
        }
        Ok(())
    }

    /// Sends one message to local worker `local`, to be woken later.
    fn post(&mut self, local: usize, header: MessageHeader, payload: Payload) {
        // A worker that dropped its receiver has finished; its messages are discarded.
        if self.deliver[local].send((header, payload)).is_ok() {
            self.to_wake[local] = true;
        }
    }

    /// The local worker indices the header targets, after checking its source.
    fn targets(&self, header: &MessageHeader) -> Result<Range<usize>, NetworkError> {
        let (local, remote) = (&self.local_workers, &self.remote_workers);
        let lower = header.target_lower.max(local.start);
        let upper = header.target_upper.min(local.end);
        let reason = if !remote.contains(&header.source) {
            format!("source worker {} is not a worker of process {} ({remote:?})", header.source, self.remote)
        } else if lower >= upper {
            format!(
                "targets [{}, {}) include no worker of this process ({local:?})",
                header.target_lower, header.target_upper
            )
        } else {
            let offset = |index: u64| (index - local.start) as usize;
            return Ok(offset(lower)..offset(upper));
        };
        Err(NetworkError::MalformedHeader { reason })
    }

    /// Wakes every local worker that received something since the last call.
    fn wake(&mut self) {
        for (local, flag) in self.to_wake.iter_mut().enumerate() {
            if std::mem::take(flag) {
                (self.alarm.wake)(local);
            }
        }
    }
}

/// How many more bytes the message at the front of `valid` needs (a header's worth when its
/// header is incomplete); at least one, so that a read has room.
fn missing_bytes(valid: &[u8]) -> usize {
    let needed = match MessageHeader::try_read(valid) {
        Ok(Some(header)) => header.required_bytes(),
        _ => HEADER_BYTES,
    };
    needed.saturating_sub(valid.len()).max(1)
}

/// The clock of one peer in the process's [`Silences`].
struct Watch<'a> {
    silences: &'a Silences,
    remote: usize,
}

impl Watch<'_> {
    fn heard(&self) {
        self.silences.heard(self.remote);
    }

    fn check(&self) -> Result<(), String> {
        self.silences.check(self.remote)
    }
}

/// Reads once, retrying interrupted reads and reads that timed out while the peer is within its
/// timeout; the error is the reason the connection failed.
fn read_some(stream: &mut TcpStream, into: &mut [u8], silence: &Watch<'_>) -> Result<usize, String> {
    loop {
        match stream.read(into) {
            Ok(read) => {
                silence.heard();
                return Ok(read);
            }
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                silence.check()?
            }
            Err(error) => return Err(format!("receiving failed: {error}")),
        }
    }
}

/// After the peer's goodbye, only the end of the stream may follow.
fn expect_end(stream: &mut TcpStream, slab: &BytesSlab, silence: &Watch<'_>) -> Result<(), String> {
    let mut probe = [0u8; 1];
    if slab.valid().is_empty() && read_some(stream, &mut probe, silence)? == 0 {
        Ok(())
    } else {
        Err("bytes followed the goodbye frame".into())
    }
}
