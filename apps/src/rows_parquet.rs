//! Model rows as Parquet (`--output-format parquet`), as Spark writes a table: a part is
//! `part-NNNNN.snappy.parquet` with an `id` column (int32 or int64, or the input's string keys)
//! and the row's values, as a list
//! column (`features`, like Spark ALS's factors) or, for rows of one value, a plain column.
//! Row groups of [`GROUP_ROWS`] rows are handed to the file as they are finished, so a part is
//! never held whole in memory.

use super::rows_out::{OutValue, RowKeys};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, Int32Array, Int64Array, ListArray, PrimitiveArray, RecordBatch, StringArray,
};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use ps_runtime::input::Key;
use std::io::Write;
use std::sync::Arc;

/// Rows per row group: about 400 MB of rank-100 factors, Spark's usual group size.
pub const GROUP_ROWS: usize = 1 << 20;

fn io(e: impl std::error::Error + Send + Sync + 'static) -> std::io::Error {
    std::io::Error::other(e)
}

/// An id column: the ids, or their `keys` when a dictionary numbered them; `narrow`: every id
/// of the job without keys fits an int32 (Spark's type for ALS ids), so they are written as one.
#[derive(Clone, Copy)]
pub struct IdColumn<'a> {
    pub ids: &'a [u64],
    pub keys: Option<&'a RowKeys>,
    pub narrow: bool,
}

impl IdColumn<'_> {
    /// The column's type: int32 or int64, or strings when some key of the job is a string.
    fn data_type(&self) -> DataType {
        match self.keys {
            Some(k) if !k.ints_only => DataType::Utf8,
            Some(_) => DataType::Int64,
            None if self.narrow => DataType::Int32,
            None => DataType::Int64,
        }
    }

    /// Rows `rows` of the column.
    fn array(&self, rows: std::ops::Range<usize>) -> ArrayRef {
        let ids = &self.ids[rows.clone()];
        match self.keys {
            None if self.narrow => Arc::new(Int32Array::from_iter_values(ids.iter().map(|&i| i as i32))),
            None => Arc::new(Int64Array::from_iter_values(ids.iter().map(|&i| i as i64))),
            Some(k) if k.ints_only => Arc::new(Int64Array::from_iter_values(k.keys[rows].iter().map(|k| {
                if let Key::Int(i) = k {
                    *i
                } else {
                    0
                }
            }))),
            Some(k) => Arc::new(StringArray::from_iter_values(k.keys[rows].iter().map(|k| k.to_string()))),
        }
    }
}

/// Writes the rows (`ids.len()` rows of `width` values, row-major) to `f` as one Parquet file
/// with columns `names.0` (the ids) and `names.1` (the values).
pub fn write<V: OutValue>(
    ids: IdColumn<'_>,
    vals: &[V],
    width: usize,
    names: (&str, &str),
    f: &mut dyn Write,
) -> std::io::Result<()> {
    let value = V::Arrow::DATA_TYPE;
    // Spark names a list's items `element` (the Parquet LIST layout's own name).
    let item = Arc::new(Field::new("element", value.clone(), false));
    let values_type = if width == 1 { value } else { DataType::List(item.clone()) };
    let schema = Arc::new(Schema::new(vec![
        Field::new(names.0, ids.data_type(), false),
        Field::new(names.1, values_type, false),
    ]));
    let n = ids.ids.len();
    let batches = (0..n.div_ceil(GROUP_ROWS)).map(|g| {
        let rows = g * GROUP_ROWS..((g + 1) * GROUP_ROWS).min(n);
        let id = ids.array(rows.clone());
        batch(&schema, &item, id, &vals[rows.start * width..rows.end * width], width)
    });
    write_file(&schema, batches, f)
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

/// Writes `mf --recommend`'s lists: columns `user`, `item` (as [`IdColumn`] writes them) and
/// `score` (float).
pub fn write_recs(users: IdColumn<'_>, items: IdColumn<'_>, scores: &[f32], f: &mut dyn Write) -> std::io::Result<()> {
    let score: ArrayRef = Arc::new(arrow_array::Float32Array::from_iter_values(scores.iter().copied()));
    let (u, i) = (users.array(0..users.ids.len()), items.array(0..items.ids.len()));
    write_columns(vec![("user", u), ("item", i), ("score", score)], f)
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
