//! Starting workers: their configuration from command-line arguments and the environment.
//!
//! This module owns [`Config`] (how many workers and processes, parsed from `-w`, `-n`, `-p`,
//! `-h`, and `--join W --nn N [--gone P,Q]` for a process that joins a running cluster; the peer timeout from `--peer-timeout` or the environment; the receive budgets from `--receive-budget` and `--early-bytes` or the environment; `--insecure`; the cluster's
//! id and secret and the clock interval from the environment), the refusal to run a cluster reachable from other
//! machines without a secret (before any socket is opened),
//! and [`initialize`], which builds each worker's allocator from a [`Config`] and starts the
//! workers (see [`crate::workers`]).
//! It must not know what workers compute.

use std::sync::Arc;
use std::time::Duration;

use crate::allocator::cluster::{ClusterBuilder, Network};
use crate::allocator::process::ProcessBuilder;
use crate::allocator::thread::ThreadBuilder;
use crate::config_error::ConfigError;
use crate::networking::{
    decide_protection, default_addresses, establish_with, read_hostfile, ClockSync, ClusterIdentity,
    Connections, Entry, FrameObserver, Liveness, NetworkError, Protection, ReceiveBudget, Sealing,
    SetupTimes, Transport, TransportOptions,
};
use crate::runtime_args::{RuntimeArgs, RuntimeOption};
use crate::workers::{initialize_from, SpawnError, WorkerGuards};
use crate::{Allocator, AllocatorBuilder};

/// How many workers to run, and how they communicate.
// Built once per run and matched by value everywhere: a box would cost every caller for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Config {
    /// One worker.
    Thread,
    /// The given number of worker threads in this process.
    Process(usize),
    /// This process's part of a cluster of processes.
    Cluster(ClusterConfig),
}

/// One process of a cluster: which one, how many, where they listen, and how they recognise
/// each other.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// Worker threads per process (the same in every process).
    pub threads: usize,
    /// This process's index, `0..processes`.
    pub process: usize,
    /// The number of processes (for a process that joins, the number after it joined).
    pub processes: usize,
    /// The number of processes the cluster was started with (`-n`); equal to `processes` for
    /// an initial process.
    pub initial_processes: usize,
    /// For a process that joins a running cluster (`--join W`), the worker `W` that serves its
    /// bootstrap; `None` for an initial process.
    pub join: Option<usize>,
    /// For a process that joins: the processes that left the cluster before (`--gone P,Q`),
    /// which it does not dial.
    pub gone: Vec<usize>,
    /// `host:port` where each process listens, by process index.
    pub addresses: Vec<String>,
    /// The cluster's id and secret; processes with different ones refuse each other.
    pub identity: ClusterIdentity,
    /// How long to wait for every other process to be reachable.
    pub connect_timeout: Duration,
    /// How long another process may stay silent before it counts as lost.
    pub liveness: Liveness,
    /// Run without a secret even on addresses other machines can reach (`--insecure`).
    pub insecure: bool,
    /// How often a process other than 0 measures its clock against process 0's.
    pub clock: ClockSync,
    /// Told of every data frame this process's network threads write and read (the engine's
    /// trace sets it; `None` from [`Config::from_args`]); see [`crate::networking::observe`].
    pub frames: Option<Arc<dyn FrameObserver>>,
    /// What received messages may hold in memory before they spill to disk, and what a worker
    /// keeps for channels it has not built yet (`--receive-budget`, `--early-bytes`, else
    /// `TIMELY_RECEIVE_BUDGET`, `TIMELY_EARLY_BYTES`; `TIMELY_SPILL_DIR`); see
    /// [`crate::networking::receive_budget`].
    pub receive_budget: ReceiveBudget,
}

impl ClusterConfig {
    /// Process `process` of `processes` processes of `threads` workers that start together
    /// (`addresses` may hold more, for processes that join later), recognising each other by
    /// `identity`, with the default timeouts and checks: what tests and benchmarks running a
    /// cluster on loopback build. A joiner sets `join`, `processes` and `gone` afterwards.
    pub fn started_together(
        addresses: Vec<String>,
        process: usize,
        processes: usize,
        threads: usize,
        identity: ClusterIdentity,
    ) -> Self {
        ClusterConfig {
            threads,
            process,
            processes,
            initial_processes: processes,
            join: None,
            gone: Vec::new(),
            addresses,
            identity,
            connect_timeout: Duration::from_secs(30),
            liveness: Liveness::default(),
            clock: ClockSync::default(),
            insecure: false,
            frames: None,
            receive_budget: ReceiveBudget::default(),
        }
    }
}

