//! A fuzzer of the join acceptor: junk, damaged and refused join attempts against a running
//! cluster, then checks that the cluster is unharmed.
//!
//! This module owns [`fuzz_join_acceptor`], run with a small count by the tests and with
//! 100,000 inputs by `benches`' `fuzz_join_acceptor` binary. It starts a 2-process cluster
//! on loopback ([`super::harness`]), then fires inputs at process 0's acceptor from one or more
//! client threads, one connection each: random bytes, valid join hellos cut short, with flipped
//! bits, with a wrong cluster id, index, count, thread count or mode, followed by a random proof,
//! written in small pieces, and complete handshakes with a wrong secret. Each client writes,
//! closes its sending side, and reads until the acceptor closes the connection, which it must do
//! within [`ANSWER_LIMIT`] (else the input hung it). Afterwards the members must be healthy,
//! must move frames both ways, must still admit a valid joiner (which then moves frames with
//! both), and must all shut down in order; no thread of the process may have panicked. It must
//! not sleep per input: its speed is the acceptor's.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;
use std::time::{Duration, Instant};

use super::handshake::{handshake, hello_bytes, LocalProcess, Role};
use super::harness::{exchange, shutdown_all, start_cluster, HarnessError, Member};
use super::proof::Side;
use super::{ClusterIdentity, Entry, Liveness, NetworkError};

/// How long the acceptor may take to close a junk connection whose client closed its side.
pub const ANSWER_LIMIT: Duration = Duration::from_secs(10);

/// The kinds of input, in the order of [`FuzzReport::kinds`].
pub const KINDS: [&str; 8] = [
    "random bytes",
    "truncated hello",
    "bit-flipped hello",
    "wrong field in hello",
    "setup-mode hello",
    "hello with a random proof",
    "hello in small pieces",
    "wrong secret",
];

/// What to fuzz.
#[derive(Clone, Debug)]
pub struct FuzzOptions {
    /// How many inputs in all.
    pub inputs: usize,
    /// How many client threads send them at once.
    pub clients: usize,
    /// The seed of the inputs (the same seed gives the same inputs).
    pub seed: u64,
    /// Three free addresses: the two members and the joiner at the end.
    pub addresses: Vec<String>,
}

/// What a fuzz run did.
#[derive(Clone, Debug)]
pub struct FuzzReport {
    /// Inputs sent, per kind of [`KINDS`].
    pub kinds: [usize; KINDS.len()],
    /// How long the inputs took (not counting setup and the checks after).
    pub elapsed: Duration,
}

