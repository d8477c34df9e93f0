//! Model rows written as output: `(id, fixed-width row)` records, as text (`id<TAB>v1<TAB>...`)
//! or as NumPy `.npy` files (`--output-format binary`). Numbers are formatted with `zmij`/`itoa`
//! (shortest round-trip text, several times faster than `Display`; zmij writes the same strings
//! as ryu, 1.3x faster on factor values here). Text output is still bound by formatting (about
//! 65 ns per f32 on the test machine): binary output is the fast path.
//!
//! With `--output-format parquet` a part is `part-NNNNN.snappy.parquet` (see `rows_parquet`).
//!
//! Binary layout of a part `part-NNNNN` of a dataset: `part-NNNNN.npy` holds the values, a
//! little-endian C-order array of shape `(n, width)` (or `(n,)` when `width` is 1), and
//! `part-NNNNN.ids.npy` the `n` row ids (`<u8`), in the same order. Both are `.npy` version 1.0
//! files, so `numpy.load(path, mmap_mode="r")` maps them without copying.

use super::options::OutputFormat;
use super::output::Output;
use super::rows_parquet::IdColumn;
use ps_runtime::input::Key;
use ps_runtime::Result;
use std::borrow::Cow;

/// A number that can be written in both formats.
pub trait OutValue: bytemuck::Pod {
    /// NumPy type string (`<f4`, `<i8`, ...).
    const DESCR: &'static str;
    /// The Arrow type of a Parquet column of these values.
    type Arrow: arrow_array::ArrowPrimitiveType<Native = Self>;
    /// Appends the value's shortest decimal text.
    fn text(self, out: &mut TextOut<'_>) -> std::io::Result<()>;
    /// Writes the little-endian bytes into `out` (exactly `size_of::<Self>()` long).
    fn le(self, out: &mut [u8]);
}

macro_rules! out_value {
    ($t:ty, $descr:literal, $fmt:ident, $arrow:ty) => {
        impl OutValue for $t {
            const DESCR: &'static str = $descr;
            type Arrow = $arrow;
            #[inline]
            fn text(self, out: &mut TextOut<'_>) -> std::io::Result<()> {
                out.put($fmt::Buffer::new().format(self).as_bytes())
            }
            #[inline]
            fn le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
        }
    };
}

/// Text on its way to a file: a buffer filled by copies of fixed sizes, which compile to a few
/// loads and stores, and written out every `CHUNK` bytes. Appending each value to a `Vec` with
/// `extend_from_slice` called `memmove` for every one: 6% of a one-pass MF job's CPU with its
/// factors written as text (48M values).
pub struct TextOut<'a> {
    buf: Vec<u8>,
    at: usize,
    f: &'a mut dyn std::io::Write,
}

/// Room after `CHUNK` for one more short piece (a number is at most 24 bytes).
const ROOM: usize = 32;

impl<'a> TextOut<'a> {
    fn new(f: &'a mut dyn std::io::Write) -> Self {
        TextOut { buf: vec![0; CHUNK + ROOM], at: 0, f }
    }

    /// Appends `s`: a number, a separator or an id.
    #[inline]
    pub fn put(&mut self, s: &[u8]) -> std::io::Result<()> {
        if self.at >= CHUNK {
            self.flush()?;
        }
        let n = s.len();
        if !(4..=16).contains(&n) {
            return self.put_other(s);
        }
        let d = &mut self.buf[self.at..self.at + 16];
        // Two copies that overlap where `n` is less than twice their size.
        if n >= 8 {
            d[..8].copy_from_slice(&s[..8]);
            d[n - 8..n].copy_from_slice(&s[n - 8..]);
        } else {
            d[..4].copy_from_slice(&s[..4]);
            d[n - 4..n].copy_from_slice(&s[n - 4..]);
        }
        self.at += n;
        Ok(())
    }

    /// Appends one byte.
    #[inline]
    pub fn byte(&mut self, b: u8) -> std::io::Result<()> {
        if self.at >= CHUNK {
            self.flush()?;
        }
        self.buf[self.at] = b;
        self.at += 1;
        Ok(())
    }

