//! The send side of a connection: per-worker writers and the send thread.
//!
//! This module owns [`ProcessSender`], which frames messages into a buffer owned by one worker,
//! and the thread `timely:send-{q}` that writes full buffers to the socket, a heartbeat
//! frame whenever it has written nothing for [`Liveness::heartbeat_interval`] (so the peer can
//! tell this process is alive however long its workers stay busy), the clock probes its
//! [`ProbeSchedule`] asks for (only the thread to process 0 of another process has one), and
//! the clock replies its receive thread hands it; with a [`FrameObserver`], it reports every
//! data frame of the buffers it writes (see [`crate::networking::observe`]). It must not read
//! from the socket nor decide what a failure means (it reports to the transport's alarm).
//!
//! Buffers circulate, so the steady state allocates nothing: a writer fills its buffer, ships it
//! to the send thread through a bounded queue, and takes an empty one from the connection's
//! pool; the send thread writes every buffer queued (up to [`MAX_BATCH`] per `writev` call, so
//! a burst from several workers costs one system call), clears them, and returns them to the
//! pool. A new buffer is allocated only when the pool is empty (at start, or while more buffers
//! are in flight than ever before); buffers that grew beyond [`MAX_RECYCLED_BYTES`] for a large
//! message are freed instead of pooled. The queue is bounded ([`QUEUE_BUFFERS`]) so a worker
//! that outruns the network waits instead of buffering without limit.
//!
//! Writes have a deadline ([`deadline`]): a peer that reads nothing for longer than the peer
//! timeout is lost, even while its heartbeats arrive.
//!
//! A shipped buffer holds whole frames only: [`ProcessSender`] ships between two messages and
//! truncates a message whose writer unwound, so the send thread can walk the frames of what it
//! writes ([`crate::networking::framing::headers_in`]).

use std::io::{ErrorKind, IoSlice, Write};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::alarm::Alarm;
use crate::clock;
use crate::networking::clock_sync::ProbeSchedule;
use crate::networking::framing::headers_in;
use crate::networking::peer_stream::Outflow;
use crate::networking::{
    FrameDirection, FrameObserver, Liveness, MessageHeader, NetworkError, NetworkHealth, HEADER_BYTES,
    MAX_MESSAGE_BYTES,
};
use deadline::DeadlineWriter;

/// A writer ships its buffer once it holds this many bytes (or on [`ProcessSender::flush`]).
pub const SEND_BUFFER_BYTES: usize = 1 << 16;

/// How many shipped buffers may wait for the send thread before writers block.
pub const QUEUE_BUFFERS: usize = 64;

/// The most buffers the send thread writes with one `writev` call.
pub const MAX_BATCH: usize = 16;

/// Buffers larger than this are freed after sending rather than pooled.
pub const MAX_RECYCLED_BYTES: usize = 4 * SEND_BUFFER_BYTES;

/// What a receive thread does when its peer says goodbye while this process runs: the peer
/// left the cluster.
pub(super) struct Departure {
    /// Set once the peer left (shared with the connection's send thread and senders).
    pub(super) departed: Arc<AtomicBool>,
    /// The queue of this connection's send thread, to say goodbye back.
    pub(super) goodbye: Sender<Command>,
}

/// What writers and the transport tell a send thread.
pub(super) enum Command {
    /// Framed messages to write.
    Data(Vec<u8>),
    /// A control frame to write after the data already queued (a clock reply).
    Control(MessageHeader),
    /// Write the goodbye frame, close the sending direction, and end.
    Goodbye,
    /// End without a goodbye (the transport is being dropped).
    Stop,
    /// Write the abort frame naming this process's failure's cause, close the sending
    /// direction, and end.
    Abort(usize),
}

/// The queue into one send thread, its pool of empty buffers, and whether the peer left.
pub(super) struct Queue {
    pub(super) commands: Sender<Command>,
    spare: Receiver<Vec<u8>>,
    /// Set when the peer said goodbye while this process runs (it left the cluster): from then
    /// on what is sent to it is dropped, and the end of its connection is no failure.
    pub(super) departed: Arc<AtomicBool>,
}