impl FuzzReport {
    /// Inputs per second.
    pub fn rate(&self) -> f64 {
        self.kinds.iter().sum::<usize>() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

const THREADS: usize = 2;
const SETUP: Duration = Duration::from_secs(30);

/// Panics anywhere in the process since [`count_panics`] was first called.
static PANICS: AtomicUsize = AtomicUsize::new(0);

/// The panics counted since [`count_panics`] was first called (a worker that stops with a
/// cluster failure unwinds without the panic hook, so it is not counted). The engine's frame
/// fuzzer (`timely_engine::wire_fuzz`) shares it.
pub fn panics() -> usize {
    PANICS.load(Ordering::SeqCst)
}

/// Installs, once, a panic hook that counts panics and then does what the previous hook did.
pub fn count_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
}

/// What the join fuzzer found wrong, or why it could not run.
#[derive(Debug, thiserror::Error)]
pub enum JoinFuzzError {
    /// Not three addresses, or no client.
    #[error("the fuzzer needs three addresses and at least one client")]
    Options,
    /// The simulated cluster did not start or move frames.
    #[error(transparent)]
    Cluster(#[from] HarnessError),
    /// Threads of the process panicked.
    #[error("{0} thread(s) panicked during the run")]
    Panicked(usize),
    /// A client thread panicked.
    #[error("a fuzz client panicked")]
    ClientPanicked,
    /// A member failed while the inputs came in.
    #[error("process {process} failed during the fuzzing: {failure}")]
    Failed {
        /// The member.
        process: usize,
        /// Its failure.
        failure: NetworkError,
    },
    /// The valid joiner was not admitted.
    #[error("the valid joiner after the fuzzing: {0}")]
    Joiner(NetworkError),
    /// The members learned of other joins than the valid one.
    #[error("after the valid join the workers learned of {0:?}, not [2] each")]
    Learned(Vec<Vec<usize>>),
    /// A member did not shut down in order.
    #[error("process {process} did not shut down in order: {error}")]
    Shutdown {
        /// The member.
        process: usize,
        /// Why.
        error: NetworkError,
    },
    /// A client could not connect.
    #[error("cannot connect to {target}: {error}")]
    Connect {
        /// The acceptor's address.
        target: String,
        /// Why.
        error: std::io::Error,
    },
    /// A hello could not be encoded.
    #[error(transparent)]
    Hello(NetworkError),
    /// A client's read timeout could not be set.
    #[error("cannot set a read timeout: {0}")]
    ReadTimeout(std::io::Error),
    /// The acceptor completed a handshake with a wrong secret.
    #[error("a handshake with a wrong secret succeeded")]
    WrongSecretAccepted,
    /// The acceptor kept a junk connection open.
    #[error("the acceptor kept a junk connection open for {0:?}")]
    KeptOpen(Duration),
    /// The acceptor kept sending on a junk connection.
    #[error("the acceptor kept sending for {0:?}")]
    KeptSending(Duration),
}

/// Runs the fuzzer as `options` say.
///
/// # Errors
///
/// What went wrong: the cluster did not start, an input hung the acceptor, a thread panicked, the
/// members stopped moving frames or refused the valid joiner, or did not shut down in order.
pub fn fuzz_join_acceptor(options: &FuzzOptions) -> Result<FuzzReport, JoinFuzzError> {
    count_panics();
    let panics_before = PANICS.load(Ordering::SeqCst);
    if options.addresses.len() != 3 || options.clients == 0 {
        return Err(JoinFuzzError::Options);
    }
    let identity =
        ClusterIdentity { cluster_id: 42, secret: b"fuzz secret".to_vec(), ..ClusterIdentity::default() };
    let mut members = start_cluster(&options.addresses[..2], THREADS, &identity, SETUP)?;
    exchange(&mut members, 0, SETUP)?;
    let started = Instant::now();
    let kinds = fire(options, &identity)?;
    let elapsed = started.elapsed();
    check_members(&mut members, options, &identity)?;
    let panics = PANICS.load(Ordering::SeqCst) - panics_before;
    if panics > 0 {
        return Err(JoinFuzzError::Panicked(panics));
    }
    Ok(FuzzReport { kinds, elapsed })
}

/// Sends the inputs from `options.clients` threads; returns the count per kind.
fn fire(options: &FuzzOptions, identity: &ClusterIdentity) -> Result<[usize; KINDS.len()], JoinFuzzError> {
    let handles: Vec<_> = (0..options.clients)
        .map(|client| {
            let share =
                options.inputs / options.clients + usize::from(client < options.inputs % options.clients);
            let mut inputs = Inputs::new(options.seed.wrapping_add(client as u64), identity.clone());
            let target = options.addresses[0].clone();
            std::thread::spawn(move || {
                let mut kinds = [0usize; KINDS.len()];
                for _ in 0..share {
                    kinds[inputs.send_one(&target)?] += 1;
                }
                Ok::<_, JoinFuzzError>(kinds)
            })
        })
        .collect();
    let mut total = [0usize; KINDS.len()];
    for handle in handles {
        let kinds = handle.join().map_err(|_| JoinFuzzError::ClientPanicked)??;
        total.iter_mut().zip(kinds).for_each(|(sum, count)| *sum += count);
    }
    Ok(total)
}

/// After the inputs: the members are healthy and move frames, a valid joiner is admitted and
/// moves frames with both, and all three shut down in order.
fn check_members(
    members: &mut Vec<Member>,
    options: &FuzzOptions,
    identity: &ClusterIdentity,
) -> Result<(), JoinFuzzError> {
    for (process, member) in members.iter().enumerate() {
        if let Some(failure) = member.transport.health().failure() {
            return Err(JoinFuzzError::Failed { process, failure });
        }
    }
    exchange(members, 1, SETUP)?;
    let settings = (THREADS, Liveness::default());
    let joiner = Member::start(Entry::Join, 2, &options.addresses, settings, identity, SETUP)
        .map_err(JoinFuzzError::Joiner)?;
    members.push(joiner);
    let deadline = Instant::now() + SETUP;
    for member in members.iter_mut().take(2) {
        let mut learned = member.take_joins();
        while learned.iter().any(Vec::is_empty) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
            learned.iter_mut().zip(member.take_joins()).for_each(|(seen, more)| seen.extend(more));
        }
        if learned.iter().any(|seen| seen != &[2]) {
            return Err(JoinFuzzError::Learned(learned));
        }
    }
    exchange(members, 2, SETUP)?;
    for (process, result) in shutdown_all(std::mem::take(members), SETUP).into_iter().enumerate() {
        result.map_err(|error| JoinFuzzError::Shutdown { process, error })?;
    }
    Ok(())
}

/// The fuzzers' random numbers: a small, seeded generator (xorshift64*), so that a seed
/// gives the same inputs on every machine.
#[derive(Clone, Debug)]
pub struct FuzzRng {
    state: u64,
}

impl FuzzRng {
    /// The generator of `seed`.
    pub fn new(seed: u64) -> FuzzRng {
        FuzzRng { state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1 }
    }

    /// The next number.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `bound` (at least 1).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }

