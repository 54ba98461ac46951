//! The progress ledger of one scope: what a worker has sent and received on its progress
//! channel, kept so that workers that join can be bootstrapped (`docs/rescaling.md`).
//!
//! The [`Ledger`] holds the compacted accumulation of every batch received and the next
//! sequence number per sender (the *progress state*), the next sequence number this worker
//! sends, and two roles in the bootstrap protocol:
//! - as a bootstrap server, it records the batches received after a snapshot, to answer range
//!   requests, and it carries capability announcements into the next batch sent;
//! - on a joining worker, it holds back every batch until the state, the ranges and the first
//!   direct sequence numbers are all known, then releases them in per-sender order, dropping
//!   what the state already contains.
//!
//! The accumulation leaves out statements about node 0 (the scope's boundary: records that
//! entered or left the scope). No later batch of the scope cancels them; the subgraph turns
//! them into consumed and produced counts of the parent scope, and the parent's ledger keeps
//! those ([`Ledger::absorb`]), where the records' arrival and departure cancel them. So a
//! scope's state stays bounded in steady state, and a joining worker derives the parent's
//! counts from the parent's state, including for nested scopes the server has already
//! completed and dropped.
//!
//! The progcaster ([`super::broadcast`]) moves batches; the worker's rescaling code reaches the
//! ledger through the type-erased [`ScopeLedger`]. This module does not send or receive
//! anything itself.

use std::collections::VecDeque;

use super::batch_check::OutOfSequence;
use super::change_batch::ChangeBatch;
use super::location::Location;
use super::timestamp::Timestamp;
use timely_communication::exchangeable::{bincode_decode, bincode_encode, DecodeError};

/// Updates of one progress batch.
pub type Updates<T> = Vec<((Location, T), i64)>;

/// Updates released to the tracker: from a batch (its sender and sequence number), or from a
/// progress state (`None`).
pub type Released<T> = (Option<(usize, u64)>, Updates<T>);

/// The progress state a joining worker starts from, as the server encodes it.
#[derive(serde::Serialize, serde::Deserialize)]
struct State<T> {
    accumulated: Updates<T>,
    next_receive: Vec<u64>,
}

/// Bookkeeping of one scope's progress channel on one worker.
pub struct Ledger<T: Timestamp> {
    next_send: u64,
    next_receive: Vec<u64>,
    accumulated: ChangeBatch<(Location, T)>,
    /// Per sender: the sequence number of the first recorded batch and the batches since.
    recording: Option<Vec<(u64, Vec<Updates<T>>)>>,
    /// Updates to add to the next batch this worker sends.
    announce: Updates<T>,
    /// Updates for this worker's tracker only, never sent (`ScopeLedger::retire_initial`).
    local: Updates<T>,
    /// On a joining worker, until the bootstrap of this scope is complete.
    joining: Option<Joining<T>>,
    /// On a joining worker: the server and the sequence number of its batch that carries the
    /// capability announcement; operators wait until it is applied.
    awaited: Option<(usize, u64)>,
    /// On a joined worker, per sender whose direct batches started before its state ended:
    /// those batches `[first direct, state's next)`, already applied, to drop when they arrive.
    overlap: Vec<Option<(u64, u64)>>,
    /// Per sender, batches held back until a batch they must follow was applied.
    blocked: Vec<VecDeque<Held<T>>>,
    /// On a joined worker: what its first batch must follow (the server's announcement).
    first_after: Option<(usize, u64)>,
    /// On a joined worker, for a scope the server completed before the join: every batch is
    /// dropped (together they net to nothing, and the parent's state has their effect).
    detached: bool,
}

/// A batch held back: its sequence number, the batch it must follow, its updates.
type Held<T> = (u64, Option<(usize, u64)>, Updates<T>);

