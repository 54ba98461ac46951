//! The receive side of a connection: the thread `timely:recv-{q}`.
//!
//! This module owns the loop that reads a connection into a [`BytesSlab`], cuts it into
//! messages, and hands each payload, without copying it, to the local workers its header
//! targets, waking them once per read (or, while the process's receive buffers hold more than
//! its budget, a region of a spill file: [`crate::networking::receive_budget`]); and the watch for a silent peer: reads
//! time out every [`Liveness::check_interval`], and a peer from which no byte (data or
//! heartbeat) arrived for longer than the peer timeout is lost. Heartbeats are consumed here
//! and never reach a worker, and so are clock frames: a probe is stamped with its arrival time
//! and handed to this connection's send thread as a reply (dropped when that thread's queue is
//! full, never waited for: the prober's burst has other probes), a reply becomes a
//! measurement of this process's clock ([`crate::networking::clock_sync`]). With a
//! [`FrameObserver`], every data frame is reported once, before delivery, with the time of the
//! read that completed it (see [`crate::networking::observe`]). It must not write to the socket
//! nor interpret payloads.
//!
//! Memory follows the bytes that arrived, not what a header claims: the receive buffer grows
//! (doubling) as a message's bytes come in ([`read_room`]), so a peer that announces a large
//! message and sends little of it costs about twice what it sent, and a length over
//! [`crate::networking::MAX_MESSAGE_BYTES`] ends the connection at once.
//!
//! A message is checked before delivery: a valid header ([`MessageHeader::try_read`]), a
//! source worker of the sending process, and at least one target worker in this process (only
//! those are delivered to). Anything else, or an end of stream without a goodbye frame, ends
//! the connection and is reported as a lost peer.

use std::io::{ErrorKind, Read};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::Sender;
use timely_bytes::{Bytes, BytesSlab};

use super::alarm::Alarm;
use super::send::{Command, Departure};
use crate::clock;
use crate::networking::clock_sync::{BurstCollector, OffsetLog};
use crate::networking::liveness::{Silences, SilentPeer};
use crate::networking::payload::Payload;
use crate::networking::peer_stream::Inflow;
use crate::networking::receive_budget::Spiller;
use crate::networking::{FrameDirection, FrameObserver, Liveness, MessageHeader, NetworkError, HEADER_BYTES};
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
    clock: ClockEnd,
    frames: Option<Arc<dyn FrameObserver>>,
    departure: Departure,
    spiller: Spiller,
    /// When the last read returned, a trace clock stamp (kept only for `frames`).
    read_stamp: i64,
}

/// A received message: its header and its payload.
pub type Delivery = (MessageHeader, Payload);

/// What a receive thread does besides delivering messages.
pub(super) struct Duties {
    /// How long the peer may stay silent.
    pub(super) liveness: Liveness,
    /// Answering and taking in clock frames.
    pub(super) clock: ClockEnd,
    /// Whom to tell of the data frames read.
    pub(super) frames: Option<Arc<dyn FrameObserver>>,
    /// What to do when the peer leaves.
    pub(super) departure: Departure,
    /// Places each message in memory or in a spill file.
    pub(super) spiller: Spiller,
}

/// What a receive thread needs for clock exchanges.
pub(super) struct ClockEnd {
    /// The queue of this connection's send thread, for replies to the peer's probes.
    replies: Sender<Command>,
    /// Where measurements from the peer's replies go.
    log: Arc<OffsetLog>,
    collector: BurstCollector,
}

impl ClockEnd {
    pub(super) fn new(replies: Sender<Command>, log: Arc<OffsetLog>) -> ClockEnd {
        ClockEnd { replies, log, collector: BurstCollector::default() }
    }

    /// Answers a probe (stamped now) or takes in a reply (stamped now).
    fn take(&mut self, frame: &MessageHeader) {
        let now = clock::now_ns();
        if frame.is_clock_probe() {
            let _ = self.replies.try_send(Command::Control(MessageHeader::clock_reply(frame, now)));
        } else {
            self.collector.collect(frame, now, &self.log);
        }
    }
}

/// The last frame of a connection.
enum Last {
    /// An orderly close, with the goodbye's (empty) payload.
    Goodbye(Bytes),
    /// The peer's run failed; the process it blames.
    Abort(u64),
}

