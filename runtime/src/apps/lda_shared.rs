//! LDA's vocabulary slice, shared by the threads of one process under the rotating schedule
//! (`shared_slice`: slices rotate among processes, a process's threads take turns at its
//! sub-slices). Here: a sub-slice's counts as the sampler sees them ([`SlotCounts`]), and the
//! changes sent back (the rows' differences, where there are any).

use super::lda_rows::{RowChanges, WordRows};
use super::lda_sampler::{CountsFn, WordTopics};
use super::shared_slice::{self, Held};
pub(super) use super::shared_slice::{sub_slice, ProcessSlice};
use crate::error::Result;
use crate::row::{Row, SparseRow};
use crate::TableHandle;
use std::sync::Arc;

type Counts = SparseRow<i32>;

/// A thread's part in its process's slice, with the layout of words in rows.
pub(super) struct ThreadSlice {
    inner: shared_slice::ThreadSlice<Counts>,
    layout: WordRows,
}

impl ThreadSlice {
    pub(super) fn new(shared: Arc<ProcessSlice<Counts>>, tid: usize, layout: WordRows) -> Self {
        ThreadSlice { inner: shared_slice::ThreadSlice::new(shared, tid), layout }
    }

    pub(super) fn threads(&self) -> usize {
        self.inner.threads()
    }

    /// Loads this thread's sub-slice for `clock`: `rows` (ascending) as the table has them.
    pub(super) fn load(&self, rows: &[u64], wt: &mut TableHandle<Counts>, clock: i64) -> Result<()> {
        self.inner.load(rows, wt, clock)
    }

    /// Takes sub-slice `sub` once it is loaded for `clock` and free.
    pub(super) fn take(&self, sub: usize, clock: i64) -> Result<SlotCounts<'_>> {
        Ok(SlotCounts {
            slot: self.inner.take(sub, clock)?,
            layout: self.layout,
            last: None,
            held: RowChanges::default(),
        })
    }

    /// Sends this thread's sub-slice's changes of the clock, once every thread has sampled it:
    /// each row's counts less the row as loaded, where they differ.
    pub(super) fn flush(&self, wt: &mut TableHandle<Counts>) -> Result<()> {
        self.inner.flush(wt, |wt, r, now| {
            let delta = now.difference(&*wt.get(r)?);
            if let Some(d) = delta.filter(|d| d.nnz() > 0) {
                wt.inc(r, &d);
            }
            Ok(())
        })
    }
}

/// One sub-slice's counts, held for a step: the sampler reads them and its changes are merged
/// in, a row at a time (`RowChanges`).
pub(super) struct SlotCounts<'a> {
    slot: Held<'a, Counts>,
    layout: WordRows,
    /// The last row looked up and its index.
    last: Option<(u64, usize)>,
    held: RowChanges,
}

impl SlotCounts<'_> {
    fn index(&mut self, row: u64) -> Result<usize> {
        if let Some((r, i)) = self.last {
            if r == row {
                return Ok(i);
            }
        }
        let i = self.slot.index(row)?;
        self.last = Some((row, i));
        Ok(i)
    }

    fn apply(&mut self) -> Result<()> {
        let Some(row) = self.held.row() else { return Ok(()) };
        let i = self.index(row)?;
        let counts = &mut self.slot.values[i];
        self.held.flush(|_, d| counts.apply(d));
        Ok(())
    }
}

impl WordTopics for SlotCounts<'_> {
    fn with_row(&mut self, word: u32, f: &mut CountsFn<'_>) -> Result<()> {
        if self.held.holds(word) {
            self.apply()?;
        }
        let i = self.index(self.layout.row(word as u64))?;
        f(&mut self.layout.counts(&self.slot.values[i], word as u64));
        Ok(())
    }

    fn add(&mut self, word: u32, changes: &[(u32, i32)]) -> Result<()> {
        if self.held.row().is_some_and(|r| r != self.layout.row(word as u64)) {
            self.apply()?;
        }
        self.held.add(self.layout, word, changes, |_, _| {});
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.apply()
    }
}