impl<T> Joining<T> {
    /// The ranges still missing between the state and the direct batches, `(sender, start,
    /// end)`, once both are known.
    fn missing(&self) -> Option<Vec<(usize, u64, u64)>> {
        let (_, next) = self.state.as_ref()?;
        let mut ranges = Vec::new();
        for (sender, first) in self.direct_from.iter().enumerate() {
            let first = (*first)?;
            let known = next.get(sender).copied().unwrap_or(0);
            if known < first {
                ranges.push((sender, known, first));
            }
        }
        Some(ranges)
    }

    fn is_complete(&self) -> bool {
        self.missing().is_some_and(|missing| missing.len() == self.ranges.len())
    }
}

/// What a joining worker gathers before it applies anything.
struct Joining<T> {
    /// The server that sent the state and the ranges.
    server: usize,
    /// Accumulated updates and next sequence per sender, from the welcome.
    state: Option<(Updates<T>, Vec<u64>)>,
    /// Per existing worker: the first sequence number it sends this worker directly.
    direct_from: Vec<Option<u64>>,
    /// Ranges received from the server: sender, first sequence number, batches.
    ranges: Vec<(usize, u64, Vec<Updates<T>>)>,
    /// Batches received directly, held back.
    held: Vec<VecDeque<Held<T>>>,
}

impl<T: Timestamp> Default for Ledger<T> {
    fn default() -> Self {
        Ledger {
            next_send: 0,
            next_receive: Vec::new(),
            accumulated: ChangeBatch::new(),
            recording: None,
            announce: Vec::new(),
            local: Vec::new(),
            joining: None,
            awaited: None,
            overlap: Vec::new(),
            blocked: Vec::new(),
            first_after: None,
            detached: false,
        }
    }
}

impl<T: Timestamp> Ledger<T> {
    /// A ledger for a scope of `peers` workers.
    pub fn new(peers: usize) -> Self {
        let mut ledger = Ledger::default();
        ledger.grow(peers);
        ledger
    }

    /// Takes the sequence number for the next batch sent and adds the pending announcements
    /// to its updates; also returns the batch it must follow (on a joined worker's first).
    pub fn next_batch(&mut self, updates: &mut Updates<T>) -> (u64, Option<(usize, u64)>) {
        updates.append(&mut self.announce);
        self.next_send += 1;
        (self.next_send - 1, self.first_after.take())
    }

    /// Moves the updates for this worker's tracker only into `changes`.
    pub fn take_local(&mut self, changes: &mut Vec<Released<T>>) {
        if !self.local.is_empty() {
            changes.push((None, std::mem::take(&mut self.local)));
        }
    }

    /// True when announcements wait to be sent.
    pub fn has_announcements(&self) -> bool {
        !self.announce.is_empty()
    }

    /// Takes in a batch from `source`: returns true when the caller applies its updates now,
    /// false when they are held back (copied): on a joining worker until it is bootstrapped,
    /// and behind a batch it must follow (`after`) that is not applied yet. Batches already
    /// in a joined worker's state are dropped.
    ///
    /// # Errors
    ///
    /// When a sender's batches arrive out of sequence.
    pub fn admit(
        &mut self,
        source: usize,
        sequence: u64,
        after: Option<(usize, u64)>,
        updates: &Updates<T>,
    ) -> Result<bool, OutOfSequence> {
        self.grow(source + 1);
        if self.detached {
            return Ok(false);
        }
        if let Some(joining) = self.joining.as_mut() {
            joining.held[source].push_back((sequence, after, updates.clone()));
            return Ok(false);
        }
        if self.is_duplicate(source, sequence) {
            return Ok(false);
        }
        if self.must_wait(source, after) {
            self.blocked[source].push_back((sequence, after, updates.clone()));
            return Ok(false);
        }
        self.account(source, sequence, updates)?;
        Ok(true)
    }

    /// Like [`Ledger::admit`] for a batch the ledger owns; applied updates go to `ready`.
    fn offer(
        &mut self,
        source: usize,
        held: Held<T>,
        ready: &mut Vec<Released<T>>,
    ) -> Result<(), OutOfSequence> {
        let (sequence, after, updates) = held;
        if self.is_duplicate(source, sequence) {
            return Ok(());
        }
        if self.must_wait(source, after) {
            self.blocked[source].push_back((sequence, after, updates));
            return Ok(());
        }
        self.accept(source, sequence, updates, ready)
    }

