//! A fuzzer of everything a process reads from a peer after the handshake.
//!
//! This module owns [`fuzz_frames`]: run after run, it starts real engine processes
//! ([`inputs::THREADS`] workers each, in threads of this process, listening on loopback,
//! running an input, an exchange and a probe) and connects to them with the real handshake
//! (`timely_communication::networking::establish`: hellos, proofs; sealing on in even runs and
//! off in odd ones) as a fake process: in runs 0 and 1 of every 4 it is process 1 of 2, in runs
//! 2 and 3 it joins processes 0 and 1 as process 2 and says hello to worker 0, its bootstrap
//! server. It writes `per_run` inputs to process 0 ([`inputs`]): accepted frames, then one
//! hostile input, then one more accepted frame (so that a gap or replay shows). Then it closes
//! its side and checks that every engine's run ends within the deadline (or, when an engine may
//! run on, as after a goodbye, ends when told to), with an error that names the fake process if
//! it fails, that every abort frame blames the fake process, and that no thread panicked
//! (panics are counted by `join_fuzz`'s hook). The largest single allocation is for the caller
//! to measure ([`alloc::CountingAllocator`] as the global allocator of a binary).
//!
//! The handshake fuzzing of the join acceptor is `timely_communication`'s `join_fuzz`; this
//! module shares its random numbers and its panic counter. It must not be used by the engine
//! itself: it exists for the test suite and `benches`' `fuzz_frames`.

pub use timely_communication::largest_allocation as alloc;
pub mod inputs;

use std::cell::RefCell;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use timely_communication::initialize::ClusterConfig;
use timely_communication::networking::join_fuzz::{count_panics, panics, FuzzRng};
use timely_communication::networking::peer_stream::Outflow;
use timely_communication::networking::{
    establish, establish_as, ClusterIdentity, Entry, MessageHeader, PeerStream, Sealing, SessionKeys,
};
use timely_communication::Config;

use crate::dataflow::{InputHandle, ProbeHandle};
use inputs::{Channels, Delivery, InputMaker, ACCEPTED, HOSTILE, THREADS};

/// What to fuzz.
#[derive(Clone, Debug)]
pub struct FrameFuzzOptions {
    /// Inputs in all (frames or raw writes).
    pub inputs: usize,
    /// Inputs per engine run (at least 3: accepted ones, one hostile, one accepted after it).
    pub per_run: usize,
    /// The seed of the inputs.
    pub seed: u64,
    /// How long an engine may take to start, or to end once its peer closed.
    pub deadline: Duration,
}

impl Default for FrameFuzzOptions {
    fn default() -> Self {
        FrameFuzzOptions { inputs: 20_000, per_run: 500, seed: 1, deadline: Duration::from_secs(10) }
    }
}

/// What a fuzz run found.
#[derive(Clone, Debug, Default)]
pub struct FrameFuzzReport {
    /// Inputs written (an engine that stopped reading ends a run's writing early).
    pub inputs: usize,
    /// Engine runs.
    pub runs: usize,
    /// Runs whose session was sealed.
    pub sealed_runs: usize,
    /// Runs in which the fake process joined processes 0 and 1 (else it was process 1 of 2).
    pub joiner_runs: usize,
    /// Runs the engine ended on its own with an error naming process 1 before the fake peer
    /// closed (a hostile input it detected), as opposed to at the close.
    pub detected: usize,
    /// Runs whose hostile input was an abort frame naming another member, which the members
    /// then blame (trusted by design: see `docs/networking.md`, "Attacks and faults").
    pub framed: usize,
    /// Inputs per kind of [`ACCEPTED`].
    pub accepted: [usize; ACCEPTED.len()],
    /// Inputs per kind of [`HOSTILE`].
    pub hostile: [usize; HOSTILE.len()],
    /// Threads that panicked.
    pub panics: usize,
    /// Runs whose engine did not end within the deadline.
    pub hangs: usize,
    /// What went wrong, run by run (at most 20 kept).
    pub failures: Vec<String>,
    /// Wall time.
    pub elapsed: Duration,
}

impl FrameFuzzReport {
    /// True when nothing went wrong.
    pub fn is_clean(&self) -> bool {
        self.panics == 0 && self.hangs == 0 && self.failures.is_empty()
    }

    fn fail(&mut self, failure: String) {
        if self.failures.len() < 20 {
            self.failures.push(failure);
        }
    }
}