    /// Pieces of under 4 or over 16 bytes (short numbers, long ids): copied as they are, or
    /// written straight through when longer than the buffer.
    fn put_other(&mut self, s: &[u8]) -> std::io::Result<()> {
        if self.at + s.len() > self.buf.len() {
            self.flush()?;
            if s.len() > self.buf.len() {
                return self.f.write_all(s);
            }
        }
        self.buf[self.at..self.at + s.len()].copy_from_slice(s);
        self.at += s.len();
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.f.write_all(&self.buf[..self.at])?;
        self.at = 0;
        Ok(())
    }
}

out_value!(f32, "<f4", zmij, arrow_array::types::Float32Type);
out_value!(f64, "<f8", zmij, arrow_array::types::Float64Type);
out_value!(i32, "<i4", itoa, arrow_array::types::Int32Type);
out_value!(i64, "<i8", itoa, arrow_array::types::Int64Type);
out_value!(u64, "<u8", itoa, arrow_array::types::UInt64Type);

/// Formatted output is handed to the file in pieces of about this size: a whole part held as
/// text (hundreds of MB for factor matrices) cost more in reallocation copies and page faults
/// than the formatting itself.
const CHUNK: usize = 1 << 22;

/// One part file of a dataset of rows: the rows are kept as numbers and formatted while the part
/// is written, a few MB at a time. An app that already holds its rows contiguously lends them
/// ([`RowsPart::lent`]) instead of copying them in.
pub struct RowsPart<'a, V: Clone> {
    format: OutputFormat,
    width: usize,
    ids: Cow<'a, [u64]>,
    vals: Cow<'a, [V]>,
    /// Parquet's column names: the ids and the values.
    names: (&'static str, &'static str),
    /// The input's own ids of the rows, when a dictionary numbered them.
    keys: Option<RowKeys>,
    /// Parquet: ids without keys as int32 (`narrow_ids`).
    narrow: bool,
}

/// The input's own ids of some rows (`apps::dictionary`), and whether every id of the job is
/// an integer (then written as int64; otherwise as strings).
pub struct RowKeys {
    pub keys: Vec<Key>,
    pub ints_only: bool,
}

impl<'a, V: OutValue> RowsPart<'a, V> {
    pub fn new(format: OutputFormat, width: usize) -> Self {
        let (ids, vals) = (Cow::Owned(Vec::new()), Cow::Owned(Vec::new()));
        RowsPart { format, width: width.max(1), ids, vals, names: ("id", "features"), keys: None, narrow: false }
    }

    /// Names Parquet's columns (default `id` and `features`).
    pub fn named(mut self, ids: &'static str, values: &'static str) -> Self {
        self.names = (ids, values);
        self
    }

    /// A part of the rows `vals` (`ids.len()` rows of `width` values, row-major) with ids `ids`,
    /// written from where they are. Copying 100 MB of factors into a part cost more than
    /// writing them (page faults of the growing vector).
    pub fn lent(format: OutputFormat, width: usize, ids: &'a [u64], vals: &'a [V]) -> Self {
        let width = width.max(1);
        assert_eq!(ids.len() * width, vals.len(), "RowsPart::lent: {} ids of width {width}", ids.len());
        let (ids, vals) = (Cow::Borrowed(ids), Cow::Borrowed(vals));
        RowsPart { format, width, ids, vals, names: ("id", "features"), keys: None, narrow: false }
    }

    /// Writes the rows under `keys` (one per row, in order) instead of their ids.
    pub fn with_keys(mut self, keys: Option<RowKeys>) -> Self {
        if let Some(k) = &keys {
            assert_eq!(k.keys.len(), self.ids.len(), "RowsPart::with_keys: a key per row");
        }
        self.keys = keys;
        self
    }

