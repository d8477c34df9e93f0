//! Parquet inputs (files, or a Spark-style directory of `part-*.parquet` files), read through the
//! storage layer, so an `hdfs://` table uses the same HDFS client as every other input. Only the
//! selected columns are decoded. Worker `k` of `n` reads rows `[k T / n, (k + 1) T / n)` of the
//! T rows of all files together: whole row groups where its range covers them, a row selection
//! inside the row groups at its ends (those are decompressed by both neighbours; row groups are
//! usually much smaller than a worker's share).

use super::table::{missing_column, skip_null, Cell, Column, RowSink, MAX_COLS};
use super::{BadRecords, ReadStats};
use crate::error::{PsError, Result};
use crate::storage::{storage_for, Storage};
use arrow_array::{cast::AsArray, Array, RecordBatch};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use parquet::arrow::ProjectionMask;
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};
use std::io::Read;
use std::sync::Arc;

/// Rows decoded at a time.
const BATCH: usize = 8192;

/// Bytes read at once from the end of a file for its footer (the reader asks for the last 8
/// bytes, then the footer: two round trips to HDFS otherwise).
const TAIL: u64 = 64 << 10;
/// Column chunks closer than this are read in one request.
const GAP: u64 = 1 << 20;

/// One file of the storage layer as Parquet's reader sees it, with byte ranges already read.
/// The reader asks for every page header and page on its own; against HDFS each ask is a round
/// trip (a Parquet directory loaded 3x slower than the same rows as text), so the column chunks a
/// row group needs are read first, in as few requests as their layout allows.
struct StorageFile {
    st: Arc<dyn Storage>,
    path: String,
    len: u64,
    /// Ranges held in memory: (first byte, bytes), sorted, not overlapping.
    cache: Vec<(u64, bytes::Bytes)>,
}

impl StorageFile {
    /// This file with `ranges` (first byte, length) read into memory, near ones together.
    fn with_ranges(&self, mut ranges: Vec<(u64, u64)>) -> Result<StorageFile> {
        ranges.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (s, l) in ranges {
            match merged.last_mut() {
                Some((ms, ml)) if s <= *ms + *ml + GAP => *ml = (*ml).max(s + l - *ms),
                _ => merged.push((s, l)),
            }
        }
        let mut cache = Vec::with_capacity(merged.len());
        for (s, l) in merged {
            cache.push((s, bytes::Bytes::from(self.st.read_at(&self.path, s, l as usize)?)));
        }
        Ok(StorageFile { st: self.st.clone(), path: self.path.clone(), len: self.len, cache })
    }

    /// The held range that starts at or before `start`, and the offset of `start` in it.
    fn held(&self, start: u64) -> Option<(&bytes::Bytes, usize)> {
        let i = self.cache.partition_point(|r| r.0 <= start).checked_sub(1)?;
        let (s, b) = &self.cache[i];
        let at = (start - s) as usize;
        (at < b.len()).then_some((b, at))
    }
}

fn external(e: PsError) -> ParquetError {
    ParquetError::External(Box::new(e))
}

impl Length for StorageFile {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for StorageFile {
    type T = Box<dyn Read + Send>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        use bytes::Buf;
        match self.held(start) {
            // Page headers are read from here, and never past their column chunk.
            Some((b, at)) => Ok(Box::new(b.slice(at..).reader())),
            None => self.st.open_range(&self.path, start, self.len).map_err(external),
        }
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        if let Some((b, at)) = self.held(start).filter(|(b, at)| at + length <= b.len()) {
            return Ok(b.slice(at..at + length));
        }
        let b = self.st.read_at(&self.path, start, length).map_err(external)?;
        if b.len() < length {
            return Err(ParquetError::EOF(format!("{} ends at byte {}", self.path, start + b.len() as u64)));
        }
        Ok(b.into())
    }
}

fn parquet_error(path: &str, e: ParquetError) -> PsError {
    PsError::Config(format!("reading Parquet file {path}: {e}"))
}

/// Reads the rows of worker `k` of `n` (see the module docs).
pub(super) fn read_rows(
    url: &str,
    k: usize,
    n: usize,
    cols: &[Column],
    bad: BadRecords,
    sink: &mut dyn RowSink,
) -> Result<ReadStats> {
    let st = storage_for(url)?;
    let mut files = Vec::new();
    for (path, len) in st.list(url)? {
        let file = StorageFile { st: st.clone(), path, len, cache: Vec::new() };
        let file = file.with_ranges(vec![(len.saturating_sub(TAIL), len.min(TAIL))])?;
        let meta = ArrowReaderMetadata::load(&file, Default::default()).map_err(|e| parquet_error(&file.path, e))?;
        check_layout(&file, &meta)?;
        files.push((file, meta));
    }
    let total: u64 = files.iter().map(|f| f.1.metadata().file_metadata().num_rows().max(0) as u64).sum();
    let (lo, hi) = (total * k as u64 / n as u64, total * (k as u64 + 1) / n as u64);
    let mut stats = ReadStats::default();
    sink.expect(hi - lo);
    let mut base = 0u64;
    for (file, meta) in files {
        let rows = meta.metadata().file_metadata().num_rows().max(0) as u64;
        let (s, e) = (lo.max(base), hi.min(base + rows));
        if s < e {
            read_file(file, meta, (s - base)..(e - base), cols, bad, &mut stats, sink)?;
        }
        base += rows;
    }
    Ok(stats)
}

