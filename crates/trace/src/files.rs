//! A process's files in the trace directory: one open Parquet file per worker, written under a
//! temporary name and renamed when complete, and the process's metadata file.
//!
//! Files are Hive-partitioned (`process=P/worker=W/part-N.parquet`); a file is closed once it
//! has been open for the flush interval or grew large. This module must not decide what goes
//! into the files nor when batches arrive (that is `crate::writer`'s business).

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use arrow_schema::DataType;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use crate::metadata::{ClockSample, ProcessMetadata, Status};
use crate::schema::schema;

/// A file is closed once it holds this many rows, even before the flush interval.
const MAX_FILE_ROWS: usize = 1 << 22;
/// Rows per Parquet row group.
const ROW_GROUP_ROWS: usize = 1 << 20;

/// A process's files in the trace directory.
pub(crate) struct Files {
    process_dir: PathBuf,
    metadata: ProcessMetadata,
    flush_interval: Duration,
    open: HashMap<usize, OpenFile>,
    next_part: HashMap<usize, u64>,
}

struct OpenFile {
    writer: ArrowWriter<fs::File>,
    temporary: PathBuf,
    complete: PathBuf,
    opened: Instant,
    rows: usize,
}

impl Files {
    pub(crate) fn create(
        root: &Path,
        metadata: ProcessMetadata,
        flush_interval: Duration,
    ) -> io::Result<Files> {
        let process_dir = ProcessMetadata::process_dir(root, metadata.process);
        fs::create_dir_all(&process_dir).map_err(|e| annotate(e, "cannot create", &process_dir))?;
        metadata.write(&process_dir).map_err(|e| annotate(e, "cannot write metadata into", &process_dir))?;
        Ok(Files { process_dir, metadata, flush_interval, open: HashMap::new(), next_part: HashMap::new() })
    }

    /// When the oldest open file is due to be closed.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.open.values().map(|file| file.opened + self.flush_interval).min()
    }

    pub(crate) fn write(&mut self, worker: usize, batch: &RecordBatch) -> io::Result<()> {
        let file = match self.open.entry(worker) {
            std::collections::hash_map::Entry::Occupied(file) => file.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let part = self.next_part.entry(worker).or_insert(0);
                let file = OpenFile::create(&self.process_dir.join(format!("worker={worker}")), *part)?;
                *part += 1;
                slot.insert(file)
            }
        };
        file.writer.write(batch).map_err(io::Error::other)?;
        file.rows += batch.num_rows();
        if file.rows >= MAX_FILE_ROWS {
            self.open.remove(&worker).expect("the file is open").close()?;
        }
        Ok(())
    }

    /// Closes the files open for the flush interval (every file if `all`).
    pub(crate) fn close_due(&mut self, all: bool) -> io::Result<()> {
        let interval = self.flush_interval;
        let due: Vec<usize> = self
            .open
            .iter()
            .filter(|(_, f)| all || f.opened.elapsed() >= interval)
            .map(|(w, _)| *w)
            .collect();
        for worker in due {
            self.open.remove(&worker).expect("the file is open").close()?;
        }
        Ok(())
    }

    pub(crate) fn record_clock(&mut self, sample: ClockSample) -> io::Result<()> {
        self.metadata.add_clock_sample(sample);
        self.metadata.write(&self.process_dir)
    }

    /// Closes every file and records the run's end (as failed if a file could not be closed).
    pub(crate) fn finish(&mut self, status: Status, end_time_ns: i64) -> io::Result<()> {
        let closed = self.close_due(true);
        self.metadata.status = if closed.is_ok() { status } else { Status::Failed };
        self.metadata.end_time_ns = Some(end_time_ns);
        closed.and(self.metadata.write(&self.process_dir))
    }
}

/// How trace files are encoded, chosen for the writer thread's speed as much as for size
/// (`cargo bench --bench trace_writer`): integer columns delta-encoded without dictionaries
/// (ids and sequence numbers repeat in runs, times grow), `kind` plain (a dictionary would
/// intern every row's name; Zstandard packs the repeats as well), the other string columns
/// with dictionaries, Zstandard level 1 over all, and statistics only for `time_ns` (readers skip files by
/// time range; the other columns are partitioned or cheap to scan).
fn writer_properties() -> WriterProperties {
    let mut properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).expect("level 1 exists")))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_statistics_enabled(EnabledStatistics::None)
        .set_column_statistics_enabled(ColumnPath::from("time_ns"), EnabledStatistics::Chunk);
    for field in schema().fields().iter().filter(|field| field.data_type() == &DataType::Int64) {
        let column = ColumnPath::from(field.name().as_str());
        properties = properties
            .set_column_dictionary_enabled(column.clone(), false)
            .set_column_encoding(column, Encoding::DELTA_BINARY_PACKED);
    }
    properties.set_column_dictionary_enabled(ColumnPath::from("kind"), false).build()
}

impl OpenFile {
    fn create(dir: &Path, part: u64) -> io::Result<OpenFile> {
        fs::create_dir_all(dir).map_err(|e| annotate(e, "cannot create", dir))?;
        let name = format!("part-{part:06}.parquet");
        let temporary = dir.join(format!(".{name}.tmp"));
        let file = fs::File::create(&temporary).map_err(|e| annotate(e, "cannot create", &temporary))?;
        let properties = writer_properties();
        let writer = ArrowWriter::try_new(file, schema(), Some(properties)).map_err(io::Error::other)?;
        Ok(OpenFile { writer, temporary, complete: dir.join(name), opened: Instant::now(), rows: 0 })
    }

    /// Writes the footer and gives the file its final name.
    fn close(self) -> io::Result<()> {
        self.writer.close().map_err(io::Error::other)?;
        fs::rename(&self.temporary, &self.complete).map_err(|e| annotate(e, "cannot rename", &self.temporary))
    }
}

fn annotate(error: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(error.kind(), format!("{what} {}: {error}", path.display()))
}