impl Queue {
    /// What the connection's receive thread needs when the peer leaves.
    pub(super) fn departure(&self) -> Departure {
        Departure { departed: Arc::clone(&self.departed), goodbye: self.commands.clone() }
    }
}

/// Starts the send thread of the connection to `remote`, with heartbeats as `liveness` says,
/// clock probes as `probes` says, and the data frames it writes reported to `frames`. The
/// thread posts `remote` to `done` when it ends.
pub(super) fn spawn(
    remote: usize,
    stream: Outflow,
    liveness: Liveness,
    probes: Option<ProbeSchedule>,
    frames: Option<Arc<dyn FrameObserver>>,
    alarm: Arc<Alarm>,
    done: Sender<usize>,
) -> Result<(Queue, JoinHandle<()>), NetworkError> {
    let (commands, pending) = crossbeam_channel::bounded(QUEUE_BUFFERS);
    let (recycle, spare) = crossbeam_channel::bounded(QUEUE_BUFFERS + MAX_BATCH);
    let departed = Arc::new(AtomicBool::new(false));
    let left = Arc::clone(&departed);
    let stream = stream.try_map(|socket| DeadlineWriter::new(socket, liveness)).map_err(|error| {
        NetworkError::io(format!("cannot set a write timeout on the socket to process {remote}"), &error)
    })?;
    let thread = std::thread::Builder::new()
        .name(format!("timely:send-{remote}"))
        .spawn(move || {
            let mut writer = FrameWriter::new(stream, liveness.heartbeat_interval(), probes, frames);
            if let Err(error) = send_loop(&mut writer, &pending, &recycle) {
                // A peer that left may close its socket before our goodbye is out.
                if !left.load(Ordering::SeqCst) {
                    if closed_by_peer(&error) {
                        // A peer whose run failed closes after its abort frame, which names the
                        // process to blame; our receive thread reads it: let it speak first
                        // (the first failure recorded is the one reported).
                        alarm.await_failure(CLOSE_GRACE);
                    }
                    alarm.raise(remote, format!("sending failed: {error}"));
                }
            }
            let _ = done.send(remote);
        })
        .map_err(|error| NetworkError::io(format!("cannot spawn thread timely:send-{remote}"), &error))?;
    Ok((Queue { commands, spare, departed }, thread))
}

/// How long a send thread whose peer closed the connection waits for the receive thread's
/// account of why (an abort frame, or the end of the stream) before it reports the failed
/// write itself.
const CLOSE_GRACE: Duration = Duration::from_millis(200);

/// True for a write that failed because the peer closed or reset the connection.
fn closed_by_peer(error: &std::io::Error) -> bool {
    matches!(error.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted)
}

