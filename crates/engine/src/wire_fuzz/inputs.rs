//! The frame fuzzer's inputs: what a fake process (1, a member, or 2, a joiner) writes to
//! process 0 after a valid handshake.
//!
//! This module owns the kinds of input and how each is made. *Accepted* kinds are frames a
//! process that knows the secret may send (heartbeats, clock frames with arbitrary values,
//! data messages with arbitrary records on an allocated channel, progress batches in sequence
//! at valid locations with arbitrary times and deltas, arbitrary bytes for channels nobody
//! allocated): the engine must take them and run on. *Hostile* kinds break the protocol
//! (arbitrary or mutated headers and payloads, out-of-range indices, false senders, sequence
//! gaps and replays, oversized lengths, truncation, forged, replayed or missing sealed records,
//! arbitrary bootstrap messages): the engine must end its run with an error naming process 1
//! or, for what it cannot tell from valid input, run on. It must not start engines or check
//! outcomes ([`super`] does).

use timely_communication::networking::join_fuzz::FuzzRng;
use timely_communication::networking::{MessageHeader, MAX_MESSAGE_BYTES};
use timely_communication::Exchangeable;

use crate::dataflow::Message;
use crate::progress::{Location, ProgressBatch};
use crate::rescale::messages::{BootstrapMessage, Envelope, ScopeWelcome, Welcome, BOOTSTRAP_CHANNEL};

/// Every process runs this many workers: process 0 has workers 0 and 1; the fake process
/// claims as many (2 and 3 as process 1, 4 and 5 as a joiner).
pub const THREADS: usize = 2;

/// The kinds of input the engine must accept, in the order of the report's counts.
pub const ACCEPTED: [&str; 6] = [
    "heartbeat",
    "clock probe or reply with arbitrary values",
    "data message with arbitrary records",
    "progress batch in sequence with arbitrary times and deltas",
    "arbitrary bytes for an unallocated channel",
    "leave notice of the fake process",
];

/// The hostile kinds, in the order of the report's counts.
pub const HOSTILE: [&str; 16] = [
    "arbitrary header and payload",
    "accepted frame with flipped bits",
    "undecodable payload on an allocated channel",
    "progress batch with out-of-range indices",
    "progress batch claiming another sender",
    "progress batch out of sequence",
    "header with an oversized length",
    "arbitrary bootstrap message",
    "arbitrary bytes on the bootstrap channel",
    "raw bytes past the sealing",
    "replayed record or frame",
    "sealed record with a flipped bit",
    "frame sealed but never sent (a gap)",
    "frame cut short, then the end",
    "goodbye or abort frame",
    "source or targets outside the processes",
];

/// The channels of process 0's dataflow that inputs are made for.
#[derive(Clone, Copy, Debug)]
pub struct Channels {
    /// The scope's progress channel.
    pub progress: u64,
    /// The exchange's data channel.
    pub data: u64,
}

/// What the writer does with an input's frame beyond writing it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Write the frame (sealed on a sealed session).
    Frame(Vec<u8>),
    /// Write these bytes to the socket as they are, past the sealing.
    Raw(Vec<u8>),
    /// Write the previous input's bytes on the wire again.
    Replay,
    /// Seal the frame and flip a bit of the record (as a frame on an unsealed session).
    Forge(Vec<u8>),
    /// Seal the frame but do not write it (skip it on an unsealed session).
    Skip(Vec<u8>),
    /// Write the frame, then end the run (nothing more can follow a cut frame).
    Last(Vec<u8>),
}

/// Makes inputs for one engine run.
pub struct InputMaker {
    rng: FuzzRng,
    channels: Channels,
    /// The fake process's first worker: `THREADS` for process 1, `2 * THREADS` for a joiner.
    first: usize,
    /// The next progress sequence number of each fake worker.
    sequence: [u64; THREADS],
    /// The last accepted frame, to mutate or replay.
    last: Vec<u8>,
}

impl InputMaker {
    /// Inputs for a run against `channels`, from `rng`, by the fake process `process` (1, a
    /// member, or 2, a joiner).
    pub fn new(rng: FuzzRng, channels: Channels, process: usize) -> InputMaker {
        InputMaker { rng, channels, first: process * THREADS, sequence: [0; THREADS], last: Vec::new() }
    }