/// Runs the fuzzer as `options` say.
///
/// # Errors
///
/// Only when no loopback port can be had; everything an input does is in the report.
pub fn fuzz_frames(options: &FrameFuzzOptions) -> Result<FrameFuzzReport, FuzzSetupError> {
    count_panics();
    let panics_before = panics();
    let started = Instant::now();
    let per_run = options.per_run.max(3);
    let mut report = FrameFuzzReport::default();
    let mut rng = FuzzRng::new(options.seed);
    while report.inputs < options.inputs {
        let count = per_run.min(options.inputs - report.inputs).max(3);
        let (sealed, joiner) = (report.runs % 2 == 0, report.runs % 4 >= 2);
        rng = one_run(rng, count, sealed, joiner, options.deadline, &mut report)?;
        report.runs += 1;
        report.sealed_runs += usize::from(sealed);
        report.joiner_runs += usize::from(joiner);
    }
    report.panics = panics() - panics_before;
    report.elapsed = started.elapsed();
    Ok(report)
}

/// Why the fuzzer cannot go on; what an input does goes into the report instead.
#[derive(Debug, thiserror::Error)]
pub enum FuzzSetupError {
    /// No loopback port could be had.
    #[error("no free loopback port: {0}")]
    NoPort(std::io::Error),
    /// The fake peer's stream could not be split into a reader and a writer.
    #[error("cannot split the fake peer's stream: {0}")]
    Stream(std::io::Error),
    /// The fake peer has no stream to process 0.
    #[error("no stream to process 0")]
    NoStream,
}

/// `count` loopback addresses free now.
fn free_addresses(count: usize) -> Result<Vec<String>, FuzzSetupError> {
    let listeners = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0").map_err(FuzzSetupError::NoPort))
        .collect::<Result<Vec<_>, _>>()?;
    listeners
        .iter()
        .map(|listener| Ok(listener.local_addr().map_err(FuzzSetupError::NoPort)?.to_string()))
        .collect()
}

type EngineRun = JoinHandle<Result<Vec<()>, crate::ExecuteError>>;

/// Starts process `process` of 2: it sends records through an exchange until `stop`, and its
/// first worker posts the process and its channels to `channels`.
fn start_engine(
    addresses: Vec<String>,
    process: usize,
    identity: ClusterIdentity,
    deadline: Duration,
    stop: Arc<AtomicBool>,
    channels: mpsc::Sender<(usize, Channels)>,
) -> EngineRun {
    let mut config = ClusterConfig::started_together(addresses, process, 2, THREADS, identity);
    config.connect_timeout = deadline;
    let channels = Mutex::new(Some(channels));
    std::thread::spawn(move || {
        crate::execute(Config::Cluster(config), move |worker| {
            let mut input: InputHandle<u64, u64> = InputHandle::new();
            let probe = ProbeHandle::new();
            worker.dataflow::<u64, _>(|scope| {
                scope.input_from(&mut input).exchange(|x| *x).probe_with(&probe);
            });
            if let Some(sender) = channels.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let state = worker.state().clone();
                let allocator = state.allocator();
                let records = allocator.allocations();
                let find = |kind: &str| {
                    records.iter().rev().find(|r| r.type_name.contains(kind)).map(|r| r.identifier)
                };
                if let (Some(progress), Some(data)) = (find("ProgressBatch<u64>"), find("Message<u64, u64>"))
                {
                    let _ = sender.send((process, Channels { progress: progress as u64, data: data as u64 }));
                }
            }
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                input.send(round);
                round += 1;
                input.advance_to(round);
                worker.step_or_park(Some(Duration::from_millis(1)));
            }
        })
    })
}

/// Collects what a sealer writes, so that the fuzzer can replay, forge or drop records.
#[derive(Clone, Default)]
struct Sink(Rc<RefCell<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The fake process 1's writing end: seals (or not) into wire bytes, batched into writes.
struct Writer {
    socket: TcpStream,
    sealer: Outflow<Sink>,
    sink: Sink,
    sealed: bool,
    /// The wire bytes of the last input, for a replay.
    last: Vec<u8>,
    pending: Vec<u8>,
    /// False once a write failed (the engine closed).
    open: bool,
}

impl Writer {
    fn new(socket: TcpStream, keys: Option<&SessionKeys>) -> Writer {
        let sink = Sink::default();
        let sealer = Outflow::new(sink.clone(), keys);
        Writer {
            socket,
            sealer,
            sink,
            sealed: keys.is_some(),
            last: Vec::new(),
            pending: Vec::new(),
            open: true,
        }
    }

    /// The wire bytes of `frame` (a record on a sealed session).
    fn seal(&mut self, frame: &[u8]) -> Vec<u8> {
        // Writing into memory cannot fail.
        let _ = self.sealer.write_all(frame);
        std::mem::take(&mut *self.sink.0.borrow_mut())
    }

    fn wire(&mut self, bytes: Vec<u8>) {
        self.pending.extend_from_slice(&bytes);
        self.last = bytes;
        if self.pending.len() >= 1 << 16 {
            self.flush();
        }
    }

    fn deliver(&mut self, delivery: Delivery, rng: &mut FuzzRng) {
        match delivery {
            Delivery::Frame(frame) | Delivery::Last(frame) => {
                let bytes = self.seal(&frame);
                self.wire(bytes);
            }
            Delivery::Raw(bytes) => self.wire(bytes),
            Delivery::Replay => {
                let bytes = self.last.clone();
                self.wire(bytes);
            }
            Delivery::Forge(frame) => {
                let mut bytes = self.seal(&frame);
                if !bytes.is_empty() {
                    let bit = rng.below(bytes.len() * 8);
                    bytes[bit / 8] ^= 1 << (bit % 8);
                }
                self.wire(bytes);
            }
            Delivery::Skip(frame) => {
                if self.sealed {
                    self.seal(&frame);
                }
            }
        }
    }

    fn flush(&mut self) {
        if self.open && !self.pending.is_empty() {
            self.open = self.socket.write_all(&self.pending).is_ok();
        }
        self.pending.clear();
    }
}

/// Reads process 0's frames until it closes; returns the process its abort frame blamed.
fn read_until_closed(mut inflow: impl Read) -> Option<u64> {
    let mut buffer = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        while let Ok(Some(header)) = MessageHeader::try_read(&buffer) {
            if buffer.len() < header.required_bytes() {
                break;
            }
            if header.is_abort() {
                return Some(header.seqno);
            }
            buffer.drain(..header.required_bytes());
        }
        match inflow.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(read) => buffer.extend_from_slice(&chunk[..read]),
        }
    }
}

