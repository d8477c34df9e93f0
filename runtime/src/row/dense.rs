//! Dense rows: a fixed-width packed array. Also the delta type of dense tables.

use super::element::{read_array, Element, ReadExt};
use super::{ColumnAdd, ColumnGet, Row, RowUpdate};
use crate::error::{PsError, Result};
use bytes::{BufMut, BytesMut};

/// A dense row of `columns` values of `T`. Dereferences to `[T]`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct DenseRow<T>(pub Vec<T>);

impl<T> std::ops::Deref for DenseRow<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}
impl<T> std::ops::DerefMut for DenseRow<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

fn encode_dense<T: Element>(v: &[T], buf: &mut BytesMut) {
    buf.reserve(4 + v.len() * T::SIZE);
    buf.put_u32_le(v.len() as u32);
    T::put_all(v, buf);
}

/// Decodes into `out`, reusing its allocation.
fn decode_dense<T: Element>(buf: &mut &[u8], columns: usize, out: &mut Vec<T>) -> Result<()> {
    let n = buf.take_u32()? as usize;
    if n != columns {
        return Err(PsError::codec(format!("dense row has {n} columns, table has {columns}")));
    }
    read_array(buf, n, out)
}

impl<T: Element> Row for DenseRow<T> {
    type Update = DenseRow<T>;
    fn heap_bytes(&self) -> usize {
        self.0.capacity() * std::mem::size_of::<T>()
    }
    fn type_name() -> String {
        format!("dense_{}", T::NAME)
    }
    fn zero(columns: usize) -> Self {
        DenseRow(vec![T::default(); columns])
    }
    #[inline]
    fn apply(&mut self, u: &Self) {
        let n = self.0.len().min(u.0.len());
        let (a, b) = (&mut self.0[..n], &u.0[..n]);
        for i in 0..n {
            a[i] = a[i].add(b[i]);
        }
    }
    fn encode(&self, buf: &mut BytesMut) {
        encode_dense(&self.0, buf)
    }
    fn decode(buf: &mut &[u8], columns: usize) -> Result<Self> {
        let mut v = Vec::new();
        decode_dense(buf, columns, &mut v)?;
        Ok(DenseRow(v))
    }
    fn decode_into(&mut self, buf: &mut &[u8], columns: usize) -> Result<()> {
        decode_dense(buf, columns, &mut self.0)
    }
    fn write_tsv(&self, out: &mut String) {
        use std::fmt::Write;
        for (i, v) in self.0.iter().enumerate() {
            let _ = write!(out, "{}{v}", if i > 0 { "\t" } else { "" });
        }
    }
    const DIFFERENCE: bool = true;
    fn difference(&self, base: &Self) -> Option<Self> {
        // Both have the table's width: the base is a copy of the row.
        Some(DenseRow(self.0.iter().zip(&base.0).map(|(a, b)| a.sub(*b)).collect()))
    }
    fn copy_from(&mut self, other: &Self) {
        self.0.clear();
        self.0.extend_from_slice(&other.0);
    }
    fn significance(&self, delta: &Self) -> f64 {
        // A dense row is used as a vector (a factor, a weight block): its relative change in
        // Euclidean norm, Gaia's "parameters used together" significance (§4.3). Per column,
        // any entry near 0 made nearly every update look significant.
        let norm = |r: &[T]| r.iter().map(|x| x.to_f64() * x.to_f64()).sum::<f64>().sqrt();
        super::relative_change(norm(&delta.0), norm(&self.0))
    }
    fn randomize(&mut self, seed: u64, low: f64, high: f64) {
        for (i, x) in self.0.iter_mut().enumerate() {
            let u = (crate::hash::mix64(seed ^ (i as u64).wrapping_mul(0x9e3779b97f4a7c15)) >> 11) as f64
                / (1u64 << 53) as f64;
            *x = T::from_f64(low + (high - low) * u);
        }
    }
}

impl<T: Element> RowUpdate for DenseRow<T> {
    fn zero(columns: usize) -> Self {
        <Self as Row>::zero(columns)
    }
    #[inline]
    fn merge(&mut self, other: &Self) {
        self.apply(other)
    }
    fn encode(&self, buf: &mut BytesMut) {
        encode_dense(&self.0, buf)
    }
    fn decode(buf: &mut &[u8], columns: usize) -> Result<Self> {
        let mut v = Vec::new();
        decode_dense(buf, columns, &mut v)?;
        Ok(DenseRow(v))
    }
    fn decode_into(&mut self, buf: &mut &[u8], columns: usize) -> Result<()> {
        decode_dense(buf, columns, &mut self.0)
    }
}

impl<T: Element> ColumnAdd<T> for DenseRow<T> {
    /// Adds `value` at `col`; out-of-range columns are ignored (checked by the table handle).
    #[inline]
    fn add(&mut self, col: u32, value: T) {
        if let Some(x) = self.0.get_mut(col as usize) {
            *x = x.add(value);
        }
    }
}

impl<T: Element> ColumnGet<T> for DenseRow<T> {
    #[inline]
    fn col(&self, col: u32) -> T {
        self.0.get(col as usize).copied().unwrap_or_default()
    }
}
