//! MF's rotating item slices (`--schedule items`, see `rotation`): which slice each item is in,
//! and the training ratings put in block order so that a clock's work is one contiguous range.
//!
//! Items are assigned to slices by their number of training ratings over the whole job, largest
//! first to the least loaded slice, so that the slices cost about the same: a clock lasts as long
//! as the largest block any worker has in it. Every worker computes the same assignment from the
//! same totals (`job_totals`).
//!
//! Also where an item's factors are in the items table (`ItemRows`): 16 items a row under the
//! rotating schedule, one otherwise.

use super::job_totals::job_totals;
use super::rotation::{FineSlices, Plan};
use ps_runtime::input::Rating;
use ps_runtime::mix64;
use ps_runtime::Result;
use ps_runtime::Worker;
use rustc_hash::FxHashMap;
use std::ops::Range;

/// Item factors of the rotating schedules are kept this many items to a table row (item `i` in
/// row `i / 16`, columns `(i % 16) k ..`): every worker moves every item row once a pass, and a
/// row costs microseconds in lookups, locks and messages whatever its size (`docs/SCALE-OUT.md`),
/// so 16 items a row move for little more than the price of one. Data-parallel SGD keeps one item
/// a row (a worker fetches only the items it rated). A slice of the rotation is made of whole
/// rows.
pub const ITEMS_PER_ROW: u64 = 16;

/// Where an item's factors are: its table row and the columns within it.
#[derive(Clone, Copy, Debug)]
pub struct ItemRows {
    pub per_row: u64,
    pub rank: usize,
}

impl ItemRows {
    #[inline]
    pub fn row(&self, item: u32) -> u64 {
        item as u64 / self.per_row
    }

    #[inline]
    pub fn cols(&self, item: u32) -> std::ops::Range<usize> {
        let first = (item as u64 % self.per_row) as usize * self.rank;
        first..first + self.rank
    }

    /// The distinct rows of `items` (sorted ids), in order.
    pub fn rows_of(&self, items: &[u64]) -> Vec<u64> {
        super::rotation::rows_of_ids(items.iter().copied(), self.per_row)
    }
}

/// Ratings per table row of `per_row` consecutive items, from ratings per item (sorted by item).
fn counts_by_row(counts: &[(u32, u64)], per_row: u64) -> Vec<(u32, u64)> {
    let mut rows: Vec<(u32, u64)> = Vec::new();
    for &(item, n) in counts {
        let row = (item as u64 / per_row) as u32;
        match rows.last_mut() {
            Some((r, total)) if *r == row => *total += n,
            _ => rows.push((row, n)),
        }
    }
    rows
}

/// A warning when the item ids are so sparse that rows of `per_row` consecutive ids are mostly
/// empty: each row takes the memory of `per_row` items wherever it lives (server, process and
/// thread caches), so the items table then takes several times the memory of one item a row.
fn sparse_ids_warning(items: usize, rows: usize, per_row: u64) -> Option<String> {
    let fill = items as f64 / (rows as f64 * per_row as f64).max(1.0);
    (per_row > 1 && fill < 0.5).then(|| {
        format!(
            "mf: item ids are sparse ({items} items in {rows} rows of {per_row} consecutive ids, {:.0}% full): the \
             items table takes {:.1}x the memory of one item a row; renumber the items 0..{items} to avoid it",
            fill * 100.0,
            1.0 / fill
        )
    })
}

/// The training ratings' blocks: each block's range of `train`, the job's items of each slice
/// (sorted), from which `mf --implicit` draws a block's negatives, and the table rows of each
/// fine slice (sorted; see [`into_blocks`]).
#[derive(Default)]
pub struct Blocks {
    pub ranges: Vec<Range<usize>>,
    pub slice_items: Vec<Vec<u32>>,
    pub fine_rows: Vec<Vec<u64>>,
}

