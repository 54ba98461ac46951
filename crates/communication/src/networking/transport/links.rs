//! The connections of a process, and admitting a process that joins.
//!
//! This module owns [`Core`], what the transport shares with its join acceptor: the links
//! (per remote process its socket, its send queue and its two threads), starting a link's
//! threads, the endpoints each local worker gets ([`WorkerEndpoints`]), and admitting a joiner
//! under the lock that orders joins ([`Core::admit`]), which tells every local worker of it
//! ([`JoinedProcess`]). It must not close the transport (that is [`super::Transport`]'s job).

use std::net::{Shutdown, TcpStream};
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};

use crate::networking::clock_sync::{ClockSync, OffsetLog, ProbeSchedule};
use crate::networking::join_answer::{JoinAnswer, JoinView};
use crate::networking::membership_gate::MembershipGate;
use crate::networking::peer_stream::PeerStream;
use crate::networking::receive_budget::{BudgetState, Spiller};
use crate::networking::{FrameObserver, Liveness, NetworkError};
use crate::queue::{QueueSender, ThreadQueue};

use super::alarm::Alarm;
use super::receive::{self, Delivery};
use super::send::{self, ProcessSender};

/// What one local worker uses to talk to other processes.
pub struct WorkerEndpoints {
    /// The worker's global index (`process * threads + local index`).
    pub index: usize,
    /// A sender per process (index `q` sends to process `q`; `None` for this process).
    pub senders: Vec<Option<ProcessSender>>,
    /// Messages from other processes for this worker, in order per sending process (processes
    /// that join later deliver here too).
    pub receiver: ThreadQueue<Delivery>,
    /// One message per process that joins, in join order, each followed by a wake-up.
    pub joins: Receiver<JoinedProcess>,
    /// The process's membership gate, shared with the join acceptor.
    pub gate: Arc<MembershipGate>,
}

/// A process that joined the cluster, as one local worker learns of it.
pub struct JoinedProcess {
    /// The new process's index (the cluster's size before it joined).
    pub process: usize,
    /// This worker's sender to it.
    pub sender: ProcessSender,
}

/// What the transport shares with its join acceptor.
pub(crate) struct Core {
    pub(super) process: usize,
    pub(super) threads: usize,
    pub(super) links: Mutex<Links>,
    pub(super) alarm: Arc<Alarm>,
    pub(super) liveness: Liveness,
    pub(super) clock: ClockSync,
    pub(super) offsets: Arc<OffsetLog>,
    pub(super) frames: Option<Arc<dyn FrameObserver>>,
    /// What received messages hold in memory, shared by every receive thread.
    pub(super) budget: Arc<BudgetState>,
    /// Where every receive thread delivers, one queue per local worker.
    pub(super) deliver: Vec<QueueSender<Delivery>>,
    /// Where every send and receive thread reports its end.
    pub(super) done: Sender<usize>,
    /// Where each local worker learns of joins.
    pub(super) joins: Vec<Sender<JoinedProcess>>,
    /// Joins and leaves one at a time ([`MembershipGate`]).
    pub(super) gate: Arc<MembershipGate>,
}

/// The connections of a process.
pub(super) struct Links {
    /// One entry per process; `None` for this process.
    pub(super) links: Vec<Option<Link>>,
    /// Cleared when the transport closes: nobody is admitted after that.
    pub(super) open: bool,
}

/// The threads and queues of one connection.
pub(super) struct Link {
    /// A handle to the socket, to shut it down.
    pub(super) socket: TcpStream,
    /// Feeds the send thread.
    pub(super) queue: send::Queue,
    pub(super) send_thread: Option<JoinHandle<()>>,
    pub(super) receive_thread: Option<JoinHandle<()>>,
    pub(super) stats: Arc<receive::SharedStats>,
}

/// The global worker indices of `process` in a cluster of `threads` workers per process.
pub(super) fn workers_of(process: usize, threads: usize) -> Range<u64> {
    let first = (process * threads) as u64;
    first..first + threads as u64
}

