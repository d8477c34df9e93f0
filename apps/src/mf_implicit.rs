//! `mf --implicit`: matrix factorization of implicit feedback (clicks, plays, purchases) with
//! BPR's pairwise logistic loss (Rendle et al. 2009; LIBMF's one-class MF, `-f 10`, is the same
//! loss). For each interaction (u, i) and each of `--negatives` items j drawn at random, the
//! score u.i is pushed above u.j. A table's count column weighs an interaction's steps by
//! `1 + ln(count)`; a count of zero or less is no interaction and is left out at load.
//!
//! Negatives are drawn from the item slice that the worker holds in the clock (`mf_blocks`): the
//! rotation guarantees that no other worker changes those rows within the staleness window, the
//! same guarantee the positive rows have; LIBMF draws them within its blocks too. A job of one
//! worker does not rotate and draws from every item. Each item is then ranked only against the
//! items of its slice, and there are workers x (staleness + 1) slices, so the lists lose some
//! quality as workers are added; `--implicit` therefore runs under BSP unless the job names a
//! consistency model (half the slices of ESSP's default staleness 1). An item the user chose in
//! the slice is never taken for a negative (the user's interactions in a slice are the run of its
//! ratings in the block).
//!
//! The objective is the mean BPR loss of the pairs the steps saw (`bpr_loss`, like MF's
//! `tr_rmse`), and with `--test-fraction` a sampled held-out AUC (`test_auc`: each held-out item
//! against one item of the job picked by a hash, the same at every sample) and, at the end,
//! precision, recall and NDCG at K of the top-K lists (`--recommend K`, else K = 10).

use super::mf::{Mf, MfArgs, MfWorker};
use super::mf_blocks::ItemRows;
use super::mf_kernel::{bpr_step_fn, dot, logistic_loss};
use super::mf_users::LocalUsers;
use super::rotation::Plan;
use ps_runtime::input::Rating;
use ps_runtime::mix64;
use ps_runtime::DenseRow;
use ps_runtime::TableHandle;
use ps_runtime::{PsError, Result};

/// K of the ranking measures when `--recommend` does not give one.
pub const DEFAULT_K: usize = 10;
/// Draws of a negative before a user's step is skipped (the slice holds few items it has not
/// chosen).
const TRIES: usize = 8;

/// Items a slice below which the ranking quality is known to suffer (see `small_slices_warning`).
const SMALL_SLICE: usize = 500;

/// Negatives come from the slice a worker holds, and the slices are workers x (staleness + 1):
/// with many workers and few items, each slice holds few items and items are ranked against
/// few others. Measured on MovieLens 100K (1,682 items, rank 32, 20 passes, 3 seeds, NDCG@10):
/// under BSP (the default for `--implicit`, staleness 0) 0.272 at 1 worker (every item), 0.259 at
/// 8 (8 slices), 0.249 at 16 (16 slices of about 105 items); under ESSP with staleness 1 (twice
/// the slices) 0.248 at 8 and 0.166 at 16.
fn small_slices_warning(slices: usize, per_slice: usize) -> String {
    format!(
        "mf --implicit: {slices} item slices of about {per_slice} items each: negatives are drawn from the slice a \
         worker holds, and with few items a slice the lists lose quality (MovieLens 100K, 16 slices of 105 items: \
         NDCG@10 0.249 against 0.272 at one worker; 32 slices: 0.166); fewer workers (or threads), or bsp if another \
         --consistency was chosen, give larger slices"
    )
}

/// A worker's implicit-feedback state: the job's items of each rotating slice and the table rows
/// holding them, and the buffer a negative's factors are staged in (it may share a table row
/// with the positive).
pub struct Implicit {
    pub slice_items: Vec<Vec<u32>>,
    slice_rows: Vec<Vec<u64>>,
    scratch: Vec<f32>,
}

impl Implicit {
    /// `first`: whether this is the job's first worker, which says when the slices are small.
    pub fn new(slice_items: Vec<Vec<u32>>, ir: ItemRows, first: bool) -> Self {
        let items: usize = slice_items.iter().map(Vec::len).sum();
        let per_slice = items / slice_items.len().max(1);
        if first && slice_items.len() > 2 && per_slice < SMALL_SLICE {
            log::warn!("{}", small_slices_warning(slice_items.len(), per_slice));
        }
        let slice_rows =
            slice_items.iter().map(|s| super::rotation::rows_of_ids(s.iter().map(|&i| i as u64), ir.per_row)).collect();
        Implicit { slice_items, slice_rows, scratch: Vec::new() }
    }

