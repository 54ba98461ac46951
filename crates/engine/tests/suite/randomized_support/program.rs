//! Deterministic randomness, program descriptions and the generator of random programs.

use super::reference::reference;

// ---------------------------------------------------------------------------------------
// Deterministic randomness.

#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    pub fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
}

pub fn mix(a: u64, b: u64) -> u64 {
    Rng::new(a.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ b).next()
}

// ---------------------------------------------------------------------------------------
// Program descriptions.

#[derive(Clone, Debug)]
pub enum Stage {
    /// `x -> (x * mul + add) % M`.
    Map { mul: u64, add: u64 },
    /// Keeps `x` unless `x % modulus == residue`.
    Filter { modulus: u64, residue: u64 },
    /// `x -> [x, (3x + 1) % M][..x % fanout]` (zero, one or two records).
    FlatMap { fanout: u64 },
    /// Routes records to workers by a salted hash.
    Exchange { salt: u64 },
    /// A copy of every record to every worker.
    Broadcast,
    /// Records with `x % modulus != 0` go through `left`, the others through `right`; the
    /// two are concatenated, or with `join` merged by a two-input operator that buffers
    /// both inputs per time and releases them on notification (checking both inputs).
    Branch { modulus: u64, left: Vec<Stage>, right: Vec<Stage>, join: Option<usize> },
    /// Moves `x` to time `t + x % (max + 1)` in the innermost coordinate (at top level, or
    /// directly in a loop body, where it moves records to later iterations).
    Delay { max: u64 },
    /// Counts `x % keys` per time: emits `(key + keys * count) % M`.
    Count { keys: u64 },
    /// Sums `x` per key `x % keys` per time: emits `(7 * key + sum) % M`.
    Sum { keys: u64 },
    /// Buffers records per time and releases them on notification (checking the
    /// notifications), routing by record when `exchange`.
    Buffer { id: usize, exchange: bool },
    /// An iterative scope: a record leaves when `x % modulus == 0` or its iteration reaches
    /// `max_iters`, otherwise goes through `body` and around again.
    Loop { modulus: u64, max_iters: u64, body: Vec<Stage> },
    /// A nested scope with the same timestamp (a region) holding `body`.
    Region { body: Vec<Stage> },
    /// Concatenates the second input (top level only).
    Merge,
    /// A pass-through operator that checks frontiers, messages and notifications.
    Check { id: usize, exchange: bool },
}

#[derive(Clone, Debug)]
pub struct Program {
    /// Per input: `(epoch, record, owner hash)`, sorted by epoch.
    pub inputs: Vec<Vec<(u64, u64, u64)>>,
    pub max_epoch: u64,
    pub stages: Vec<Stage>,
    /// Number of checking operators (for ids).
    pub checks: usize,
    /// How many copies of the dataflow each worker builds (fed the same records, probed
    /// by one probe handle).
    pub copies: usize,
}

impl Program {
    /// A compact description for failure messages.
    pub fn describe(&self) -> String {
        let inputs: Vec<String> = self
            .inputs
            .iter()
            .map(|records| {
                let shown: Vec<String> = records.iter().map(|(e, x, _)| format!("{}@{}", x, e)).collect();
                format!("[{}]", shown.join(" "))
            })
            .collect();
        format!(
            "inputs {} (max epoch {}), {} dataflow(s) of stages {}",
            inputs.join(" + "),
            self.max_epoch,
            self.copies,
            describe_stages(&self.stages)
        )
    }
}

fn describe_stages(stages: &[Stage]) -> String {
    let parts: Vec<String> = stages
        .iter()
        .map(|stage| match stage {
            Stage::Map { mul, add } => format!("map(*{}+{})", mul, add),
            Stage::Filter { modulus, residue } => format!("filter(%{}!={})", modulus, residue),
            Stage::FlatMap { fanout } => format!("flat_map({})", fanout),
            Stage::Exchange { salt } => format!("exchange({})", salt % 100),
            Stage::Broadcast => "broadcast".to_string(),
            Stage::Branch { modulus, left, right, join } => format!(
                "branch(%{}: [{}] | [{}]){}",
                modulus,
                describe_stages(left),
                describe_stages(right),
                join.map(|id| format!(" -> join#{}", id)).unwrap_or_default()
            ),
            Stage::Delay { max } => format!("delay({})", max),
            Stage::Count { keys } => format!("count({})", keys),
            Stage::Sum { keys } => format!("sum({})", keys),
            Stage::Buffer { id, exchange } => format!("buffer#{}{}", id, if *exchange { "(x)" } else { "" }),
            Stage::Loop { modulus, max_iters, body } => {
                format!("loop(%{}, <={}: [{}])", modulus, max_iters, describe_stages(body))
            }
            Stage::Region { body } => format!("region([{}])", describe_stages(body)),
            Stage::Merge => "merge".to_string(),
            Stage::Check { id, exchange } => format!("check#{}{}", id, if *exchange { "(x)" } else { "" }),
        })
        .collect();
    parts.join(" -> ")
}