/// Checks that every row count is non-negative and every column chunk lies inside the file: the
/// reader asserts this (a damaged footer made it panic) rather than returning an error.
fn check_layout(file: &StorageFile, meta: &ArrowReaderMetadata) -> Result<()> {
    for (g, rg) in meta.metadata().row_groups().iter().enumerate() {
        for c in rg.columns() {
            let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset());
            let (len, end) = (c.compressed_size(), start.checked_add(c.compressed_size()));
            if rg.num_rows() < 0 || start < 0 || len < 0 || end.is_none_or(|e| e as u64 > file.len) {
                return Err(PsError::Config(format!(
                    "reading Parquet file {}: row group {g} is damaged (column {} at byte {start}, {len} bytes, {} \
                     rows; the file has {} bytes)",
                    file.path,
                    c.column_path(),
                    rg.num_rows(),
                    file.len
                )));
            }
        }
    }
    Ok(())
}

/// Reads rows `range` of one file.
fn read_file(
    file: StorageFile,
    meta: ArrowReaderMetadata,
    range: std::ops::Range<u64>,
    cols: &[Column],
    bad: BadRecords,
    stats: &mut ReadStats,
    sink: &mut dyn RowSink,
) -> Result<()> {
    let path = file.path.clone();
    let schema = meta.schema().clone();
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let roots = cols
        .iter()
        .map(|c| schema.index_of(c.name).map_err(|_| missing_column(&path, c, &names)))
        .collect::<Result<Vec<usize>>>()?;
    let picks = select(meta.metadata().row_groups().iter().map(|g| g.num_rows() as u64), &range);
    let mask = ProjectionMask::roots(meta.metadata().file_metadata().schema_descr(), roots);
    let mut rows = RowNumbers { segments: picks.iter().map(|p| p.2).collect(), read: 0 };
    for (g, selection, _) in picks {
        // The selected columns' chunks of this row group, read before decoding (see StorageFile).
        let chunks = meta.metadata().row_group(g).columns().iter().filter(|c| {
            let root = c.column_path().parts().first();
            cols.iter().any(|col| root.is_some_and(|r| r == col.name))
        });
        let ranges = chunks.map(|c| c.byte_range()).collect();
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file.with_ranges(ranges)?, meta.clone())
            .with_projection(mask.clone())
            .with_row_groups(vec![g])
            .with_row_selection(selection)
            .with_batch_size(BATCH)
            .build()
            .map_err(|e| parquet_error(&path, e))?;
        read_group(&path, reader, cols, bad, stats, &mut rows, sink)?;
    }
    Ok(())
}

/// Reads the batches of one row group.
fn read_group(
    path: &str,
    mut reader: ParquetRecordBatchReader,
    cols: &[Column],
    bad: BadRecords,
    stats: &mut ReadStats,
    rows: &mut RowNumbers,
    sink: &mut dyn RowSink,
) -> Result<()> {
    // The decoder asserts on some damaged pages instead of returning an error: a panic names the
    // file like any other error.
    let mut next = || std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reader.next()));
    while let Some(batch) = next().map_err(|p| {
        PsError::Config(format!(
            "reading Parquet file {path}: {} (is it damaged?)",
            crate::error::panic_message(p.as_ref())
        ))
    })? {
        let batch = batch.map_err(|e| PsError::Config(format!("reading Parquet file {path}: {e}")))?;
        read_batch(path, &batch, cols, bad, stats, rows, sink)?;
    }
    Ok(())
}

/// For each row group holding rows of `range` (of a file whose row groups have `sizes` rows): its
/// index, the selection of those rows within it, and them as (first row, count).
fn select(sizes: impl Iterator<Item = u64>, range: &std::ops::Range<u64>) -> Vec<(usize, RowSelection, (u64, u64))> {
    let mut out = Vec::new();
    let mut start = 0u64;
    for (g, len) in sizes.enumerate() {
        let (s, e) = (range.start.max(start), range.end.min(start + len));
        if s < e {
            let mut sel = Vec::new();
            for (keep, n) in [(false, s - start), (true, e - s), (false, start + len - e)] {
                if n > 0 {
                    sel.push(if keep { RowSelector::select(n as usize) } else { RowSelector::skip(n as usize) });
                }
            }
            out.push((g, sel.into(), (s, e - s)));
        }
        start += len;
    }
    out
}

/// The file's row numbers of the rows read, for messages.
struct RowNumbers {
    /// The selected rows as (first row, count) segments, in order.
    segments: Vec<(u64, u64)>,
    /// Rows read so far.
    read: u64,
}