    /// Asks `ahead` clocks ahead for every row of the slice of `clock`'s block: a negative may
    /// be any item of the slice. Nothing when this worker has no interactions in the block.
    pub fn fetch_block(
        &self,
        rt: &mut TableHandle<DenseRow<f32>>,
        plan: &Plan,
        blocks: &[std::ops::Range<usize>],
        gid: usize,
        clock: i64,
        ahead: i64,
    ) {
        let block = plan.block_at(gid, clock);
        if !blocks[block].is_empty() {
            rt.fetch_ahead_rows(self.slice_rows[block % plan.slices].iter().copied(), ahead);
        }
    }
}

impl Mf {
    /// The work of clock `clock` of an implicit job: BPR steps over its block (`ranges`: the
    /// block's one segment and its pass).
    pub(super) fn run_implicit_clock(
        &self,
        st: &mut MfWorker,
        clock: i64,
        ranges: Vec<(i64, std::ops::Range<usize>)>,
    ) -> Result<()> {
        let a = &self.args;
        let block = st.plan.block_at(st.gid, clock);
        let MfWorker { train, rt, local, seen, ir, implicit, plan, gid, .. } = st;
        let (Some(local), Some(imp)) = (local.as_mut(), implicit.as_mut()) else { return Ok(()) };
        let mut rng = Rng::new(a.common.seed ^ ((*gid as u64) << 40) ^ clock as u64);
        let Implicit { slice_items, scratch, .. } = imp;
        let pool = &slice_items[block % plan.slices];
        for (pass, range) in ranges {
            let step = Step { lr: a.lr() * a.lr_decay.powi(pass as i32), lambda: a.lambda(), negatives: a.negatives };
            let model = Model { local: &mut *local, rt: &mut *rt, ir: *ir };
            let [loss, pairs] = train_block(&train[range], pool, model, scratch, &step, &mut rng)?;
            seen[0] += loss;
            seen[1] += pairs;
        }
        Ok(())
    }

    /// The partial sums of an implicit job's evaluation (see [`objective`]): `s` holds the
    /// training loss the steps saw when `progressive`; `steps` are the training and held-out
    /// sampling steps.
    pub(super) fn evaluate_implicit(
        &self,
        st: &mut MfWorker,
        mut s: Vec<f64>,
        progressive: bool,
        steps: [usize; 2],
        full: bool,
    ) -> Result<Vec<f64>> {
        let seed = self.args.common.seed;
        let MfWorker { train, test, rt, local, ir, all_items, .. } = &mut *st;
        let Some(local) = local.as_ref() else { return Ok(s) };
        // Any item of the job may be a held-out item's other item.
        rt.refresh_rows(ir.rows_of(all_items));
        if !progressive {
            let t = sampled_pairs(train, steps[0], all_items, seed, local, rt, *ir)?;
            (s[0], s[1]) = (t[0], t[2]);
        }
        let h = sampled_pairs(test, steps[1], all_items, seed, local, rt, *ir)?;
        (s[2], s[3]) = (h[1], h[2]);
        if full && (!st.test.is_empty() || self.args.recommend.is_some()) {
            s.extend(self.recommend_for(st, self.args.recommend.unwrap_or(DEFAULT_K))?);
        }
        Ok(s)
    }
}

/// The rows a block's steps change: the worker's user factors and the items table.
pub struct Model<'a> {
    pub local: &'a mut LocalUsers,
    pub rt: &'a mut TableHandle<DenseRow<f32>>,
    pub ir: ItemRows,
}

/// Checks `mf --implicit`'s settings; what the rotating schedule needs is checked by `shape`.
pub fn check_args(a: &MfArgs) -> Result<()> {
    if a.implicit && a.negatives == 0 {
        return Err(PsError::Config("mf: --negatives must be at least 1".into()));
    }
    if a.implicit && a.user_factors == super::mf::UserFactors::Table {
        return Err(PsError::Config("mf: --implicit needs --user-factors local (the default)".into()));
    }
    Ok(())
}

/// Keeps the interactions with a positive count and returns how many were left out.
pub fn keep_positive(ratings: &mut Vec<Rating>) -> usize {
    let before = ratings.len();
    ratings.retain(|r| r.value > 0.0);
    before - ratings.len()
}

/// The weight of an interaction's steps: 1 for a count up to 1, growing as its logarithm.
#[inline]
fn weight(count: f32) -> f32 {
    1.0 + count.max(1.0).ln()
}