    /// True for a batch a joined worker's state already holds.
    fn is_duplicate(&self, source: usize, sequence: u64) -> bool {
        matches!(self.overlap.get(source), Some(Some((first, end))) if (*first..*end).contains(&sequence))
    }

    /// True when `source` has batches held back, or `after` is not applied yet.
    fn must_wait(&self, source: usize, after: Option<(usize, u64)>) -> bool {
        !self.blocked[source].is_empty()
            || after.is_some_and(|(server, sequence)| {
                self.next_receive.get(server).is_none_or(|&next| next <= sequence)
            })
    }

    /// Applies held-back batches whose predecessor has been applied, into `ready`.
    ///
    /// # Errors
    ///
    /// When a sender's batches are out of sequence.
    pub fn release_held(&mut self, ready: &mut Vec<Released<T>>) -> Result<(), OutOfSequence> {
        let mut progress = true;
        while progress {
            progress = false;
            for source in 0..self.blocked.len() {
                while let Some((sequence, after, _)) = self.blocked[source].front() {
                    let (sequence, after) = (*sequence, *after);
                    let unmet = after
                        .is_some_and(|(server, seq)| self.next_receive.get(server).is_none_or(|&n| n <= seq));
                    if unmet {
                        break;
                    }
                    let (_, _, updates) = self.blocked[source].pop_front().expect("a held batch");
                    self.accept(source, sequence, updates, ready)?;
                    progress = true;
                }
            }
        }
        Ok(())
    }

    /// Checks the sequence number and adds `updates` to the state (and to the recording).
    fn account(&mut self, source: usize, sequence: u64, updates: &Updates<T>) -> Result<(), OutOfSequence> {
        let expected = self.next_receive[source];
        if sequence != expected {
            return Err(OutOfSequence { source, expected, received: sequence });
        }
        self.next_receive[source] += 1;
        self.absorb(updates);
        if let Some((_, batches)) = self.recording.as_mut().and_then(|recording| recording.get_mut(source)) {
            batches.push(updates.clone());
        }
        Ok(())
    }

    fn accept(
        &mut self,
        source: usize,
        sequence: u64,
        updates: Updates<T>,
        ready: &mut Vec<Released<T>>,
    ) -> Result<(), OutOfSequence> {
        self.account(source, sequence, &updates)?;
        ready.push((Some((source, sequence)), updates));
        Ok(())
    }

    /// On a joining worker whose state and ranges are all in: `check` of every update they
    /// carry, to run before [`Ledger::try_finish_joining`] applies any; an error names the
    /// server that sent them.
    pub fn check_bootstrap<'a, E>(
        &'a self,
        check: impl FnOnce(&mut dyn Iterator<Item = &'a ((Location, T), i64)>) -> Result<(), E>,
    ) -> Result<(), (usize, E)> {
        let Some(joining) = self.joining.as_ref().filter(|joining| joining.is_complete()) else {
            return Ok(());
        };
        let Some((accumulated, _)) = joining.state.as_ref() else { return Ok(()) };
        let ranges = joining.ranges.iter().flat_map(|(_, _, batches)| batches.iter().flatten());
        check(&mut accumulated.iter().chain(ranges)).map_err(|reason| (joining.server, reason))
    }