impl RowNumbers {
    /// The 1-based row number in the file of the `k`-th row read (0-based).
    fn number(&self, mut k: u64) -> u64 {
        for &(first, len) in &self.segments {
            if k < len {
                return first + k + 1;
            }
            k -= len;
        }
        0
    }
}

/// A column's cells, for the types ids and values come in; `None` for other types. Converted a
/// batch at a time, in one loop per column type: a call per cell cost twice the time of
/// reading the same ratings from text.
fn cells(a: &dyn Array) -> Option<Vec<Cell<'_>>> {
    use arrow_array::types::*;
    use arrow_array::ArrowPrimitiveType;
    use arrow_schema::DataType as D;
    fn ints<T: ArrowPrimitiveType>(a: &dyn Array) -> Vec<Cell<'_>>
    where
        T::Native: TryInto<i64>,
    {
        // A value outside i64 (a u64 above 2^63) becomes a string that no id parser takes.
        let p = a.as_primitive::<T>();
        p.values().iter().map(|&v| v.try_into().map_or(Cell::Str("(above 2^63)"), Cell::Int)).collect()
    }
    fn floats<T: ArrowPrimitiveType>(a: &dyn Array) -> Vec<Cell<'_>>
    where
        T::Native: Into<f64>,
    {
        a.as_primitive::<T>().values().iter().map(|&v| Cell::Float(v.into())).collect()
    }
    Some(match a.data_type() {
        D::Int8 => ints::<Int8Type>(a),
        D::Int16 => ints::<Int16Type>(a),
        D::Int32 => ints::<Int32Type>(a),
        D::Int64 => ints::<Int64Type>(a),
        D::UInt8 => ints::<UInt8Type>(a),
        D::UInt16 => ints::<UInt16Type>(a),
        D::UInt32 => ints::<UInt32Type>(a),
        D::UInt64 => ints::<UInt64Type>(a),
        D::Float32 => floats::<Float32Type>(a),
        D::Float64 => floats::<Float64Type>(a),
        // A null's slot holds an empty string; the row is skipped before its cells are read.
        D::Utf8 => a.as_string::<i32>().iter().map(|s| Cell::Str(s.unwrap_or(""))).collect(),
        D::LargeUtf8 => a.as_string::<i64>().iter().map(|s| Cell::Str(s.unwrap_or(""))).collect(),
        D::Utf8View => a.as_string_view().iter().map(|s| Cell::Str(s.unwrap_or(""))).collect(),
        _ => return None,
    })
}

fn read_batch(
    path: &str,
    batch: &RecordBatch,
    cols: &[Column],
    bad: BadRecords,
    stats: &mut ReadStats,
    rows: &mut RowNumbers,
    sink: &mut dyn RowSink,
) -> Result<()> {
    let arrays: Vec<&dyn Array> =
        cols.iter().map(|c| batch.column_by_name(c.name).map(|a| a.as_ref()).expect("projected column")).collect();
    // Whole columns when the sink can take them: no cell per value, no call per row.
    let nulls = arrays.iter().any(|a| a.null_count() > 0);
    if !nulls && sink.columns(&arrays) {
        rows.read += batch.num_rows() as u64;
        stats.records += batch.num_rows() as u64;
        return Ok(());
    }
    let columns = arrays
        .iter()
        .zip(cols)
        .map(|(a, c)| {
            cells(*a).ok_or_else(|| {
                PsError::Config(format!(
                    "input {path}: column '{}' ({}) is of type {}, not a number or a string",
                    c.name,
                    c.flag,
                    a.data_type()
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut cells = [Cell::Int(0); MAX_COLS];
    let first = rows.read;
    rows.read += batch.num_rows() as u64;

    for i in 0..batch.num_rows() {
        let place = || format!("{path}: row {}", rows.number(first + i as u64));
        if let Some(c) = arrays.iter().position(|a| nulls && a.is_null(i)) {
            skip_null(stats, &place, &cols[c]);
            continue;
        }
        for (cell, col) in cells.iter_mut().zip(&columns) {
            *cell = col[i];
        }
        match sink.row(&cells[..cols.len()]) {
            Ok(()) => stats.records += 1,
            Err(why) => super::on_bad_at(bad, stats, &place, &why)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_selects_whole_groups_inside_and_parts_at_its_ends() {
        let picks = select([10u64, 10, 10, 10].into_iter(), &(15..32));
        let sel = |v: Vec<RowSelector>| RowSelection::from(v);
        let want = vec![
            (1, sel(vec![RowSelector::skip(5), RowSelector::select(5)]), (15, 5)),
            (2, sel(vec![RowSelector::select(10)]), (20, 10)),
            (3, sel(vec![RowSelector::select(2), RowSelector::skip(8)]), (30, 2)),
        ];
        assert_eq!(picks, want);
        let segs: Vec<(u64, u64)> = picks.iter().map(|p| p.2).collect();
        let rows = RowNumbers { segments: segs, read: 0 };
        let got: Vec<u64> = (0..17).map(|k| rows.number(k)).collect();
        assert_eq!((got[0], got[4], got[5], got[15], got[16]), (16, 20, 21, 31, 32));
    }
}
