//! Tables as inputs: CSV/TSV files and Parquet files (or a Spark-style directory of part files),
//! read by column name. An app names the columns it needs and gets each row's cells in that
//! order; other columns are ignored. Rows are shared among workers like text lines (byte ranges
//! of CSV, row ranges of Parquet), so any number of workers reads every row exactly once.
//!
//! Columns are named, never guessed: a name is looked up in the file's header (CSV, whose first
//! line must then be a header, as Spark writes one per part file) or its schema (Parquet), and a
//! missing one is an error naming the columns that exist. In a CSV without a header a column is
//! given by its 0-based number. A row with an empty (CSV) or null (Parquet) cell in a selected
//! column is skipped and counted, never trained on.

use super::split::line_text;
use super::{on_bad, plan_splits, BadRecords, Decoded, LineReader, ReadStats};
use crate::error::{PsError, Result};
use crate::storage::{storage_for, Storage};

/// How an input is laid out (`--input-format`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum InputFormat {
    /// Parquet when the first file is Parquet (by its magic bytes), a table of CSV/TSV when
    /// columns are named, otherwise the app's text format.
    #[default]
    Auto,
    /// The app's own text format (ratings lines, UCI bag of words, an edge list).
    Text,
    /// Comma- or tab-separated columns.
    Csv,
    Parquet,
}

/// The most columns one read selects (an app's cells stay on the stack).
pub const MAX_COLS: usize = 8;

/// The four bytes a Parquet file starts and ends with.
pub const PARQUET_MAGIC: &[u8; 4] = b"PAR1";

/// A column an app reads: the flag that names it (for messages) and the name or number given.
#[derive(Clone, Copy, Debug)]
pub struct Column<'a> {
    pub flag: &'a str,
    pub name: &'a str,
}

/// One cell of a selected column. CSV cells are text (a CSV has no types); Parquet cells carry
/// the column's type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell<'a> {
    Int(i64),
    Float(f64),
    Str(&'a str),
}

impl Cell<'_> {
    /// The cell as a finite number (`what` names it in the message).
    #[inline]
    pub fn to_f32(&self, what: &str) -> std::result::Result<f32, String> {
        match *self {
            Cell::Int(i) => Ok(i as f32),
            Cell::Float(f) if f.is_finite() && (f as f32).is_finite() => Ok(f as f32),
            _ => self.parse_f32(what),
        }
    }

    /// Text cells, and the messages: kept out of line, so the common cases above inline into
    /// the readers' loops (a call per cell was a fifth of reading a Parquet table).
    #[cold]
    fn parse_f32(&self, what: &str) -> std::result::Result<f32, String> {
        let v = match *self {
            Cell::Int(i) => i as f32,
            Cell::Float(f) => f as f32,
            Cell::Str(s) => s.trim().parse::<f32>().map_err(|_| format!("{what} '{s}' is not a number"))?,
        };
        if v.is_finite() {
            Ok(v)
        } else {
            Err(format!("{what} {v} is not a finite number"))
        }
    }

    /// The cell as a dense id in `0..2^32` (`what` names it in the message).
    #[inline]
    pub fn to_u32(&self, what: &str) -> std::result::Result<u32, String> {
        match *self {
            Cell::Int(i) if (0..=u32::MAX as i64).contains(&i) => Ok(i as u32),
            // Plain digits (the common id in text) without the general parser.
            Cell::Str(s) => match super::digits(s.as_bytes()) {
                Some((v, [])) => Ok(v),
                _ => self.parse_u32(what),
            },
            _ => self.parse_u32(what),
        }
    }

    #[cold]
    fn parse_u32(&self, what: &str) -> std::result::Result<u32, String> {
        let v = match *self {
            Cell::Int(i) => i,
            Cell::Str(s) => s.trim().parse::<i64>().map_err(|_| format!("{what} '{s}' is not an integer id"))?,
            Cell::Float(f) => return Err(format!("{what} {f} is a floating-point number, not an id")),
        };
        u32::try_from(v).map_err(|_| format!("{what} {v} is outside 0..4294967295"))
    }
}