    /// On a joining worker whose state, direct starts and ranges are all in: applies the state,
    /// then each sender's ranges and held batches in sequence, dropping batches the state or a
    /// range already contains, and leaves the joining mode.
    ///
    /// # Errors
    ///
    /// When a sender's batches are out of sequence.
    pub fn try_finish_joining(&mut self, ready: &mut Vec<Released<T>>) -> Result<(), OutOfSequence> {
        if !self.joining.as_ref().is_some_and(Joining::is_complete) {
            return Ok(());
        }
        let Some(joining) = self.joining.take() else { return Ok(()) };
        let Some((accumulated, next)) = joining.state else { return Ok(()) };
        self.overlap = (joining.direct_from.iter().zip(&next))
            .map(|(first, &end)| first.filter(|&first| first < end).map(|first| (first, end)))
            .collect();
        self.grow(next.len());
        self.next_receive[..next.len()].copy_from_slice(&next);
        self.accumulated.extend(accumulated.iter().cloned());
        ready.push((None, accumulated));
        let mut ranges = joining.ranges;
        ranges.sort_by_key(|(sender, start, _)| (*sender, *start));
        for (sender, start, batches) in ranges {
            for (offset, updates) in batches.into_iter().enumerate() {
                self.accept(sender, start + offset as u64, updates, ready)?;
            }
        }
        for (sender, held) in joining.held.into_iter().enumerate() {
            for batch in held {
                if batch.0 >= self.next_receive[sender] {
                    self.offer(sender, batch, ready)?;
                }
            }
        }
        Ok(())
    }

    /// Adds `updates` to the accumulation, except those at node 0 (they belong to the parent
    /// scope's state). Besides received batches, this takes the statements this worker derived
    /// from exchanged batches of a nested scope (records it consumed and produced): they are
    /// part of this scope's progress state although no batch of this scope carries them.
    pub fn absorb<'a>(&mut self, updates: impl IntoIterator<Item = &'a ((Location, T), i64)>)
    where
        T: 'a,
    {
        let inside = updates.into_iter().filter(|((location, _), _)| location.node != 0);
        self.accumulated.extend(inside.cloned());
    }

    /// Makes room for senders up to `peers`.
    pub fn grow(&mut self, peers: usize) {
        if self.next_receive.len() < peers {
            self.next_receive.resize(peers, 0);
            self.blocked.resize_with(peers, VecDeque::new);
            if let Some(joining) = self.joining.as_mut() {
                joining.held.resize_with(peers, VecDeque::new);
            }
            if let Some(recording) = self.recording.as_mut() {
                recording.resize_with(peers, || (0, Vec::new()));
            }
        }
    }

    /// True once operators of this scope may run: not bootstrapping, and the server's
    /// announcement (if any) applied.
    pub fn ready(&self) -> bool {
        self.joining.is_none() && self.awaited.is_none_or(|(server, seq)| self.next_receive[server] > seq)
    }
}

/// What the rescaling code of a worker does with a scope's ledger, whatever its timestamp.
pub trait ScopeLedger {
    /// The sequence number of the next batch this worker sends.
    fn next_send(&self) -> u64;
    /// The number of distinct `(location, time)`s in the compacted accumulation: the size of
    /// the progress state a joining worker would receive.
    fn state_len(&self) -> usize;
    /// Makes room for senders up to `peers` (workers joined).
    fn grow(&self, peers: usize);
    /// Starts recording (if not already) and returns the encoded progress state.
    fn snapshot(&self) -> Vec<u8>;
    /// Adds `+count` for each `(operator, outputs, times)` (times encoded as `Vec<T>`, only
    /// the first is announced) to the next batch sent; returns its sequence number.
    fn announce(&self, operators: &[(usize, usize, Vec<u8>)], count: i64) -> Result<u64, DecodeError>;
    /// Retires `count` workers' implicit initial capabilities at every output of each
    /// `(operator, outputs)`, in this tracker only: they left without building the dataflow.
    fn retire_initial(&self, operators: &[(usize, usize)], count: i64);
    /// The recorded batches `[start, end)` of `sender`, encoded, or `None` while some are
    /// still to come.
    fn range(&self, sender: usize, start: u64, end: u64) -> Result<Option<Vec<u8>>, JoinDataError>;
    /// Stops recording (no joiner needs ranges any more).
    fn stop_recording(&self);
    /// True while recording batches for range requests.
    fn is_recording(&self) -> bool;
    /// On a joining worker: from now on, hold back batches until bootstrapped.
    fn start_joining(&self, existing: usize);
    /// On a joining worker, for a scope the server completed before the join: drop every
    /// batch from now on.
    fn detach(&self);
    /// On a joining worker: the server's state and, if it announced capabilities, the
    /// sequence number of the batch that carries them.
    fn install_state(&self, state: &[u8], server: usize, announced: Option<u64>)
        -> Result<(), JoinDataError>;
    /// On a joining worker: existing worker `sender` sends directly from `first` on.
    fn direct_from(&self, sender: usize, first: u64);
    /// On a joining worker: the ranges still to request, `(sender, start, end)`, once the
    /// state and every direct start are known.
    fn missing_ranges(&self) -> Option<Vec<(usize, u64, u64)>>;
    /// On a joining worker: a range from the server.
    fn install_range(&self, sender: usize, start: u64, batches: &[u8]) -> Result<(), JoinDataError>;
    /// On a joining worker: true once every requested range arrived.
    fn has_all_ranges(&self) -> bool;
}

