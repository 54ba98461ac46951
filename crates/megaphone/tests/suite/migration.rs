//! Keyed state stays exact across migrations: word count (a counting state machine) and a
//! keyed running sum with per-key notifications, compared with sequential references, for
//! every strategy, on several workers of one process.

use crate::common::*;
use timely_engine::Config;
use timely_megaphone::{
    plan, rebalance, Bins, Command, KeyedOperators, RoutingTable, StateMachine, Strategy,
};

const STRATEGIES: [Strategy; 3] = [Strategy::AllAtOnce, Strategy::Fluid, Strategy::Batched { per_worker: 1 }];

/// Commands that move every bin to worker `to` from `start` on, then spread them evenly again
/// from `back`, with `strategy`.
fn there_and_back(
    bins: Bins,
    peers: usize,
    to: usize,
    strategy: Strategy,
    start: u64,
    back: u64,
) -> Vec<(u64, Command)> {
    let initial = RoutingTable::round_robin(bins, peers).unwrap();
    let gathered = RoutingTable::from_owners(vec![to; bins.count()]).unwrap();
    let mut commands = plan(&initial, &gathered, strategy, start).unwrap();
    commands.extend(plan(&gathered, &rebalance(&gathered, 0..peers).unwrap(), strategy, back).unwrap());
    commands
}

#[test]
fn word_count_is_exact_across_migrations_with_every_strategy() {
    let bins = Bins::new(16).unwrap();
    for strategy in STRATEGIES {
        let mut rng = Rng::new(1);
        let records = records(&mut rng, 40, 50, 30);
        let commands = there_and_back(bins, 3, 1, strategy, 5, 20);
        let workload = Workload { rounds: 40, records: records.clone(), commands, sync_every: 0 };
        let counts = run(Config::Process(3), bins, workload, |data, control, _| {
            data.state_machine(control, |&word: &u64, _: u64, count: &mut u64| {
                *count += 1;
                (false, Some((word, *count)))
            })
        });
        assert_eq!(counts, counts_reference(&records), "{strategy:?}");
    }
}

#[test]
fn keyed_sums_with_pending_notifications_are_exact_and_follow_their_bins() {
    let bins = Bins::new(16).unwrap();
    for strategy in STRATEGIES {
        let mut rng = Rng::new(2);
        let records = records(&mut rng, 45, 30, 25);
        // Every bin moves to worker 2 from time 4 on (fluid: one bin per time, until time 15)
        // and moves back from time 24 on (fluid: until time 35); notifications lag 3 times
        // behind records, so every migration carries pending notifications.
        let commands = there_and_back(bins, 3, 2, strategy, 4, 24);
        assert!(commands.iter().all(|(time, _)| *time < 36));
        let workload = Workload { rounds: 45, records: records.clone(), commands, sync_every: 3 };
        let sums = run(Config::Process(3), bins, workload, |data, control, worker| {
            keyed_sum(data, control, worker, 3)
        });
        assert_eq!(without_workers(&sums), sums_reference(&records, 3), "{strategy:?}");
        let gathered: Vec<_> = sums.iter().filter(|(time, _)| (17..24).contains(time)).collect();
        assert!(!gathered.is_empty());
        assert!(
            gathered.iter().all(|(_, (_, _, worker))| *worker == 2),
            "{strategy:?}: every bin is on worker 2"
        );
        let spread: std::collections::BTreeSet<_> =
            sums.iter().filter(|(time, _)| *time >= 38).map(|(_, (_, _, worker))| *worker).collect();
        assert_eq!(spread.len(), 3, "{strategy:?}: the bins are spread again");
    }
}