struct Generator {
    rng: Rng,
    broadcast_left: bool,
    loops_left: u32,
    ids: usize,
}

#[derive(Clone, Copy)]
struct Place {
    loop_depth: u32,
    branch_depth: u32,
}

impl Generator {
    fn stages(&mut self, place: Place, count: u64) -> Vec<Stage> {
        let mut stages = Vec::new();
        for _ in 0..count {
            stages.push(self.stage(place));
            if self.rng.chance(1, 3) {
                stages.push(self.check());
            }
        }
        stages
    }

    fn check(&mut self) -> Stage {
        self.ids += 1;
        Stage::Check { id: self.ids, exchange: self.rng.chance(1, 3) }
    }

    fn stage(&mut self, place: Place) -> Stage {
        loop {
            let rng = &mut self.rng;
            match rng.below(15) {
                0 | 1 => return Stage::Map { mul: rng.range(1, 13), add: rng.range(0, 40) },
                2 => return Stage::Filter { modulus: rng.range(2, 6), residue: rng.range(0, 1) },
                3 => return Stage::FlatMap { fanout: rng.range(2, 3) },
                4 | 5 => return Stage::Exchange { salt: rng.next() },
                6 if self.broadcast_left && place.loop_depth == 0 => {
                    self.broadcast_left = false;
                    return Stage::Broadcast;
                }
                7 if place.branch_depth < 2 => {
                    let modulus = rng.range(2, 4);
                    let (l, r) = (rng.range(0, 2), rng.range(0, 2));
                    let inner = Place { branch_depth: place.branch_depth + 1, ..place };
                    let left = self.stages(inner, l);
                    let right = self.stages(inner, r);
                    let join = if self.rng.chance(1, 2) {
                        self.ids += 1;
                        Some(self.ids)
                    } else {
                        None
                    };
                    return Stage::Branch { modulus, left, right, join };
                }
                // Inside loops only directly in a body (see `Interpreter::iterate`).
                8 if place.loop_depth == 0 || place.branch_depth == 0 => {
                    return Stage::Delay { max: rng.range(1, 3) }
                }
                9 => return Stage::Count { keys: rng.range(1, 7) },
                10 => return Stage::Sum { keys: rng.range(1, 5) },
                11 => {
                    self.ids += 1;
                    return Stage::Buffer { id: self.ids, exchange: rng.chance(1, 2) };
                }
                12 | 13 if place.loop_depth < 2 && self.loops_left > 0 => {
                    self.loops_left -= 1;
                    let modulus = rng.range(2, 9);
                    let max_iters = rng.range(1, 8);
                    let count = rng.range(0, 3);
                    let inner = Place { loop_depth: place.loop_depth + 1, branch_depth: 0 };
                    let mut body = vec![Stage::Map { mul: 1, add: 1 }];
                    body.extend(self.stages(inner, count));
                    return Stage::Loop { modulus, max_iters, body };
                }
                14 if place.branch_depth < 2 => {
                    // Like a branch, it is applied to one time at a time inside loops, so
                    // no delay directly inside.
                    let count = rng.range(1, 3);
                    let inner = Place { branch_depth: place.branch_depth + 1, ..place };
                    return Stage::Region { body: self.stages(inner, count) };
                }
                _ => {}
            }
        }
    }
}

pub fn generate(seed: u64) -> Program {
    for attempt in 0u64.. {
        let mut generator =
            Generator { rng: Rng::new(mix(seed, attempt)), broadcast_left: true, loops_left: 3, ids: 0 };
        let rng = &mut generator.rng;
        let max_epoch = rng.range(0, 7);
        let input_count = if rng.chance(1, 3) { 2 } else { 1 };
        let mut inputs = Vec::new();
        for _ in 0..input_count {
            let len = match rng.below(10) {
                0 => 0,
                1 => rng.range(150, 400),
                _ => rng.range(1, 25),
            };
            let mut records: Vec<(u64, u64, u64)> =
                (0..len).map(|_| (rng.range(0, max_epoch), rng.below(100), rng.next())).collect();
            records.sort();
            inputs.push(records);
        }
        let count = generator.rng.range(2, 8);
        let top = Place { loop_depth: 0, branch_depth: 0 };
        let mut stages = generator.stages(top, count);
        if input_count == 2 {
            let at = generator.rng.range(0, stages.len() as u64) as usize;
            stages.insert(at, Stage::Merge);
        }
        let copies = if generator.rng.chance(1, 5) { 2 } else { 1 };
        let program = Program { inputs, max_epoch, stages, checks: generator.ids, copies };
        // Reject programs that blow up (broadcast, flat_map in loops); the largest worker
        // count decides.
        if reference(&program, 4).is_some() {
            return program;
        }
    }
    unreachable!()
}
