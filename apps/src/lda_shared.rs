//! LDA's vocabulary slice, shared by the threads of one process under the rotating schedule
//! (`shared_slice`: slices rotate among processes, a process's threads take turns at its
//! sub-slices). Here: the form the counts take in the slot, the sampler's view of them
//! ([`SlotCounts`]) and the changes sent back.
//!
//! In the slot each word has its own sorted `(topic, count)` list ([`RowWords`]), split from its
//! table row (16 words a row) once per clock by the thread that loads it. Every thread visits
//! every word of its documents once per clock, so at T threads a word is read and changed T
//! times a clock: kept as table rows, each visit searched the row for the word's columns and
//! merged the word's changes into the whole row (sorting and merging were a third of the extra
//! CPU of 1 x 16 over 1 x 1 on 2 cores). A change now goes straight into the word's list.

use super::lda_rows::WordRows;
use super::lda_sampler::{CountsFn, DenseChanges, WordTopics};
pub(super) use super::shared_slice::ProcessSlice;
use super::shared_slice::{self, Held};
use ps_runtime::Result;
use ps_runtime::SparseRow;
use ps_runtime::TableHandle;
use ps_runtime::WaitMeter;
use std::sync::Arc;

type Counts = SparseRow<i32>;

/// The words of one table row: word `i` of the row (column block `i x topics`) has the sorted
/// `(topic, count)` list `words[i]`, zero counts left out.
#[derive(Default)]
pub(super) struct RowWords {
    words: Vec<Vec<(u32, i32)>>,
}

impl RowWords {
    /// Splits `row` into its words' lists, reusing this value's lists.
    fn fill(&mut self, row: &Counts, layout: WordRows) {
        self.words.resize_with(layout.per_row as usize, Vec::new);
        self.words.iter_mut().for_each(Vec::clear);
        for (c, n) in row.iter() {
            if let Some(w) = self.words.get_mut((c / layout.topics) as usize) {
                w.push((c % layout.topics, n));
            }
        }
    }

    /// The changes from `base` (the row as loaded) to these lists, as `(column, delta)` pairs in
    /// column order into `out`: one merge of two sorted sequences, allocating nothing once `out`
    /// has grown (the threads of a process send their sub-slices at the same moment, and a row
    /// built and compared per table row had them queue on the allocator's lock). A loop per
    /// word: the merge through two peekable iterators, one of them flattened, was 2% of a
    /// 1 x 2 job's CPU.
    fn delta_into(&self, layout: WordRows, base: &Counts, out: &mut Vec<(u32, i32)>) {
        out.clear();
        let mut old = base.iter();
        let mut next = old.next();
        for (i, w) in self.words.iter().enumerate() {
            let at = i as u32 * layout.topics;
            for &(t, n) in w {
                let c = at + t;
                // Loaded entries before this column are gone from the lists.
                while let Some((b, m)) = next.filter(|&(b, _)| b < c) {
                    if m != 0 {
                        out.push((b, -m));
                    }
                    next = old.next();
                }
                let was = match next {
                    Some((b, m)) if b == c => {
                        next = old.next();
                        m
                    }
                    _ => 0,
                };
                if n != was {
                    out.push((c, n - was));
                }
            }
        }
        while let Some((b, m)) = next {
            if m != 0 {
                out.push((b, -m));
            }
            next = old.next();
        }
    }

    /// Adds a visit's `changes` to word `i`'s counts in one pass over its list: those of its
    /// topics first, in place, then the other topics' (few, sorted) merged in from the back; a
    /// binary search and a shift per change was 5% of LDA's CPU at 1 x 16 on 2 cores. Only
    /// changed entries are written: the next thread to visit the word runs on another core, and
    /// every line written here is one it must take from this core's cache (a visit of a few
    /// tokens changes a few entries of a list of dozens).
    fn add_dense(&mut self, i: usize, changes: &mut DenseChanges<'_>, new: &mut Vec<(u32, i32)>) {
        let Some(w) = self.words.get_mut(i) else {
            changes.take_rest(new);
            return;
        };
        let mut zero = false;
        for e in w.iter_mut() {
            let d = changes.take(e.0);
            if d != 0 {
                e.1 += d;
                zero |= e.1 == 0;
            }
        }
        changes.take_rest(new);
        if !new.is_empty() {
            new.sort_unstable_by_key(|&(t, _)| t);
            let (mut i, mut j) = (w.len(), new.len());
            w.resize(i + j, (0, 0));
            for out in (0..w.len()).rev() {
                if j == 0 {
                    break;
                }
                if i > 0 && w[i - 1].0 > new[j - 1].0 {
                    w[out] = w[i - 1];
                    i -= 1;
                } else {
                    w[out] = new[j - 1];
                    j -= 1;
                }
            }
        }
        if zero {
            w.retain(|e| e.1 != 0);
        }
    }