/// A small, fast generator (xorshift64*), seeded per worker and clock.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(mix64(seed) | 1)
    }

    #[inline]
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (((self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) * n as u64) >> 32) as usize
    }
}

/// The step's settings.
pub struct Step {
    pub lr: f32,
    pub lambda: f32,
    pub negatives: usize,
}

/// Trains on `seg` (one block: a run of ratings per user, all of items in `pool`), drawing the
/// negatives from `pool`. Returns the summed loss and the number of pairs.
pub fn train_block(
    seg: &[Rating],
    pool: &[u32],
    model: Model<'_>,
    scratch: &mut Vec<f32>,
    step: &Step,
    rng: &mut Rng,
) -> Result<[f64; 2]> {
    let Model { local, rt, ir } = model;
    let bpr = bpr_step_fn();
    let (mut loss, mut pairs) = (0f64, 0f64);
    if pool.is_empty() {
        return Ok([loss, pairs]);
    }
    let mut run = 0..0;
    for (n, r) in seg.iter().enumerate() {
        if n >= run.end {
            let len = seg[n..].iter().take_while(|x| x.user == r.user).count();
            run = n..n + len;
        }
        if let Some(next) = seg.get(n + 8) {
            rt.hint_cols(ir.row(next.item), ir.cols(next.item));
        }
        let chosen = &seg[run.clone()];
        for _ in 0..step.negatives {
            let Some(j) = (0..TRIES).map(|_| pool[rng.below(pool.len())]).find(|&j| chosen.iter().all(|x| x.item != j))
            else {
                continue;
            };
            // The negative's factors go through the buffer: it may share the positive's row.
            scratch.clear();
            scratch.extend_from_slice(&rt.get(ir.row(j))?[ir.cols(j)]);
            let mut items = rt.get_mut(ir.row(r.item))?;
            let (user, chosen_item) = (local.row_mut(r.user), &mut items[ir.cols(r.item)]);
            let l = bpr(user, chosen_item, scratch, step.lr, step.lambda, weight(r.value));
            drop(items);
            rt.get_mut(ir.row(j))?[ir.cols(j)].copy_from_slice(scratch);
            loss += l as f64;
            pairs += 1.0;
        }
    }
    Ok([loss, pairs])
}

/// The item of the job that held-out (or sampled training) rating `r` is compared with: fixed by
/// a hash, so every sample compares the same pairs and the curve moves only with the model.
fn other_item(r: &Rating, all_items: &[u64], seed: u64) -> Option<u32> {
    let n = all_items.len();
    if n < 2 {
        return None;
    }
    let h = mix64(((r.user as u64) << 32 | r.item as u64) ^ seed ^ 0x6e65_6761);
    let j = all_items[(((h >> 32) * n as u64) >> 32) as usize] as u32;
    (j != r.item).then_some(j)
}

/// Sums of the BPR loss over every `step`-th rating of `set` against its hashed other item, and
/// of the pairs it ranks right (an AUC estimate), and their count: `[loss, right, count]`.
pub fn sampled_pairs(
    set: &[Rating],
    step: usize,
    all_items: &[u64],
    seed: u64,
    local: &LocalUsers,
    rt: &mut TableHandle<DenseRow<f32>>,
    ir: ItemRows,
) -> Result<[f64; 3]> {
    let mut s = [0f64; 3];
    let mut ri = Vec::new();
    for r in set.iter().step_by(step.max(1)) {
        let Some(j) = other_item(r, all_items, seed) else { continue };
        let u = local.row(r.user);
        ri.clear();
        rt.read_with(ir.row(r.item), |row| ri.extend_from_slice(&row[ir.cols(r.item)]))?;
        let x = dot(u, &ri) - rt.read_with(ir.row(j), |row| dot(u, &row[ir.cols(j)]))?;
        s[0] += logistic_loss(x) as f64;
        s[1] += if x > 0.0 { 1.0 } else { 0.0 };
        s[2] += 1.0;
    }
    Ok(s)
}

/// The named values of an implicit job's summed partials: `[loss, pairs, right, held-out pairs,
/// precision, recall, users, ndcg]` (the last four at a full evaluation with held-out data).
pub fn objective(s: &[f64]) -> Vec<(&'static str, f64)> {
    let mut v = vec![("bpr_loss", s[0] / s[1].max(1.0))];
    if s[3] > 0.0 {
        v.push(("test_auc", s[2] / s[3]));
    }
    v.extend(super::mf_recommend::ranking_values(s));
    v
}