/// The environment variable holding the cluster id (a `u64`; default 0).
pub const CLUSTER_ID_VARIABLE: &str = "TIMELY_CLUSTER_ID";
/// The environment variable holding the cluster secret (default: empty).
pub const CLUSTER_SECRET_VARIABLE: &str = "TIMELY_CLUSTER_SECRET";
/// The environment variable holding the peer timeout in seconds (default 10), when
/// `--peer-timeout` is not given.
pub const PEER_TIMEOUT_VARIABLE: &str = "TIMELY_PEER_TIMEOUT";
/// The environment variable holding the clock interval in seconds (default 10).
pub const CLOCK_INTERVAL_VARIABLE: &str = "TIMELY_CLOCK_INTERVAL";
/// The environment variable that, set to `1`, has the effect of `--insecure`.
pub const INSECURE_VARIABLE: &str = "TIMELY_INSECURE";
/// The environment variable that decides whether frames are sealed (authenticated and
/// encrypted) after the handshake: `1` always, `0` never asked by this process, unset when the
/// hostfile has an address that is not loopback.
pub const SEAL_VARIABLE: &str = "TIMELY_SEAL";
/// How long a process waits for the others at start-up (all must be started within it).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

/// An option as written on the command line (its spelling, for errors) and its value.
type Given = Option<(String, String)>;

/// The runtime options of a command line that make a [`Config`], before they become one.
struct Options {
    workers: Given,
    processes: Given,
    process: Given,
    hostfile: Given,
    peer_timeout: Given,
    join: Given,
    after_join: Given,
    gone: Given,
    receive_budget: Given,
    early_bytes: Given,
    insecure: bool,
}

impl Options {
    /// The options of `args` that make a [`Config`].
    fn from_runtime_args(args: &RuntimeArgs) -> Options {
        let given = |option| args.get(option).map(|(name, value)| (name.to_string(), value.to_string()));
        Options {
            workers: given(RuntimeOption::Workers),
            processes: given(RuntimeOption::Processes),
            process: given(RuntimeOption::Process),
            hostfile: given(RuntimeOption::Hostfile),
            peer_timeout: given(RuntimeOption::PeerTimeout),
            join: given(RuntimeOption::Join),
            after_join: given(RuntimeOption::AfterJoin),
            gone: given(RuntimeOption::Gone),
            receive_budget: given(RuntimeOption::ReceiveBudget),
            early_bytes: given(RuntimeOption::EarlyBytes),
            insecure: args.has(RuntimeOption::Insecure),
        }
    }

    fn into_config(self) -> Result<Config, ConfigError> {
        let workers = count(&self.workers)?;
        let initial = count(&self.processes)?;
        self.check_join_pair()?;
        let processes = match &self.after_join {
            Some(_) => count(&self.after_join)?,
            None => initial,
        };
        let process = match &self.process {
            None => 0,
            Some((name, value)) => {
                let process = value.parse::<usize>().map_err(|_| {
                    ConfigError::option(name, format!("expected a process index, found {value:?}"))
                })?;
                if process >= processes {
                    return Err(ConfigError::option(
                        name,
                        format!("process {process} does not exist in a cluster of {processes} process(es)"),
                    ));
                }
                process
            }
        };
        let join = self.join_server(initial, process, workers)?;
        let gone = self.gone(join, process)?;
        if processes == 1 {
            return Ok(if workers == 1 { Config::Thread } else { Config::Process(workers) });
        }
        let addresses = match &self.hostfile {
            Some((_, path)) => read_hostfile(path, processes)?,
            None => default_addresses(processes),
        };
        Ok(Config::Cluster(ClusterConfig {
            threads: workers,
            process,
            processes,
            initial_processes: initial,
            join,
            gone,
            addresses,
            identity: identity_from_environment()?,
            connect_timeout: CONNECT_TIMEOUT,
            liveness: self.liveness()?,
            insecure: self.insecure || insecure_from_environment()?,
            clock: clock_from_environment()?,
            frames: None,
            receive_budget: ReceiveBudget::from_options(
                given(&self.receive_budget),
                given(&self.early_bytes),
            )?,
        }))
    }

    /// `--join` and `--nn` come together or not at all.
    fn check_join_pair(&self) -> Result<(), ConfigError> {
        match (&self.join, &self.after_join) {
            (None, Some((name, _))) => Err(ConfigError::option(
                name,
                "the number of processes after a join needs --join W, the worker that serves the \
                 joiner's bootstrap",
            )),
            (Some((name, _)), None) => Err(ConfigError::option(
                name,
                "needs --nn N, the number of processes after the join (-p + 1)",
            )),
            _ => Ok(()),
        }
    }