    /// Adds `changes` (topic, delta) to word `i`'s counts.
    fn add(&mut self, i: usize, changes: &[(u32, i32)]) {
        let Some(w) = self.words.get_mut(i) else { return };
        for &(t, d) in changes {
            match w.binary_search_by_key(&t, |&(topic, _)| topic) {
                Ok(k) => {
                    w[k].1 += d;
                    if w[k].1 == 0 {
                        w.remove(k);
                    }
                }
                Err(k) if d != 0 => w.insert(k, (t, d)),
                Err(_) => {}
            }
        }
    }
}

/// A thread's part in its process's slice, with the layout of words in rows.
pub(super) struct ThreadSlice {
    inner: shared_slice::ThreadSlice<RowWords>,
    layout: WordRows,
}

impl ThreadSlice {
    pub(super) fn new(shared: Arc<ProcessSlice<RowWords>>, tid: usize, meter: WaitMeter, layout: WordRows) -> Self {
        ThreadSlice { inner: shared_slice::ThreadSlice::new(shared, tid, meter), layout }
    }

    /// The sub-slices of the process's slice.
    pub(super) fn subs(&self) -> usize {
        self.inner.subs()
    }

    /// The sub-slices this thread loads and sends.
    pub(super) fn owned(&self) -> std::ops::Range<usize> {
        self.inner.owned()
    }

    /// The order in which this thread visits the sub-slices in a clock.
    pub(super) fn visits(&self) -> impl Iterator<Item = usize> {
        self.inner.visits()
    }

    /// Loads this thread's sub-slice `sub` for `clock`: `rows` (ascending) as the table has them.
    pub(super) fn load(&self, sub: usize, rows: &[u64], wt: &mut TableHandle<Counts>, clock: i64) -> Result<()> {
        let layout = self.layout;
        self.inner.load(sub, rows, clock, |r, v| {
            v.fill(&*wt.get(r)?, layout);
            Ok(())
        })
    }

    /// Takes sub-slice `sub` once it is loaded for `clock` and free.
    pub(super) fn take(&self, sub: usize, clock: i64) -> Result<SlotCounts<'_>> {
        Ok(SlotCounts { slot: self.inner.take(sub, clock)?, layout: self.layout, last: None })
    }

    /// Sends this thread's sub-slice's changes of the clock, once every thread has sampled it:
    /// each row's counts less the row as loaded, where they differ.
    pub(super) fn flush(&self, wt: &mut TableHandle<Counts>) -> Result<()> {
        let (layout, mut pairs, mut delta) = (self.layout, Vec::new(), Counts::new());
        self.inner.flush(|r, now| {
            now.delta_into(layout, &*wt.get(r)?, &mut pairs);
            if !pairs.is_empty() {
                delta.assign_pairs(&mut pairs);
                wt.inc(r, &delta);
            }
            Ok(())
        })
    }
}

/// One sub-slice's counts, held for a step: the sampler reads a word's list and its changes go
/// straight into it.
pub(super) struct SlotCounts<'a> {
    slot: Held<'a, RowWords>,
    layout: WordRows,
    /// The last row looked up and its index.
    last: Option<(u64, usize)>,
}

impl SlotCounts<'_> {
    /// The slot index of word `word`'s row, and the word's place in it.
    fn place(&mut self, word: u32) -> Result<(usize, usize)> {
        let row = self.layout.row(word as u64);
        let i = match self.last {
            Some((r, i)) if r == row => i,
            _ => self.slot.index(row)?,
        };
        self.last = Some((row, i));
        Ok((i, (word as u64 % self.layout.per_row) as usize))
    }
}