    /// Parquet: writes ids without keys as int32, as Spark does for ALS's ids; the caller knows
    /// that every id of the job fits (every part of a dataset must have the same type).
    pub fn narrow_ids(mut self, narrow: bool) -> Self {
        self.narrow = narrow;
        self
    }

    /// Adds row `id`; `row` must have the part's width.
    pub fn push(&mut self, id: u64, row: &[V]) {
        debug_assert_eq!(row.len(), self.width);
        self.ids.to_mut().push(id);
        self.vals.to_mut().extend_from_slice(row);
    }

    /// Writes the part as `name/part-NNNNN` (text), its two `.npy` files or
    /// `part-NNNNN.snappy.parquet`, for task `task`.
    pub fn write(self, out: &Output, task: usize, name: &str, part: usize) -> Result<()> {
        let file = format!("part-{part:05}");
        match self.format {
            OutputFormat::Text => out.write_file(task, name, &file, |f| self.write_text(f)),
            OutputFormat::Parquet => out.write_file(task, name, &format!("{file}.snappy.parquet"), |f| {
                let ids = IdColumn { ids: &self.ids, keys: self.keys.as_ref(), narrow: self.narrow };
                super::rows_parquet::write(ids, &self.vals, self.width, self.names, f)
            }),
            OutputFormat::Binary => {
                let rows = self.ids.len();
                let shape: &[usize] = if self.width == 1 { &[rows] } else { &[rows, self.width] };
                out.write_file(task, name, &format!("{file}.npy"), |f| {
                    f.write_all(&npy_header(V::DESCR, shape))?;
                    write_le(&self.vals, f)
                })?;
                match &self.keys {
                    None => out.write_file(task, name, &format!("{file}.ids.npy"), |f| {
                        f.write_all(&npy_header(u64::DESCR, &[rows]))?;
                        write_le(&self.ids, f)
                    }),
                    // The input's integer ids as int64; string ids as text, a line each.
                    Some(k) if k.ints_only => out.write_file(task, name, &format!("{file}.ids.npy"), |f| {
                        f.write_all(&npy_header(i64::DESCR, &[rows]))?;
                        let ints: Vec<i64> = k.keys.iter().map(|k| if let Key::Int(i) = k { *i } else { 0 }).collect();
                        write_le(&ints, f)
                    }),
                    Some(k) => out.write_file(task, name, &format!("{file}.ids.txt"), |f| {
                        k.keys.iter().try_for_each(|k| writeln!(f, "{k}"))
                    }),
                }
            }
        }
    }

    /// `id<TAB>v1<TAB>...<TAB>vK` lines.
    fn write_text(&self, f: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut out = TextOut::new(f);
        for (i, (&id, row)) in self.ids.iter().zip(self.vals.chunks_exact(self.width)).enumerate() {
            match &self.keys {
                Some(k) => out.put(k.keys[i].to_string().as_bytes())?,
                None => id.text(&mut out)?,
            }
            for &v in row {
                out.byte(b'\t')?;
                v.text(&mut out)?;
            }
            out.byte(b'\n')?;
        }
        out.flush()
    }
}

/// Values as packed little-endian bytes, a chunk at a time: their own bytes on a little-endian
/// host, converted through a buffer on a big-endian one.
fn write_le<V: OutValue>(vals: &[V], f: &mut dyn std::io::Write) -> std::io::Result<()> {
    if cfg!(target_endian = "little") {
        return bytemuck::cast_slice::<V, u8>(vals).chunks(CHUNK).try_for_each(|c| f.write_all(c));
    }
    let size = std::mem::size_of::<V>();
    let mut buf = vec![0u8; CHUNK];
    for chunk in vals.chunks(CHUNK / size) {
        let bytes = &mut buf[..std::mem::size_of_val(chunk)];
        // Fixed-size stores into a preallocated buffer: compiles to a copy on little-endian hosts.
        for (b, v) in bytes.chunks_exact_mut(size).zip(chunk) {
            v.le(b);
        }
        f.write_all(bytes)?;
    }
    Ok(())
}