    /// `length` random bytes.
    pub fn bytes(&mut self, length: usize) -> Vec<u8> {
        (0..length).map(|_| self.next() as u8).collect()
    }
}

/// A source of inputs: random numbers and what a valid hello is.
struct Inputs {
    rng: FuzzRng,
    identity: ClusterIdentity,
}

impl Inputs {
    fn new(seed: u64, identity: ClusterIdentity) -> Inputs {
        Inputs { rng: FuzzRng::new(seed), identity }
    }

    fn next(&mut self) -> u64 {
        self.rng.next()
    }

    fn below(&mut self, bound: usize) -> usize {
        self.rng.below(bound)
    }

    fn bytes(&mut self, length: usize) -> Vec<u8> {
        self.rng.bytes(length)
    }

    /// The hello of the valid next joiner (process 2 of 3, two threads), as `role` would send it.
    fn hello(&self, local: LocalProcess) -> Result<Vec<u8>, JoinFuzzError> {
        hello_bytes(&local, self.identity.cluster_id).map_err(JoinFuzzError::Hello)
    }

    /// Sends one input to `target`; returns its kind.
    fn send_one(&mut self, target: &str) -> Result<usize, JoinFuzzError> {
        let kind = self.below(KINDS.len());
        let joiner = LocalProcess { process: 2, processes: 3, threads: THREADS, role: Role::Joining };
        let mut stream = TcpStream::connect(target)
            .map_err(|error| JoinFuzzError::Connect { target: target.to_string(), error })?;
        let _ = stream.set_nodelay(true);
        let written = match kind {
            0 => {
                let length = self.below(200);
                write_all(&mut stream, &self.bytes(length))
            }
            1 => {
                let hello = self.hello(joiner)?;
                let cut = self.below(hello.len());
                write_all(&mut stream, &hello[..cut])
            }
            2 => {
                let mut hello = self.hello(joiner)?;
                for _ in 0..=self.below(3) {
                    let bit = self.below(hello.len() * 8);
                    hello[bit / 8] ^= 1 << (bit % 8);
                }
                write_all(&mut stream, &hello)
            }
            3 => {
                let wrong = self.wrong_joiner(joiner);
                let hello = hello_bytes(&wrong.0, wrong.1).map_err(JoinFuzzError::Hello)?;
                write_all(&mut stream, &hello)
            }
            4 => write_all(&mut stream, &self.hello(LocalProcess { role: Role::Setup, ..joiner })?),
            5 => {
                let mut bytes = self.hello(joiner)?;
                bytes.extend(self.bytes(32));
                write_all(&mut stream, &bytes)
            }
            6 => {
                let hello = self.hello(joiner)?;
                let end = self.below(hello.len());
                hello[..end].chunks(1 + self.below(8)).try_for_each(|piece| write_all(&mut stream, piece))
            }
            _ => {
                let wrong = ClusterIdentity { secret: self.bytes(8), ..self.identity.clone() };
                let refused = handshake(&mut stream, &joiner, &wrong, Side::Dialler, ANSWER_LIMIT);
                if refused.is_ok() {
                    return Err(JoinFuzzError::WrongSecretAccepted);
                }
                Ok(())
            }
        };
        // The acceptor may have closed first (a refusal): a failed write is no failure.
        drop(written);
        await_close(stream)?;
        Ok(kind)
    }

    /// A joiner's hello with one field wrong, and the cluster id to send it with.
    fn wrong_joiner(&mut self, joiner: LocalProcess) -> (LocalProcess, u64) {
        let cluster_id = self.identity.cluster_id;
        match self.below(5) {
            0 => (joiner, cluster_id ^ (1 + self.next() % 1000)),
            1 => (LocalProcess { process: 3 + self.below(100), ..joiner }, cluster_id),
            2 => (LocalProcess { processes: 4 + self.below(100), ..joiner }, cluster_id),
            3 => (LocalProcess { threads: THREADS + 1 + self.below(8), ..joiner }, cluster_id),
            _ => (LocalProcess { process: self.below(2), processes: 2, ..joiner }, cluster_id),
        }
    }
}

fn write_all(stream: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    stream.write_all(bytes)
}

/// Closes our sending side and reads until the acceptor closes the connection.
fn await_close(mut stream: TcpStream) -> Result<(), JoinFuzzError> {
    let _ = stream.shutdown(Shutdown::Write);
    stream.set_read_timeout(Some(ANSWER_LIMIT)).map_err(JoinFuzzError::ReadTimeout)?;
    let started = Instant::now();
    let mut sink = [0u8; 256];
    loop {
        match stream.read(&mut sink) {
            Ok(0) => return Ok(()),
            Ok(_) if started.elapsed() < ANSWER_LIMIT => {}
            Err(error)
                if matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
            {
                return Err(JoinFuzzError::KeptOpen(ANSWER_LIMIT));
            }
            // A reset is the acceptor closing with our bytes unread.
            Err(_) => return Ok(()),
            Ok(_) => return Err(JoinFuzzError::KeptSending(ANSWER_LIMIT)),
        }
    }
}
