//! Row types: the unit of caching, communication and snapshotting.
//!
//! A table holds rows of one type implementing [`Row`]. Updates are values of [`Row::Update`]:
//! they must form a commutative monoid under [`RowUpdate::merge`] and [`Row::apply`] must respect it
//! (`r.apply(a); r.apply(b)` equals `r.apply(a.merge(b))` in any order), because the runtime
//! coalesces and reorders updates freely between clocks.
//!
//! Built-in rows: [`DenseRow<T>`] and [`SparseRow<T>`] for `T` in i32, i64, f32, f64. A user-defined
//! row implements [`Row`] and [`RowUpdate`] and is registered by name in a `RowTypeRegistry`
//! (which lives above this layer: it builds the client's and server's tables).

mod dense;
mod element;
mod sparse;

pub use dense::DenseRow;
pub use element::Element;
pub(crate) use element::ReadExt;
pub use sparse::SparseRow;

use crate::error::Result;
use bytes::BytesMut;

/// A row of a table. `columns` is the table's configured width (dense rows use it, others may not).
pub trait Row: Clone + Send + Sync + 'static {
    /// The delta type accepted by `inc`.
    type Update: RowUpdate;
    /// The row type's registry name, e.g. `"dense_f32"`; tables are created with this name.
    fn type_name() -> String;
    /// A row with no updates applied.
    fn zero(columns: usize) -> Self;
    /// Applies a delta. Must be consistent with [`RowUpdate::merge`].
    fn apply(&mut self, update: &Self::Update);
    /// Appends the row's encoding (self-delimiting) to `buf`.
    fn encode(&self, buf: &mut BytesMut);
    /// Decodes one row written by `encode`, advancing `buf`. Must not panic on malformed input.
    fn decode(buf: &mut &[u8], columns: usize) -> Result<Self>;
    /// `decode` into `self`, reusing its allocations: the communication threads decode every
    /// row they receive. On error `self` must still be a valid row (of any value).
    fn decode_into(&mut self, buf: &mut &[u8], columns: usize) -> Result<()> {
        *self = Self::decode(buf, columns)?;
        Ok(())
    }
    /// Sets a freshly created row to deterministic pseudo-random values uniform in `[low, high)`
    /// derived from `seed` (tables with an `init`; rows that cannot be randomised ignore it).
    fn randomize(&mut self, _seed: u64, _low: f64, _high: f64) {}
    /// Appends the row as tab-separated text (snapshot dumps). The default writes the encoding in
    /// hex; built-in rows write their values (dense) or `column:value` pairs (sparse).
    fn write_tsv(&self, out: &mut String) {
        let mut b = BytesMut::new();
        self.encode(&mut b);
        for x in b.iter() {
            out.push_str(&format!("{x:02x}"));
        }
    }
    /// Whether [`Row::difference`] is implemented. Then a thread's `inc`s of a row it has read
    /// in the same clock change its cached row only, and the thread cache computes the clock's
    /// delta once, at the end of the clock, as the difference from a copy taken at the first
    /// `inc`: one write per `inc` instead of two (cached row and pending delta), which halves
    /// the memory traffic of read-modify-write loops. For floating-point rows the delta is then
    /// rounded once per clock instead of once per `inc`.
    const DIFFERENCE: bool = false;
    /// `self - base` as an update (`base.apply(&d)` gives `self` up to rounding). Must return
    /// `Some` when `DIFFERENCE` is true (`base` is then an earlier copy of `self`).
    fn difference(&self, _base: &Self) -> Option<Self::Update> {
        None
    }
    /// Overwrites `self` with `other`, reusing allocations where possible (thread-cache refresh).
    fn copy_from(&mut self, other: &Self) {
        self.clone_from(other)
    }
    /// Bytes the row holds on the heap (its vectors' capacity), for the thread cache's byte
    /// budget (`thread_cache_mb`). Rows with heap data should say; the default counts none, so
    /// such a row is counted by its inline size only.
    fn heap_bytes(&self) -> usize {
        0
    }
    /// How much `delta` (an accumulated update not yet sent to the other data centers) would
    /// change this row, for Gaia's significance filter: it is mirrored once this exceeds the
    /// threshold. Dense rows use the relative change of their Euclidean norm ||delta|| / ||row||,
    /// sparse rows that of their total mass (sum of |values|); a change of an all-zero row is
    /// infinitely significant. The default, for row types that do not say, is "always
    /// significant": their updates are mirrored at every clock, never filtered.
    fn significance(&self, _delta: &Self::Update) -> f64 {
        f64::INFINITY
    }
}

/// Gaia's default significance of a change `d` to a value `v`: |d / v|, infinite for a change
/// of a zero value, 0 for no change.
#[inline]
pub(crate) fn relative_change(d: f64, v: f64) -> f64 {
    if d == 0.0 {
        0.0
    } else if v == 0.0 {
        f64::INFINITY
    } else {
        (d / v).abs()
    }
}