/// Why progress data of a join (a state or a range of batches, sent by a server to a joining
/// worker, or a joiner's request for a range) cannot be taken: the peer that sent it broke
/// the protocol.
#[derive(Debug, thiserror::Error)]
pub enum JoinDataError {
    /// The bytes do not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// A range of a progress channel whose batches this server no longer records.
    #[error("progress channel {channel} is no longer recorded")]
    ChannelNotRecorded { channel: usize },
    /// A range of a worker whose batches this server does not record.
    #[error("no batches of worker {sender} are recorded")]
    NotRecorded { sender: usize },
    /// A range that starts before the recording or ends before it starts.
    #[error("range [{start}, {end}) of worker {sender} is not recorded (recording starts at {first})")]
    RangeNotRecorded { sender: usize, start: u64, end: u64, first: u64 },
    /// Data for a worker that is not joining.
    #[error("progress data for a worker that is not joining")]
    NotJoining,
    /// A range of a worker past the workers known.
    #[error("a progress range of worker {sender}, of {peers}")]
    UnknownWorker { sender: usize, peers: usize },
    /// A range other than the one asked for, or one not asked for at all.
    #[error("{len} batches of worker {sender} from batch {start}, where {}", match asked {
        Some((first, end)) => format!("[{first}, {end}) was asked for"),
        None => "none was asked for".to_owned(),
    })]
    NotAsked { sender: usize, start: u64, len: usize, asked: Option<(u64, u64)> },
}

impl<T: Timestamp> ScopeLedger for std::cell::RefCell<Ledger<T>> {
    fn next_send(&self) -> u64 {
        self.borrow().next_send
    }

    fn state_len(&self) -> usize {
        self.borrow_mut().accumulated.iter().count()
    }

    fn grow(&self, peers: usize) {
        self.borrow_mut().grow(peers);
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut ledger = self.borrow_mut();
        let next_receive = ledger.next_receive.clone();
        ledger.recording.get_or_insert_with(|| next_receive.iter().map(|&next| (next, Vec::new())).collect());
        let state = State { accumulated: ledger.accumulated.iter().cloned().collect(), next_receive };
        let mut out = Vec::new();
        bincode_encode(&state, &mut out);
        out
    }

    fn announce(&self, operators: &[(usize, usize, Vec<u8>)], count: i64) -> Result<u64, DecodeError> {
        let mut ledger = self.borrow_mut();
        for (operator, outputs, times) in operators {
            let times: Vec<T> = bincode_decode(times)?;
            if let Some(time) = times.first() {
                for output in 0..*outputs {
                    ledger.announce.push(((Location::source(*operator, output), time.clone()), count));
                }
            }
        }
        Ok(ledger.next_send)
    }

    fn retire_initial(&self, operators: &[(usize, usize)], count: i64) {
        let mut ledger = self.borrow_mut();
        for &(operator, outputs) in operators {
            for output in 0..outputs {
                ledger.local.push(((Location::source(operator, output), T::minimum()), -count));
            }
        }
    }

