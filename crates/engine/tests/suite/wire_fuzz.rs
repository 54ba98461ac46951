//! The frame fuzzer (`timely_engine::wire_fuzz`) at test size: 20,000 inputs from a fake
//! process that passes the real handshake (sealed and unsealed runs; as process 1 of 2, or
//! joining processes 0 and 1 as process 2) against engine after engine; none may panic or hang,
//! and every error must name the fake process. `benches`'
//! `fuzz_frames` runs it with a million inputs and records the largest allocation.

use crate::common;

use std::time::Duration;

use timely_engine::wire_fuzz::{fuzz_frames, FrameFuzzOptions};

#[test]
fn twenty_thousand_fuzzed_frames_neither_panic_nor_hang_and_blame_the_sender() {
    common::within(Duration::from_secs(120), || {
        let options =
            FrameFuzzOptions { inputs: 20_000, per_run: 400, seed: 25, deadline: Duration::from_secs(10) };
        let report = fuzz_frames(&options).expect("loopback ports");
        assert!(report.is_clean(), "{report:#?}");
        assert!(report.inputs >= 20_000 && report.runs >= 50, "{report:#?}");
        assert_eq!(report.sealed_runs, report.runs.div_ceil(2), "every other run is sealed");
        assert!(report.joiner_runs * 2 >= report.runs - 3, "half the runs join as process 2");
        assert!(report.hostile.iter().sum::<usize>() == report.runs, "one hostile input a run");
        assert!(report.detected > report.runs / 2, "most hostile inputs end the run: {report:#?}");
    });
}
