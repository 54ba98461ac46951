//! A process's files in the trace directory: one open Parquet file per worker, written under a
//! temporary name and renamed when complete, and the process's metadata file.
//!
//! Files are Hive-partitioned (`process=P/worker=W/part-N.parquet`); a file is closed once it
//! has been open for the flush interval or grew large. Rows gather per open file until they
//! fill a row group or the file closes; `crate::row_group` encodes them. This module must not
//! decide what goes into the files nor when batches arrive (that is `crate::writer`'s
//! business).

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;

use crate::batch::EventBatch;
use crate::metadata::{ClockSample, ProcessMetadata, Status};
use crate::row_group::{self, PageEncoder};
use crate::schema::schema;

/// A file is closed once it holds this many rows, even before the flush interval.
const MAX_FILE_ROWS: usize = 1 << 22;
/// Rows per Parquet row group (and per page: a row group has one page per column).
const ROW_GROUP_ROWS: usize = 1 << 17;

/// A process's files in the trace directory.
pub(crate) struct Files {
    process_dir: PathBuf,
    metadata: ProcessMetadata,
    flush_interval: Duration,
    open: HashMap<usize, OpenFile>,
    next_part: HashMap<usize, u64>,
    /// Per worker, the rows of its open file not yet in a row group. Kept between files, so
    /// that their memory is reused (up to a row group's worth per worker).
    pending: HashMap<usize, EventBatch>,
    encoder: PageEncoder,
}

struct OpenFile {
    writer: SerializedFileWriter<fs::File>,
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
        let (open, next_part, pending) = (HashMap::new(), HashMap::new(), HashMap::new());
        let encoder = PageEncoder::new()?;
        Ok(Files { process_dir, metadata, flush_interval, open, next_part, pending, encoder })
    }

    /// When the oldest open file is due to be closed.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.open.values().map(|file| file.opened + self.flush_interval).min()
    }

    /// Has `rows` append a worker's rows to those gathered for its file (opened if they are
    /// the first).
    pub(crate) fn write(&mut self, worker: usize, rows: impl FnOnce(&mut EventBatch)) -> io::Result<()> {
        let pending = self.pending.entry(worker).or_default();
        let before = pending.len();
        rows(pending);
        let added = pending.len() - before;
        if added == 0 {
            return Ok(());
        }
        let file = match self.open.entry(worker) {
            std::collections::hash_map::Entry::Occupied(file) => file.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let part = self.next_part.entry(worker).or_insert(0);
                let file = OpenFile::create(&self.process_dir.join(format!("worker={worker}")), *part)?;
                *part += 1;
                slot.insert(file)
            }
        };
        file.rows += added;
        if pending.len() >= ROW_GROUP_ROWS {
            file.write_row_group(pending, &mut self.encoder)?;
        }
        if file.rows >= MAX_FILE_ROWS {
            self.close(worker)?;
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
        due.into_iter().try_for_each(|worker| self.close(worker))
    }

    fn close(&mut self, worker: usize) -> io::Result<()> {
        let file = self.open.remove(&worker).expect("the file is open");
        file.close(self.pending.get_mut(&worker).expect("an open file has pending rows"), &mut self.encoder)
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

/// The file's properties: the Arrow schema in its metadata, so that readers see `kind` as a
/// dictionary column (how pages are encoded is `crate::row_group`'s choice).
fn writer_properties() -> WriterProperties {
    let mut properties = WriterProperties::builder().build();
    add_encoded_arrow_schema_to_metadata(&schema(), &mut properties);
    properties
}

impl OpenFile {
    fn create(dir: &Path, part: u64) -> io::Result<OpenFile> {
        fs::create_dir_all(dir).map_err(|e| annotate(e, "cannot create", dir))?;
        let name = format!("part-{part:06}.parquet");
        let temporary = dir.join(format!(".{name}.tmp"));
        let file = fs::File::create(&temporary).map_err(|e| annotate(e, "cannot create", &temporary))?;
        let columns = ArrowSchemaConverter::new().convert(&schema()).map_err(io::Error::other)?;
        let properties = Arc::new(writer_properties());
        let writer = SerializedFileWriter::new(file, columns.root_schema_ptr(), properties)
            .map_err(io::Error::other)?;
        Ok(OpenFile { writer, temporary, complete: dir.join(name), opened: Instant::now(), rows: 0 })
    }

    /// Writes `pending` as a row group; `pending` is empty afterwards.
    fn write_row_group(&mut self, pending: &mut EventBatch, encoder: &mut PageEncoder) -> io::Result<()> {
        row_group::write(&mut self.writer, pending, encoder).map_err(io::Error::other)?;
        pending.clear();
        Ok(())
    }

    /// Writes the last rows (`pending`) and the footer, and gives the file its final name.
    fn close(mut self, pending: &mut EventBatch, encoder: &mut PageEncoder) -> io::Result<()> {
        if !pending.is_empty() {
            self.write_row_group(pending, encoder)?;
        }
        self.writer.close().map_err(io::Error::other)?;
        fs::rename(&self.temporary, &self.complete).map_err(|e| annotate(e, "cannot rename", &self.temporary))
    }
}

fn annotate(error: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(error.kind(), format!("{what} {}: {error}", path.display()))
}