/// Writes queued buffers until a goodbye, a stop, or the last writer is gone, with the
/// heartbeats and clock probes `writer` schedules in between.
fn send_loop(
    writer: &mut FrameWriter,
    pending: &Receiver<Command>,
    recycle: &Sender<Vec<u8>>,
) -> std::io::Result<()> {
    let mut batch: Vec<Vec<u8>> = Vec::with_capacity(MAX_BATCH);
    let mut controls: Vec<MessageHeader> = Vec::with_capacity(QUEUE_BUFFERS);
    loop {
        writer.write_due_probe()?;
        let first = match pending.recv_deadline(writer.next_wake()) {
            Ok(command) => command,
            Err(RecvTimeoutError::Timeout) => {
                writer.write_due_heartbeat()?;
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        };
        let mut last = None;
        for command in std::iter::once(first).chain(pending.try_iter()) {
            match command {
                Command::Data(buffer) => batch.push(buffer),
                Command::Control(header) => controls.push(header),
                other => last = Some(other),
            }
            if last.is_some() || batch.len() == MAX_BATCH || controls.len() == QUEUE_BUFFERS {
                break;
            }
        }
        writer.write_buffers(&batch)?;
        for header in controls.drain(..) {
            writer.write_frame(header)?;
        }
        for mut buffer in batch.drain(..) {
            buffer.clear();
            if buffer.capacity() <= MAX_RECYCLED_BYTES {
                let _ = recycle.try_send(buffer);
            }
        }
        match last {
            Some(Command::Goodbye) => return writer.close_with(MessageHeader::goodbye()),
            Some(Command::Abort(cause)) => return writer.close_with(MessageHeader::abort(cause)),
            Some(_) => return Ok(()),
            None => {}
        }
    }
}

/// The socket of a send thread, when it next writes a frame of its own (a heartbeat after
/// `heartbeat` without a write, and the probes of its schedule), and whom it tells of the data
/// frames it writes.
struct FrameWriter {
    stream: Outflow<DeadlineWriter>,
    heartbeat: Duration,
    last_write: Instant,
    probes: Option<ProbeSchedule>,
    frames: Option<Arc<dyn FrameObserver>>,
}

impl FrameWriter {
    fn new(
        stream: Outflow<DeadlineWriter>,
        heartbeat: Duration,
        probes: Option<ProbeSchedule>,
        frames: Option<Arc<dyn FrameObserver>>,
    ) -> FrameWriter {
        FrameWriter { stream, heartbeat, last_write: Instant::now(), probes, frames }
    }

    /// When the thread must wake to write a heartbeat or a probe.
    fn next_wake(&self) -> Instant {
        let heartbeat = self.last_write + self.heartbeat;
        self.probes.as_ref().map_or(heartbeat, |probes| probes.due().min(heartbeat))
    }

    /// Writes a clock probe if one is due (it is stamped just before it is written).
    fn write_due_probe(&mut self) -> std::io::Result<()> {
        match self.probes.as_mut().and_then(|probes| probes.poll(Instant::now())) {
            Some(probe) => self.write_frame(probe),
            None => Ok(()),
        }
    }

    /// Writes a heartbeat if nothing was written for the heartbeat interval.
    fn write_due_heartbeat(&mut self) -> std::io::Result<()> {
        if self.last_write.elapsed() >= self.heartbeat {
            self.write_frame(MessageHeader::heartbeat())?;
        }
        Ok(())
    }

    /// Writes `buffers` (whole frames each), then reports their frames to the observer, if
    /// any, with the time the write started.
    fn write_buffers(&mut self, buffers: &[Vec<u8>]) -> std::io::Result<()> {
        let observed = self.frames.as_deref().map(|observer| (observer, clock::stamp()));
        write_all_vectored(&mut self.stream, buffers)?;
        self.last_write = Instant::now();
        if let Some((observer, started)) = observed {
            report_sent(observer, started, buffers);
        }
        Ok(())
    }

    /// Writes a frame without payload (a control frame).
    fn write_frame(&mut self, header: MessageHeader) -> std::io::Result<()> {
        let mut frame = [0u8; HEADER_BYTES];
        header.encode_into(&mut frame);
        self.stream.write_all(&frame)?;
        self.last_write = Instant::now();
        Ok(())
    }

    /// Writes a last frame (goodbye or abort) and closes the sending direction of the connection.
    fn close_with(&mut self, last: MessageHeader) -> std::io::Result<()> {
        self.write_frame(last)?;
        self.stream.get_ref().shutdown_write()
    }
}

/// Tells `observer` of every frame in `buffers`, all started at `started`. They are data
/// frames: control frames never enter a buffer (a [`ProcessSender`] refuses their channels,
/// and the send thread writes its own with [`FrameWriter::write_frame`]).
fn report_sent(observer: &dyn FrameObserver, started: i64, buffers: &[Vec<u8>]) {
    for header in buffers.iter().flat_map(|buffer| headers_in(buffer)) {
        observer.frame(FrameDirection::Sent, started, &header);
    }
}

/// Writes all of `buffers`, with as few `writev` calls as the socket allows.
fn write_all_vectored(stream: &mut impl Write, buffers: &[Vec<u8>]) -> std::io::Result<()> {
    let total: usize = buffers.iter().map(Vec::len).sum();
    let mut written = 0;
    while written < total {
        let mut slices = [IoSlice::new(&[]); MAX_BATCH];
        let count = unwritten_slices(&mut slices, buffers, written);
        match stream.write_vectored(&slices[..count]) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(bytes) => written += bytes,
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Fills `slices` with what remains of `buffers` after the first `skip` bytes; returns how many.
fn unwritten_slices<'a>(slices: &mut [IoSlice<'a>], buffers: &'a [Vec<u8>], mut skip: usize) -> usize {
    let mut count = 0;
    for buffer in buffers {
        if skip >= buffer.len() {
            skip -= buffer.len();
            continue;
        }
        slices[count] = IoSlice::new(&buffer[skip..]);
        skip = 0;
        count += 1;
    }
    count
}

/// Frames messages for one remote process into a buffer of its own; owned by one worker.
///
/// Messages are buffered until [`SEND_BUFFER_BYTES`] accumulate or [`ProcessSender::flush`] is
/// called (a worker flushes at the end of each step); dropping the sender flushes it.
pub struct ProcessSender {
    /// The destination process.
    process: usize,
    /// The global worker indices of the destination process.
    remote_workers: Range<u64>,
    /// The global worker indices of this process, the only valid sources.
    local_workers: Range<u64>,
    buffer: Vec<u8>,
    commands: Sender<Command>,
    spare: Receiver<Vec<u8>>,
    health: NetworkHealth,
    departed: Arc<AtomicBool>,
}

impl ProcessSender {
    pub(super) fn new(
        process: usize,
        remote_workers: Range<u64>,
        local_workers: Range<u64>,
        queue: &Queue,
        health: NetworkHealth,
    ) -> ProcessSender {
        ProcessSender {
            process,
            remote_workers,
            local_workers,
            buffer: Vec::new(),
            commands: queue.commands.clone(),
            spare: queue.spare.clone(),
            health,
            departed: Arc::clone(&queue.departed),
        }
    }

    /// A sender to a process that left the cluster before this one joined: it drops all.
    pub(super) fn gone(
        process: usize,
        remote_workers: Range<u64>,
        local_workers: Range<u64>,
        health: NetworkHealth,
    ) -> ProcessSender {
        let (commands, _) = crossbeam_channel::bounded(0);
        let (_, spare) = crossbeam_channel::bounded(0);
        let departed = Arc::new(AtomicBool::new(true));
        ProcessSender {
            process,
            remote_workers,
            local_workers,
            buffer: Vec::new(),
            commands,
            spare,
            health,
            departed,
        }
    }

    /// True once the destination process left the cluster (said goodbye while this process
    /// runs): what is sent to it from then on is dropped.
    pub fn departed(&self) -> bool {
        self.departed.load(Ordering::SeqCst)
    }

    /// The process this sender sends to.
    pub fn process(&self) -> usize {
        self.process
    }

    /// Records `error` as the network's failure (unless one was recorded before): for a
    /// message its sender could not send and must not drop silently, so that the workers
    /// stop with it at their next step.
    pub fn fail_with(&self, error: NetworkError) {
        self.health.record(error);
    }

    /// Buffers a message with `payload`; `header.length` is set to the payload's length.
    ///
    /// # Errors
    ///
    /// See [`ProcessSender::send_with`].
    pub fn send(&mut self, header: MessageHeader, payload: &[u8]) -> Result<(), NetworkError> {
        self.send_with(header, |buffer| buffer.extend_from_slice(payload))
    }

    /// Buffers a message whose payload `write` appends to the buffer it is given (serialize
    /// straight into it: nothing is copied again before the socket). `header.length` is set to
    /// the number of bytes `write` appended.
    ///
    /// # Errors
    ///
    /// The network's failure, if one was recorded; a header on a channel reserved for control
    /// frames (from [`crate::networking::FIRST_CONTROL_CHANNEL`]),
    /// with a source that is not a worker of this process or targets that include no worker
    /// of the destination; a payload larger than [`MAX_MESSAGE_BYTES`] (then nothing is sent).
    pub fn send_with(
        &mut self,
        header: MessageHeader,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(), NetworkError> {
        self.check(&header)?;
        let start = self.buffer.len();
        header.write_to(&mut self.buffer);
        // If `write` unwinds (an encoder that failed), the partial message must not stay in
        // the buffer: a later flush would send a header whose length nothing follows.
        let mut partial = PartialMessage { buffer: &mut self.buffer, start: Some(start) };
        write(partial.buffer);
        partial.start = None;
        drop(partial);
        let length = self.buffer.len() - start - HEADER_BYTES;
        if length > MAX_MESSAGE_BYTES {
            self.buffer.truncate(start);
            return Err(NetworkError::InvalidArguments(format!(
                "a message of {length} bytes exceeds the maximum of {MAX_MESSAGE_BYTES}"
            )));
        }
        let header = MessageHeader { length: length as u64, ..header };
        header.encode_into(&mut self.buffer[start..]);
        if self.buffer.len() >= SEND_BUFFER_BYTES {
            self.ship()?;
        }
        Ok(())
    }

    /// Hands everything buffered to the send thread.
    ///
    /// # Errors
    ///
    /// The network's failure, or [`NetworkError::TransportClosed`] after a shutdown.
    pub fn flush(&mut self) -> Result<(), NetworkError> {
        if self.buffer.is_empty() {
            self.health.failure().map_or(Ok(()), Err)
        } else {
            self.ship()
        }
    }

    /// Rejects headers the receiver would reject, before anything is buffered.
    fn check(&self, header: &MessageHeader) -> Result<(), NetworkError> {
        if let Some(failure) = self.health.failure() {
            return Err(failure);
        }
        let (remote, local) = (&self.remote_workers, &self.local_workers);
        let problem = if header.is_control() {
            format!("channel {} is reserved for control frames", header.channel)
        } else if !local.contains(&header.source) {
            format!("source {} is not a worker of this process ({local:?})", header.source)
        } else if header.target_lower >= remote.end || header.target_upper <= remote.start {
            format!(
                "targets [{}, {}) include no worker of process {} ({remote:?})",
                header.target_lower, header.target_upper, self.process
            )
        } else {
            return MessageHeader { length: 0, ..*header }.validate();
        };
        Err(NetworkError::InvalidArguments(problem))
    }

    /// Sends the buffer to the send thread and takes an empty one from the pool; drops it when
    /// the destination left.
    fn ship(&mut self) -> Result<(), NetworkError> {
        if self.departed() {
            self.buffer.clear();
            return Ok(());
        }
        let empty = self.spare.try_recv().unwrap_or_else(|_| Vec::with_capacity(SEND_BUFFER_BYTES));
        let full = std::mem::replace(&mut self.buffer, empty);
        self.commands.send(Command::Data(full)).map_err(|_| {
            self.health.failure().unwrap_or(NetworkError::TransportClosed { process: self.process })
        })
    }
}

impl Drop for ProcessSender {
    /// Flushes what is buffered; errors are ignored, the network's failure is recorded elsewhere.
    fn drop(&mut self) {
        if !self.buffer.is_empty() {
            let _ = self.ship();
        }
    }
}

impl std::fmt::Debug for ProcessSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessSender")
            .field("process", &self.process)
            .field("buffered", &self.buffer.len())
            .finish()
    }
}

/// A message being written into a send buffer: dropped while `start` is set (when the writer
/// unwinds), it truncates the buffer back to where the message started.
struct PartialMessage<'a> {
    buffer: &'a mut Vec<u8>,
    start: Option<usize>,
}

impl Drop for PartialMessage<'_> {
    fn drop(&mut self) {
        if let Some(start) = self.start {
            self.buffer.truncate(start);
        }
    }
}

mod deadline;
#[cfg(test)]
mod tests;