#[test]
fn keyed_binary_shares_state_between_inputs_across_migrations() {
    let bins = Bins::new(8).unwrap();
    let mut rng = Rng::new(3);
    let records = records(&mut rng, 30, 30, 20);
    let commands = there_and_back(bins, 2, 0, Strategy::Batched { per_worker: 1 }, 5, 15);
    let workload = Workload { rounds: 30, records: records.clone(), commands, sync_every: 2 };
    // Even values feed the first input (summed), odd values the second (counted).
    let outputs = run(Config::Process(2), bins, workload, |data, control, _| {
        let evens = data.filter(|(_, value)| value % 2 == 0);
        let odds = data.filter(|(_, value)| value % 2 == 1);
        evens.keyed_binary(
            &odds,
            control,
            |&(key, _): &(u64, u64)| key,
            |&(key, _): &(u64, u64)| key,
            |_, (_, value), state: &mut (u64, u64), context| {
                state.0 += value;
                context.notify_at(context.time());
            },
            |_, _, state: &mut (u64, u64), context| {
                state.1 += 1;
                context.notify_at(context.time());
            },
            |&key, state, context| context.give((key, state.0, state.1)),
        )
    });
    let mut expected = Vec::new();
    for time in 0..30 {
        let mut keys: Vec<u64> = records.iter().filter(|r| r.0 == time).map(|r| r.1).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let history = records.iter().filter(|r| r.0 <= time && r.1 == key);
            let sum = history.clone().filter(|r| r.2 % 2 == 0).map(|r| r.2).sum();
            let count = history.filter(|r| r.2 % 2 == 1).count() as u64;
            expected.push((time, (key, sum, count)));
        }
    }
    assert_eq!(outputs, expected);
}

#[test]
fn discarded_state_starts_again_from_the_default_after_migrations() {
    let bins = Bins::new(4).unwrap();
    let mut rng = Rng::new(4);
    let records = records(&mut rng, 30, 20, 10);
    let commands = there_and_back(bins, 2, 1, Strategy::Fluid, 3, 12);
    let workload = Workload { rounds: 30, records: records.clone(), commands, sync_every: 0 };
    // Counts cycle 1, 2, 3, 1, 2, 3, ...: the state is discarded at 3.
    let outputs = run(Config::Process(2), bins, workload, |data, control, _| {
        data.state_machine(control, |&word: &u64, _: u64, count: &mut u64| {
            *count += 1;
            (*count == 3, Some((word, *count)))
        })
    });
    let expected: Vec<_> = counts_reference(&records)
        .into_iter()
        .map(|(time, (word, count))| (time, (word, (count - 1) % 3 + 1)))
        .collect();
    let mut expected = expected;
    expected.sort();
    assert_eq!(outputs, expected);
}

#[test]
fn four_thousand_bins_move_all_at_once_fluidly_and_in_batches() {
    let bins = Bins::new(4096).unwrap();
    for strategy in [Strategy::AllAtOnce, Strategy::Batched { per_worker: 512 }, Strategy::Fluid] {
        let mut rng = Rng::new(6);
        let (rounds, start) = if strategy == Strategy::Fluid { (6200, 10) } else { (60, 10) };
        let records = records(&mut rng, rounds, 4, 500);
        // Gather every bin on worker 1 (3,072 moves), then spread them again.
        let initial = RoutingTable::round_robin(bins, 4).unwrap();
        let gathered = RoutingTable::from_owners(vec![1; 4096]).unwrap();
        let mut commands = plan(&initial, &gathered, strategy, start).unwrap();
        let back = commands.last().unwrap().0 + 5;
        commands.extend(plan(&gathered, &initial, strategy, back).unwrap());
        assert!(commands.last().unwrap().0 < rounds, "{strategy:?}");
        let workload = Workload { rounds, records: records.clone(), commands, sync_every: 0 };
        let counts = run(Config::Process(4), bins, workload, |data, control, _| {
            data.state_machine(control, |&word: &u64, _: u64, count: &mut u64| {
                *count += 1;
                (false, Some((word, *count)))
            })
        });
        assert_eq!(counts, counts_reference(&records), "{strategy:?}");
    }
}
