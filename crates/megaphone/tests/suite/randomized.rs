//! Randomized runs: random numbers of workers and bins, random reconfigurations (random
//! target tables, gathering, rebalancing, single explicit moves) with random strategies at
//! random moments, random notification lags and random pacing of the input. Every run must
//! equal the sequential reference exactly. `MEGAPHONE_SEEDS=N` runs more seeds.

use crate::common::*;
use timely_engine::Config;
use timely_megaphone::{plan, rebalance, Bins, Command, RoutingTable, StateMachine, Strategy};

/// A random table of `bins` bins over `peers` workers.
fn random_table(rng: &mut Rng, bins: Bins, peers: usize) -> RoutingTable {
    let owners = (0..bins.count()).map(|_| rng.below(peers as u64) as usize).collect();
    RoutingTable::from_owners(owners).unwrap()
}

/// Random reconfigurations over `rounds` rounds, each starting after the previous one ended.
fn random_commands(rng: &mut Rng, bins: Bins, peers: usize, rounds: u64) -> Vec<(u64, Command)> {
    let mut table = RoutingTable::round_robin(bins, peers).unwrap();
    let mut commands = Vec::new();
    let mut time = rng.below(5);
    while time < rounds {
        let strategy = match rng.below(3) {
            0 => Strategy::AllAtOnce,
            1 => Strategy::Fluid,
            _ => Strategy::Batched { per_worker: 1 + rng.below(3) as usize },
        };
        let target = match rng.below(4) {
            0 => random_table(rng, bins, peers),
            1 => RoutingTable::from_owners(vec![rng.below(peers as u64) as usize; bins.count()]).unwrap(),
            2 => rebalance(&table, 0..peers).unwrap(),
            _ => {
                let mut moved = table.clone();
                let bin = rng.below(bins.count() as u64) as usize;
                moved.apply(&Command::Move { bin, worker: rng.below(peers as u64) as usize }).unwrap();
                moved
            }
        };
        let planned = plan(&table, &target, strategy, time).unwrap();
        let end = planned.last().map_or(time, |(t, _)| *t);
        commands.extend(planned.into_iter().filter(|(t, _)| *t < rounds));
        table = target;
        time = end + 1 + rng.below(8);
    }
    commands
}

#[test]
fn random_migrations_at_random_moments_stay_exact() {
    let seeds: u64 = std::env::var("MEGAPHONE_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(24);
    let mut migrations = 0;
    for seed in 0..seeds {
        let mut rng = Rng::new(100 + seed);
        let peers = 1 + rng.below(4) as usize;
        let bins = Bins::new(1 << rng.below(8)).unwrap();
        let rounds = 20 + rng.below(40);
        let (per_round, keys) = (1 + rng.below(40), 1 + rng.below(60));
        let records = records(&mut rng, rounds, per_round, keys);
        let commands = random_commands(&mut rng, bins, peers, rounds);
        migrations += commands.len();
        let lag = rng.below(4);
        let workload = Workload { rounds, records: records.clone(), commands, sync_every: rng.below(6) };
        let config = if peers == 1 { Config::Thread } else { Config::Process(peers) };
        let context = format!("seed {seed}: {peers} workers, {} bins, lag {lag}", bins.count());
        if seed % 2 == 0 {
            let sums = run(config, bins, workload, move |data, control, worker| {
                keyed_sum(data, control, worker, lag)
            });
            assert_eq!(without_workers(&sums), sums_reference(&records, lag), "{context}");
        } else {
            let counts = run(config, bins, workload, |data, control, _| {
                data.state_machine(control, |&word: &u64, _: u64, count: &mut u64| {
                    *count += 1;
                    (false, Some((word, *count)))
                })
            });
            assert_eq!(counts, counts_reference(&records), "{context}");
        }
    }
    assert!(migrations > 10 * seeds as usize, "the runs moved bins ({migrations} moves)");
}