impl Core {
    /// The links, locked (a panic elsewhere while holding them leaves them usable).
    pub(super) fn links(&self) -> MutexGuard<'_, Links> {
        self.links.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the two threads of the connection to `remote` (on a sealed session they write and
    /// read sealed records, [`super::peer_stream`]).
    pub(super) fn link(&self, remote: usize, stream: PeerStream) -> Result<Link, NetworkError> {
        let (socket, writer, reader) = stream.split().map_err(|error| {
            NetworkError::io(format!("cannot share the socket to process {remote}"), &error)
        })?;
        let stats = Arc::new(receive::SharedStats::default());
        // Every process answers probes; only the others probe process 0, the reference clock.
        let probes = (remote == 0).then(|| ProbeSchedule::new(self.clock));
        let alarm = Arc::clone(&self.alarm);
        let frames = self.frames.clone();
        let (queue, send_thread) =
            send::spawn(remote, writer, self.liveness, probes, frames.clone(), alarm, self.done.clone())?;
        let clock = receive::ClockEnd::new(queue.commands.clone(), Arc::clone(&self.offsets));
        let inbound = receive::Inbound::new(
            remote,
            workers_of(self.process, self.threads),
            workers_of(remote, self.threads),
            self.deliver.clone(),
            Arc::clone(&self.alarm),
            Arc::clone(&stats),
            receive::Duties {
                liveness: self.liveness,
                clock,
                frames,
                departure: queue.departure(),
                spiller: Spiller::new(Arc::clone(&self.budget)),
            },
        );
        let receive_thread = receive::spawn(inbound, reader, self.done.clone());
        let mut link = Link { socket, queue, send_thread: Some(send_thread), receive_thread: None, stats };
        match receive_thread {
            Ok(thread) => link.receive_thread = Some(thread),
            Err(error) => {
                link.close();
                return Err(error);
            }
        }
        Ok(link)
    }

    /// One set of endpoints per local worker.
    pub(super) fn endpoints(
        &self,
        receivers: Vec<ThreadQueue<Delivery>>,
        joined: Vec<Receiver<JoinedProcess>>,
    ) -> Result<Vec<WorkerEndpoints>, NetworkError> {
        let links = self.links();
        receivers
            .into_iter()
            .zip(joined)
            .enumerate()
            .map(|(local, (receiver, joins))| {
                let senders = (0..links.links.len())
                    .map(|q| match &links.links[q] {
                        Some(_) => self.sender(&links, q).map(Some),
                        None if q == self.process => Ok(None),
                        None => Ok(Some(ProcessSender::gone(
                            q,
                            workers_of(q, self.threads),
                            workers_of(self.process, self.threads),
                            self.alarm.health.clone(),
                        ))),
                    })
                    .collect::<Result<_, _>>()?;
                let gate = Arc::clone(&self.gate);
                Ok(WorkerEndpoints {
                    index: self.process * self.threads + local,
                    senders,
                    receiver,
                    joins,
                    gate,
                })
            })
            .collect()
    }

    /// A new sender to process `process` over `links`.
    pub(super) fn sender(&self, links: &Links, process: usize) -> Result<ProcessSender, NetworkError> {
        let link = links.links.get(process).and_then(Option::as_ref).ok_or_else(|| {
            NetworkError::InvalidArguments(format!(
                "process {} has no connection to process {process} (the cluster has {} processes)",
                self.process,
                links.links.len()
            ))
        })?;
        Ok(ProcessSender::new(
            process,
            workers_of(process, self.threads),
            workers_of(self.process, self.threads),
            &link.queue,
            self.alarm.health.clone(),
        ))
    }

    /// Admits `process` over `stream` if it is the next index and the transport is open, then
    /// starts its link and tells every local worker. `answer` is called with the answer first
    /// (the join acceptor writes it to the joiner; a refusal is then returned as
    /// [`NetworkError::JoinRefused`]). A link that cannot start after an admission makes the
    /// process lost, since it already counts itself a member.
    pub(crate) fn admit(
        &self,
        process: usize,
        mut stream: PeerStream,
        answer: impl FnOnce(&mut TcpStream, JoinAnswer) -> Result<(), NetworkError>,
    ) -> Result<(), NetworkError> {
        let mut links = self.links();
        let members = links.links.len();
        let refusal = if !links.open {
            Some((JoinAnswer::Closing, JoinAnswer::Closing.reason().to_string()))
        } else if process != members {
            let reason =
                format!("process {process} is not the next to join; the cluster has {members} processes");
            Some((JoinAnswer::Superseded, reason))
        } else {
            None
        };
        if let Some((refused, reason)) = refusal {
            drop(links);
            answer(&mut stream.stream, refused)?;
            return Err(NetworkError::JoinRefused { reason });
        }
        answer(&mut stream.stream, JoinAnswer::Admitted)?;
        self.alarm.silences.add();
        let link = self.link(process, stream).inspect_err(|error| {
            self.alarm.raise(process, format!("its connection could not start: {error}"));
        })?;
        links.links.push(Some(link));
        for local in 0..self.threads {
            let sender = self.sender(&links, process)?;
            // A worker that dropped its endpoints has finished and needs no sender.
            let _ = self.joins[local].send(JoinedProcess { process, sender });
            (self.alarm.wake)(local);
        }
        Ok(())
    }

    /// This process's view for joining process `process` (`docs/rescaling.md`, "Joins and
    /// leaves at the same time"): refused as the final answer would be, or while a leave is
    /// known here; otherwise ready, with the processes that left, and `process` is reserved in
    /// the gate until [`MembershipGate::release`].
    pub(crate) fn view(&self, process: usize) -> JoinView {
        let links = self.links();
        let members = links.links.len();
        if !links.open {
            return JoinView::Refused(JoinAnswer::Closing);
        }
        if process != members {
            return JoinView::Refused(JoinAnswer::Superseded);
        }
        if let Err(leaving) = self.gate.offer(process) {
            return JoinView::LeavesInProgress { leaving };
        }
        let departed = (0..members)
            .filter(|&q| q != self.process)
            .filter(|&q| {
                links.links[q].as_ref().is_none_or(|link| link.queue.departed.load(Ordering::SeqCst))
            })
            .collect();
        JoinView::Ready { departed }
    }

    /// The process's membership gate.
    pub(crate) fn gate(&self) -> &MembershipGate {
        &self.gate
    }

    /// The cluster's current size and whether the transport admits anyone.
    pub(crate) fn admitting(&self) -> (usize, bool) {
        let links = self.links();
        (links.links.len(), links.open)
    }

    /// This process's index and its worker threads.
    pub(crate) fn local(&self) -> (usize, usize) {
        (self.process, self.threads)
    }
}

impl Link {
    /// Stops both threads without a goodbye: the peer sees a lost process.
    pub(super) fn close(&self) {
        let _ = self.queue.commands.try_send(send::Command::Stop);
        let _ = self.socket.shutdown(Shutdown::Both);
    }
}
