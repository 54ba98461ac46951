//! The per-process metadata file, `process=P/_process.json`.
//!
//! It says what ran (program, arguments, cluster shape, engine version), how it was traced
//! (event classes, flush interval), how the run ended (`status`), and the process's clock
//! offset to process 0 with its error bound, as measured over time. It is written when the
//! process starts and rewritten, by write-then-rename, whenever something in it changes.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file name of a process's metadata inside its `process=P` directory.
pub const FILE_NAME: &str = "_process.json";

/// How a process's run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Still running, or killed before it could say otherwise.
    Running,
    /// Ended normally; every event was written.
    Complete,
    /// Ended with an error after writing what it had.
    Failed,
}

/// One measurement of this process's clock against process 0's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockSample {
    /// This clock minus process 0's clock, in nanoseconds.
    pub offset_ns: i64,
    /// The measurement's error bound (half the round trip of the probe used), nanoseconds.
    pub error_ns: i64,
    /// When the measurement was made, on this process's clock.
    pub measured_at_ns: i64,
}

/// The contents of `_process.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessMetadata {
    /// The trace format's version.
    pub format_version: u32,
    /// The version of the engine that wrote the trace.
    pub engine_version: String,
    /// The program that ran (its path, or the executable's).
    pub program: String,
    /// Its command line, the program first.
    pub argv: Vec<String>,
    /// This process's index.
    pub process: usize,
    /// The number of processes.
    pub processes: usize,
    /// Worker threads per process.
    pub workers_per_process: usize,
    /// When the process started tracing (its clock).
    pub start_time_ns: i64,
    /// Files are closed at least this often.
    pub flush_interval_ns: i64,
    /// The event classes recorded.
    pub event_classes: Vec<String>,
    /// How the run stands.
    pub status: Status,
    /// When the run ended, once it has.
    pub end_time_ns: Option<i64>,
    /// The latest clock measurement.
    pub clock: ClockSample,
    /// Every clock measurement, oldest first.
    pub clock_history: Vec<ClockSample>,
}

impl ProcessMetadata {
    /// The metadata of process `process` of `processes` (with `workers_per_process` workers
    /// each) starting at `start_time_ns` with the program `argv` (its first element), as it
    /// stands before anything happened: running, every event class, a flush every second,
    /// the reference clock. Set the rest with struct update syntax.
    pub fn starting(
        process: usize,
        processes: usize,
        workers_per_process: usize,
        start_time_ns: i64,
        argv: Vec<String>,
    ) -> Self {
        ProcessMetadata {
            format_version: crate::FORMAT_VERSION,
            // The workspace gives every crate the engine's version.
            engine_version: env!("CARGO_PKG_VERSION").to_string(),
            program: argv.first().cloned().unwrap_or_default(),
            argv,
            process,
            processes,
            workers_per_process,
            start_time_ns,
            flush_interval_ns: 1_000_000_000,
            event_classes: crate::EventClasses::all().names().into_iter().map(String::from).collect(),
            status: Status::Running,
            end_time_ns: None,
            clock: ClockSample { offset_ns: 0, error_ns: 0, measured_at_ns: start_time_ns },
            clock_history: Vec::new(),
        }
    }

    /// The directory of process `process` in the trace directory `root`.
    pub fn process_dir(root: &Path, process: usize) -> PathBuf {
        root.join(format!("process={process}"))
    }

    /// Records a clock measurement.
    pub fn add_clock_sample(&mut self, sample: ClockSample) {
        self.clock = sample;
        self.clock_history.push(sample);
    }

    /// Writes the file into `process_dir` atomically: a reader sees the old or the new
    /// contents, never a mixture.
    pub fn write(&self, process_dir: &Path) -> io::Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        let temporary = process_dir.join(format!(".{FILE_NAME}.tmp"));
        let mut file = fs::File::create(&temporary)?;
        file.write_all(&json)?;
        file.sync_data()?;
        fs::rename(&temporary, process_dir.join(FILE_NAME))
    }

    /// Reads the metadata of the process whose directory is `process_dir`.
    pub fn read(process_dir: &Path) -> io::Result<ProcessMetadata> {
        let bytes = fs::read(process_dir.join(FILE_NAME))?;
        serde_json::from_slice(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}
