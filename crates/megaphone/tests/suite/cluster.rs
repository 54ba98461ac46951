//! Migrations between processes: a cluster of two "processes" (threads of this test, each
//! running `timely_engine::execute` with its own `Config::Cluster` on loopback) of two
//! workers each. Bins move back and forth across processes, so state, pending notifications
//! and records cross through the engine's codecs; results must stay exact.

use crate::common::*;
use timely_megaphone::{plan, rebalance, Bins, RoutingTable, StateMachine, Strategy};

#[test]
fn state_moves_between_processes_and_stays_exact() {
    let bins = Bins::new(16).unwrap();
    for strategy in [Strategy::AllAtOnce, Strategy::Fluid, Strategy::Batched { per_worker: 2 }] {
        let mut rng = Rng::new(5);
        let records = records(&mut rng, 90, 40, 50);
        // Every bin to worker 3 (process 1), then every bin to worker 0 (process 0), then
        // spread evenly again.
        let initial = RoutingTable::round_robin(bins, 4).unwrap();
        let on_3 = RoutingTable::from_owners(vec![3; 16]).unwrap();
        let on_0 = RoutingTable::from_owners(vec![0; 16]).unwrap();
        let mut commands = plan(&initial, &on_3, strategy, 3).unwrap();
        commands.extend(plan(&on_3, &on_0, strategy, 30).unwrap());
        commands.extend(plan(&on_0, &rebalance(&on_0, 0..4).unwrap(), strategy, 60).unwrap());
        assert!(commands.iter().all(|(time, _)| *time < 90), "every command is sent");
        let workload = Workload { rounds: 90, records: records.clone(), commands, sync_every: 4 };
        let sums = run_processes(cluster(2, 2), bins, workload.clone(), |data, control, worker| {
            keyed_sum(data, control, worker, 2)
        });
        assert_eq!(without_workers(&sums), sums_reference(&records, 2), "{strategy:?}");
        let on_worker = |range: std::ops::Range<u64>, worker: usize| {
            let outputs: Vec<_> = sums.iter().filter(|(t, _)| range.contains(t)).collect();
            !outputs.is_empty() && outputs.iter().all(|(_, (_, _, w))| *w == worker)
        };
        assert!(on_worker(25..30, 3) && on_worker(55..60, 0), "{strategy:?}: the bins moved");
        let counts = run_processes(cluster(2, 2), bins, workload, |data, control, _| {
            data.state_machine(control, |&word: &u64, _: u64, count: &mut u64| {
                *count += 1;
                (false, Some((word, *count)))
            })
        });
        assert_eq!(counts, counts_reference(&records), "{strategy:?}");
    }
}