/// The engines of a run, by process index.
type Engines = Vec<(usize, EngineRun)>;

/// Starts the engine processes and connects the fake one to them: as process 1 of 2, or as
/// process 2 joining processes 0 and 1 (then it says hello to worker 0). Returns the engines,
/// the fake's streams (the first to process 0) and process 0's channels, or why not.
fn connect(
    joiner: bool,
    identity: &ClusterIdentity,
    deadline: Duration,
    stop: &Arc<AtomicBool>,
) -> Result<(Engines, Vec<PeerStream>, Channels), (Engines, String)> {
    let addresses =
        free_addresses(if joiner { 3 } else { 2 }).map_err(|error| (Vec::new(), error.to_string()))?;
    let (sender, channels) = mpsc::channel();
    let members = if joiner { 2 } else { 1 };
    let engines: Engines = (0..members)
        .map(|process| {
            let engine = start_engine(
                addresses.clone(),
                process,
                identity.clone(),
                deadline,
                stop.clone(),
                sender.clone(),
            );
            (process, engine)
        })
        .collect();
    // Each member reports once its dataflow is built (set up); a joiner is refused before.
    let reported = |count: usize| {
        let mut first = None;
        for _ in 0..count {
            let (process, channels) = channels.recv_timeout(deadline).ok()?;
            first = first.or((process == 0).then_some(channels));
        }
        first
    };
    let (connected, channels) = match joiner {
        true => {
            let channels = reported(members);
            let joined = establish_as(Entry::Join, 2, &addresses, &[], THREADS, identity, deadline);
            (joined.map(|done| done.streams), channels)
        }
        false => {
            let connected = establish(1, &addresses, THREADS, identity, deadline);
            (connected, reported(members))
        }
    };
    let streams: Vec<PeerStream> = match connected {
        Ok(streams) => streams.into_iter().flatten().collect(),
        Err(error) => return Err((engines, format!("the fake peer could not connect: {error}"))),
    };
    match channels {
        Some(channels) => Ok((engines, streams, channels)),
        None => Err((engines, "an engine did not report its channels".into())),
    }
}