/// A delta applied to a row. Merging must be associative and commutative.
pub trait RowUpdate: Clone + Send + Sync + 'static {
    /// The identity delta.
    fn zero(columns: usize) -> Self;
    /// Folds `other` into `self`.
    fn merge(&mut self, other: &Self);
    fn encode(&self, buf: &mut BytesMut);
    fn decode(buf: &mut &[u8], columns: usize) -> Result<Self>;
    /// `decode` into `self`, reusing its allocations (servers decode every update they apply).
    /// On error `self` must still be a valid update (of any value).
    fn decode_into(&mut self, buf: &mut &[u8], columns: usize) -> Result<()> {
        *self = Self::decode(buf, columns)?;
        Ok(())
    }
}

/// Text form of encoded rows whose type is known only by name (snapshot dumps); implemented by
/// `RowTypeRegistry`.
pub trait RowText {
    /// Appends one encoded row of type `row_type` as tab-separated text.
    fn row_tsv(&self, row_type: &str, bytes: &[u8], columns: usize, out: &mut String) -> Result<()>;
}

/// Rows and updates that support adding a value to one column (`inc(row, col, v)`).
pub trait ColumnAdd<T> {
    fn add(&mut self, col: u32, value: T);
}

/// Rows that expose a column value.
pub trait ColumnGet<T> {
    fn col(&self, col: u32) -> T;
}

