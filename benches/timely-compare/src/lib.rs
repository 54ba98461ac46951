//! What the two sides of every program share: the command line, the deterministic inputs,
//! the pure parts of the computations (graph layout, rank shares), and the summary each
//! worker returns and each process prints.
//!
//! Each program (`pingpong`, `hashjoin`, `bfs`, `barrier`, `event_driven`, `pagerank`) is
//! written twice, once on `timely_engine` (`src/bin/ours`) and once on timely 0.29
//! (`src/bin/timely`), with the same inputs and parameters. A run prints, on stdout, one
//! `key value` line per entry of the summary, summed over the process's workers (sums are
//! modulo 2^64, so the summaries of several processes add up to the whole run's), and on
//! stderr the seconds the slowest worker of the process took (`elapsed <seconds>`).
//!
//! Inputs are functions of a record's global index, never of the worker count: worker `w`
//! of `p` makes the records whose index is `w` modulo `p`. Summaries are then the same on
//! any number of workers and processes, and the same on both engines.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;
use std::time::Duration;
use timely_communication::{FlagError, ProgramFlags};

/// The summary of one worker (or of several, merged): named sums.
pub type Summary = BTreeMap<&'static str, u64>;

/// Adds `value` to `key` of `summary`, modulo 2^64.
pub fn add(summary: &mut Summary, key: &'static str, value: u64) {
    let entry = summary.entry(key).or_insert(0);
    *entry = entry.wrapping_add(value);
}

/// A well-mixed 64-bit function of `x` (the finaliser of SplitMix64): deterministic
/// pseudo-random inputs without a generator's state.
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A program run: its name, its numeric parameters, and the runtime's flags
/// (`-w`, `-n`, `-p`, `-h`), which go to the engine as they were given.
pub struct Run {
    pub program: String,
    pub params: Vec<u64>,
    pub runtime: Vec<String>,
}

/// The programs and their parameters, with defaults.
pub const PROGRAMS: &[(&str, &[(&str, u64)])] = &[
    ("pingpong", &[("iterations", 1_000), ("elements", 1_000_000)]),
    ("hashjoin", &[("keys", 1_000_000), ("values", 1_000_000), ("batch", 100_000)]),
    ("bfs", &[("nodes", 1_000_000), ("edges", 4_000_000)]),
    ("barrier", &[("iterations", 300_000)]),
    ("event_driven", &[("dataflows", 1_000), ("length", 10), ("rounds", 5_000), ("record", 1)]),
    ("pagerank", &[("nodes", 100_000), ("edges", 400_000), ("rounds", 300), ("changes", 4)]),
];

/// The runtime's flags that both engines read, with what their values are called.
const RUNTIME_FLAGS: &[(&str, &str, &str)] = &[
    ("-w", "WORKERS", "worker threads per process (default 1)"),
    ("-n", "PROCESSES", "processes (default 1)"),
    ("-p", "PROCESS", "this process's index (default 0)"),
    ("-h", "HOSTFILE", "one host:port per line, one line per process"),
];

/// The most parameters a program takes.
const MOST_PARAMETERS: usize = 4;

/// The parameters' positions, as the usage names them.
const PARAMETERS: [&str; MOST_PARAMETERS] = ["PARAMETER1", "PARAMETER2", "PARAMETER3", "PARAMETER4"];

/// The command line of `binary` (`compare-ours`, `compare-timely`): a program, its numeric
/// parameters and the runtime's flags, with a listing of the programs and their defaults.
pub fn command_line(binary: &'static str) -> ProgramFlags {
    let mut flags = ProgramFlags::new(binary).positional("PROGRAM", programs_listing());
    for (index, name) in PARAMETERS.into_iter().enumerate() {
        flags = flags.positional(
            name,
            if index == 0 { "the program's parameters in order (defaults above)" } else { "" },
        );
    }
    for (flag, value, help) in RUNTIME_FLAGS {
        flags = flags.flag(flag, value, help);
    }
    flags
}

/// One line per program with its parameters and their defaults.
fn programs_listing() -> &'static str {
    static LISTING: OnceLock<String> = OnceLock::new();
    LISTING.get_or_init(|| {
        let mut text = String::from("one of:");
        for (name, params) in PROGRAMS {
            let params: Vec<String> = params.iter().map(|(p, v)| format!("{p}={v}")).collect();
            text.push_str(&format!("\n      {name} {}", params.join(" ")));
        }
        text
    })
}