/// Starts the receive thread for `inbound` over `stream`; it posts its peer's index to `done`
/// when it ends.
pub(super) fn spawn(
    mut inbound: Inbound,
    mut stream: Inflow,
    done: Sender<usize>,
) -> Result<JoinHandle<()>, NetworkError> {
    let remote = inbound.remote;
    stream.socket().set_read_timeout(Some(inbound.liveness.check_interval())).map_err(|error| {
        NetworkError::io(format!("cannot set a read timeout on the socket to process {remote}"), &error)
    })?;
    std::thread::Builder::new()
        .name(format!("timely:recv-{remote}"))
        .spawn(move || {
            if let Err(reason) = inbound.run(&mut stream) {
                inbound.alarm.raise(remote, reason.to_string());
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
        Duties { liveness, clock, frames, departure, spiller }: Duties,
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
            clock,
            frames,
            departure,
            spiller,
            read_stamp: 0,
        }
    }

    /// Receives until the peer's goodbye and end of stream (`Ok`), or fails with the reason.
    /// After the peer's abort frame, its cause is reported lost and the thread ends.
    fn run(&mut self, stream: &mut Inflow) -> Result<(), ReceiveError> {
        let mut slab = BytesSlab::new(SLAB_LOG2);
        let alarm = Arc::clone(&self.alarm);
        let silence = Watch { silences: &alarm.silences, remote: self.remote };
        loop {
            if self.spiller.buffers_hold(slab.held_bytes()) {
                // Over budget: what follows spills, and buffers kept for reuse are freed.
                slab.release_spare_buffers();
                self.spiller.buffers_hold(slab.held_bytes());
            }
            let last = self.deliver_complete(&mut slab);
            self.wake();
            self.publish(&slab);
            match last? {
                Some(Last::Goodbye(payload)) => {
                    self.depart(payload);
                    return expect_end(stream, &slab, &silence);
                }
                Some(Last::Abort(cause)) => {
                    let (process, reason) = self.blame(cause);
                    alarm.raise(process, reason);
                    return Ok(());
                }
                None => {}
            }
            slab.ensure_capacity(read_room(slab.valid()));
            let read = read_some(stream, slab.empty(), &silence)?;
            if read == 0 {
                return Err(ReceiveError::ClosedWithoutGoodbye);
            }
            slab.make_valid(read);
            if self.frames.is_some() {
                self.read_stamp = clock::stamp();
            }
        }
    }

    /// Makes the totals so far, with the slab's, readable by other threads.
    fn publish(&mut self, slab: &BytesSlab) {
        let slab_stats = slab.stats();
        self.totals.bytes_copied = slab_stats.bytes_copied as u64;
        self.totals.buffers_allocated = slab_stats.buffers_allocated as u64;
        self.stats.publish(&self.totals);
    }

    /// Delivers every complete message at the front of the slab, up to a last frame.
    fn deliver_complete(&mut self, slab: &mut BytesSlab) -> Result<Option<Last>, NetworkError> {
        while let Some(header) = MessageHeader::try_read(slab.valid())? {
            if slab.valid().len() < header.required_bytes() {
                break;
            }
            drop(slab.extract(HEADER_BYTES));
            let payload = slab.extract(header.required_bytes() - HEADER_BYTES);
            if header.is_goodbye() {
                return Ok(Some(Last::Goodbye(payload)));
            }
            if header.is_abort() {
                return Ok(Some(Last::Abort(header.seqno)));
            }
            if header.is_heartbeat() {
                self.totals.heartbeats += 1;
                continue;
            }
            if header.is_clock_probe() || header.is_clock_reply() {
                self.clock.take(&header);
                continue;
            }
            self.deliver(header, payload)?;
        }
        Ok(None)
    }

    /// The process to report lost, and why, for the peer's abort frame naming `cause`.
    fn blame(&self, cause: u64) -> (usize, String) {
        let remote = self.remote;
        let this = self.local_workers.start as usize / self.deliver.len();
        match usize::try_from(cause) {
            Ok(cause) if cause == remote => (remote, "its run failed".to_string()),
            Ok(cause) if cause == this => {
                (remote, format!("it stopped because it lost this process ({this})"))
            }
            Ok(cause) if cause < self.alarm.processes() => match self.alarm.silences.overdue(remote) {
                // This process has not heard from the cause for about its timeout either.
                Some((silent, reason)) if silent == cause => (cause, reason),
                _ => (cause, format!("process {remote} stopped because it lost process {cause}")),
            },
            // A process that began joining there (it had connected) but never joined here.
            _ => (
                remote,
                format!("it stopped because it lost process {cause}, which never joined this process"),
            ),
        }
    }

    /// Reports the frame to the observer, if any, and hands `payload` to every local worker in
    /// the header's targets.
    fn deliver(&mut self, header: MessageHeader, payload: Bytes) -> Result<(), NetworkError> {
        let targets = self.targets(&header)?;
        if let Some(observer) = &self.frames {
            observer.frame(FrameDirection::Received, self.read_stamp, &header);
        }
        self.totals.messages += 1;
        self.totals.payload_bytes += header.length;
        let payload = self.spiller.place(payload);
        if targets.len() == 1 {
            self.post(targets.start, header, payload);
        } else {
            let shared = payload.into_broadcast();
            for local in targets {
                self.post(local, header, shared.payload());
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
    /// The peer said goodbye: everything it sent has been delivered. Unless this process is
    /// closing itself, the peer left the cluster: stop watching it, say goodbye back (after
    /// what is queued for it; later sends to it are dropped), and tell every local worker
    /// with a goodbye header from the peer's first worker, after its last message.
    fn depart(&mut self, payload: Bytes) {
        if self.alarm.closing.load(Ordering::SeqCst) {
            return;
        }
        self.departure.departed.store(true, Ordering::SeqCst);
        self.alarm.silences.depart(self.remote);
        // A send thread that already ended (this process said goodbye first) needs nothing.
        let _ = self.departure.goodbye.send(Command::Goodbye);
        let notice = MessageHeader { source: self.remote_workers.start, ..MessageHeader::goodbye() };
        let shared = Payload::from(payload).into_broadcast();
        for local in 0..self.deliver.len() {
            self.post(local, notice, shared.payload());
        }
        self.wake();
    }

    fn wake(&mut self) {
        for (local, flag) in self.to_wake.iter_mut().enumerate() {
            if std::mem::take(flag) {
                (self.alarm.wake)(local);
            }
        }
    }
}

/// How much free space the next read gets: what the message at the front of `valid` still
/// lacks (a header's worth when its header is incomplete), but never more than what makes the
/// message's received part fill half of the room, or a default buffer: a header's claimed
/// length is not reserved before its bytes arrive, so buffers grow with what the peer sent
/// (they double), never with what it announced. At least one byte, so that a read has room.
fn read_room(valid: &[u8]) -> usize {
    let needed = match MessageHeader::try_read(valid) {
        Ok(Some(header)) => header.required_bytes(),
        _ => HEADER_BYTES,
    };
    let allowed = valid.len().saturating_mul(2).max(1 << SLAB_LOG2);
    needed.min(allowed).saturating_sub(valid.len()).max(1)
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

    fn check(&self) -> Result<(), SilentPeer> {
        self.silences.check(self.remote)
    }
}

/// Why a connection's receive thread stops before the peer's goodbye and end of stream; the
/// message is the reason the peer is reported lost.
#[derive(Debug, thiserror::Error)]
enum ReceiveError {
    /// A frame that cannot be read or delivered.
    #[error(transparent)]
    Frame(#[from] NetworkError),
    /// The peer was silent for longer than its timeout.
    #[error(transparent)]
    Silent(#[from] SilentPeer),
    /// Reading from the socket failed.
    #[error("receiving failed: {0}")]
    Read(std::io::Error),
    /// The stream ended before the goodbye frame.
    #[error("the connection closed without a goodbye")]
    ClosedWithoutGoodbye,
    /// Bytes came after the goodbye frame.
    #[error("bytes followed the goodbye frame")]
    BytesAfterGoodbye,
}

/// Reads once, retrying interrupted reads and reads that timed out while the peer is within its
/// timeout; the error is the reason the connection failed.
fn read_some(stream: &mut impl Read, into: &mut [u8], silence: &Watch<'_>) -> Result<usize, ReceiveError> {
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
            Err(error) => return Err(ReceiveError::Read(error)),
        }
    }
}

/// After the peer's goodbye, only the end of the stream may follow.
fn expect_end(stream: &mut impl Read, slab: &BytesSlab, silence: &Watch<'_>) -> Result<(), ReceiveError> {
    let mut probe = [0u8; 1];
    if slab.valid().is_empty() && read_some(stream, &mut probe, silence)? == 0 {
        Ok(())
    } else {
        Err(ReceiveError::BytesAfterGoodbye)
    }
}
