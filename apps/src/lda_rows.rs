//! Where LDA's word-topic counts are in the `word_topic` table. Under the rotating schedule a
//! row holds `WORDS_PER_ROW` consecutive words (word `w` in row `w / 16`, its topic `t` in
//! column `(w % 16) K + t`): every worker moves every word row once a pass, and a moved row costs
//! microseconds in lookups, locks and messages whatever its size (`docs/SCALE-OUT.md`), which at
//! 100K words came to more than the sampling at 16 workers. Data-parallel sampling keeps one
//! word a row (a worker fetches only the words of its documents).

use super::job_totals::job_totals;
use super::lda_sampler::{CountsFn, DenseChanges, WordTopics};
use super::rotation::{FineSlices, Plan};
use ps_runtime::Result;
use ps_runtime::SparseRow;
use ps_runtime::{TableHandle, Worker};

pub const WORDS_PER_ROW: u64 = 16;

/// The layout: words per row and topics per word.
#[derive(Clone, Copy, Debug)]
pub struct WordRows {
    pub per_row: u64,
    pub topics: u32,
}

impl WordRows {
    #[inline]
    pub fn row(&self, word: u64) -> u64 {
        word / self.per_row
    }

    /// The word's first column in its row.
    #[inline]
    fn first(&self, word: u64) -> u32 {
        (word % self.per_row) as u32 * self.topics
    }

    /// The word's `(topic, count)` pairs in `row` (its row).
    pub fn counts<'a>(&self, row: &'a SparseRow<i32>, word: u64) -> impl Iterator<Item = (u32, i32)> + 'a {
        let first = self.first(word);
        row.range(first, first + self.topics).map(move |(c, n)| (c - first, n))
    }

    /// The rows of `words` (ascending), each once.
    pub fn rows_of(&self, words: impl IntoIterator<Item = u64>) -> Vec<u64> {
        super::rotation::rows_of_ids(words, self.per_row)
    }

    /// The rows worker `gid` of `workers` evaluates and writes, of a vocabulary of `v` words.
    pub fn rows_of_worker(&self, gid: usize, workers: usize, v: usize) -> Vec<u64> {
        super::rotation::rows_of_worker(gid, workers, v.div_ceil(self.per_row as usize))
    }

    /// The words of row `row`, up to the vocabulary size `v`.
    pub fn words_of(&self, row: u64, v: u64) -> std::ops::Range<u64> {
        (row * self.per_row).min(v)..((row + 1) * self.per_row).min(v)
    }
}

/// The rotating schedule's slices and sub-slices (`subs` a slice: a process's threads), balanced
/// by the job's tokens per row. Hashed, the largest of 2 x 16 sub-slices was 1.25x the mean on
/// a corpus without word skew and 2.05x on a Zipf one, and each step of a process's threads
/// lasts as long as its largest block. Collective.
pub fn balanced_slices(
    w: &mut Worker,
    layout: WordRows,
    docs: &[Vec<u32>],
    plan: &Plan,
    subs: usize,
) -> Result<FineSlices> {
    let mut local = rustc_hash::FxHashMap::default();
    for &word in docs.iter().flatten() {
        *local.entry(layout.row(word as u64) as u32).or_insert(0u64) += 1;
    }
    let totals = job_totals(w, "lda token counts", local)?;
    let slices = FineSlices::new(&totals, plan.slices, subs);
    if w.global_thread_id() == 0 {
        log::info!("lda: {} word slices of {subs} sub-slices; largest {:.2}x the mean", plan.slices, slices.imbalance);
    }
    Ok(slices)
}

/// A word's changes, held until the sampler leaves its row (or reads that word again) and then
/// applied as one update of the row: one merge per row instead of a sorted insert per changed
/// topic, which was most of the cost of a worker's visit to a row once several workers share a
/// pass. Where the update goes is the caller's (`apply`).
#[derive(Default)]
pub struct RowChanges {
    /// The row whose changes `pairs` holds: `(column, delta)`, a column's repeats summed when
    /// applied; and the words they are of (a word's columns are its own, so only a read of one
    /// of these must see them applied first).
    row: Option<u64>,
    pairs: Vec<(u32, i32)>,
    words: Vec<u32>,
    delta: SparseRow<i32>,
}

impl RowChanges {
    /// Whether a read of `word` must first apply the held changes.
    pub fn holds(&self, word: u32) -> bool {
        self.row.is_some() && self.words.contains(&word)
    }