/// What a table read hands its rows to. A closure taking the cells is one.
pub trait RowSink {
    /// About `rows` rows follow (a hint, for sizing what they are parsed into).
    fn expect(&mut self, _rows: u64) {}
    /// One row's cells, in the order of the columns asked for; an error makes it a bad record.
    fn row(&mut self, cells: &[Cell]) -> std::result::Result<(), String>;
    /// A fast path for a whole CSV line (`sep` between fields, the columns asked for at
    /// positions `index`): true if the sink took the row from it, false to have the line split
    /// into cells and handed to [`RowSink::row`].
    fn line(&mut self, _line: &[u8], _sep: u8, _index: &[usize]) -> bool {
        false
    }
    /// A fast path for a whole batch of a columnar table without nulls (`columns`: one array
    /// per column asked for, equally long): true if the sink took every row, false to have the
    /// rows handed one by one to [`RowSink::row`] (it must then have taken none).
    fn columns(&mut self, _columns: &[&dyn arrow_array::Array]) -> bool {
        false
    }
}

impl<F: FnMut(&[Cell]) -> std::result::Result<(), String>> RowSink for F {
    fn row(&mut self, cells: &[Cell]) -> std::result::Result<(), String> {
        self(cells)
    }
}

/// An integer column's values as ids, if every one is in 0..2^32 (as `Cell::to_u32` takes them):
/// for [`RowSink::columns`].
pub fn column_ids(a: &dyn arrow_array::Array) -> Option<Vec<u32>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
    use arrow_schema::DataType as D;
    fn fit<T: Copy + TryInto<u32>>(v: &[T]) -> Option<Vec<u32>> {
        v.iter().map(|&x| x.try_into().ok()).collect()
    }
    match a.data_type() {
        D::Int32 => fit(a.as_primitive::<Int32Type>().values()),
        D::Int64 => fit(a.as_primitive::<Int64Type>().values()),
        D::UInt32 => Some(a.as_primitive::<UInt32Type>().values().to_vec()),
        D::UInt64 => fit(a.as_primitive::<UInt64Type>().values()),
        _ => None,
    }
}

/// A numeric column's values as f32, if every one is finite (as `Cell::to_f32` takes them): for
/// [`RowSink::columns`].
pub fn column_values(a: &dyn arrow_array::Array) -> Option<Vec<f32>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
    use arrow_schema::DataType as D;
    let v: Vec<f32> = match a.data_type() {
        D::Float32 => a.as_primitive::<Float32Type>().values().to_vec(),
        D::Float64 => a.as_primitive::<Float64Type>().values().iter().map(|&x| x as f32).collect(),
        D::Int32 => a.as_primitive::<Int32Type>().values().iter().map(|&x| x as f32).collect(),
        D::Int64 => a.as_primitive::<Int64Type>().values().iter().map(|&x| x as f32).collect(),
        _ => return None,
    };
    v.iter().all(|x| x.is_finite()).then_some(v)
}

/// True if `path` starts with Parquet's magic bytes.
pub fn is_parquet(storage: &dyn Storage, path: &str) -> Result<bool> {
    Ok(storage.read_at(path, 0, 4)?.as_slice() == PARQUET_MAGIC)
}

/// The format of the input at `url` under `format`: `Auto` becomes Parquet when its first file
/// is Parquet, CSV when the app was given column names (`named`), and text otherwise.
pub fn resolve_format(url: &str, format: InputFormat, named: bool) -> Result<InputFormat> {
    if format != InputFormat::Auto {
        return Ok(format);
    }
    let storage = storage_for(url)?;
    let files = storage.list(url)?;
    let first = files.first().map(|f| f.0.as_str());
    Ok(match first {
        Some(p) if p.ends_with(".parquet") || is_parquet(storage.as_ref(), p)? => InputFormat::Parquet,
        _ if named => InputFormat::Csv,
        _ => InputFormat::Text,
    })
}