/// A `.npy` version 1.0 header: magic, version, header length, and a Python dict literal padded
/// with spaces to a multiple of 64 bytes (NumPy aligns the data that way) ending in a newline.
pub fn npy_header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims: String = match shape {
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let unpadded = 10 + dict.len() + 1;
    dict.extend(std::iter::repeat_n(' ', unpadded.next_multiple_of(64) - unpadded));
    dict.push('\n');
    let mut h = b"\x93NUMPY\x01\x00".to_vec();
    h.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_aligned_and_describes_the_array() {
        let h = npy_header("<f4", &[3, 100]);
        assert_eq!(h.len() % 64, 0);
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        assert_eq!(u16::from_le_bytes([h[8], h[9]]) as usize, h.len() - 10);
        let dict = std::str::from_utf8(&h[10..]).unwrap();
        assert!(dict.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 100), }"), "{dict}");
        assert!(dict.ends_with('\n'));
        assert!(std::str::from_utf8(&npy_header("<u8", &[7])[10..]).unwrap().contains("'shape': (7,)"));
    }

    #[test]
    fn a_lent_part_writes_what_a_filled_one_does() {
        let (ids, vals) = (vec![7u64, 3, 11], vec![1.5f32, -2.0, 0.25, 1e-8, 3.0, -0.0]);
        let mut filled = RowsPart::<f32>::new(OutputFormat::Text, 2);
        ids.iter().zip(vals.chunks(2)).for_each(|(&id, r)| filled.push(id, r));
        let lent = RowsPart::lent(OutputFormat::Text, 2, &ids, &vals);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        filled.write_text(&mut a).unwrap();
        lent.write_text(&mut b).unwrap();
        assert_eq!(a, b);
        let text = String::from_utf8(a).unwrap();
        let first: Vec<&str> = text.lines().map(|l| l.split('\t').next().unwrap()).collect();
        assert_eq!(first, ["7", "3", "11"]);
        // Binary values: the little-endian bytes of each value in order, across chunk boundaries.
        let many: Vec<f64> = (0..CHUNK / 4).map(|i| i as f64 * -0.5).collect();
        let mut le = Vec::new();
        write_le(&many, &mut le).unwrap();
        assert_eq!(le, many.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
    }

    /// Pieces of every length, short and longer than the buffer, come out exactly and in order.
    #[test]
    fn text_out_writes_every_piece_exactly() {
        let text: Vec<u8> = (0..CHUNK as u32 + 100).map(|i| b'a' + (i % 26) as u8).collect();
        let mut want = Vec::new();
        let mut got = Vec::new();
        let mut out = TextOut::new(&mut got);
        // Every short length many times (crossing the chunk boundary), then a piece over it.
        for k in 0..(CHUNK / 8) {
            let n = k % 41;
            out.put(&text[k % 7..k % 7 + n]).unwrap();
            out.byte(b'\t').unwrap();
            want.extend_from_slice(&text[k % 7..k % 7 + n]);
            want.push(b'\t');
        }
        out.put(&text).unwrap();
        want.extend_from_slice(&text);
        out.flush().unwrap();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "the text differs");
    }

    #[test]
    fn text_rows_round_trip_their_values() {
        let mut p = RowsPart::<f32>::new(OutputFormat::Text, 3);
        let rows = [[0.1f32, -3.25e-7, 12345.678], [f32::MIN_POSITIVE, -0.0, 7.0]];
        // Enough rows to cross several chunk boundaries.
        let n = 3 * CHUNK / 20;
        for i in 0..n {
            p.push(i as u64, &rows[i % 2]);
        }
        let mut text = Vec::new();
        p.write_text(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert_eq!(text.lines().count(), n);
        for (i, line) in text.lines().enumerate() {
            let mut f = line.split('\t');
            assert_eq!(f.next(), Some(i.to_string().as_str()));
            let back: Vec<f32> = f.map(|x| x.parse().unwrap()).collect();
            assert_eq!(back, rows[i % 2], "line {i}");
        }
    }
}
