//! Sparse rows: sorted (column, value) pairs; zero entries are dropped so that count tables (LDA
//! word-topic rows) stay small as topics die out. Also the delta type of sparse tables.

use super::element::{put_packed, read_array, Element, ReadExt};
use super::{ColumnAdd, ColumnGet, Row, RowUpdate};
use crate::error::{PsError, Result};
use bytes::{BufMut, BytesMut};

/// A sparse row: strictly increasing column indices and their non-zero values.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct SparseRow<T> {
    cols: Vec<u32>,
    vals: Vec<T>,
}

impl<T: Element> SparseRow<T> {
    pub fn new() -> Self {
        SparseRow { cols: Vec::new(), vals: Vec::new() }
    }
    /// Number of non-zero entries.
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }
    /// Iterates `(column, value)` in column order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, T)> + '_ {
        self.cols.iter().copied().zip(self.vals.iter().copied())
    }
    fn merge_from(&mut self, other: &Self) {
        if other.cols.is_empty() {
            return;
        }
        // Small deltas into large rows: point updates; otherwise a linear merge.
        if other.cols.len() * 8 < self.cols.len() {
            for (c, v) in other.iter() {
                self.add(c, v);
            }
            return;
        }
        let mut cols = Vec::with_capacity(self.cols.len() + other.cols.len());
        let mut vals = Vec::with_capacity(cols.capacity());
        let (mut i, mut j) = (0, 0);
        while i < self.cols.len() || j < other.cols.len() {
            let take_self = j >= other.cols.len() || (i < self.cols.len() && self.cols[i] < other.cols[j]);
            let take_other = i >= self.cols.len() || (j < other.cols.len() && other.cols[j] < self.cols[i]);
            let (c, v) = if take_self {
                i += 1;
                (self.cols[i - 1], self.vals[i - 1])
            } else if take_other {
                j += 1;
                (other.cols[j - 1], other.vals[j - 1])
            } else {
                let v = self.vals[i].add(other.vals[j]);
                i += 1;
                j += 1;
                (self.cols[i - 1], v)
            };
            if !v.is_zero() {
                cols.push(c);
                vals.push(v);
            }
        }
        self.cols = cols;
        self.vals = vals;
    }
    fn encode_into(&self, buf: &mut BytesMut) {
        buf.reserve(4 + self.cols.len() * (4 + T::SIZE));
        buf.put_u32_le(self.cols.len() as u32);
        put_packed(buf, &self.cols, u32::to_le_bytes);
        T::put_all(&self.vals, buf);
    }
    fn decode_from(buf: &mut &[u8], columns: usize) -> Result<Self> {
        let n = buf.take_u32()? as usize;
        let raw = buf.take_bytes(n.checked_mul(4).ok_or_else(|| PsError::codec("sparse length overflow"))?)?;
        let cols: Vec<u32> = raw.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        if cols.windows(2).any(|w| w[0] >= w[1]) {
            return Err(PsError::codec("sparse row columns are not strictly increasing"));
        }
        if columns > 0 && cols.last().is_some_and(|&c| c as usize >= columns) {
            return Err(PsError::codec(format!("sparse row column out of range (table has {columns})")));
        }
        let mut vals = Vec::with_capacity(n);
        read_array(buf, n, &mut vals)?;
        Ok(SparseRow { cols, vals })
    }
}

impl<T: Element> Row for SparseRow<T> {
    type Update = SparseRow<T>;
    fn type_name() -> String {
        format!("sparse_{}", T::NAME)
    }
    fn zero(_columns: usize) -> Self {
        Self::new()
    }
    fn apply(&mut self, u: &Self) {
        self.merge_from(u)
    }
    fn encode(&self, buf: &mut BytesMut) {
        self.encode_into(buf)
    }
    fn decode(buf: &mut &[u8], columns: usize) -> Result<Self> {
        Self::decode_from(buf, columns)
    }
    fn write_tsv(&self, out: &mut String) {
        use std::fmt::Write;
        for (i, (c, v)) in self.iter().enumerate() {
            let _ = write!(out, "{}{c}:{v}", if i > 0 { "\t" } else { "" });
        }
    }
    const DIFFERENCE: bool = true;
    /// A merge of the two sorted column lists; zero differences are dropped.
    fn significance(&self, delta: &Self) -> f64 {
        // Sparse rows are mostly counts (LDA's word-topic rows): the change relative to the
        // row's total mass. Per column, every new topic of a word would count as infinite.
        let mass = |r: &Self| r.vals.iter().map(|x| x.to_f64().abs()).sum::<f64>();
        super::relative_change(mass(delta), mass(self))
    }
    fn difference(&self, base: &Self) -> Option<Self> {
        let mut d = SparseRow::new();
        let (mut i, mut j) = (0, 0);
        loop {
            let (c, v) = match (self.cols.get(i), base.cols.get(j)) {
                (None, None) => break,
                (Some(&a), Some(&b)) if a == b => {
                    (i, j) = (i + 1, j + 1);
                    (a, self.vals[i - 1].sub(base.vals[j - 1]))
                }
                (Some(&a), Some(&b)) if a < b => {
                    i += 1;
                    (a, self.vals[i - 1])
                }
                (Some(&a), None) => {
                    i += 1;
                    (a, self.vals[i - 1])
                }
                (_, Some(&b)) => {
                    j += 1;
                    (b, T::default().sub(base.vals[j - 1]))
                }
            };
            if !v.is_zero() {
                d.cols.push(c);
                d.vals.push(v);
            }
        }
        Some(d)
    }
    fn copy_from(&mut self, other: &Self) {
        self.cols.clear();
        self.cols.extend_from_slice(&other.cols);
        self.vals.clear();
        self.vals.extend_from_slice(&other.vals);
    }
}

impl<T: Element> RowUpdate for SparseRow<T> {
    fn zero(_columns: usize) -> Self {
        Self::new()
    }
    fn merge(&mut self, other: &Self) {
        self.merge_from(other)
    }
    fn encode(&self, buf: &mut BytesMut) {
        self.encode_into(buf)
    }
    fn decode(buf: &mut &[u8], columns: usize) -> Result<Self> {
        Self::decode_from(buf, columns)
    }
}

impl<T: Element> ColumnAdd<T> for SparseRow<T> {
    fn add(&mut self, col: u32, value: T) {
        match self.cols.binary_search(&col) {
            Ok(i) => {
                self.vals[i] = self.vals[i].add(value);
                if self.vals[i].is_zero() {
                    self.cols.remove(i);
                    self.vals.remove(i);
                }
            }
            Err(i) => {
                if !value.is_zero() {
                    self.cols.insert(i, col);
                    self.vals.insert(i, value);
                }
            }
        }
    }
}

impl<T: Element> ColumnGet<T> for SparseRow<T> {
    fn col(&self, col: u32) -> T {
        match self.cols.binary_search(&col) {
            Ok(i) => self.vals[i],
            Err(_) => T::default(),
        }
    }
}
