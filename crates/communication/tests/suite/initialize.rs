//! Worker threads: naming, results in index order, panics reported, joining on drop.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use timely_communication::{initialize, initialize_from, Config, ConfigError, InitializeError};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn join_returns_results_in_index_order_from_named_threads() {
    let results = common::within(LIMIT, || {
        initialize(Config::Process(4), |allocator| {
            let name = std::thread::current().name().map(str::to_owned);
            (allocator.index(), allocator.peers(), name)
        })
        .unwrap()
        .join()
    });
    let expected: Vec<_> =
        (0..4).map(|index| Ok((index, 4, Some(format!("timely:worker-{index}"))))).collect();
    assert_eq!(results, expected);
}

#[test]
fn a_single_worker_runs_on_its_own_thread() {
    let caller = std::thread::current().id();
    let results = common::within(LIMIT, move || {
        initialize(Config::Thread, move |allocator| {
            let current = std::thread::current();
            (allocator.peers(), current.id() != caller, current.name().map(str::to_owned))
        })
        .unwrap()
        .join()
    });
    assert_eq!(results, vec![Ok((1, true, Some("timely:worker-0".to_owned())))]);
}

#[test]
fn join_reports_a_panic_with_its_message() {
    let results = common::within(LIMIT, || {
        initialize(Config::Process(3), |allocator| {
            if allocator.index() == 1 {
                panic!("boom on worker {}", allocator.index());
            }
            allocator.index()
        })
        .unwrap()
        .join()
    });
    assert_eq!(results[0], Ok(0));
    assert_eq!(results[2], Ok(2));
    let error = results[1].as_ref().unwrap_err();
    assert_eq!(error.index, 1);
    assert!(error.message.contains("boom on worker 1"), "{error}");
    assert!(error.to_string().starts_with("worker 1 panicked: "), "{error}");
}

#[test]
fn dropping_the_guards_joins_the_workers() {
    let finished = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&finished);
    let guards = initialize_from(Config::Process(3).try_build().unwrap(), move |_allocator| {
        std::thread::sleep(Duration::from_millis(50));
        counter.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    drop(guards);
    assert_eq!(finished.load(Ordering::SeqCst), 3);
}

#[test]
fn dropping_the_guards_reraises_a_worker_panic() {
    let guards = initialize(Config::Thread, |_allocator| panic!("lost in a drop")).unwrap();
    let raised = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(guards)));
    let payload = raised.expect_err("the drop re-raises");
    let message = payload.downcast_ref::<String>().expect("a formatted message");
    assert!(message.contains("lost in a drop"), "{message}");
}

#[test]
fn zero_workers_is_an_error() {
    assert!(Config::Process(0).try_build().is_err());
    let error = initialize(Config::Process(0), |_allocator| ()).err().expect("an error");
    assert!(matches!(error, InitializeError::Config(ConfigError::NoWorkers)), "{error}");
    assert!(error.to_string().contains("at least 1"), "{error}");
}

#[test]
fn builders_can_move_to_worker_threads() {
    fn assert_send<T: Send>(_: &T) {}
    for builder in Config::Process(2).try_build().unwrap() {
        assert_send(&builder);
    }
}