impl Run {
    /// Reads `PROGRAM [PARAMETER ...] [RUNTIME FLAGS ...]` from `args` (without the binary's
    /// name), as `command` declares them: defaults for the parameters left out.
    ///
    /// # Errors
    ///
    /// An unknown flag, program or extra parameter, a flag without its value, a parameter
    /// that is not a number, or `--help` ([`FlagError::HelpRequested`]).
    pub fn parse(command: &ProgramFlags, args: Vec<String>) -> Result<Run, FlagError> {
        let given = command.parse(args)?;
        let (program, numbers) = given
            .positionals()
            .split_first()
            .ok_or_else(|| FlagError::Combination(format!("name a program, {}", programs_listing())))?;
        let defaults =
            PROGRAMS.iter().find(|(name, _)| name == program).map(|(_, defaults)| *defaults).ok_or_else(
                || {
                    let names: Vec<&str> = PROGRAMS.iter().map(|(name, _)| *name).collect();
                    FlagError::bad_value("PROGRAM", program, format!("one of {}", names.join(", ")))
                },
            )?;
        if numbers.len() > defaults.len() {
            return Err(FlagError::Combination(format!(
                "{program} takes at most {} parameters ({}), found {numbers:?}",
                defaults.len(),
                defaults.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
            )));
        }
        let params = defaults
            .iter()
            .enumerate()
            .map(|(index, &(name, default))| match numbers.get(index) {
                Some(text) => text.parse().map_err(|_| FlagError::bad_value(name, text, "u64")),
                None => Ok(default),
            })
            .collect::<Result<_, _>>()?;
        let runtime = RUNTIME_FLAGS
            .iter()
            .filter_map(|(flag, _, _)| given.text(flag).map(|value| [flag.to_string(), value.to_string()]))
            .flatten()
            .collect();
        Ok(Run { program: program.clone(), params, runtime })
    }

    /// [`Run::parse`] of this process's command line for a `main`: prints the listing and
    /// exits with status 0 on `--help`, prints the error and the usage and exits with status 2
    /// on a bad command line.
    pub fn from_args(binary: &'static str) -> Run {
        let command = command_line(binary);
        Run::parse(&command, std::env::args().skip(1).collect()).unwrap_or_else(|error| command.exit(&error))
    }
}

/// Prints the summaries of this process's workers, summed, and the slowest one's time.
pub fn report(results: Vec<(Summary, Duration)>) {
    let mut total = Summary::new();
    let mut slowest = Duration::ZERO;
    for (summary, elapsed) in results {
        for (key, value) in summary {
            add(&mut total, key, value);
        }
        slowest = slowest.max(elapsed);
    }
    for (key, value) in total {
        println!("{key} {value}");
    }
    eprintln!("elapsed {:.6}", slowest.as_secs_f64());
}

/// The `index`-th pair of a deterministic stream of pairs below `range`: the input edges
/// of `bfs` and `pagerank`, the records of `hashjoin` (`salt` tells streams apart).
pub fn pair(index: u64, salt: u64, range: u64) -> (u64, u64) {
    let base = index.wrapping_mul(4).wrapping_add(salt.wrapping_mul(2));
    (mix(base) % range, mix(base + 1) % range)
}

/// The indices `0..count` this worker makes: those equal to `index` modulo `peers`.
pub fn mine(count: u64, index: usize, peers: usize) -> impl Iterator<Item = u64> {
    (index as u64..count).step_by(peers)
}

/// The out-edges of the nodes one worker owns (node `n` is owned by worker `n % peers`,
/// and is the `n / peers`-th of its nodes), as offsets into a list of targets.
pub struct Adjacency {
    offsets: Vec<u32>,
    targets: Vec<u32>,
}

impl Adjacency {
    /// The adjacency of `edges`, all of whose sources this worker owns.
    pub fn new(mut edges: Vec<(u32, u32)>, nodes: usize, peers: usize) -> Self {
        edges.sort_unstable();
        let local_nodes = nodes / peers + 1;
        let mut offsets = Vec::with_capacity(local_nodes + 1);
        let mut targets = Vec::with_capacity(edges.len());
        offsets.push(0);
        for (source, target) in edges {
            let local = source as usize / peers;
            while offsets.len() <= local {
                offsets.push(targets.len() as u32);
            }
            targets.push(target);
        }
        while offsets.len() <= local_nodes {
            offsets.push(targets.len() as u32);
        }
        Adjacency { offsets, targets }
    }

    /// The out-neighbours of the `local`-th node of this worker.
    pub fn neighbours(&self, local: usize) -> &[u32] {
        &self.targets[self.offsets[local] as usize..self.offsets[local + 1] as usize]
    }
}