    /// The bootstrap server of a joining process (`--join W`, checked against `--nn N`, the
    /// initial count `initial`, this process's index and `workers` per process); the pair was
    /// checked by `check_join_pair`.
    fn join_server(
        &self,
        initial: usize,
        process: usize,
        workers: usize,
    ) -> Result<Option<usize>, ConfigError> {
        let (Some((name, value)), Some((nn, after))) = (&self.join, &self.after_join) else {
            return Ok(None);
        };
        let server = value
            .parse::<usize>()
            .map_err(|_| ConfigError::option(name, format!("expected a worker index, found {value:?}")))?;
        let after: usize = after
            .parse()
            .map_err(|_| ConfigError::option(nn, format!("expected a number, found {after:?}")))?;
        if initial == 1 {
            return Err(ConfigError::option(
                name,
                "a process started alone (-n 1) runs without a network, so no process can join it; \
                 start the initial processes with -n 2 or more",
            ));
        }
        if after <= initial {
            return Err(ConfigError::option(
                nn,
                format!(
                    "{after} processes after the join must be more than the {initial} initial processes (-n)"
                ),
            ));
        }
        if after != process + 1 {
            return Err(ConfigError::option(
                nn,
                format!(
                    "a joining process is the last of the cluster, so with -p {process} the cluster has {} \
                     processes after the join, not {after} (one process joins at a time)",
                    process + 1
                ),
            ));
        }
        if server >= process * workers {
            return Err(ConfigError::option(
                name,
                format!(
                    "worker {server} is not a worker of a running process (with -p {process} and -w {workers} \
                     those are workers 0 to {})",
                    process * workers - 1
                ),
            ));
        }
        Ok(Some(server))
    }

    /// The processes that left before this one joins (`--gone P,Q`, comma-separated, each
    /// below `-p`); only with `--join`.
    fn gone(&self, join: Option<usize>, process: usize) -> Result<Vec<usize>, ConfigError> {
        let Some((name, value)) = &self.gone else { return Ok(Vec::new()) };
        if join.is_none() {
            return Err(ConfigError::option(
                name,
                "only a joining process (--join W) names processes that left",
            ));
        }
        let mut gone = Vec::new();
        for part in value.split(',').filter(|part| !part.trim().is_empty()) {
            match part.trim().parse::<usize>() {
                Ok(q) if q < process && !gone.contains(&q) => gone.push(q),
                Ok(q) => {
                    return Err(ConfigError::option(
                        name,
                        format!("process {q} is not a distinct process below this one ({process})"),
                    ))
                }
                Err(_) => {
                    return Err(ConfigError::option(
                        name,
                        format!("expected process indices like 1,3, found {value:?}"),
                    ))
                }
            }
        }
        gone.sort_unstable();
        Ok(gone)
    }

    /// The peer timeout from `--peer-timeout`, else `TIMELY_PEER_TIMEOUT`, else the default.
    fn liveness(&self) -> Result<Liveness, ConfigError> {
        match (&self.peer_timeout, std::env::var(PEER_TIMEOUT_VARIABLE)) {
            (Some((name, value)), _) => Liveness::from_seconds(value)
                .map_err(|error| ConfigError::OptionSeconds { option: name.clone(), error }),
            (None, Ok(value)) => Liveness::from_seconds(&value)
                .map_err(|error| ConfigError::VariableSeconds { variable: PEER_TIMEOUT_VARIABLE, error }),
            (None, Err(_)) => Ok(Liveness::default()),
        }
    }
}

/// An option as `(as written, value)`, if given.
fn given(option: &Given) -> Option<(&str, &str)> {
    option.as_ref().map(|(name, value)| (name.as_str(), value.as_str()))
}

/// The clock interval from `TIMELY_CLOCK_INTERVAL`, else the default.
fn clock_from_environment() -> Result<ClockSync, ConfigError> {
    match std::env::var(CLOCK_INTERVAL_VARIABLE) {
        Ok(value) => ClockSync::from_seconds(&value)
            .map_err(|error| ConfigError::VariableSeconds { variable: CLOCK_INTERVAL_VARIABLE, error }),
        Err(_) => Ok(ClockSync::default()),
    }
}

