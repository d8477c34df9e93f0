//! Row types: the unit of caching, communication and snapshotting.
//!
//! A table holds rows of one type implementing [`Row`]. Updates are values of [`Row::Update`]:
//! they must form a commutative monoid under [`RowUpdate::merge`] and [`Row::apply`] must respect it
//! (`r.apply(a); r.apply(b)` equals `r.apply(a.merge(b))` in any order), because the runtime
//! coalesces and reorders updates freely between clocks.
//!
//! Built-in rows: [`DenseRow<T>`] and [`SparseRow<T>`] for `T` in i32, i64, f32, f64. A user-defined
//! row implements [`Row`] and [`RowUpdate`] and is registered by name in a [`RowTypeRegistry`].

mod dense;
mod element;
mod registry;
mod sparse;

pub use dense::DenseRow;
pub use element::Element;
pub(crate) use element::ReadExt;
pub use registry::RowTypeRegistry;
pub(crate) use registry::{BatchOut, ProcessTableOps, ServerTableOps};
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
    /// Overwrites `self` with `other`, reusing allocations where possible (thread-cache refresh).
    fn copy_from(&mut self, other: &Self) {
        self.clone_from(other)
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
}

/// Rows and updates that support adding a value to one column (`inc(row, col, v)`).
pub trait ColumnAdd<T> {
    fn add(&mut self, col: u32, value: T);
}

/// Rows that expose a column value.
pub trait ColumnGet<T> {
    fn col(&self, col: u32) -> T;
}
