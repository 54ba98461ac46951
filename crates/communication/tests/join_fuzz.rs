//! The join acceptor's fuzzer with a small count (the benchmark runs 100,000 inputs): junk,
//! damaged and refused join attempts leave the cluster moving frames, admitting a valid joiner
//! and shutting down in order, with no thread panicking. Its own binary, since it counts the
//! panics of the whole process.
//!
//! So not a module of `tests/suite`: it installs a panic hook for the whole process and fails
//! if any thread panics during its run, and tests there panic on purpose in other threads of
//! the same process (`thread::`'s `#[should_panic]` test, `initialize::`'s panicking workers).

mod common;

use std::time::Duration;

use timely_communication::networking::join_fuzz::{fuzz_join_acceptor, FuzzOptions, KINDS};

#[test]
fn two_thousand_junk_and_refused_joins_leave_the_cluster_working() {
    let report = common::within(Duration::from_secs(120), || {
        let options =
            FuzzOptions { inputs: 2_000, clients: 3, seed: 7, addresses: common::free_addresses(3) };
        fuzz_join_acceptor(&options)
    })
    .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(report.kinds.iter().sum::<usize>(), 2_000);
    for (kind, count) in KINDS.iter().zip(report.kinds) {
        assert!(count > 100, "{kind}: only {count} inputs");
    }
}