/// Whether `TIMELY_INSECURE` asks to run without a secret (`1`; `0` or unset do not).
fn insecure_from_environment() -> Result<bool, ConfigError> {
    match std::env::var(INSECURE_VARIABLE).as_deref().map(str::trim) {
        Err(_) | Ok("" | "0") => Ok(false),
        Ok("1") => Ok(true),
        Ok(other) => {
            Err(ConfigError::variable(INSECURE_VARIABLE, format!("must be 1 or 0, found {other:?}")))
        }
    }
}

/// The positive count given by an option, or 1 when absent.
fn count(given: &Given) -> Result<usize, ConfigError> {
    let Some((name, value)) = given else { return Ok(1) };
    match value.parse::<usize>() {
        Ok(0) => Err(ConfigError::option(name, "the number must be at least 1")),
        Ok(count) => Ok(count),
        Err(_) => Err(ConfigError::option(name, format!("expected a number, found {value:?}"))),
    }
}

/// The cluster identity from `TIMELY_CLUSTER_ID` and `TIMELY_CLUSTER_SECRET` (defaults: 0, empty).
fn identity_from_environment() -> Result<ClusterIdentity, ConfigError> {
    let cluster_id = match std::env::var(CLUSTER_ID_VARIABLE) {
        Ok(value) => value.trim().parse::<u64>().map_err(|_| {
            ConfigError::variable(
                CLUSTER_ID_VARIABLE,
                format!("must be a number from 0 to 2^64 - 1, found {value:?}"),
            )
        })?,
        Err(_) => 0,
    };
    let secret = std::env::var(CLUSTER_SECRET_VARIABLE).unwrap_or_default().into_bytes();
    let sealing = match std::env::var(SEAL_VARIABLE).as_deref().map(str::trim) {
        Err(_) | Ok("") => Sealing::Auto,
        Ok("1") => Sealing::Always,
        Ok("0") => Sealing::Never,
        Ok(other) => {
            return Err(ConfigError::variable(SEAL_VARIABLE, format!("must be 1 or 0, found {other:?}")))
        }
    };
    Ok(ClusterIdentity { cluster_id, secret, sealing })
}

impl Config {
    /// Parses the runtime options from `args`, ignoring unrelated args: `-w N` (also
    /// `--workers`, `--threads`) worker threads per process, `-n N` (`--processes`) processes,
    /// `-p I` (`--process`) this process's index, `-h FILE` (`--hostfile`) one `host:port` per
    /// process (default `localhost:2101+i`), `--peer-timeout SECONDS` how long another process
    /// may stay silent before it counts as lost (default `TIMELY_PEER_TIMEOUT`, else 10), and
    /// `--insecure` (or `TIMELY_INSECURE=1`) to run without a secret on addresses that are not
    /// loopback, and, for a process that joins a running cluster, `--join W` (the worker that
    /// serves its bootstrap, a worker of a process below `-p`) with `--nn N` (the number of
    /// processes after the join, which must be `-p + 1` and more than `-n`, the number the
    /// cluster was started with; the hostfile must list at least `N` addresses) and
    /// `--gone P,Q` (the processes that left the cluster before, not dialed). Values may be
    /// attached: `-w4`, `--workers=4`, `--join=0`.
    ///
    /// Returns the config (`Thread` for one worker, `Process(N)` for N threads of one process,
    /// `Cluster` for more than one process, whose id and secret come from the environment
    /// variables `TIMELY_CLUSTER_ID` and `TIMELY_CLUSTER_SECRET`) and the arguments that are
    /// not the runtime's, in order (the trace's options, [`RuntimeOption`], are left out too). The last occurrence of an option wins. Arguments after `--`
    /// are not parsed; `--` and everything after it are returned.
    ///
    /// # Errors
    ///
    /// A missing or malformed value, a count of zero, `-p` outside `0..n` (`0..N` when
    /// joining), `--join` without `--nn` or the reverse, `N` other than `-p + 1` or not above
    /// `-n`, `-n 1` with `--join`, `W` not a worker of a process below `-p`, an unreadable or
    /// malformed hostfile, a malformed cluster id, peer timeout or `TIMELY_INSECURE`.
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Result<(Config, Vec<String>), ConfigError> {
        let args = RuntimeArgs::parse(args)?;
        Ok((Config::from_runtime_args(&args)?, args.rest))
    }

    /// The configuration the options of `args` ([`RuntimeArgs::parse`]) describe, as
    /// [`Config::from_args`] reads it.
    ///
    /// # Errors
    ///
    /// As [`Config::from_args`], but for the command line's own form.
    pub fn from_runtime_args(args: &RuntimeArgs) -> Result<Config, ConfigError> {
        Options::from_runtime_args(args).into_config()
    }

