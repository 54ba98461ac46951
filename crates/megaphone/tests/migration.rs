//! Keyed state stays exact across migrations: word count (a counting state machine) and a
//! keyed running sum with per-key notifications, compared with sequential references, for
//! every strategy, on several workers of one process.

mod common;

use common::*;
use timely_engine::Config;
use timely_megaphone::{plan, rebalance, Bins, Command, RoutingTable, StateMachine, Strategy};

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
    commands.extend(plan(&gathered, &rebalance(&gathered, peers).unwrap(), strategy, back).unwrap());
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
