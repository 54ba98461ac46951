//! Unit tests of the ledger ([`super`]): the bootstrap's hold-backs and sequence checks.

use super::*;

fn update(time: u64, delta: i64) -> Updates<u64> {
    vec![((Location::source(1, 0), time), delta)]
}

/// A joined worker's first batch (releasing its handed-over capability) waits for the
/// server's batch that announced it, even when it arrives first (the model checker's
/// counterexample against applying them in arrival order).
#[test]
fn a_joined_workers_release_waits_for_the_announcement() {
    let mut ledger: Ledger<u64> = Ledger::new(3);
    let mut ready = Vec::new();
    assert!(ledger.admit(0, 0, None, &update(0, 1)).unwrap());
    assert!(!ledger.admit(2, 0, Some((0, 1)), &update(0, -1)).unwrap(), "the release is held back");
    assert!(!ledger.admit(2, 1, None, &update(1, 1)).unwrap(), "and what follows it");
    ledger.release_held(&mut ready).unwrap();
    assert!(ready.is_empty());
    assert!(ledger.admit(0, 1, None, &update(0, 1)).unwrap(), "the announcement");
    ledger.release_held(&mut ready).unwrap();
    let released: Vec<_> = ready.iter().map(|(origin, _)| *origin).collect();
    assert_eq!(released, vec![Some((2, 0)), Some((2, 1))]);
    assert!(ledger.admit(2, 2, None, &update(1, -1)).unwrap(), "later batches flow again");
}

/// A batch out of sequence, applied at once or released later, is an error naming its
/// sender, not a panic.
#[test]
fn batches_out_of_sequence_are_errors() {
    let mut ledger: Ledger<u64> = Ledger::new(3);
    let error = OutOfSequence { source: 1, expected: 0, received: 5 };
    assert_eq!(ledger.admit(1, 5, None, &update(0, 1)), Err(error));
    assert!(error.to_string().contains("expected batch 0 from worker 1 but received batch 5"));
    assert_eq!(ledger.admit(2, 0, Some((0, 0)), &update(0, 1)), Ok(false), "held back");
    assert_eq!(ledger.admit(2, 3, None, &update(0, 1)), Ok(false), "behind it");
    assert_eq!(ledger.admit(0, 0, None, &update(0, 1)), Ok(true));
    let mut ready = Vec::new();
    let late = OutOfSequence { source: 2, expected: 1, received: 3 };
    assert_eq!(ledger.release_held(&mut ready), Err(late));
}

/// Statements about node 0 (records entering or leaving the scope) stay out of the state,
/// which keeps only what cancels inside the scope; statements absorbed from a nested scope
/// are in it.
#[test]
fn the_state_leaves_node_zero_to_the_parent() {
    let mut ledger: Ledger<u64> = Ledger::new(1);
    let entered = vec![((Location::target(1, 0), 5), 3), ((Location::source(0, 0), 5), -3)];
    assert!(ledger.admit(0, 0, None, &entered).unwrap());
    let consumed = vec![((Location::target(1, 0), 5), -3), ((Location::target(0, 0), 5), 3)];
    assert!(ledger.admit(0, 1, None, &consumed).unwrap());
    assert_eq!(ledger.accumulated.iter().count(), 0, "{:?}", ledger.accumulated);
    ledger.absorb(&[((Location::target(2, 0), 5), -3)]);
    assert_eq!(
        ledger.accumulated.iter().cloned().collect::<Vec<_>>(),
        vec![((Location::target(2, 0), 5), -3)]
    );
}

/// Direct batches that a joined worker's state already holds are dropped, others applied in
/// sequence.
#[test]
fn a_joined_worker_drops_what_its_state_holds() {
    let server: Ledger<u64> = Ledger::new(2);
    let cell = std::cell::RefCell::new(server);
    assert!(cell.borrow_mut().admit(1, 0, None, &update(0, 1)).unwrap());
    let state = ScopeLedger::snapshot(&cell);
    let joiner = std::cell::RefCell::new(Ledger::<u64>::new(3));
    joiner.start_joining(2);
    joiner.install_state(&state, 0, None).unwrap();
    joiner.direct_from(0, 0);
    joiner.direct_from(1, 0);
    assert_eq!(joiner.missing_ranges(), Some(vec![]));
    let mut ready = Vec::new();
    let mut ledger = joiner.borrow_mut();
    assert!(!ledger.admit(1, 0, None, &update(0, 1)).unwrap(), "held while joining");
    ledger.try_finish_joining(&mut ready).unwrap();
    assert_eq!(ready.len(), 1, "only the state: batch 0 of worker 1 is in it");
    assert!(!ledger.admit(1, 0, None, &update(0, 1)).unwrap(), "a late copy is dropped");
    assert!(ledger.admit(1, 1, None, &update(0, -1)).unwrap());
}