/// Reads worker `k`'s share (of `n`) of the table at `url` (`format` Csv or Parquet), calling
/// `sink` with the cells of `cols` for each row. An `Err` from the sink is a bad record,
/// handled by `bad` with the file and line (CSV) or row (Parquet) named.
pub fn read_rows(
    url: &str,
    k: usize,
    n: usize,
    format: InputFormat,
    cols: &[Column],
    bad: BadRecords,
    sink: &mut dyn RowSink,
) -> Result<ReadStats> {
    if cols.len() > MAX_COLS {
        return Err(PsError::Config(format!("input {url}: at most {MAX_COLS} columns can be read at once")));
    }
    match format {
        InputFormat::Parquet => super::parquet::read_rows(url, k, n, cols, bad, sink),
        InputFormat::Csv => read_csv(url, k, n, cols, bad, sink),
        f => Err(PsError::Config(format!("input {url}: {f:?} is not a table format (csv or parquet)"))),
    }
}

/// Skips a row with an empty or null cell in column `col`: counted, the first few logged.
pub(crate) fn skip_null(stats: &mut ReadStats, place: &dyn Fn() -> String, col: &Column) {
    if stats.skipped < 5 {
        log::warn!("skipping a row with no value in column '{}' ({}): {}", col.name, col.flag, place());
    }
    stats.skipped += 1;
}

/// The error for a column that is not there.
pub(crate) fn missing_column(path: &str, col: &Column, have: &[String]) -> PsError {
    PsError::Config(format!(
        "input {path}: no column '{}' ({} {}); its columns are: {}",
        col.name,
        col.flag,
        col.name,
        have.join(", ")
    ))
}

/// Where each selected column is in a CSV file's lines, and whether the first line is a header.
struct CsvLayout {
    sep: u8,
    header: bool,
    index: Vec<usize>,
}

/// Columns by number (a file without a header) or all by name (the first line is the header).
fn csv_layout(st: &dyn Storage, path: &str, cols: &[Column]) -> Result<CsvLayout> {
    let head = st.read_at(path, 0, 1 << 16)?;
    if head.starts_with(PARQUET_MAGIC) {
        return Err(PsError::Config(format!("input {path} is a Parquet file, not CSV: use --input-format parquet")));
    }
    let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    let first = line_text(first.strip_suffix(b"\r").unwrap_or(first), path, 0)?;
    let sep = if first.contains('\t') { b'\t' } else { b',' };
    let numbers: Vec<Option<usize>> = cols.iter().map(|c| c.name.parse::<usize>().ok()).collect();
    if numbers.iter().all(Option::is_some) {
        let index: Vec<usize> = numbers.into_iter().flatten().collect();
        return Ok(CsvLayout { sep, header: false, index });
    }
    if let Some(c) = cols.iter().zip(&numbers).find(|(_, n)| n.is_some()).map(|x| x.0) {
        return Err(PsError::Config(format!(
            "input {path}: {} {} is a column number but other columns are named: name all of them (the \
             file has a header line) or number all of them (it has none)",
            c.flag, c.name
        )));
    }
    let names: Vec<String> = csv_fields(first.as_bytes(), sep).map(|f| unquote(f).into_owned()).collect();
    let index = cols
        .iter()
        .map(|c| names.iter().position(|h| h.trim() == c.name).ok_or_else(|| missing_column(path, c, &names)))
        .collect::<Result<_>>()?;
    Ok(CsvLayout { sep, header: true, index })
}

/// The fields of a CSV line, split at `sep` outside double quotes (quotes kept; see [`unquote`]).
/// (A vectorised search for `sep` in lines without quotes was slower: the fields are short.)
fn csv_fields(line: &[u8], sep: u8) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(line);
    std::iter::from_fn(move || {
        let s = rest?;
        let mut quoted = false;
        for (i, &b) in s.iter().enumerate() {
            if b == b'"' {
                quoted = !quoted;
            } else if b == sep && !quoted {
                rest = Some(&s[i + 1..]);
                return Some(&s[..i]);
            }
        }
        rest = None;
        Some(s)
    })
}

/// A field without surrounding blanks and quotes, with doubled quotes made single (RFC 4180).
fn unquote(f: &[u8]) -> std::borrow::Cow<'_, str> {
    match f.trim_ascii() {
        [b'"', inner @ .., b'"'] => {
            let s = String::from_utf8_lossy(inner);
            if s.contains("\"\"") {
                s.replace("\"\"", "\"").into()
            } else {
                s
            }
        }
        t => String::from_utf8_lossy(t),
    }
}