    /// The generator, to go on with in the next run.
    pub fn into_rng(self) -> FuzzRng {
        self.rng
    }

    /// The generator, for what the writer decides at random.
    pub fn rng(&mut self) -> &mut FuzzRng {
        &mut self.rng
    }

    /// Fewer than `max` random bytes.
    fn junk(&mut self, max: usize) -> Vec<u8> {
        let length = self.rng.below(max);
        self.rng.bytes(length)
    }

    /// A worker of the fake process.
    fn fake_worker(&mut self) -> usize {
        self.first + self.rng.below(THREADS)
    }

    /// A target range within process 0: worker 0, worker 1, or both.
    fn targets(&mut self) -> (u64, u64) {
        match self.rng.below(3) {
            0 => (0, 1),
            1 => (1, 2),
            _ => (0, 2),
        }
    }

    /// A small time, or now and then any.
    fn time(&mut self) -> u64 {
        match self.rng.below(8) {
            0 => self.rng.next(),
            _ => self.rng.below(16) as u64,
        }
    }

    /// A frame of `source` on `channel`: a progress batch for every worker of process 0 (each
    /// counts every batch), anything else for one or both.
    fn frame(&mut self, channel: u64, source: usize, payload: &[u8]) -> Vec<u8> {
        let (target_lower, target_upper) =
            if channel == self.channels.progress { (0, THREADS as u64) } else { self.targets() };
        let seqno = self.rng.next();
        let header = MessageHeader {
            channel,
            source: source as u64,
            target_lower,
            target_upper,
            length: payload.len() as u64,
            seqno,
        };
        let mut bytes = Vec::with_capacity(48 + payload.len());
        header.write_to(&mut bytes);
        bytes.extend_from_slice(payload);
        bytes
    }

    fn control(&mut self, mut header: MessageHeader) -> Vec<u8> {
        header.seqno = self.rng.next();
        header.source = self.rng.next();
        let mut bytes = Vec::new();
        header.write_to(&mut bytes);
        bytes
    }

    /// The next progress batch of fake worker `source`: `updates` at the input's output.
    fn progress(&mut self, source: usize, sequence: u64) -> Vec<u8> {
        let count = self.rng.below(4);
        let updates = (0..count)
            .map(|_| ((Location::source(1, 0), self.time()), self.rng.below(5) as i64 - 2))
            .collect();
        let mut payload = Vec::new();
        ProgressBatch { source, sequence, after: None, updates }.encode(&mut payload);
        payload
    }

    /// A joiner's hello to its server, worker 0.
    pub fn hello(&mut self) -> Vec<u8> {
        let from = self.first;
        let mut payload = Vec::new();
        Envelope { from, message: BootstrapMessage::Hello { from } }.encode(&mut payload);
        let header = MessageHeader {
            channel: BOOTSTRAP_CHANNEL as u64,
            source: from as u64,
            target_lower: 0,
            target_upper: 1,
            length: payload.len() as u64,
            seqno: 0,
        };
        let mut bytes = Vec::new();
        header.write_to(&mut bytes);
        bytes.extend_from_slice(&payload);
        bytes
    }