/// Sums the weights of equal keys and drops those that sum to zero, leaving the list
/// sorted by key.
pub fn consolidate<K: Ord + Copy>(list: &mut Vec<(K, i64)>) {
    list.sort_by_key(|(key, _)| *key);
    let mut kept = 0;
    for index in 0..list.len() {
        if kept > 0 && list[kept - 1].0 == list[index].0 {
            list[kept - 1].1 += list[index].1;
        } else {
            list[kept] = list[index];
            kept += 1;
        }
    }
    list.truncate(kept);
    list.retain(|(_, weight)| *weight != 0);
}

/// Appends to `shares` the part of `rank` each out-edge of `edges` carries: five sixths of
/// the rank, split as evenly as integers allow (the first edges take one more), scaled by
/// each edge's multiplicity.
pub fn shares(rank: i64, edges: &[(usize, i64)], shares: &mut Vec<(usize, i64)>) {
    if edges.is_empty() {
        return;
    }
    assert!(rank >= 0, "a rank is never negative");
    let spread = rank * 5 / 6;
    let degree = edges.len() as i64;
    let (each, extra) = (spread / degree, spread % degree);
    for (position, &(target, count)) in edges.iter().enumerate() {
        let share = if (position as i64) < extra { each + 1 } else { each };
        shares.push((target, count * share));
    }
}

/// The per-node state of `pagerank` on one worker, and the rank changes it sends.
#[derive(Default)]
pub struct Ranks {
    edges: Vec<Vec<(usize, i64)>>,
    ranks: Vec<i64>,
    pending: Vec<i64>,
    delta: Vec<(usize, i64)>,
}

/// A change to `pagerank`'s state: edges (with multiplicity), or a node's rank.
pub enum Change {
    Edge(usize, i64),
    Rank(i64),
}

impl Ranks {
    /// Applies `change` to node `node` and calls `send` with each resulting change of the
    /// ranks its out-neighbours receive (the new shares minus the old ones).
    pub fn apply(&mut self, node: usize, change: Change, mut send: impl FnMut(usize, i64)) {
        if self.edges.len() <= node {
            self.edges.resize_with(node + 1, Vec::new);
            self.ranks.resize(node + 1, 1_000);
            self.pending.resize(node + 1, 0);
        }
        shares(self.ranks[node], &self.edges[node], &mut self.delta);
        self.delta.iter_mut().for_each(|(_, weight)| *weight = -*weight);
        match change {
            Change::Edge(target, count) => {
                self.edges[node].push((target, count));
                consolidate(&mut self.edges[node]);
            }
            Change::Rank(diff) => {
                // Small changes wait until they add up, so that the loop comes to rest.
                self.pending[node] += diff;
                if self.pending[node].abs() >= 6 {
                    self.ranks[node] += self.pending[node];
                    self.pending[node] = 0;
                }
            }
        }
        shares(self.ranks[node], &self.edges[node], &mut self.delta);
        consolidate(&mut self.delta);
        for (target, diff) in self.delta.drain(..) {
            send(target, diff);
        }
    }
}

/// The edge changes of `pagerank` at round `round` made by worker `index` of `peers`: at
/// round 0 the first `edges` edges, at round `r > 0` `changes` new edges and the removal of
/// the `changes` oldest ones.
pub fn edge_changes(
    round: u64,
    edges: u64,
    changes: u64,
    nodes: u64,
    index: usize,
    peers: usize,
) -> Vec<((usize, usize), i64)> {
    let edge = |i: u64| {
        let (source, target) = pair(i, 0, nodes);
        (source as usize, target as usize)
    };
    if round == 0 {
        return mine(edges, index, peers).map(|i| (edge(i), 1)).collect();
    }
    let first = (round - 1) * changes;
    mine(changes, index, peers).flat_map(|k| [(edge(edges + first + k), 1), (edge(first + k), -1)]).collect()
}

/// `hashjoin`'s step for one record of one side: calls `matched` with each value of the
/// other side under `key`, then files `value` under `key` on this side.
pub fn join_one(
    key: u64,
    value: u64,
    this_side: &mut HashMap<u64, Vec<u64>>,
    other_side: &HashMap<u64, Vec<u64>>,
    mut matched: impl FnMut(u64),
) {
    for &other in other_side.get(&key).into_iter().flatten() {
        matched(other);
    }
    this_side.entry(key).or_default().push(value);
}