    /// One allocator builder per worker of this process, in index order. For a cluster this
    /// connects to every other process first (waiting up to its `connect_timeout`) and starts
    /// the network threads, which close when the last worker's allocator is dropped.
    ///
    /// # Errors
    ///
    /// `Process(0)`: there must be at least one worker; for a cluster, an address other
    /// machines can reach without a secret or `insecure` (refused before any socket is opened),
    /// or any connection error (a port in use, a missing process, a refused handshake).
    pub fn try_build(self) -> Result<Vec<AllocatorBuilder>, ConfigError> {
        match self {
            Config::Thread => Ok(vec![AllocatorBuilder::Thread(ThreadBuilder)]),
            Config::Process(0) => Err(ConfigError::NoWorkers),
            Config::Process(peers) => {
                Ok(ProcessBuilder::new_vector(peers).into_iter().map(AllocatorBuilder::Process).collect())
            }
            Config::Cluster(cluster) => Ok(cluster_builders(cluster)?),
        }
    }
}

/// Connects this process to the others (as an initial process, or as a joiner when `join` is
/// set), starts its join acceptor, and makes its workers' builders.
fn cluster_builders(config: ClusterConfig) -> Result<Vec<AllocatorBuilder>, NetworkError> {
    let ClusterConfig {
        threads,
        process,
        processes,
        initial_processes: _,
        join,
        gone,
        addresses,
        identity,
        connect_timeout,
        liveness,
        insecure,
        clock,
        frames,
        receive_budget,
    } = config;
    if addresses.len() < processes {
        return Err(NetworkError::InvalidArguments(format!(
            "{processes} processes need {processes} addresses, {} given",
            addresses.len()
        )));
    }
    // Sealed unless every address of the hostfile, joiners' included, is loopback.
    let identity = identity.for_addresses(&addresses);
    let addresses = &addresses[..processes];
    warn_if_unprotected(&decide_protection(!identity.secret.is_empty(), insecure, addresses)?);
    let entry = if join.is_some() { Entry::Join } else { Entry::Setup };
    let setup_times = SetupTimes { deadline: connect_timeout, liveness };
    let connecting = crate::clock::stamp();
    let Connections { streams, listener } =
        establish_with(entry, process, addresses, &gone, threads, &identity, setup_times)?;
    let connection = (connecting, crate::clock::stamp());
    let locals = ProcessBuilder::new_vector(threads);
    let wake = locals[0].waker();
    let early_bytes = receive_budget.early_bytes;
    let (mut transport, endpoints) = Transport::start(
        process,
        threads,
        streams,
        TransportOptions { liveness, clock, frames, receive_budget },
        wake,
    )?;
    if let Some(listener) = listener {
        transport.accept_joins(listener, identity)?;
    }
    let network = Network::new(transport);
    Ok(locals
        .into_iter()
        .zip(endpoints)
        .map(|(local, endpoints)| {
            AllocatorBuilder::Cluster(ClusterBuilder::new(
                local,
                endpoints,
                network.clone(),
                processes,
                threads,
                join,
                connection,
                early_bytes,
            ))
        })
        .collect())
}

/// Warns (`crate::warning!`) when the cluster runs without a secret.
fn warn_if_unprotected(protection: &Protection) {
    match protection {
        Protection::Authenticated => {}
        Protection::LoopbackOnly => crate::warning!(
            "{CLUSTER_SECRET_VARIABLE} is not set, so any program on this machine \
             that can reach this cluster's ports can join it and send it records; set the same \
             secret in every process"
        ),
        Protection::Insecure { non_loopback } => {
            let reach =
                if non_loopback.is_empty() { "this machine".to_string() } else { non_loopback.join(", ") };
            crate::warning!(
                "--insecure: running without {CLUSTER_SECRET_VARIABLE}, so any \
                 program that can reach {reach} can join this cluster and run code in it"
            )
        }
    }
}

/// Spawns one thread per worker of `config` (named `timely:worker-{i}`) and runs `func(allocator)` on each.
///
/// # Errors
///
/// An invalid `config`, or a thread that could not be spawned.
pub fn initialize<T: Send + 'static, F>(config: Config, func: F) -> Result<WorkerGuards<T>, InitializeError>
where
    F: Fn(Allocator) -> T + Send + Sync + 'static,
{
    Ok(initialize_from(config.try_build()?, func)?)
}

/// Why [`initialize`] could not start the workers.
#[derive(Debug, thiserror::Error)]
pub enum InitializeError {
    /// The configuration does not make a run.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A worker thread could not be spawned.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
}
