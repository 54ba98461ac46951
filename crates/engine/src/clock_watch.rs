//! Carrying this process's clock measurements into its trace.
//!
//! This module owns the thread `timely:trace-clock` of a traced process other than 0: it
//! reads the measurements the transport publishes in [`timely_communication::clock`] every
//! poll interval (the trace's flush interval), and records those it has not seen into the
//! trace's metadata, once more when it stops so that none made during the run is lost. It
//! must not measure clocks (the transport does) nor write files (the trace writer does), and
//! it leaves the worker loop alone.

use std::io;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use timely_communication::clock;
use timely_trace::{ClockRecorder, ClockSample};

/// The running watcher; dropping it stops the thread after a last look.
pub(crate) struct ClockWatch {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ClockWatch {
    /// Starts watching for measurements published from now on, recording them into
    /// `recorder` within `every` of their publication.
    pub(crate) fn start(recorder: ClockRecorder, every: Duration) -> io::Result<ClockWatch> {
        let mut seen = clock::offset_count();
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new().name("timely:trace-clock".into()).spawn(move || loop {
            let stopping = !matches!(stopped.recv_timeout(every), Err(RecvTimeoutError::Timeout));
            seen = forward(&recorder, seen);
            if stopping {
                return;
            }
        })?;
        Ok(ClockWatch { stop: Some(stop), thread: Some(thread) })
    }
}

impl Drop for ClockWatch {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Records the measurements after the first `seen`; returns how many have been seen now.
fn forward(recorder: &ClockRecorder, seen: usize) -> usize {
    let new = clock::offsets_since(seen);
    for offset in &new {
        recorder.record(ClockSample {
            offset_ns: offset.offset_ns,
            error_ns: offset.error_ns,
            measured_at_ns: offset.measured_at_ns,
        });
    }
    seen + new.len()
}