/// Puts `train` in block order and returns each block's range. Each slice of the plan is cut
/// into `subs` fine slices (the sub-slices of a process's threads, `mf_shared`; 1 otherwise),
/// fine slice `slice * subs + sub`, and block `part * slices * subs + fine` holds the part's
/// ratings of that fine slice (in their order, users one after the other). Items are assigned to
/// fine slices by table row (`per_row` consecutive ids a row), so that no row holds items of two,
/// balanced by the job's ratings per row. Collective: every worker of the job calls it at the
/// same point.
pub fn into_blocks(w: &mut Worker, plan: &Plan, per_row: u64, subs: usize, train: &mut Vec<Rating>) -> Result<Blocks> {
    let mut local: FxHashMap<u32, u64> = FxHashMap::default();
    train.iter().for_each(|r| *local.entry(r.item).or_insert(0) += 1);
    let items = job_totals(w, "mf item counts", local)?;
    let counts = counts_by_row(&items, per_row);
    let fine = plan.slices * subs.max(1);
    let slices = FineSlices::new(&counts, plan.slices, subs);
    if w.global_thread_id() == 0 && plan.rotates() {
        let unit = if subs > 1 { "processes (their threads sharing a slice)" } else { "workers" };
        let slices_of = match plan.slices {
            1 => "every item in one slice (one process)".to_string(),
            n => format!("{n} item slices rotating among the {unit}"),
        };
        log::info!(
            "mf: {slices_of}, {} rating parts a pass, {subs} sub-slices a slice; largest sub-slice {:.2}x the mean",
            plan.parts,
            slices.imbalance
        );
        if let Some(msg) = sparse_ids_warning(items.len(), counts.len(), per_row) {
            log::warn!("{msg}");
        }
    }
    let fine_of = |row: u32| slices.fine(row as u64);
    let slice = |item: u32| fine_of((item as u64 / per_row) as u32);
    let parts = plan.parts as u64;
    let part = |user: u32| (((mix64(user as u64 ^ 0x7061_7274) >> 32) * parts) >> 32) as usize;
    let keys: Vec<u32> = train.iter().map(|r| (part(r.user) * fine + slice(r.item)) as u32).collect();
    let mut start = vec![0usize; plan.parts * fine + 1];
    keys.iter().for_each(|&k| start[k as usize + 1] += 1);
    for b in 1..start.len() {
        start[b] += start[b - 1];
    }
    let mut next = start.clone();
    let mut sorted = vec![Rating { user: 0, item: 0, value: 0.0 }; train.len()];
    for (r, &k) in train.iter().zip(&keys) {
        sorted[next[k as usize]] = *r;
        next[k as usize] += 1;
    }
    *train = sorted;
    let mut slice_items = vec![Vec::new(); plan.slices];
    items.iter().for_each(|&(item, _)| slice_items[slice(item) / subs.max(1)].push(item));
    let mut fine_rows = vec![Vec::new(); fine];
    counts.iter().for_each(|&(row, _)| fine_rows[fine_of(row)].push(row as u64));
    Ok(Blocks { ranges: start.windows(2).map(|b| b[0]..b[1]).collect(), slice_items, fine_rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_counts_add_up_by_row_and_sparse_ids_are_told() {
        assert_eq!(counts_by_row(&[(1, 2), (15, 1), (16, 4), (40, 1)], 16), vec![(0, 3), (1, 4), (2, 1)]);
        assert_eq!(counts_by_row(&[(1, 2), (15, 1)], 1), vec![(1, 2), (15, 1)]);
        assert!(sparse_ids_warning(1600, 100, 16).is_none(), "dense ids fill their rows");
        let w = sparse_ids_warning(1000, 1000, 16).expect("one item a row");
        assert!(w.contains("16.0x") && w.contains("6% full"), "{w}");
        assert!(sparse_ids_warning(1000, 1000, 1).is_none(), "one item a row is what is asked for");
    }
}
