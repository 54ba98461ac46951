//! Planning migrations through the public API: `plan` for every strategy and `rebalance`,
//! checked against the properties each promises.

use std::collections::BTreeMap;
use timely_megaphone::{plan, rebalance, Bins, Command, MegaphoneError, RoutingTable, Strategy};

/// A table of `bins` bins with owners drawn below `peers` (deterministically from `seed`).
fn scrambled(bins: usize, peers: usize, seed: u64) -> RoutingTable {
    let mut state = seed | 1;
    let owners = (0..bins)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % peers as u64) as usize
        })
        .collect();
    RoutingTable::from_owners(owners).unwrap()
}

/// The commands grouped by time.
fn by_time(commands: &[(u64, Command)]) -> BTreeMap<u64, Vec<Command>> {
    let mut steps: BTreeMap<u64, Vec<Command>> = BTreeMap::new();
    for &(time, command) in commands {
        steps.entry(time).or_default().push(command);
    }
    steps
}

#[test]
fn every_strategy_reaches_the_target_moving_only_what_differs() {
    for (bins, peers) in [(16, 3), (256, 4), (4096, 5)] {
        let current = scrambled(bins, peers, 7);
        let target = scrambled(bins, peers, 11);
        let differing = (0..bins).filter(|&b| current.owner(b) != target.owner(b)).count();
        for strategy in [Strategy::AllAtOnce, Strategy::Fluid, Strategy::Batched { per_worker: 2 }] {
            let commands = plan(&current, &target, strategy, 10).unwrap();
            assert_eq!(commands.len(), differing, "{strategy:?}");
            assert!(commands.windows(2).all(|w| w[0].0 <= w[1].0), "in time order");
            assert_eq!(commands.first().map(|c| c.0), Some(10), "starts at the given time");
            let mut table = current.clone();
            table.apply_all(commands.iter().map(|(_, c)| c)).unwrap();
            assert_eq!(table, target, "{strategy:?}");
            let steps = by_time(&commands);
            let times: Vec<u64> = steps.keys().copied().collect();
            assert_eq!(times, (10..10 + times.len() as u64).collect::<Vec<_>>(), "consecutive steps");
            match strategy {
                Strategy::AllAtOnce => assert_eq!(steps.len(), 1),
                Strategy::Fluid => assert!(steps.values().all(|step| step.len() == 1)),
                Strategy::Batched { per_worker } => {
                    for step in steps.values() {
                        let (mut sent, mut received) = (vec![0; peers], vec![0; peers]);
                        for &Command::Move { bin, worker } in step {
                            sent[current.owner(bin)] += 1;
                            received[worker] += 1;
                        }
                        assert!(
                            sent.iter().chain(&received).all(|&n| n <= per_worker),
                            "{sent:?} {received:?}"
                        );
                    }
                    assert!(steps.len() < differing, "batches group moves");
                }
            }
        }
    }
}

#[test]
fn rebalance_spreads_bins_evenly_and_keeps_what_it_can() {
    for bins in [1, 16, 256, 4096] {
        for (from, to) in [(1, 1), (2, 3), (4, 6), (3, 2), (5, 7)] {
            let current = RoutingTable::round_robin(Bins::new(bins).unwrap(), from).unwrap();
            let balanced = rebalance(&current, 0..to).unwrap();
            let loads = balanced.loads(to);
            assert_eq!(loads.iter().sum::<usize>(), bins, "every bin on one of the {to} workers");
            assert!(loads.iter().max().unwrap() - loads.iter().min().unwrap() <= 1, "{loads:?}");
            // Workers that keep their share move nothing: when growing, only as many bins
            // move as the new workers need.
            let moved = (0..bins).filter(|&b| current.owner(b) != balanced.owner(b)).count();
            if to >= from {
                let needed: usize = (from..to).map(|w| loads[w]).sum();
                assert_eq!(moved, needed, "{bins} bins from {from} to {to} workers");
            }
            assert_eq!(rebalance(&balanced, 0..to).unwrap(), balanced, "a balanced table stays");
        }
    }
}

#[test]
fn planning_rejects_bad_requests() {
    let small = RoutingTable::round_robin(Bins::new(4).unwrap(), 2).unwrap();
    let large = RoutingTable::round_robin(Bins::new(8).unwrap(), 2).unwrap();
    assert_eq!(
        plan(&small, &large, Strategy::Fluid, 0),
        Err(MegaphoneError::TableSizes { current: 4, target: 8 })
    );
    assert_eq!(
        plan(&small, &small, Strategy::Batched { per_worker: 0 }, 0),
        Err(MegaphoneError::EmptyBatches)
    );
    assert_eq!(plan(&small, &small, Strategy::AllAtOnce, 0), Ok(vec![]), "nothing to move");
    assert_eq!(rebalance(&small, 0..0), Err(MegaphoneError::NoWorkers));
    assert_eq!(Bins::new(3), Err(MegaphoneError::BinCount { count: 3, max: timely_megaphone::MAX_BINS }));
    let message = MegaphoneError::ConflictingMoves { time: 4, bin: 2, workers: (0, 1) }.to_string();
    assert!(message.contains("time 4") && message.contains("bin 2"), "{message}");
}