/// The count of `hashjoin`'s output pairs and a sum of their hashes (order-independent).
pub fn count_pairs(summary: &mut Summary, pairs: &[(u64, u64)]) {
    add(summary, "pairs", pairs.len() as u64);
    add(summary, "pair_hash", pairs.iter().fold(0u64, |sum, &(a, b)| sum.wrapping_add(mix(a ^ mix(b)))));
}

/// `bfs`'s round at time `time`: every `(node, from)` that arrived whose node (owned by this
/// worker) was not reached before is reached now, and `send` gets `(neighbour, node)` for
/// each of its out-neighbours.
pub fn visit(
    arrivals: Vec<Vec<(u32, u32)>>,
    time: usize,
    parent: &mut [u32],
    graph: &Adjacency,
    peers: usize,
    summary: &mut Summary,
    mut send: impl FnMut((u32, u32)),
) {
    let (mut reached, mut sent) = (0, 0);
    for (node, from) in arrivals.into_iter().flatten() {
        let local = node as usize / peers;
        if parent[local] == u32::MAX {
            parent[local] = from;
            reached += 1;
            for &target in graph.neighbours(local) {
                send((target, node));
                sent += 1;
            }
        }
    }
    add(summary, "reached", reached);
    add(summary, "distance_sum", reached * time as u64);
    add(summary, "messages", sent);
}

impl Ranks {
    /// Applies the edge changes of one time (consolidated first), leaving `changes` empty.
    pub fn apply_edges(
        &mut self,
        changes: &mut Vec<((usize, usize), i64)>,
        mut send: impl FnMut(usize, i64),
    ) {
        consolidate(changes);
        for ((source, target), diff) in changes.drain(..) {
            self.apply(source, Change::Edge(target, diff), &mut send);
        }
    }

    /// Applies the rank changes of time `time` (consolidated first), leaving `changes` empty,
    /// and adds what they were to `summary`.
    pub fn apply_ranks(
        &mut self,
        changes: &mut Vec<(usize, i64)>,
        time: usize,
        summary: &mut Summary,
        mut send: impl FnMut(usize, i64),
    ) {
        consolidate(changes);
        let mut sent = 0;
        for &(node, diff) in changes.iter() {
            self.apply(node, Change::Rank(diff), |node, diff| {
                send(node, diff);
                sent += 1;
            });
        }
        add(summary, "rank_changes", changes.len() as u64);
        add(summary, "rank_change_abs", changes.iter().map(|(_, d)| d.unsigned_abs()).sum());
        add(summary, "rank_change_rounds", (changes.len() * time) as u64);
        add(summary, "sent", sent);
        changes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Run, FlagError> {
        Run::parse(&command_line("compare-test"), args.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn parameters_default_and_runtime_flags_pass_through() {
        let run = parse(&["pingpong", "50", "-w", "2", "-n=1", "-p0"]).unwrap();
        assert_eq!((run.program.as_str(), run.params), ("pingpong", vec![50, 1_000_000]));
        assert_eq!(run.runtime, ["-w", "2", "-n", "1", "-p", "0"]);
        let run = parse(&["pagerank"]).unwrap();
        assert_eq!(run.params, [100_000, 400_000, 300, 4]);
        assert!(run.runtime.is_empty());
    }

    #[test]
    fn bad_command_lines_are_refused_by_name() {
        assert_eq!(
            parse(&["pingpong", "--workers", "2"]).err(),
            Some(FlagError::Unknown("--workers".into()))
        );
        assert_eq!(parse(&["pingpong", "-x"]).err(), Some(FlagError::Unknown("-x".into())));
        assert_eq!(parse(&["pingpong", "-w"]).err(), Some(FlagError::MissingValue("-w".into())));
        assert_eq!(parse(&["pingpong", "ten"]).err(), Some(FlagError::bad_value("iterations", "ten", "u64")));
        assert_eq!(parse(&["--help"]).err(), Some(FlagError::HelpRequested));
        let unknown = parse(&["ping"]).err().unwrap().to_string();
        assert!(unknown.contains("\"ping\"") && unknown.contains("hashjoin"), "{unknown}");
        let extra = parse(&["barrier", "1", "2"]).err().unwrap().to_string();
        assert!(extra.contains("barrier takes at most 1 parameters"), "{extra}");
        assert!(parse(&[]).err().unwrap().to_string().contains("name a program"));
    }

    #[test]
    fn the_help_lists_programs_and_runtime_flags() {
        let help = command_line("compare-test").help();
        for expected in
            ["usage: compare-test [PROGRAM]", "pingpong iterations=1000", "-w WORKERS", "-h HOSTFILE"]
        {
            assert!(help.contains(expected), "{expected:?} in\n{help}");
        }
    }
}