    /// An accepted input; returns its kind (an index of [`ACCEPTED`]) and its frame.
    pub fn accepted(&mut self) -> (usize, Vec<u8>) {
        let kind = self.rng.below(ACCEPTED.len());
        let frame = match kind {
            0 => self.control(MessageHeader::heartbeat()),
            1 => {
                let (sent, index, burst) = (self.rng.next() as i64, self.rng.next() >> 1, self.rng.next());
                let mut probe = MessageHeader::clock_probe(sent, index, burst.max(index + 1));
                if self.rng.below(2) == 0 {
                    probe = MessageHeader::clock_reply(&probe, self.rng.next() as i64);
                }
                let mut bytes = Vec::new();
                probe.write_to(&mut bytes);
                bytes
            }
            2 => {
                let source = self.fake_worker();
                let records = (0..self.rng.below(8)).map(|_| self.rng.next()).collect();
                let mut payload = Vec::new();
                Message::new(self.time(), records, source).encode(&mut payload);
                self.frame(self.channels.data, source, &payload)
            }
            3 => {
                let source = self.fake_worker();
                let sequence = self.sequence[source - self.first];
                self.sequence[source - self.first] += 1;
                let payload = self.progress(source, sequence);
                self.frame(self.channels.progress, source, &payload)
            }
            4 => {
                let channel = 1_000_000 + self.rng.below(1000) as u64;
                let (source, length) = (self.fake_worker(), self.rng.below(64));
                let payload = self.rng.bytes(length);
                self.frame(channel, source, &payload)
            }
            _ => {
                let source = self.fake_worker();
                let mut payload = Vec::new();
                Envelope { from: source, message: BootstrapMessage::Leaving { from: source } }
                    .encode(&mut payload);
                self.frame(BOOTSTRAP_CHANNEL as u64, source, &payload)
            }
        };
        self.last.clone_from(&frame);
        (kind, frame)
    }

    /// A hostile input; returns its kind (an index of [`HOSTILE`]) and what to deliver.
    pub fn hostile(&mut self) -> (usize, Delivery) {
        let kind = self.rng.below(HOSTILE.len());
        let source = self.fake_worker();
        let delivery = match kind {
            0 => {
                let mut bytes = self.rng.bytes(48);
                let length = self.rng.below(256);
                if self.rng.below(2) == 0 {
                    // A plausible length, so that the payload is read.
                    bytes[32..40].copy_from_slice(&(length as u64).to_le_bytes());
                }
                bytes.extend(self.rng.bytes(length));
                Delivery::Frame(bytes)
            }
            1 => {
                let mut bytes = self.accepted().1;
                for _ in 0..=self.rng.below(3) {
                    let bit = self.rng.below(bytes.len() * 8);
                    bytes[bit / 8] ^= 1 << (bit % 8);
                }
                Delivery::Frame(bytes)
            }
            2 => {
                let channel = [self.channels.data, self.channels.progress][self.rng.below(2)];
                let length = self.rng.below(64);
                let payload = self.rng.bytes(length);
                Delivery::Frame(self.frame(channel, source, &payload))
            }
            3 => {
                let location = match self.rng.below(3) {
                    0 => Location::source(4 + self.rng.below(1 << 20), 0),
                    1 => Location::target(1, self.rng.below(1 << 20)),
                    _ => Location::source(1, 1 + self.rng.next() as usize % (1 << 40)),
                };
                let sequence = self.sequence[source - self.first];
                let mut payload = Vec::new();
                let updates = vec![((location, self.time()), 1)];
                ProgressBatch { source, sequence, after: None, updates }.encode(&mut payload);
                Delivery::Frame(self.frame(self.channels.progress, source, &payload))
            }
            4 => {
                let other = self.first + (source + 1 - self.first) % THREADS;
                let claimed = [0, 1, other, 6 + self.rng.below(100)][self.rng.below(4)];
                let payload = self.progress(claimed, self.sequence[source - self.first]);
                Delivery::Frame(self.frame(self.channels.progress, source, &payload))
            }
            5 => {
                let next = self.sequence[source - self.first];
                let wrong = match self.rng.below(2) {
                    0 if next > 0 => next - 1 - self.rng.below(next as usize) as u64,
                    _ => next + 1 + self.rng.below(1000) as u64,
                };
                let payload = self.progress(source, wrong);
                Delivery::Frame(self.frame(self.channels.progress, source, &payload))
            }
            6 => {
                let length =
                    MAX_MESSAGE_BYTES as u64 - self.rng.below(1 << 20) as u64 + self.rng.below(3) as u64;
                let length = [length, self.rng.next(), 1 << 30, 1 << 29][self.rng.below(4)];
                let (target_lower, target_upper) = self.targets();
                let header = MessageHeader {
                    channel: self.channels.data,
                    source: source as u64,
                    target_lower,
                    target_upper,
                    length,
                    seqno: 0,
                };
                let mut bytes = Vec::new();
                header.write_to(&mut bytes);
                bytes.extend(self.junk(4096));
                Delivery::Last(bytes)
            }
            7 => {
                let from = match self.rng.below(4) {
                    0 => self.rng.below(8),
                    _ => source,
                };
                let message = self.bootstrap_message(from);
                let mut payload = Vec::new();
                Envelope { from: [from, source][self.rng.below(2)], message }.encode(&mut payload);
                Delivery::Frame(self.frame(BOOTSTRAP_CHANNEL as u64, source, &payload))
            }
            8 => {
                let length = self.rng.below(128);
                let payload = self.rng.bytes(length);
                Delivery::Frame(self.frame(BOOTSTRAP_CHANNEL as u64, source, &payload))
            }
            9 => {
                let length = 1 + self.rng.below(96);
                Delivery::Raw(self.rng.bytes(length))
            }
            10 => Delivery::Replay,
            11 => Delivery::Forge(self.accepted().1),
            12 => Delivery::Skip(self.accepted().1),
            13 => {
                let bytes = self.accepted().1;
                let cut = self.rng.below(bytes.len());
                Delivery::Last(bytes[..cut].to_vec())
            }
            14 => {
                let header = match self.rng.below(2) {
                    0 => MessageHeader::goodbye(),
                    _ => MessageHeader::abort(self.rng.below(4)),
                };
                let mut bytes = Vec::new();
                header.write_to(&mut bytes);
                Delivery::Frame(bytes)
            }
            _ => {
                let mut bytes = self.accepted().1;
                let (field, value) = match self.rng.below(3) {
                    0 => (8, [0, 1, 4 + self.rng.below(100) as u64, self.rng.next()][self.rng.below(4)]),
                    1 => (16, 2 + self.rng.below(100) as u64),
                    _ => (24, 3 + self.rng.below(100) as u64),
                };
                bytes[field..field + 8].copy_from_slice(&value.to_le_bytes());
                Delivery::Frame(bytes)
            }
        };
        (kind, delivery)
    }