/// One engine run of `count` inputs; returns the generator to go on with.
fn one_run(
    rng: FuzzRng,
    count: usize,
    sealed: bool,
    joiner: bool,
    deadline: Duration,
    report: &mut FrameFuzzReport,
) -> Result<FuzzRng, FuzzSetupError> {
    let run = report.runs;
    let fake = if joiner { 2 } else { 1 };
    let sealing = if sealed { Sealing::Always } else { Sealing::Never };
    let identity = ClusterIdentity { cluster_id: 25, secret: b"frame fuzz secret".to_vec(), sealing };
    let stop = Arc::new(AtomicBool::new(false));
    let (engines, streams, channels) = match connect(joiner, &identity, deadline, &stop) {
        Ok(connected) => connected,
        Err((engines, problem)) => {
            report.fail(format!("run {run}: {problem}"));
            stop.store(true, Ordering::Relaxed);
            engines.into_iter().for_each(|(_, engine)| drop(engine.join()));
            return Ok(rng);
        }
    };
    let mut sockets = Vec::new();
    let mut readers = Vec::new();
    let mut writer = None;
    for peer in streams {
        let keys = peer.keys.clone();
        let (socket, _, inflow) = peer.split().map_err(FuzzSetupError::Stream)?;
        let _ = socket.set_read_timeout(Some(deadline));
        readers.push(std::thread::spawn(move || read_until_closed(inflow)));
        if writer.is_none() {
            writer = Some(Writer::new(socket.try_clone().map_err(FuzzSetupError::Stream)?, keys.as_ref()));
        }
        sockets.push(socket);
    }
    let mut writer = writer.ok_or(FuzzSetupError::NoStream)?;
    let mut maker = InputMaker::new(rng, channels, fake);
    if joiner {
        let hello = maker.hello();
        writer.deliver(Delivery::Frame(hello), maker.rng());
    }
    let mut written = 0;
    for _ in 0..count - 2 {
        let (kind, frame) = maker.accepted();
        report.accepted[kind] += 1;
        writer.deliver(Delivery::Frame(frame), maker.rng());
        written += 1;
    }
    let (kind, delivery) = maker.hostile();
    report.hostile[kind] += 1;
    let last = matches!(delivery, Delivery::Last(_));
    let framed = match &delivery {
        // An abort frame naming another member (process 1, when the fake is process 2).
        Delivery::Frame(bytes) => match MessageHeader::try_read(bytes) {
            Ok(Some(header)) if header.is_abort() && joiner && header.seqno == 1 => Some(1),
            _ => None,
        },
        _ => None,
    };
    writer.deliver(delivery, maker.rng());
    written += 1;
    if !last {
        let (kind, frame) = maker.accepted();
        report.accepted[kind] += 1;
        writer.deliver(Delivery::Frame(frame), maker.rng());
        written += 1;
    }
    writer.flush();
    report.inputs += written;
    let rng = maker.into_rng();
    // Did the engine end on its own (the hostile input detected)?
    let settle = Instant::now() + Duration::from_millis(100);
    while !engines[0].1.is_finished() && Instant::now() < settle && writer.open {
        std::thread::sleep(Duration::from_millis(1));
    }
    let detected = engines[0].1.is_finished();
    sockets.iter().for_each(|socket| drop(socket.shutdown(Shutdown::Write)));
    let end = RunEnd { run, fake, framed, detected };
    finish(&end, engines, readers, &stop, deadline, report);
    Ok(rng)
}

/// What [`finish`] checks a run's end against.
struct RunEnd {
    run: usize,
    /// The fake process, which every error and abort frame must name...
    fake: usize,
    /// ...unless the hostile input was an abort frame naming this other member: an abort's
    /// cause is trusted (it is how a cluster of three names the process that failed first, not
    /// the one that noticed it), so the members then blame each other.
    framed: Option<usize>,
    /// Process 0 ended on its own before the fake process closed.
    detected: bool,
}

/// Waits for the engines' runs to end (telling them to stop after a second: they may run on
/// without the fake process) and checks how they ended: any error names the fake process,
/// and so does any abort frame (see [`RunEnd::framed`] for the exception).
fn finish(
    end: &RunEnd,
    engines: Engines,
    readers: Vec<JoinHandle<Option<u64>>>,
    stop: &AtomicBool,
    deadline: Duration,
    report: &mut FrameFuzzReport,
) {
    let RunEnd { run, fake, framed, detected } = *end;
    let closed = Instant::now();
    while !engines.iter().all(|(_, engine)| engine.is_finished()) && closed.elapsed() < deadline {
        if closed.elapsed() > Duration::from_secs(1) {
            stop.store(true, Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if !engines.iter().all(|(_, engine)| engine.is_finished()) {
        stop.store(true, Ordering::Relaxed);
        report.hangs += 1;
        report.fail(format!("run {run}: an engine did not end within {deadline:?} of the peer's close"));
        return;
    }
    let verbose = std::env::var_os("TIMELY_WIRE_FUZZ_VERBOSE").is_some();
    let named = format!("lost the connection to process {fake}:");
    let members = engines.len();
    let names_member =
        |error: &str| (0..members).any(|p| error.contains(&format!("connection to process {p}:")));
    report.framed += usize::from(framed.is_some());
    for (process, engine) in engines {
        match engine.join() {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => {
                let error = error.to_string();
                if verbose {
                    eprintln!("run {run}, process {process}: detected {detected}: {error}");
                }
                let named = error.contains(&named) || (framed.is_some() && names_member(&error));
                if !named || error.contains("panicked") {
                    report.fail(format!(
                        "run {run}: process {process}'s error does not name process {fake}: {error}"
                    ));
                } else if detected && process == 0 {
                    report.detected += 1;
                }
            }
            Err(_) => report.fail(format!("run {run}: process {process}'s thread panicked")),
        }
    }
    for reader in readers {
        if let Ok(Some(blamed)) = reader.join() {
            if blamed != fake as u64 && !(framed.is_some() && blamed < members as u64) {
                report.fail(format!("run {run}: an abort frame blames process {blamed}, not {fake}"));
            }
        }
    }
}