impl WordTopics for SlotCounts<'_> {
    fn with_row(&mut self, word: u32, f: &mut CountsFn<'_>) -> Result<()> {
        let (i, k) = self.place(word)?;
        let words = &self.slot.values[i].words;
        f(words.get(k).map_or(&[][..], Vec::as_slice));
        Ok(())
    }

    fn add(&mut self, word: u32, changes: &[(u32, i32)]) -> Result<()> {
        let (i, k) = self.place(word)?;
        self.slot.values[i].add(k, changes);
        Ok(())
    }

    fn add_dense(&mut self, word: u32, changes: &mut DenseChanges<'_>, scratch: &mut Vec<(u32, i32)>) -> Result<()> {
        let (i, k) = self.place(word)?;
        self.slot.values[i].add_dense(k, changes, scratch);
        Ok(())
    }

    fn prefetch(&mut self, ahead: &[u32]) {
        // A list was last written by another thread, likely on another core, and is reached
        // through its header: the header two words ahead, the list of the next word (whose
        // header the previous call fetched).
        if let Some(Ok((i, k))) = ahead.get(1).map(|&w| self.place(w)) {
            if let Some(h) = self.slot.values[i].words.get(k..k + 1) {
                ps_runtime::prefetch(h);
            }
        }
        if let Some(Ok((i, k))) = ahead.first().map(|&w| self.place(w)) {
            if let Some(w) = self.slot.values[i].words.get(k) {
                ps_runtime::prefetch(w.as_slice());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A visit's dense changes, merged into a word's list, give the list that adding them
        /// one by one gives, and take every change.
        #[test]
        fn dense_changes_add_like_pairs(
            counts in proptest::collection::btree_map(0u32..24, 1i32..5, 0..16),
            moves in proptest::collection::vec((0u32..24, -3i32..4), 0..40),
        ) {
            let list: Vec<(u32, i32)> = counts.into_iter().collect();
            let (mut dw, mut touched) = (vec![0i32; 24], Vec::new());
            for &(t, d) in &moves {
                // As the sampler moves tokens: never below the word's count.
                let have = list.iter().find(|e| e.0 == t).map_or(0, |e| e.1) + dw[t as usize];
                let d = d.max(-have);
                if dw[t as usize] == 0 {
                    touched.push(t);
                }
                dw[t as usize] += d;
            }
            // The pairs as the sampler made them: each topic's change taken once.
            let mut left = dw.clone();
            let pairs: Vec<(u32, i32)> = touched
                .iter()
                .map(|&t| (t, std::mem::take(&mut left[t as usize])))
                .filter(|p| p.1 != 0)
                .collect();
            let mut one_by_one = RowWords { words: vec![list.clone()] };
            one_by_one.add(0, &pairs);
            let mut dense = RowWords { words: vec![list] };
            dense.add_dense(0, &mut DenseChanges::new(&touched, &mut dw), &mut Vec::new());
            prop_assert_eq!(&dense.words, &one_by_one.words);
            prop_assert!(dw.iter().all(|&d| d == 0));
        }

        /// The changes sent for a row are the lists' counts less the row's, column by column.
        #[test]
        fn the_delta_is_the_difference_of_the_counts(
            loaded in proptest::collection::btree_map(0u32..16, 1i32..5, 0..12),
            now in proptest::collection::btree_map(0u32..16, 0i32..5, 0..12),
        ) {
            let layout = WordRows { per_row: 4, topics: 4 };
            let mut row = Counts::new();
            row.assign_pairs(&mut loaded.iter().map(|(&c, &n)| (c, n)).collect::<Vec<_>>());
            let mut w = RowWords { words: vec![Vec::new(); 4] };
            for (&c, &n) in &now {
                w.words[(c / 4) as usize].push((c % 4, n));
            }
            let mut got = Vec::new();
            w.delta_into(layout, &row, &mut got);
            let want: Vec<(u32, i32)> = (0..16)
                .map(|c| (c, now.get(&c).copied().unwrap_or(0) - loaded.get(&c).copied().unwrap_or(0)))
                .filter(|p| p.1 != 0)
                .collect();
            prop_assert_eq!(got, want);
        }
    }

    /// A row split into words, changed and put back together is the row with the changes.
    #[test]
    fn row_words_round_trip_with_changes() {
        let layout = WordRows { per_row: 4, topics: 3 };
        let mut row = Counts::new();
        row.assign_pairs(&mut [(0, 2), (2, 1), (4, 5), (11, 7)]);
        let mut w = RowWords::default();
        w.fill(&row, layout);
        assert_eq!(w.words, vec![vec![(0, 2), (2, 1)], vec![(1, 5)], vec![], vec![(2, 7)]]);
        w.add(0, &[(2, -1), (1, 3)]);
        w.add(2, &[(0, 4), (0, -4), (1, 1)]);
        let mut back = Vec::new();
        w.delta_into(layout, &row, &mut back);
        assert_eq!(back, vec![(1, 3), (2, -1), (7, 1)], "the changes from the row as loaded");
        w.delta_into(layout, &Counts::new(), &mut back);
        assert_eq!(back, vec![(0, 2), (1, 3), (4, 5), (7, 1), (11, 7)], "from nothing: the row");
        let mut want = Counts::new();
        want.assign_pairs(&mut back);
        w.fill(&want, layout);
        assert_eq!(w.words[2], vec![(1, 1)], "a refill reuses the lists and clears the old counts");
    }
}