    /// A bootstrap message of any variant with arbitrary fields, naming `from`.
    fn bootstrap_message(&mut self, from: usize) -> BootstrapMessage {
        let channel = [self.channels.progress as usize, self.rng.next() as usize][self.rng.below(2)];
        let worker = self.rng.below(6);
        match self.rng.below(15) {
            0 => BootstrapMessage::Hello { from },
            1 => {
                let scopes = (0..self.rng.below(3))
                    .map(|_| ScopeWelcome {
                        channel,
                        address: vec![0],
                        state: self.junk(64),
                        announced: Some(self.rng.next()),
                    })
                    .collect();
                BootstrapMessage::Welcome(Welcome {
                    existing: self.rng.below(8),
                    dataflows: vec![Some(self.rng.next()); self.rng.below(3)],
                    operators: vec![(vec![0, 1], self.rng.bytes(8)); self.rng.below(2)],
                    scopes,
                    departed: vec![self.rng.below(8); self.rng.below(2)],
                })
            }
            2 => BootstrapMessage::Next { from, scopes: vec![(channel, self.rng.next()); self.rng.below(3)] },
            3 => {
                let (start, end) = (self.rng.next() % 100, self.rng.next() % 100);
                BootstrapMessage::Range { from, channel, sender: worker, start, end }
            }
            4 => BootstrapMessage::Batches {
                channel,
                sender: worker,
                start: self.rng.next(),
                batches: self.junk(64),
            },
            5 => BootstrapMessage::Done { from },
            6 => BootstrapMessage::Leaving { from },
            7 => BootstrapMessage::Left {
                from,
                dataflows: [0, 1, self.rng.next() as usize][self.rng.below(3)],
            },
            8 => BootstrapMessage::Serving { from, joiner: worker },
            9 => BootstrapMessage::Stranded {
                from,
                channels: vec![channel; self.rng.below(3)],
                kept: vec![channel; self.rng.below(2)],
            },
            12 => BootstrapMessage::Forwarded { from, channel, source: worker, bytes: self.junk(64) },
            10 => BootstrapMessage::Drained { from },
            11 => BootstrapMessage::Released { from },
            13 => BootstrapMessage::BuiltAtNotice { from, dataflows: self.rng.below(4) },
            _ => BootstrapMessage::Sealed { from },
        }
    }
}
