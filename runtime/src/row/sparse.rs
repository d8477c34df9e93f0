//! Sparse rows: sorted (column, value) pairs; zero entries are dropped so that count tables (LDA
//! word-topic rows) stay small as topics die out. Also the delta type of sparse tables.

use super::element::{get_packed, put_packed, read_array, Element, ReadExt};
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
    /// Iterates the `(column, value)` pairs with `lo <= column < hi`, in column order.
    pub fn range(&self, lo: u32, hi: u32) -> impl Iterator<Item = (u32, T)> + '_ {
        let (a, b) = (self.cols.partition_point(|&c| c < lo), self.cols.partition_point(|&c| c < hi));
        self.cols[a..b].iter().copied().zip(self.vals[a..b].iter().copied())
    }
    /// Makes this row hold `pairs` (any order; values of a repeated column are summed, zeros
    /// dropped), reusing its vectors: how a caller that gathers many changes of one row builds
    /// the update without a sorted insert per change.
    pub fn assign_pairs(&mut self, pairs: &mut [(u32, T)]) {
        pairs.sort_unstable_by_key(|&(c, _)| c);
        self.cols.clear();
        self.vals.clear();
        for &(c, v) in pairs.iter() {
            match self.cols.last() {
                Some(&last) if last == c => {
                    let i = self.vals.len() - 1;
                    self.vals[i] = self.vals[i].add(v);
                }
                _ => {
                    self.cols.push(c);
                    self.vals.push(v);
                }
            }
        }
        if self.vals.iter().any(|v| v.is_zero()) {
            let (mut cols, mut vals) = (std::mem::take(&mut self.cols), std::mem::take(&mut self.vals));
            let mut w = 0;
            for r in 0..cols.len() {
                if !vals[r].is_zero() {
                    (cols[w], vals[w]) = (cols[r], vals[r]);
                    w += 1;
                }
            }
            cols.truncate(w);
            vals.truncate(w);
            (self.cols, self.vals) = (cols, vals);
        }
    }
    /// Adds `other` in place: no allocation unless the row grows past its capacity. The
    /// communication threads merge every sparse update they receive, and a fresh pair of
    /// vectors per merge (plus freeing the old pair) was a large part of their time on LDA.
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
        // One pass from the back into room for every column of both, zeros dropped as they
        // come, then the merged tail moved down to the untouched head. The write position `k`
        // never falls below `i + j` (the entries not yet read), so nothing is overwritten
        // before it is read. (A first pass counting the new columns and a last one dropping
        // zeros, as before, cost twice the time: this merge is most of a worker's and a
        // server's row work on LDA.)
        let (n, m) = (self.cols.len(), other.cols.len());
        self.cols.resize(n + m, 0);
        self.vals.resize(n + m, T::default());
        let (mut i, mut j, mut k) = (n, m, n + m);
        while j > 0 {
            let oc = other.cols[j - 1];
            if i > 0 && self.cols[i - 1] > oc {
                i -= 1;
                k -= 1;
                self.cols[k] = self.cols[i];
                self.vals[k] = self.vals[i];
                continue;
            }
            let v = if i > 0 && self.cols[i - 1] == oc {
                i -= 1;
                self.vals[i].add(other.vals[j - 1])
            } else {
                other.vals[j - 1]
            };
            j -= 1;
            if !v.is_zero() {
                k -= 1;
                self.cols[k] = oc;
                self.vals[k] = v;
            }
        }
        let len = i + (n + m - k);
        if k > i {
            self.cols.copy_within(k..n + m, i);
            self.vals.copy_within(k..n + m, i);
        }
        self.cols.truncate(len);
        self.vals.truncate(len);
    }
    fn encode_into(&self, buf: &mut BytesMut) {
        buf.reserve(4 + self.cols.len() * (4 + T::SIZE));
        buf.put_u32_le(self.cols.len() as u32);
        put_packed(buf, &self.cols, u32::to_le_bytes);
        T::put_all(&self.vals, buf);
    }
    /// Decodes into `self`, reusing its vectors. On error `self` is some valid row.
    fn decode_in_place(&mut self, buf: &mut &[u8], columns: usize) -> Result<()> {
        let n = buf.take_u32()? as usize;
        let raw = buf.take_bytes(n.checked_mul(4).ok_or_else(|| PsError::codec("sparse length overflow"))?)?;
        get_packed(raw, &mut self.cols, u32::from_le_bytes);
        let valid = if self.cols.windows(2).any(|w| w[0] >= w[1]) {
            Err(PsError::codec("sparse row columns are not strictly increasing"))
        } else if columns > 0 && self.cols.last().is_some_and(|&c| c as usize >= columns) {
            Err(PsError::codec(format!("sparse row column out of range (table has {columns})")))
        } else {
            read_array(buf, n, &mut self.vals)
        };
        if valid.is_err() {
            self.cols.clear();
            self.vals.clear();
        }
        valid
    }
    fn decode_from(buf: &mut &[u8], columns: usize) -> Result<Self> {
        let mut r = Self::new();
        r.decode_in_place(buf, columns)?;
        Ok(r)
    }
}

impl<T: Element> Row for SparseRow<T> {
    type Update = SparseRow<T>;
    fn heap_bytes(&self) -> usize {
        self.cols.capacity() * 4 + self.vals.capacity() * std::mem::size_of::<T>()
    }
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
    fn decode_into(&mut self, buf: &mut &[u8], columns: usize) -> Result<()> {
        self.decode_in_place(buf, columns)
    }
    fn write_tsv(&self, out: &mut String) {
        use std::fmt::Write;
        for (i, (c, v)) in self.iter().enumerate() {
            let _ = write!(out, "{}{c}:{v}", if i > 0 { "\t" } else { "" });
        }
    }
    /// Not by difference: a sparse row's `inc`s come as whole deltas (LDA gathers a row's
    /// changes into one), so keeping the delta costs one small merge, where a base copy and a
    /// difference cost two passes over the whole row per clock (5% of LDA's CPU at 1 x 2).
    const DIFFERENCE: bool = false;
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
    fn decode_into(&mut self, buf: &mut &[u8], columns: usize) -> Result<()> {
        self.decode_in_place(buf, columns)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assigned_pairs_are_sorted_summed_and_without_zeros() {
        let mut r = SparseRow::<i32>::new();
        r.add(99, 1);
        r.assign_pairs(&mut [(7, 2), (3, -1), (7, 1), (5, 4), (5, -4), (1, 0)]);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(3, -1), (7, 3)]);
        r.assign_pairs(&mut []);
        assert_eq!(r.nnz(), 0);
    }

    fn of(pairs: &[(u32, i32)]) -> SparseRow<i32> {
        let mut r = SparseRow::new();
        r.assign_pairs(&mut pairs.to_vec());
        r
    }

    proptest::proptest! {
        /// Merging (either path: point updates or the one-pass merge) equals adding up the
        /// columns in a map, zeros dropped, columns strictly increasing.
        #[test]
        fn merging_adds_columns_and_drops_zeros(
            a in proptest::collection::vec((0u32..64, -3i32..4), 0..80),
            b in proptest::collection::vec((0u32..64, -3i32..4), 0..80),
        ) {
            let (mut r, d) = (of(&a), of(&b));
            let mut want = std::collections::BTreeMap::new();
            for &(c, v) in a.iter().chain(&b) {
                *want.entry(c).or_insert(0) += v;
            }
            want.retain(|_, v| *v != 0);
            r.merge_from(&d);
            proptest::prop_assert_eq!(r.iter().collect::<Vec<_>>(), want.into_iter().collect::<Vec<_>>());
        }
    }
}