    /// Holds `changes` of `word`, first applying those of another row.
    pub fn add(
        &mut self,
        layout: WordRows,
        word: u32,
        changes: &[(u32, i32)],
        apply: impl FnOnce(u64, &SparseRow<i32>),
    ) {
        let row = layout.row(word as u64);
        if self.row != Some(row) {
            self.flush(apply);
            self.row = Some(row);
        }
        let first = layout.first(word as u64);
        self.words.push(word);
        self.pairs.extend(changes.iter().map(|&(topic, d)| (first + topic, d)));
    }

    /// Applies the held changes, if any, as one update of their row.
    pub fn flush(&mut self, apply: impl FnOnce(u64, &SparseRow<i32>)) {
        if let Some(row) = self.row.take() {
            self.delta.assign_pairs(&mut self.pairs);
            self.pairs.clear();
            self.words.clear();
            apply(row, &self.delta);
        }
    }
}

/// The sampler's view of the table (the data-parallel schedule).
pub struct PsWordTopics<'a> {
    table: &'a mut TableHandle<SparseRow<i32>>,
    rows: WordRows,
    held: RowChanges,
    /// The word last read (`read`), its pairs; and room for a word's changes in topic order.
    read: Option<u32>,
    pairs: Vec<(u32, i32)>,
    new: Vec<(u32, i32)>,
    merged: Vec<(u32, i32)>,
}

impl<'a> PsWordTopics<'a> {
    pub fn new(table: &'a mut TableHandle<SparseRow<i32>>, rows: WordRows) -> Self {
        let (pairs, new, merged) = (Vec::new(), Vec::new(), Vec::new());
        PsWordTopics { table, rows, held: RowChanges::default(), read: None, pairs, new, merged }
    }
}

impl WordTopics for PsWordTopics<'_> {
    fn with_row(&mut self, word: u32, f: &mut CountsFn<'_>) -> Result<()> {
        if self.held.holds(word) {
            self.flush()?;
        }
        let counts = self.table.get(self.rows.row(word as u64))?;
        self.pairs.clear();
        self.pairs.extend(self.rows.counts(&counts, word as u64));
        self.read = Some(word);
        f(&self.pairs);
        Ok(())
    }

    /// The changes in topic order: those of the topics the word had when read (`pairs`, sorted)
    /// in place, the few others sorted and merged in. Words are visited in ascending order, so a
    /// row's held changes then arrive sorted and the update made of them (`assign_pairs`) costs
    /// one pass instead of a sort (3.6% of a 1 x 1 job's CPU on 2 cores).
    fn add_dense(&mut self, word: u32, changes: &mut DenseChanges<'_>, scratch: &mut Vec<(u32, i32)>) -> Result<()> {
        if self.read != Some(word) {
            changes.take_rest(scratch);
        } else {
            scratch.clear();
            for &(t, _) in &self.pairs {
                let d = changes.take(t);
                if d != 0 {
                    scratch.push((t, d));
                }
            }
            changes.take_rest(&mut self.new);
            if !self.new.is_empty() {
                self.new.sort_unstable_by_key(|&(t, _)| t);
                let (a, b, out) = (&*scratch, &self.new, &mut self.merged);
                out.clear();
                let (mut i, mut j) = (0, 0);
                while i < a.len() || j < b.len() {
                    if j == b.len() || (i < a.len() && a[i].0 < b[j].0) {
                        out.push(a[i]);
                        i += 1;
                    } else {
                        out.push(b[j]);
                        j += 1;
                    }
                }
                std::mem::swap(scratch, &mut self.merged);
            }
        }
        if scratch.is_empty() {
            return Ok(());
        }
        self.add(word, scratch)
    }

    fn add(&mut self, word: u32, changes: &[(u32, i32)]) -> Result<()> {
        let table = &mut *self.table;
        self.held.add(self.rows, word, changes, |r, d| table.inc(r, d));
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let table = &mut *self.table;
        self.held.flush(|r, d| table.inc(r, d));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ps_runtime::ColumnAdd;

    #[test]
    fn a_word_reads_its_own_columns_only() {
        let rows = WordRows { per_row: 16, topics: 4 };
        let mut r = SparseRow::new();
        // Word 17 (row 1, second word): topics 0 and 3; word 18: topic 1.
        r.add(4, 5);
        r.add(7, 2);
        r.add(9, 1);
        assert_eq!(rows.row(17), 1);
        assert_eq!(rows.counts(&r, 17).collect::<Vec<_>>(), vec![(0, 5), (3, 2)]);
        assert_eq!(rows.counts(&r, 18).collect::<Vec<_>>(), vec![(1, 1)]);
        assert_eq!(rows.counts(&r, 16).count(), 0);
        assert_eq!(rows.rows_of([1, 2, 17, 40]), vec![0, 1, 2]);
        assert_eq!(rows.words_of(2, 40), 32..40);
    }
}
