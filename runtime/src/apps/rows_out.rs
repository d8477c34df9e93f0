//! Model rows written as output: `(id, fixed-width row)` records, as text (`id<TAB>v1<TAB>...`)
//! or as NumPy `.npy` files (`--output-format binary`). Numbers are formatted with `ryu`/`itoa`
//! (shortest round-trip text; several times faster than `Display`), so writing factors runs at
//! storage speed rather than at formatting speed.
//!
//! Binary layout of a part `part-NNNNN` of a dataset: `part-NNNNN.npy` holds the values, a
//! little-endian C-order array of shape `(n, width)` (or `(n,)` when `width` is 1), and
//! `part-NNNNN.ids.npy` the `n` row ids (`<u8`), in the same order. Both are `.npy` version 1.0
//! files, so `numpy.load(path, mmap_mode="r")` maps them without copying.

use super::options::OutputFormat;
use super::output::Output;
use crate::error::Result;

/// A number that can be written in both formats.
pub trait OutValue: Copy {
    /// NumPy type string (`<f4`, `<i8`, ...).
    const DESCR: &'static str;
    fn text(self, buf: &mut Vec<u8>);
    fn le(self, buf: &mut Vec<u8>);
}

macro_rules! out_value {
    ($t:ty, $descr:literal, $fmt:ident) => {
        impl OutValue for $t {
            const DESCR: &'static str = $descr;
            #[inline]
            fn text(self, buf: &mut Vec<u8>) {
                buf.extend_from_slice($fmt::Buffer::new().format(self).as_bytes());
            }
            #[inline]
            fn le(self, buf: &mut Vec<u8>) {
                buf.extend_from_slice(&self.to_le_bytes());
            }
        }
    };
}
out_value!(f32, "<f4", ryu);
out_value!(f64, "<f8", ryu);
out_value!(i32, "<i4", itoa);
out_value!(i64, "<i8", itoa);
out_value!(u64, "<u8", itoa);

/// One part file of a dataset of rows, built in memory and written in one go.
pub struct RowsPart {
    format: OutputFormat,
    width: usize,
    descr: &'static str,
    rows: usize,
    ids: Vec<u8>,
    body: Vec<u8>,
}

impl RowsPart {
    pub fn new<V: OutValue>(format: OutputFormat, width: usize) -> Self {
        RowsPart { format, width, descr: V::DESCR, rows: 0, ids: Vec::new(), body: Vec::new() }
    }

    /// Adds row `id`; `row` must have the part's width.
    pub fn push<V: OutValue>(&mut self, id: u64, row: &[V]) {
        debug_assert_eq!(row.len(), self.width);
        debug_assert_eq!(V::DESCR, self.descr);
        self.rows += 1;
        match self.format {
            OutputFormat::Text => {
                id.text(&mut self.body);
                for &v in row {
                    self.body.push(b'\t');
                    v.text(&mut self.body);
                }
                self.body.push(b'\n');
            }
            OutputFormat::Binary => {
                id.le(&mut self.ids);
                row.iter().for_each(|v| v.le(&mut self.body));
            }
        }
    }

    /// Writes the part as `name/part-NNNNN` (text) or its two `.npy` files, for task `task`.
    pub fn write(self, out: &Output, task: usize, name: &str, part: usize) -> Result<()> {
        let file = format!("part-{part:05}");
        match self.format {
            OutputFormat::Text => out.write_file(task, name, &file, |f| f.write_all(&self.body)),
            OutputFormat::Binary => {
                let shape: &[usize] = if self.width == 1 { &[self.rows] } else { &[self.rows, self.width] };
                let head = npy_header(self.descr, shape);
                out.write_file(task, name, &format!("{file}.npy"), |f| {
                    f.write_all(&head)?;
                    f.write_all(&self.body)
                })?;
                let head = npy_header(u64::DESCR, &[self.rows]);
                out.write_file(task, name, &format!("{file}.ids.npy"), |f| {
                    f.write_all(&head)?;
                    f.write_all(&self.ids)
                })
            }
        }
    }
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
    fn text_rows_round_trip_their_values() {
        let mut p = RowsPart::new::<f32>(OutputFormat::Text, 3);
        let row = [0.1f32, -3.25e-7, 12345.678];
        p.push(42, &row);
        let line = std::str::from_utf8(&p.body).unwrap().trim_end();
        let mut f = line.split('\t');
        assert_eq!(f.next(), Some("42"));
        let back: Vec<f32> = f.map(|x| x.parse().unwrap()).collect();
        assert_eq!(back, row);
    }
}
