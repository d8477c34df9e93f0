//! Model rows as Parquet (`--output-format parquet`), as Spark writes a table: a part is
//! `part-NNNNN.snappy.parquet` with an `id` column (int64) and the row's values, as a list
//! column (`features`, like Spark ALS's factors) or, for rows of one value, a plain column.
//! Row groups of [`GROUP_ROWS`] rows are handed to the file as they are finished, so a part is
//! never held whole in memory.

use super::rows_out::{OutValue, RowKeys};
use crate::input::Key;
use arrow_array::{ArrayRef, ArrowPrimitiveType, Int64Array, ListArray, PrimitiveArray, RecordBatch, StringArray};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use std::io::Write;
use std::sync::Arc;

/// Rows per row group: about 400 MB of rank-100 factors, Spark's usual group size.
pub const GROUP_ROWS: usize = 1 << 20;

fn io(e: impl std::error::Error + Send + Sync + 'static) -> std::io::Error {
    std::io::Error::other(e)
}

/// Writes the rows (`ids.len()` rows of `width` values, row-major) to `f` as one Parquet file
/// with columns `names.0` (the ids, or their `keys`) and `names.1` (the values).
pub fn write<V: OutValue>(
    ids: &[u64],
    keys: Option<&RowKeys>,
    vals: &[V],
    width: usize,
    names: (&str, &str),
    f: &mut dyn Write,
) -> std::io::Result<()> {
    let value = V::Arrow::DATA_TYPE;
    // Spark names a list's items `element` (the Parquet LIST layout's own name).
    let item = Arc::new(Field::new("element", value.clone(), false));
    let values_type = if width == 1 { value } else { DataType::List(item.clone()) };
    let schema =
        Arc::new(Schema::new(vec![Field::new(names.0, id_type(keys), false), Field::new(names.1, values_type, false)]));
    let batches = (0..ids.len().div_ceil(GROUP_ROWS)).map(|g| {
        let rows = g * GROUP_ROWS..((g + 1) * GROUP_ROWS).min(ids.len());
        let id = id_array(&ids[rows.clone()], keys.map(|k| (&k.keys[rows.clone()], k.ints_only)));
        batch(&schema, &item, id, &vals[rows.start * width..rows.end * width], width)
    });
    write_file(&schema, batches, f)
}

/// The id column's type: int64, or strings when some key of the job is a string.
fn id_type(keys: Option<&RowKeys>) -> DataType {
    match keys {
        Some(k) if !k.ints_only => DataType::Utf8,
        _ => DataType::Int64,
    }
}

/// The id column: the ids, or their keys (`bool`: every key of the job is an integer).
fn id_array(ids: &[u64], keys: Option<(&[Key], bool)>) -> ArrayRef {
    match keys {
        None => Arc::new(Int64Array::from_iter_values(ids.iter().map(|&i| i as i64))),
        Some((keys, true)) => {
            Arc::new(Int64Array::from_iter_values(keys.iter().map(|k| if let Key::Int(i) = k { *i } else { 0 })))
        }
        Some((keys, false)) => Arc::new(StringArray::from_iter_values(keys.iter().map(|k| k.to_string()))),
    }
}

/// Writes `batches` of `schema`, a row group each, to `f` as one snappy Parquet file, handing
/// each row group on as it is finished.
fn write_file(
    schema: &Arc<Schema>,
    batches: impl Iterator<Item = Result<RecordBatch, ArrowError>>,
    f: &mut dyn Write,
) -> std::io::Result<()> {
    let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
    let mut w = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).map_err(io)?;
    for b in batches {
        w.write(&b.map_err(io)?).map_err(io)?;
        w.flush().map_err(io)?;
        // The writer counts the bytes it wrote, not what its buffer holds: hand them on.
        f.write_all(w.inner())?;
        w.inner_mut().clear();
    }
    f.write_all(&w.into_inner().map_err(io)?)
}

/// Writes whole columns (`name`, values; equally long) as one Parquet file, in row groups of
/// [`GROUP_ROWS`] rows.
pub fn write_columns(cols: Vec<(&str, ArrayRef)>, f: &mut dyn Write) -> std::io::Result<()> {
    let fields: Vec<Field> = cols.iter().map(|(n, a)| Field::new(*n, a.data_type().clone(), false)).collect();
    let schema = Arc::new(Schema::new(fields));
    let rows = cols.first().map_or(0, |c| c.1.len());
    let batches = (0..rows.div_ceil(GROUP_ROWS)).map(|g| {
        let (at, n) = (g * GROUP_ROWS, GROUP_ROWS.min(rows - g * GROUP_ROWS));
        RecordBatch::try_new(schema.clone(), cols.iter().map(|c| c.1.slice(at, n)).collect())
    });
    write_file(&schema, batches, f)
}

/// Writes `mf --recommend`'s lists: columns `user`, `item` (int64, or the input's keys) and
/// `score` (float).
pub fn write_recs(
    (users, user_keys): (&[u64], Option<&RowKeys>),
    (items, item_keys): (&[u64], Option<&RowKeys>),
    scores: &[f32],
    f: &mut dyn Write,
) -> std::io::Result<()> {
    let ids = |v: &[u64], k: Option<&RowKeys>| id_array(v, k.map(|k| (&k.keys[..], k.ints_only)));
    let score: ArrayRef = Arc::new(arrow_array::Float32Array::from_iter_values(scores.iter().copied()));
    write_columns(vec![("user", ids(users, user_keys)), ("item", ids(items, item_keys)), ("score", score)], f)
}

fn batch<V: OutValue>(
    schema: &Arc<Schema>,
    item: &Arc<Field>,
    id: ArrayRef,
    vals: &[V],
    width: usize,
) -> Result<RecordBatch, ArrowError> {
    let values = PrimitiveArray::<V::Arrow>::from_iter_values(vals.iter().copied());
    let values: ArrayRef = if width == 1 {
        Arc::new(values)
    } else {
        let offsets = arrow_buffer::OffsetBuffer::from_lengths(std::iter::repeat_n(width, id.len()));
        Arc::new(ListArray::try_new(item.clone(), offsets, Arc::new(values), None)?)
    };
    RecordBatch::try_new(schema.clone(), vec![id, values])
}
