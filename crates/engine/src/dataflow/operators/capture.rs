//! Capturing a stream's records for inspection (mostly by tests).
//!
//! A `Captured` collects `(time, record)` pairs from any number of workers; it is `Send`
//! and `Sync`, so one can be shared by all workers of a run and read after it.

use crate::dataflow::channels::{Data, Pipeline};
use crate::dataflow::Stream;
use crate::progress::Timestamp;
use std::sync::{Arc, Mutex};

/// Records captured from streams, shared by the workers that capture them.
pub struct Captured<T, D> {
    records: Arc<Mutex<Vec<(T, D)>>>,
}

impl<T, D> Clone for Captured<T, D> {
    fn clone(&self) -> Self {
        Captured { records: self.records.clone() }
    }
}

impl<T, D> Default for Captured<T, D> {
    fn default() -> Self {
        Captured { records: Arc::new(Mutex::new(Vec::new())) }
    }
}

impl<T: Ord + Clone, D: Ord + Clone> Captured<T, D> {
    /// An empty capture.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every captured `(time, record)`, sorted.
    pub fn extract(&self) -> Vec<(T, D)> {
        let mut records = self.records.lock().expect("capture lock").clone();
        records.sort();
        records
    }

    fn push(&self, time: &T, data: &[D]) {
        self.records.lock().expect("capture lock").extend(data.iter().map(|d| (time.clone(), d.clone())));
    }
}

impl<T: Timestamp, D: Data + Ord + Send> Stream<T, D> {
    /// Captures the stream's records into a new `Captured`.
    pub fn capture(&self) -> Captured<T, D> {
        let captured = Captured::new();
        self.capture_into(&captured);
        captured
    }

    /// Captures the stream's records into `captured` (which other workers may share).
    pub fn capture_into(&self, captured: &Captured<T, D>) {
        let captured = captured.clone();
        self.sink(Pipeline, "Capture", move |input, _frontier| {
            input.for_each(|time, data| captured.push(time.time(), data));
        });
    }
}