fn read_csv(
    url: &str,
    k: usize,
    n: usize,
    cols: &[Column],
    bad: BadRecords,
    sink: &mut dyn RowSink,
) -> Result<ReadStats> {
    let storage = storage_for(url)?;
    let st: &dyn Storage = &Decoded(storage.as_ref());
    let mut stats = ReadStats::default();
    let splits = plan_splits(&st.list(url)?, k, n);
    for (i, split) in splits.iter().enumerate() {
        let layout = csv_layout(st, &split.path, cols)?;
        let last = layout.index.iter().copied().max().unwrap_or(0);
        let mut r = LineReader::new(st, split)?;
        if i == 0 {
            // Sized from the first MiB's lines per byte, as the text readers do.
            let bytes: u64 = splits.iter().filter(|s| s.end != u64::MAX).map(|s| s.end - s.start).sum();
            if let Some(d) = r.line_density()? {
                sink.expect((bytes as f64 * d * 1.02) as u64 + 1024);
            }
        }
        while let Some((line, at)) = r.next_bytes()? {
            if (layout.header && at == 0) || line.trim_ascii().is_empty() {
                continue;
            }
            if sink.line(line, layout.sep, &layout.index) {
                stats.records += 1;
                continue;
            }
            // The selected fields, in the order of `cols`, without collecting the line's fields.
            let (mut picked, mut found, mut seen) = ([&[][..]; MAX_COLS], 0u32, 0);
            for (i, f) in csv_fields(line, layout.sep).take(last + 1).enumerate() {
                seen = i + 1;
                for (c, _) in layout.index.iter().enumerate().filter(|(_, &want)| want == i) {
                    (picked[c], found) = (f, found | 1 << c);
                }
            }
            if let Some(c) = (0..cols.len()).find(|c| found & (1 << c) == 0) {
                let (col, i) = (&cols[c], layout.index[c]);
                let why = format!("no field {i} ({} {}) in a line of {seen} fields", col.flag, col.name);
                on_bad(bad, &mut stats, st, &split.path, at, &why)?;
                continue;
            }
            let text: [std::borrow::Cow<str>; MAX_COLS] =
                std::array::from_fn(|c| if c < cols.len() { unquote(picked[c]) } else { "".into() });
            if let Some(c) = (0..cols.len()).find(|&c| text[c].is_empty()) {
                let place = || format!("{}:{}", split.path, st.line_number(&split.path, at).unwrap_or(0));
                skip_null(&mut stats, &place, &cols[c]);
                continue;
            }
            let cells: [Cell; MAX_COLS] = std::array::from_fn(|c| Cell::Str(&text[c]));
            match sink.row(&cells[..cols.len()]) {
                Ok(()) => stats.records += 1,
                Err(why) => on_bad(bad, &mut stats, st, &split.path, at, &why)?,
            }
        }
        stats.bytes += split.bytes_read(&r);
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_respect_quotes() {
        let f: Vec<_> = csv_fields(br#"a,"b,c",,"say ""hi""""#, b',').map(unquote).collect();
        assert_eq!(f, vec!["a", "b,c", "", r#"say "hi""#]);
        let f: Vec<_> = csv_fields(b"1\t2\t3.5", b'\t').map(unquote).collect();
        assert_eq!(f, vec!["1", "2", "3.5"]);
    }

    #[test]
    fn cells_convert_or_say_why() {
        assert_eq!(Cell::Str(" 42 ").to_u32("user id"), Ok(42));
        assert_eq!(Cell::Int(7).to_u32("item id"), Ok(7));
        assert!(Cell::Int(-1).to_u32("item id").unwrap_err().contains("item id -1"));
        assert!(Cell::Int(1 << 40).to_u32("user id").unwrap_err().contains("outside"));
        assert!(Cell::Str("u17").to_u32("user id").unwrap_err().contains("'u17'"));
        assert_eq!(Cell::Str("3.5").to_f32("rating"), Ok(3.5));
        assert!(Cell::Float(f64::NAN).to_f32("rating").is_err());
        assert!(Cell::Str("x").to_f32("rating").unwrap_err().contains("rating 'x'"));
    }
}
