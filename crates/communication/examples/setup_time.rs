//! Times cluster set-up: `setup_time [ROUNDS] [PROCESSES]` connects PROCESSES (default 2)
//! simulated processes on free loopback ports, each on its own thread as separate processes
//! would be, ROUNDS times (default 50), and prints the median, minimum and maximum time from
//! the start of the last process to the last `establish` returning, in µs. Processes start
//! 5 ms apart in index order, so every listener is bound when the last process dials (no
//! dial retry is timed: that would measure the retry backoff, not set-up). It uses only the public
//! `establish` API and `ProgramFlags`, so the same file builds on the commits that have both,
//! to compare them side by side.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use timely_communication::networking::{establish, ClusterIdentity};
use timely_communication::{FlagError, ProgramFlags};

fn free_addresses(count: usize) -> Vec<String> {
    let listeners: Vec<TcpListener> =
        (0..count).map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port")).collect();
    listeners.iter().map(|l| l.local_addr().expect("an address").to_string()).collect()
}

fn main() {
    let program = ProgramFlags::new("setup_time")
        .positional("ROUNDS", "set-ups timed (default 50)")
        .positional("PROCESSES", "processes per set-up (default 2)");
    let flags = program.parse_or_exit(std::env::args().skip(1));
    let read = || Ok::<_, FlagError>((flags.positional(0, 50usize)?, flags.positional(1, 2usize)?));
    let (rounds, processes) = read().unwrap_or_else(|error| program.exit(&error));
    let identity = ClusterIdentity { secret: b"setup-time".to_vec(), ..Default::default() };
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let addresses = free_addresses(processes);
        let mut start = Instant::now();
        let handles: Vec<_> = (0..processes)
            .map(|process| {
                if process > 0 {
                    std::thread::sleep(Duration::from_millis(5));
                }
                start = Instant::now();
                let (addresses, identity) = (addresses.clone(), identity.clone());
                std::thread::spawn(move || {
                    establish(process, &addresses, 1, &identity, Duration::from_secs(30)).expect("set-up")
                })
            })
            .collect();
        let streams: Vec<_> = handles.into_iter().map(|h| h.join().expect("a set-up thread")).collect();
        times.push(start.elapsed());
        drop(streams);
    }
    times.sort();
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "set-up of {processes} processes, {rounds} rounds: median {:.0} µs (min {:.0}, max {:.0})",
        micros(times[rounds / 2]),
        micros(times[0]),
        micros(times[rounds - 1])
    );
}
