//! One row group of a trace file, encoded straight from an [`EventBatch`]'s columns.
//!
//! Each column becomes one column chunk of one data page (and, for `kind`, a dictionary page
//! of the kind names before it): integers in `DELTA_BINARY_PACKED`, `kind` as indices into
//! the dictionary, strings and booleans `PLAIN`, definition levels straight from which rows
//! have a value. Pages are compressed with Zstandard. Only `time_ns` gets statistics (its
//! minimum and maximum: readers skip row groups by time). The `parquet` crate writes the page
//! headers, the row group's and the file's metadata; this module does what its Arrow writer
//! would do row by row, in bulk, at a fraction of the cost (`cargo bench --bench
//! trace_writer`). It must not open, name or close files (that is `crate::files`).

use std::io::Write;

use bytes::Bytes;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::column::page::{CompressedPage, Page, PageWriteSpec, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::Result;
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use crate::batch::{Column, EventBatch};
use crate::encoding::{bit_width, bitmap_levels, delta_binary_packed, hybrid, plain_booleans, plain_strings};
use crate::schema::Kind;

/// Zstandard's level for pages: one of its fast (negative) levels, which still packs the
/// level bitmaps and the repeats between neighbouring values, at about half the writer's
/// instructions of level 1 for a few percent more bytes (`docs/benchmarks.md`, "Tracing
/// overhead"). Files record only the codec, not the level.
const ZSTD_LEVEL: i32 = -5;

/// Encodes and compresses pages, keeping its Zstandard context and every buffer a page
/// needs from one row group to the next: a row group's buffers are large (a page of
/// `time_ns` alone is a megabyte before encoding), and allocating them afresh each time cost
/// the writer thread about a fifth of its time in page faults.
pub(crate) struct PageEncoder {
    compressor: zstd::bulk::Compressor<'static>,
    scratch: Scratch,
}

/// The buffers a column chunk is built in.
#[derive(Default)]
struct Scratch {
    /// The data page being encoded.
    page: Vec<u8>,
    /// A page's compressed bytes.
    compressed: Vec<u8>,
    /// The column chunk: page headers and compressed pages.
    chunk: Vec<u8>,
    /// A column's integers, gathered from its cells.
    values: Vec<i64>,
    /// Bitmaps, level and code bytes.
    bytes: [Vec<u8>; 2],
}

impl PageEncoder {
    pub(crate) fn new() -> std::io::Result<Self> {
        let compressor = zstd::bulk::Compressor::new(ZSTD_LEVEL)?;
        Ok(PageEncoder { compressor, scratch: Scratch::default() })
    }

    /// The bytes of one column chunk and what the row group records about it.
    fn chunk(
        &mut self,
        descriptor: ColumnDescPtr,
        column: &Column<'_>,
        rows: usize,
    ) -> Result<(Bytes, ColumnCloseResult)> {
        let Scratch { page, compressed, chunk, values, bytes } = &mut self.scratch;
        page.clear();
        let pages = encode(column, rows, page, values, bytes);
        chunk.clear();
        let mut sink = TrackedWrite::new(&mut *chunk);
        let mut compress = |data: &[u8]| -> Result<Bytes> {
            compressed.clear();
            compressed.reserve(zstd::zstd_safe::compress_bound(data.len()));
            self.compressor.compress_to_buffer(data, compressed)?;
            Ok(Bytes::copy_from_slice(compressed))
        };
        let written = write_pages(&pages, page, &mut SerializedPageWriter::new(&mut sink), &mut compress)?;
        let chunk = Bytes::copy_from_slice(sink.into_inner()?);
        let close = ColumnCloseResult {
            bytes_written: written.iter().map(|spec| spec.compressed_size as u64).sum(),
            rows_written: rows as u64,
            metadata: chunk_metadata(descriptor, pages, &written)?,
            bloom_filter: None,
            column_index: None,
            offset_index: None,
        };
        Ok((chunk, close))
    }
}

/// Writes `batch` as the next row group of `file`.
pub(crate) fn write<W: Write + Send>(
    file: &mut SerializedFileWriter<W>,
    batch: &EventBatch,
    encoder: &mut PageEncoder,
) -> Result<()> {
    let descriptors = file.schema_descr().columns().to_vec();
    let mut group = file.next_row_group()?;
    for (descriptor, column) in descriptors.into_iter().zip(batch.columns()) {
        let (bytes, close) = encoder.chunk(descriptor, &column, batch.len())?;
        group.append_column(&bytes, close)?;
    }
    group.close()?;
    Ok(())
}

/// What a column chunk's pages are, besides the data page's bytes.
struct Pages {
    /// Level entries in the data page: one per row, but one per item of a list longer than one.
    levels: usize,
    dictionary: Option<Vec<u8>>,
    encoding: Encoding,
    statistics: Option<Statistics>,
}

/// Compresses and writes the dictionary page, if any, then the data page (`data`); what was
/// written, in that order.
fn write_pages<W: Write + Send>(
    pages: &Pages,
    data: &[u8],
    writer: &mut SerializedPageWriter<'_, W>,
    compress: &mut impl FnMut(&[u8]) -> Result<Bytes>,
) -> Result<Vec<PageWriteSpec>> {
    let mut written = Vec::with_capacity(2);
    if let Some(names) = &pages.dictionary {
        let page = Page::DictionaryPage {
            buf: compress(names)?,
            num_values: Kind::ALL.len() as u32,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        written.push(writer.write_page(CompressedPage::new(page, names.len()))?);
    }
    let page = Page::DataPage {
        buf: compress(data)?,
        num_values: pages.levels as u32,
        encoding: pages.encoding,
        def_level_encoding: Encoding::RLE,
        rep_level_encoding: Encoding::RLE,
        statistics: None,
    };
    written.push(writer.write_page(CompressedPage::new(page, data.len()))?);
    writer.close()?;
    Ok(written)
}

/// What the row group records about a column chunk of `pages`, written as `written`.
fn chunk_metadata(
    descriptor: ColumnDescPtr,
    pages: Pages,
    written: &[PageWriteSpec],
) -> Result<ColumnChunkMetaData> {
    let data = written.last().expect("a chunk has a data page");
    let dictionary = pages.dictionary.as_ref().map(|_| written[0].offset as i64);
    let mut encodings = vec![Encoding::RLE, pages.encoding];
    encodings.extend(dictionary.map(|_| Encoding::PLAIN));
    let mut metadata = ColumnChunkMetaData::builder(descriptor)
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_encodings(encodings)
        .set_num_values(pages.levels as i64)
        .set_total_compressed_size(written.iter().map(|spec| spec.compressed_size as i64).sum())
        .set_total_uncompressed_size(written.iter().map(|spec| spec.uncompressed_size as i64).sum())
        .set_data_page_offset(data.offset as i64)
        .set_dictionary_page_offset(dictionary);
    if let Some(statistics) = pages.statistics {
        metadata = metadata.set_statistics(statistics);
    }
    metadata.build()
}

/// Encodes the data page of `column`, a column of `rows` rows, into `data` (with `values`
/// and `bytes` as scratch); returns what else its chunk needs.
fn encode(
    column: &Column<'_>,
    rows: usize,
    data: &mut Vec<u8>,
    values: &mut Vec<i64>,
    [first, second]: &mut [Vec<u8>; 2],
) -> Pages {
    let pages = |encoding| Pages { levels: rows, dictionary: None, encoding, statistics: None };
    match column {
        Column::Times(times) => {
            delta_binary_packed(data, times);
            let (least, most) = (times.iter().min().copied(), times.iter().max().copied());
            let statistics = Some(Statistics::int64(least, most, None, Some(0), false));
            Pages { statistics, ..pages(Encoding::DELTA_BINARY_PACKED) }
        }
        Column::Kinds(codes) => {
            let mut names = Vec::new();
            plain_strings(&mut names, Kind::ALL.iter().map(|kind| kind.name()));
            let width = bit_width(Kind::ALL.len() as u64 - 1);
            data.push(width);
            first.clear();
            first.extend(codes.iter().map(|code| *code as u8));
            hybrid(data, first, width);
            Pages { dictionary: Some(names), ..pages(Encoding::RLE_DICTIONARY) }
        }
        Column::Ints(cells) => {
            optional_levels(data, first, cells.iter().map(|(row, _)| *row), cells.len(), rows);
            values.clear();
            values.extend(cells.iter().map(|(_, value)| *value));
            delta_binary_packed(data, values);
            pages(Encoding::DELTA_BINARY_PACKED)
        }
        Column::Lists { cells, items } => {
            let levels = list_levels(data, (first, second), cells, rows);
            delta_binary_packed(data, items);
            Pages { levels, ..pages(Encoding::DELTA_BINARY_PACKED) }
        }
        Column::Strings(cells) => {
            optional_levels(data, first, cells.iter().map(|(row, _)| *row), cells.len(), rows);
            plain_strings(data, cells.iter().map(|(_, value)| *value));
            pages(Encoding::PLAIN)
        }
        Column::Bools(cells) => {
            optional_levels(data, first, cells.iter().map(|(row, _)| *row), cells.len(), rows);
            plain_booleans(data, cells.iter().map(|(_, value)| *value));
            pages(Encoding::PLAIN)
        }
    }
}

/// Appends a data page's definition levels for an optional column of `rows` rows whose
/// `present` rows (ascending, `count` of them) have a value: their length, then the levels
/// (`bitmap` is scratch).
fn optional_levels(
    out: &mut Vec<u8>,
    bitmap: &mut Vec<u8>,
    present: impl Iterator<Item = u32>,
    count: usize,
    rows: usize,
) {
    bitmap.clear();
    bitmap.resize(rows.div_ceil(8), 0);
    present.for_each(|row| bitmap[row as usize / 8] |= 1 << (row % 8));
    with_length(out, |levels| bitmap_levels(levels, bitmap, rows, count));
}

/// Appends a data page's repetition and definition levels for the list column: a null list
/// is defined to 0, an empty one to 1, each item to 2; an item after a list's first repeats
/// at 1. `cells` are the rows that have a list, each with where its items end; `repeats` and
/// `defines` are scratch. Returns the number of levels.
fn list_levels(
    out: &mut Vec<u8>,
    (repeats, defines): (&mut Vec<u8>, &mut Vec<u8>),
    cells: &[(u32, u32)],
    rows: usize,
) -> usize {
    repeats.clear();
    defines.clear();
    let (mut next, mut start) = (0, 0);
    for (row, end) in cells {
        let (nulls, length) = (*row as usize - next, *end - start);
        repeats.extend(std::iter::repeat_n(0, nulls));
        defines.extend(std::iter::repeat_n(0, nulls));
        repeats.push(0);
        defines.push(if length == 0 { 1 } else { 2 });
        for _ in 1..length {
            repeats.push(1);
            defines.push(2);
        }
        (next, start) = (*row as usize + 1, *end);
    }
    repeats.extend(std::iter::repeat_n(0, rows - next));
    defines.extend(std::iter::repeat_n(0, rows - next));
    with_length(out, |levels| hybrid(levels, repeats, 1));
    with_length(out, |levels| hybrid(levels, defines, 2));
    defines.len()
}

/// Appends what `encode` writes, after its length (4 bytes, little-endian).
fn with_length(out: &mut Vec<u8>, encode: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    encode(out);
    let length = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&length.to_le_bytes());
}
