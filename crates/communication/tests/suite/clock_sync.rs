//! Clock measurements over the cluster's own connections, with threads as processes: every
//! process other than 0 measures its clock against process 0's right after setup and again
//! every clock interval; on one machine the clocks agree, so every measurement's offset must
//! lie within its error bound, and the bound is small on loopback. Process 0 measures nothing.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use timely_communication::clock::ClockOffset;
use timely_communication::networking::{ClockSync, PeerStream, Transport, TransportOptions};

const LIMIT: Duration = Duration::from_secs(120);
const SETUP: Duration = Duration::from_secs(20);
/// A clock interval short enough for a test to see several measurements.
const INTERVAL: Duration = Duration::from_millis(300);
/// The largest error accepted on loopback, even on a loaded machine (at load 16 on 2 cores
/// a measurement's round trip took 110 ms, an error of 55 ms).
const MAX_ERROR_NS: i64 = 250_000_000;

/// Connects `processes` simulated processes; returns each one's streams.
fn connect(processes: usize) -> Vec<Vec<Option<PeerStream>>> {
    common::connect_processes(processes, 1, SETUP)
}

/// Starts a transport per process, measuring clocks every `interval`.
fn start_all(processes: usize, interval: Duration) -> Vec<Transport> {
    let sync = ClockSync::new(interval).expect("a valid clock interval");
    connect(processes)
        .into_iter()
        .enumerate()
        .map(|(process, streams)| {
            let (transport, _workers) = Transport::start(
                process,
                1,
                streams,
                TransportOptions { clock: sync, ..Default::default() },
                Arc::new(|_| {}),
            )
            .expect("the transport starts");
            transport
        })
        .collect()
}

/// Waits until `transport` holds at least `count` measurements, and returns them.
fn wait_for(transport: &Transport, count: usize, limit: Duration) -> Vec<ClockOffset> {
    let end = Instant::now() + limit;
    loop {
        let offsets = transport.clock_offsets();
        if offsets.len() >= count {
            return offsets;
        }
        assert!(
            Instant::now() < end,
            "process {}: {} of {count} measurements",
            transport.process(),
            offsets.len()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Closes every transport at once (each waits for the others' goodbyes).
fn shutdown_all(transports: Vec<Transport>) {
    let closing: Vec<_> = transports
        .into_iter()
        .map(|transport| std::thread::spawn(move || transport.shutdown(Duration::from_secs(10))))
        .collect();
    for handle in closing {
        handle.join().expect("shutdown thread").expect("an orderly shutdown");
    }
}

fn check(process: usize, sample: &ClockOffset) {
    assert!(sample.error_ns > 0, "process {process}: {sample:?} has no error bound");
    assert!(sample.error_ns < MAX_ERROR_NS, "process {process}: {sample:?} is too uncertain");
    assert!(sample.offset_ns.abs() <= sample.error_ns, "process {process}: one clock, yet {sample:?}");
}

#[test]
fn processes_other_than_0_measure_their_clock_at_start_within_its_error() {
    common::within(LIMIT, || {
        let started = timely_communication::clock::now_ns();
        // The default interval: only the measurement at start happens during the test.
        let transports = start_all(3, timely_communication::networking::DEFAULT_CLOCK_INTERVAL);
        for transport in &transports[1..] {
            let offsets = wait_for(transport, 1, Duration::from_secs(10));
            assert_eq!(offsets.len(), 1, "one burst, one measurement");
            check(transport.process(), &offsets[0]);
            assert!(offsets[0].measured_at_ns >= started);
        }
        assert!(transports[0].clock_offsets().is_empty(), "process 0 is the reference");
        shutdown_all(transports);
    });
}

#[test]
fn a_new_measurement_follows_every_interval() {
    common::within(LIMIT, || {
        let before = Instant::now();
        let transports = start_all(2, INTERVAL);
        let offsets = wait_for(&transports[1], 3, Duration::from_secs(30));
        // Bursts start an interval apart: the third cannot end within two intervals of setup.
        assert!(before.elapsed() >= INTERVAL * 2, "{:?}", before.elapsed());
        offsets.iter().for_each(|sample| check(1, sample));
        let times: Vec<i64> = offsets.iter().map(|sample| sample.measured_at_ns).collect();
        assert!(times.windows(2).all(|pair| pair[0] < pair[1]), "out of order: {times:?}");
        let published = timely_communication::clock::offsets_since(0);
        assert!(offsets.iter().all(|sample| published.contains(sample)), "published process-wide");
        shutdown_all(transports);
    });
}