/// Asks the CPU to start loading `bytes`, one hint per 64-byte line, for loops that visit rows in
/// an order the hardware prefetcher cannot guess (LDA's word-major sweep: waiting for a
/// document's counts from the L3 cache took 40% of a sweep; MF's held-out ratings by item;
/// the thread cache's `hint`).
#[inline]
pub fn prefetch<T>(bytes: &[T]) {
    #[cfg(target_arch = "x86_64")]
    for line in (0..std::mem::size_of_val(bytes)).step_by(64) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint; it never faults and does not change memory, and the
        // address is inside the slice.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().cast::<i8>().add(line)) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn roundtrip<R: Row + PartialEq + std::fmt::Debug>(r: &R, cols: usize) {
        let mut b = BytesMut::new();
        Row::encode(r, &mut b);
        let mut s: &[u8] = &b;
        assert_eq!(&<R as Row>::decode(&mut s, cols).unwrap(), r);
        assert!(s.is_empty());
        // Decoding into a row that held other values (the receive path reuses rows) too.
        let mut into = R::zero(cols);
        for _ in 0..2 {
            let mut s: &[u8] = &b;
            into.decode_into(&mut s, cols).unwrap();
            assert_eq!(&into, r);
        }
        // Every strict prefix is an error, never a panic, and leaves a row that still encodes
        // and decodes.
        for cut in 0..b.len() {
            let mut s: &[u8] = &b[..cut];
            assert!(<R as Row>::decode(&mut s, cols).is_err(), "prefix of {cut} bytes decoded");
            let mut s: &[u8] = &b[..cut];
            assert!(into.decode_into(&mut s, cols).is_err(), "prefix of {cut} bytes decoded in place");
            let mut again = BytesMut::new();
            Row::encode(&into, &mut again);
            let mut s: &[u8] = &again;
            assert!(<R as Row>::decode(&mut s, cols).is_ok(), "a failed decode_into left an invalid row");
        }
    }

    fn generic_dense<T: Element>(vals: &[T]) {
        roundtrip(&DenseRow(vals.to_vec()), vals.len());
    }

    #[test]
    fn significance_is_the_relative_change_of_a_row() {
        let v = DenseRow(vec![3.0f32, -4.0, 0.0]);
        assert_eq!(v.significance(&DenseRow(vec![0.0, 0.0, -0.5])), 0.1, "norm 0.5 against 5");
        assert_eq!(v.significance(&DenseRow(vec![0.0; 3])), 0.0);
        assert_eq!(DenseRow(vec![0.0f64; 2]).significance(&DenseRow(vec![1e-9, 0.0])), f64::INFINITY);
        let mut s = SparseRow::<i32>::new();
        s.add(3, 150);
        s.add(7, -50);
        let mut d = SparseRow::<i32>::new();
        d.add(3, 1);
        assert_eq!(s.significance(&d), 0.005);
        d.add(9, -1);
        assert_eq!(s.significance(&d), 0.01, "a new column counts by its size, not as infinite");
    }

    #[test]
    fn dense_rows_of_every_type_roundtrip() {
        generic_dense(&[1i32, -2, 3]);
        generic_dense(&[1i64 << 40, -2]);
        generic_dense(&[1.5f32, -0.25]);
        generic_dense(&[1e300f64, -0.0]);
        // Sparse rows too, long enough that the packed column and value arrays are copied in bulk.
        let mut s = SparseRow::<f64>::new();
        (0..300u32).for_each(|c| s.add(c * 7 + 1, c as f64 * 0.5 - 3.0));
        roundtrip(&s, 3000);
        // The layout on the wire: u32 count, then the columns, then the values, little-endian.
        let mut b = BytesMut::new();
        Row::encode(&DenseRow(vec![1.5f64, -2.0]), &mut b);
        assert_eq!(&b[..], &[&2u32.to_le_bytes()[..], &1.5f64.to_le_bytes(), &(-2.0f64).to_le_bytes()].concat()[..]);
        let mut s = SparseRow::<i32>::new();
        s.add(2999, i32::MIN);
        roundtrip(&s, 3000);
        let mut b = BytesMut::new();
        Row::encode(&s, &mut b);
        assert_eq!(&b[..], &[&1u32.to_le_bytes()[..], &2999u32.to_le_bytes(), &i32::MIN.to_le_bytes()].concat()[..]);
        assert_eq!(DenseRow::<f32>::type_name(), "dense_f32");
        assert_eq!(SparseRow::<i64>::type_name(), "sparse_i64");
    }

    /// Found by fuzzing: integer updates from a peer overflowed (a panic in debug builds). They
    /// wrap now, in every build, in dense and sparse rows and in merges.
    #[test]
    fn integer_updates_wrap_instead_of_panicking() {
        let mut d = DenseRow(vec![i32::MAX, i32::MIN]);
        d.apply(&DenseRow(vec![1, -1]));
        assert_eq!(d.0, vec![i32::MIN, i32::MAX]);
        let mut a = SparseRow::<i64>::new();
        a.add(3, i64::MAX);
        let mut b = SparseRow::<i64>::new();
        b.add(3, 2);
        RowUpdate::merge(&mut a, &b);
        assert_eq!(a.col(3), i64::MIN + 1);
        a.add(3, -2);
        assert_eq!(a.col(3), i64::MAX);
    }

    #[test]
    fn dense_width_mismatch_is_an_error() {
        let mut b = BytesMut::new();
        Row::encode(&DenseRow(vec![1f32; 3]), &mut b);
        let mut s: &[u8] = &b;
        assert!(<DenseRow<f32> as Row>::decode(&mut s, 4).is_err());
    }

    #[test]
    fn sparse_decode_rejects_unsorted_and_out_of_range() {
        let mut b = BytesMut::new();
        bytes::BufMut::put_u32_le(&mut b, 2);
        for c in [5u32, 3] {
            bytes::BufMut::put_u32_le(&mut b, c);
        }
        for v in [1i32, 2] {
            bytes::BufMut::put_i32_le(&mut b, v);
        }
        let mut s: &[u8] = &b;
        assert!(<SparseRow<i32> as Row>::decode(&mut s, 0).is_err());
        let mut r = SparseRow::<i32>::new();
        r.add(9, 1);
        let mut b = BytesMut::new();
        Row::encode(&r, &mut b);
        let mut s: &[u8] = &b;
        assert!(<SparseRow<i32> as Row>::decode(&mut s, 5).is_err());
    }

    proptest! {
        /// Sparse rows behave as dense vectors under any order and grouping of updates, and drop
        /// zeros.
        #[test]
        fn sparse_merge_is_dense_addition(ups in prop::collection::vec(prop::collection::vec((0u32..50, -3i64..4), 0..20), 1..6)) {
            let mut dense = vec![0i64; 50];
            let mut seq = SparseRow::<i64>::new();
            let mut merged = SparseRow::<i64>::new();
            for u in &ups {
                let mut d = SparseRow::<i64>::new();
                for &(c, v) in u {
                    d.add(c, v);
                    dense[c as usize] += v;
                }
                seq.apply(&d);
                // Reverse grouping: fold updates together first.
                let mut tmp = d.clone();
                RowUpdate::merge(&mut tmp, &merged);
                merged = tmp;
            }
            for c in 0..50u32 {
                prop_assert_eq!(seq.col(c), dense[c as usize]);
                prop_assert_eq!(merged.col(c), dense[c as usize]);
            }
            prop_assert!(seq.iter().all(|(_, v)| v != 0));
            prop_assert_eq!(seq.nnz(), dense.iter().filter(|v| **v != 0).count());
            roundtrip(&seq, 50);
        }

        /// `a.difference(b)` applied to `b` gives `a`, for sparse and dense rows.
        #[test]
        fn difference_is_the_inverse_of_apply(a in prop::collection::vec((0u32..30, -3i64..4), 0..25), b in prop::collection::vec((0u32..30, -3i64..4), 0..25)) {
            let (mut ra, mut rb) = (SparseRow::<i64>::new(), SparseRow::<i64>::new());
            let (mut da, mut db) = (DenseRow(vec![0i64; 30]), DenseRow(vec![0i64; 30]));
            for &(c, v) in &a {
                ra.add(c, v);
                da.add(c, v);
            }
            for &(c, v) in &b {
                rb.add(c, v);
                db.add(c, v);
            }
            let d = ra.difference(&rb).unwrap();
            let mut back = rb.clone();
            back.apply(&d);
            prop_assert_eq!(&back, &ra);
            prop_assert!(d.iter().all(|(_, v)| v != 0));
            let d = da.difference(&db).unwrap();
            db.apply(&d);
            prop_assert_eq!(db, da);
        }

        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let mut s: &[u8] = &bytes;
            let _ = <SparseRow<f32> as Row>::decode(&mut s, 0);
            let mut s: &[u8] = &bytes;
            let _ = <DenseRow<f64> as Row>::decode(&mut s, 3);
        }
    }
}