    fn range(&self, sender: usize, start: u64, end: u64) -> Result<Option<Vec<u8>>, JoinDataError> {
        let ledger = self.borrow();
        let Some((first, batches)) = ledger.recording.as_ref().and_then(|r| r.get(sender)) else {
            return Err(JoinDataError::NotRecorded { sender });
        };
        if start < *first || end < start {
            return Err(JoinDataError::RangeNotRecorded { sender, start, end, first: *first });
        }
        if end > first + batches.len() as u64 {
            return Ok(None);
        }
        let slice = &batches[(start - first) as usize..(end - first) as usize];
        let mut out = Vec::new();
        bincode_encode(slice, &mut out);
        Ok(Some(out))
    }

    fn stop_recording(&self) {
        self.borrow_mut().recording = None;
    }

    fn is_recording(&self) -> bool {
        self.borrow().recording.is_some()
    }

    fn start_joining(&self, existing: usize) {
        let mut ledger = self.borrow_mut();
        let peers = ledger.next_receive.len();
        ledger.joining = Some(Joining {
            server: 0,
            state: None,
            direct_from: vec![None; existing],
            ranges: Vec::new(),
            held: (0..peers).map(|_| VecDeque::new()).collect(),
        });
    }

    fn detach(&self) {
        self.borrow_mut().detached = true;
    }

    fn install_state(
        &self,
        state: &[u8],
        server: usize,
        announced: Option<u64>,
    ) -> Result<(), JoinDataError> {
        let state: State<T> = bincode_decode(state)?;
        let mut ledger = self.borrow_mut();
        // The server may already count workers that joined after this one was admitted (back
        // to back joins): its state may name more workers than this one knows of, and the
        // ledger grows to them (the decoded state's length is backed by bytes received).
        ledger.grow(state.next_receive.len());
        ledger.awaited = announced.map(|seq| (server, seq));
        ledger.first_after = ledger.awaited;
        let joining = ledger.joining.as_mut().ok_or(JoinDataError::NotJoining)?;
        joining.state = Some((state.accumulated, state.next_receive));
        joining.server = server;
        Ok(())
    }

    fn direct_from(&self, sender: usize, first: u64) {
        if let Some(joining) = self.borrow_mut().joining.as_mut() {
            if let Some(slot) = joining.direct_from.get_mut(sender) {
                *slot = Some(first);
            }
        }
    }

    fn missing_ranges(&self) -> Option<Vec<(usize, u64, u64)>> {
        self.borrow().joining.as_ref()?.missing()
    }

    fn install_range(&self, sender: usize, start: u64, batches: &[u8]) -> Result<(), JoinDataError> {
        let batches: Vec<Updates<T>> = bincode_decode(batches)?;
        let mut ledger = self.borrow_mut();
        let peers = ledger.next_receive.len();
        if sender >= peers {
            return Err(JoinDataError::UnknownWorker { sender, peers });
        }
        let joining = ledger.joining.as_mut().ok_or(JoinDataError::NotJoining)?;
        // Exactly the range asked for: the state and the direct starts it follows from are set
        // once, before any request. Another start or length would be applied as batches of
        // `sender`, blamed on it, or replace batches it sends directly.
        let asked = joining.missing().and_then(|missing| missing.into_iter().find(|(s, _, _)| *s == sender));
        let got = start.checked_add(batches.len() as u64);
        match asked {
            Some((_, first, end)) if (first, Some(end)) == (start, got) => {}
            Some((_, first, end)) => {
                return Err(JoinDataError::NotAsked {
                    sender,
                    start,
                    len: batches.len(),
                    asked: Some((first, end)),
                })
            }
            None => return Err(JoinDataError::NotAsked { sender, start, len: batches.len(), asked: None }),
        }
        joining.ranges.push((sender, start, batches));
        Ok(())
    }

    fn has_all_ranges(&self) -> bool {
        self.borrow().joining.as_ref().is_none_or(Joining::is_complete)
    }
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