/// The ledger of a joining worker of 2 whose server (worker 1) sent its state at batches
/// `[0, 1)`, and whose first direct batch from worker 1 is `first_direct`: it is missing worker
/// 1's batches `[1, first_direct)`.
fn joining_ledger(first_direct: u64) -> std::cell::RefCell<Ledger<u64>> {
    let ledger = std::cell::RefCell::new(Ledger::<u64>::new(2));
    ledger.start_joining(2);
    let mut state = Vec::new();
    bincode_encode(&(update(0, 1), vec![0u64, 1]), &mut state);
    ledger.install_state(&state, 1, None).expect("a state");
    ledger.direct_from(0, 0);
    ledger.direct_from(1, first_direct);
    assert_eq!(ledger.missing_ranges(), Some(vec![(1, 1, first_direct)]));
    ledger
}

/// What a joining worker's server sent, its state and its ranges alike, is checked whole
/// before anything is applied, and the error names the server.
#[test]
fn a_joining_workers_state_and_ranges_are_checked_before_they_are_applied() {
    use super::super::batch_check::ScopePorts;
    let ports = ScopePorts::new(vec![(0, 0), (1, 1)]);
    let joining = |range: Updates<u64>| {
        let ledger = joining_ledger(2);
        let mut batches = Vec::new();
        bincode_encode(&vec![range], &mut batches);
        ledger.install_range(1, 1, &batches).expect("a range");
        ledger
    };
    let check = |ledger: &std::cell::RefCell<Ledger<u64>>| {
        ledger.borrow().check_bootstrap(|updates| ports.check_bootstrap(updates))
    };
    assert_eq!(check(&joining(update(1, -1))), Ok(()));
    let (server, reason) = check(&joining(update(1, i64::MIN))).expect_err("a delta too large");
    assert_eq!(server, 1);
    assert!(reason.to_string().contains("add up to more than"), "{reason}");
    let stranger = vec![((Location::target(1, 4), 0), 1)];
    let (_, reason) = check(&joining(stranger)).expect_err("a port the node lacks");
    assert!(reason.to_string().contains("input 4 of node 1, which has 1"), "{reason}");
}

/// A range must be exactly the one asked for: another start or length would be applied as
/// batches of the sender (and a gap blamed on it), or replace batches it sends directly.
#[test]
fn a_range_other_than_the_one_asked_for_is_refused() {
    let ledger = joining_ledger(3);
    let range = |count: usize| {
        let mut batches = Vec::new();
        bincode_encode(&vec![update(1, 1); count], &mut batches);
        batches
    };
    let cases = [
        (1, 1, 1, Some((1, 3)), "1 batches of worker 1 from batch 1, where [1, 3) was asked for"),
        (1, 1, 3, Some((1, 3)), "3 batches of worker 1 from batch 1, where [1, 3) was asked for"),
        (1, 0, 2, Some((1, 3)), "2 batches of worker 1 from batch 0, where [1, 3) was asked for"),
        (1, u64::MAX, 2, Some((1, 3)), "2 batches of worker 1 from batch 18446744073709551615"),
        (0, 0, 1, None, "1 batches of worker 0 from batch 0, where none was asked for"),
    ];
    for (sender, start, count, asked, reason) in cases {
        let error = ledger.install_range(sender, start, &range(count)).expect_err(reason);
        let expected = JoinDataError::NotAsked { sender, start, len: count, asked };
        assert_eq!(format!("{error:?}"), format!("{expected:?}"));
        assert!(error.to_string().starts_with(reason), "{error}");
    }
    assert!(!ledger.has_all_ranges(), "nothing of the refused ranges was kept");
    ledger.install_range(1, 1, &range(2)).expect("the range asked for");
    assert!(ledger.has_all_ranges());
}
