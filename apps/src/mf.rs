//! `mf`: matrix factorization by SGD (LazyTable §4, JBösen Appendix C, ESSP). Tables L (users x K)
//! and R (items x K); each worker owns a shard of the ratings (its byte range of the input) and,
//! per rating (u, i, x), reads L_u and R_i and adds the gradient step of
//! `(x - L_u.R_i)^2 + lambda (|L_u|^2 + |R_i|^2)` to both. A clock is 1/C of a pass over the
//! shard; the step size decays per pass. Quality: training RMSE, and held-out RMSE with
//! `--test-fraction` (a fixed hash of (user, item, seed) picks the held-out ratings, so the split
//! does not depend on the number of workers).
//!
//! By default slices of the items rotate among the processes (`rotation`, `mf_blocks`): at each
//! clock a process trains on its ratings of one slice, which no other process touches within the
//! staleness window, its threads taking turns at the slice's sub-slices (`mf_shared`), so every
//! item row is changed by one worker at a time and the result does not depend on the number of
//! workers (data-parallel SGD, `--schedule ratings`, adds W workers'
//! changes of each popular item together and diverged from 3-4 workers on skewed data).
//!
//! The training RMSE is LIBMF's `tr_rmse`: the errors the SGD steps saw since the previous
//! sample, summed while training at no extra cost. An exact evaluation of the training ratings
//! costs about half a pass of reads, which on a 10-pass job was most of the time spent outside
//! training; the held-out RMSE, the quality that matters, is still computed from the model as it
//! is at the sample (from a fixed subsample between, exactly at the end). With `--target`, which
//! stops on the objective, and before any training, the training RMSE is evaluated exactly.
//!
//! `--implicit` trains on interactions instead of ratings, with BPR's loss (`mf_implicit`).

use super::dictionary::{fingerprints, Dictionary};
use super::driver::Iterative;
pub use super::mf_args::{MfArgs, MfSchedule, UserFactors};
pub use super::mf_blocks::{ItemRows, ITEMS_PER_ROW};
pub use super::mf_eval::eval_snapshot;
use super::mf_implicit::Implicit;
pub use super::mf_kernel::{dot, sgd_step_fn, sgd_update, SgdStep};
use super::mf_recommend::Recs;
use super::mf_shared::SharedItems;
use super::mf_users::{distinct_sorted, LocalUsers};
use super::options::{parse, CommonArgs};
use super::output::Output;
use super::rotation::{size_for_job, Names, Plan};
use super::shared_slice::ProcessSlice;
use super::state::SavedState;
use ps_runtime::input::Rating;
use ps_runtime::DenseRow;
use ps_runtime::{mix64, RowInit, TableKey};
use ps_runtime::{PsContext, TableHandle, Worker};
use ps_runtime::{PsError, Result};
use std::sync::{Arc, OnceLock};

const NAMES: Names = Names { app: "mf", rotate: "items", data: "ratings", by_process: true };

/// Clocks per pass of the data-parallel schedule (the rotating one runs one per slice).
const BASE_CPP: i64 = 2;

pub const L: TableKey<DenseRow<f32>> = TableKey::new(0);
pub const R: TableKey<DenseRow<f32>> = TableKey::new(1);
pub const OWNER: TableKey<DenseRow<i64>> = TableKey::new(2);
/// Row 0: (sum, count) of the training ratings, for the global mean.
pub const MEAN: TableKey<DenseRow<f64>> = TableKey::new(3);
/// Most ratings of each set (training, held-out) an intermediate evaluation looks at, per worker.
pub const EVAL_SAMPLE: usize = 200_000;

/// How many ratings ahead the SGD loop hints the item row it will update (`TableHandle::hint`),
/// and an evaluation prefetches the user row it will read:
/// item rows are visited in no order the hardware prefetcher can follow, and waiting for them
/// was about half of a step (5M ratings, 3 interleaved rounds: 0.45-0.48 s/pass without hints,
/// 0.29-0.37 at 6 ahead, 0.29-0.42 at 12).
pub(super) const HINT_AHEAD: usize = 8;

/// Whether a rating is held out (independent of how the input is split).
pub fn held_out(r: &Rating, seed: u64, fraction: f64) -> bool {
    fraction > 0.0
        && (mix64(((r.user as u64) << 32 | r.item as u64) ^ seed) >> 11) as f64 / (1u64 << 53) as f64 <= fraction
}

/// SGD visiting order: users in a random order, each user's ratings together (in random order).
/// A user's row then stays in cache while its ratings are processed, which matters far more for
/// speed than a full shuffle does for convergence (LIBMF's block scheduling makes the same trade).
pub fn sgd_order(ratings: &mut [Rating], seed: u64) {
    // The key is computed once per rating, not once per comparison.
    ratings.sort_by_cached_key(|r| (mix64(r.user as u64 ^ seed), mix64((r.item as u64) << 32 ^ r.user as u64 ^ seed)));
}

pub struct Mf {
    pub(super) args: MfArgs,
    /// Whether the job rotates item slices (set by `shape`).
    pub(super) rotates: bool,
    /// Rotating with local user factors: the process's item slice, which its threads share
    /// (`mf_shared`).
    pub(super) slice: OnceLock<Arc<ProcessSlice<Vec<f32>>>>,
}

impl Mf {
    /// Ratings of each set an intermediate evaluation looks at, per worker: all intermediate
    /// samples together cost at most about 5% of the training work (at least 10K ratings, so a
    /// sample still means something, and at most `EVAL_SAMPLE`).
    fn sample_budget(&self, train: usize) -> usize {
        let c = &self.args.common;
        let per = train as f64 * c.passes as f64 / (20.0 * c.samples.max(1) as f64);
        (per as usize).clamp(10_000, EVAL_SAMPLE)
    }

    /// The (pass, ratings range) segments clock `clock` trains on: its block when item slices
    /// rotate, else its part of the ratings.
    fn ranges(&self, st: &MfWorker, clock: i64) -> Vec<(i64, std::ops::Range<usize>)> {
        let mut segs = self.args.common.segments(clock, st.train.len());
        if st.plan.rotates() || st.implicit.is_some() {
            // One clock is at most one pass when rotating (or implicit): its one segment is the
            // clock's block.
            segs.iter_mut().for_each(|(_, r)| *r = st.blocks[st.plan.block_at(st.gid, clock)].clone());
        }
        segs
    }

    /// Item slices rotate among processes, whose threads share a slice (`mf_shared`), when each
    /// thread keeps its own users' factors; among all threads otherwise (implicit feedback
    /// draws its negatives per thread, table users are read through the table).
    pub(super) fn names(&self) -> Names {
        let by_process = self.args.user_factors == UserFactors::Local && !self.args.implicit;
        Names { by_process, ..NAMES }
    }

    pub(super) fn item_rows(&self) -> ItemRows {
        ItemRows { per_row: if self.rotates { ITEMS_PER_ROW } else { 1 }, rank: self.args.rank }
    }

    /// Initial factor entries: uniform in [-s, s) with s = init-scale / sqrt(rank), seeded per row.
    pub(super) fn init(&self) -> RowInit {
        let hi = self.args.init_scale / (self.args.rank as f64).sqrt();
        RowInit { low: -hi, high: hi, seed: self.args.common.seed }
    }
}

/// A worker's ratings, model handles and SGD buffers.
pub struct MfWorker {
    pub(super) gid: usize,
    /// `--recommend`: every item of the job (sorted), and the last full evaluation's lists.
    pub(super) all_items: Vec<u64>,
    pub(super) recs: Recs,
    /// The job's input rows skipped at load.
    pub(super) skipped: u64,
    pub(super) train: Vec<Rating>,
    pub(super) test: Vec<Rating>,
    /// The global mean rating: the model predicts mean + L_u . R_i.
    pub(super) mu: f32,
    pub(super) lt: TableHandle<DenseRow<f32>>,
    pub(super) rt: TableHandle<DenseRow<f32>>,
    /// Where each item's factors are in `rt`.
    pub(super) ir: ItemRows,
    /// Every user and item this worker has ratings of, for batched prefetching before a full
    /// scan and for writing the factors (sorted; local users in visiting order instead).
    pub(super) users: Vec<u64>,
    pub(super) items: Vec<u64>,
    /// The users (table mode) and items each segment of the ratings reads, by segment.
    pub(super) segment_rows: rustc_hash::FxHashMap<(usize, usize), (Vec<u64>, Vec<u64>)>,
    /// `--user-factors local`: the users' factors, and the ratings' `user` fields index `users`.
    pub(super) local: Option<LocalUsers>,
    /// The dictionaries of the user and item ids, when the input's ids needed one.
    pub(super) dicts: [Option<Dictionary>; 2],
    /// Squared errors and count of the training ratings the SGD steps visited since the last
    /// evaluation (each error taken before its step).
    pub(super) seen: [f64; 2],
    /// Which block of the ratings each clock trains on, and (rotating) the blocks' ranges.
    pub(super) plan: Plan,
    pub(super) blocks: Vec<std::ops::Range<usize>>,
    /// Rotating among processes: this thread's part in its process's item slice.
    pub(super) shared: Option<SharedItems>,
    /// `--implicit`: the negatives' pools.
    pub(super) implicit: Option<Implicit>,
}

// The ratings order is fixed by the seed, so the loop position (the driver's clock) is the data
// position: a worker saves only the training errors summed since the last evaluation.
impl Iterative for Mf {
    const NAME: &'static str = "mf";
    const LOWER_IS_BETTER: bool = true;
    type State = MfWorker;

    /// `--implicit` runs under BSP: it halves the item slices its negatives are drawn from
    /// (see `mf_implicit`).
    fn consistency(&self) -> Option<ps_runtime::Consistency> {
        self.args.implicit.then_some(ps_runtime::Consistency::Bsp)
    }

    fn from_args(args: &[String]) -> Result<Self> {
        let mut args: MfArgs = parse("mf", args)?;
        // Two clocks per pass by default: every clock exchanges every item row a worker rated
        // (rank x items floats each way), so on a few million ratings ten clocks per pass spent
        // as long communicating as computing (5M ratings, rank 100, 2 workers: 2.8 s/pass at
        // 10, 1.3 at 2, 1.0 at 1), while held-out RMSE after a fixed number of passes moved by
        // about 0.1% (MovieLens 100K, 40 passes: 0.9255 at 10, 0.9266 at 2, 0.9283 at 1).
        // With rotating item slices, the smallest multiple of workers x (staleness + 1), one for a
        // lone worker (`shape`).
        args.common.validate("mf", BASE_CPP)?;
        if args.rank == 0 || !(0.0..1.0).contains(&args.test_fraction) {
            return Err(PsError::Config("mf: --rank must be positive and --test-fraction in [0, 1)".into()));
        }
        if args.recommend.is_some() && args.user_factors == UserFactors::Table {
            return Err(PsError::Config("mf: --recommend needs --user-factors local (the default)".into()));
        }
        super::mf_implicit::check_args(&args)?;
        Ok(Mf { args, rotates: false, slice: OnceLock::new() })
    }

    fn shape(&mut self, job: &ps_runtime::JobShape) -> Result<()> {
        self.rotates = size_for_job(self.args.schedule.rotation(), self.names(), BASE_CPP, job, &mut self.args.common)?;
        // One worker needs no rotation: its negatives come from every item.
        if self.args.implicit && !self.rotates && (job.workers() > 1 || self.args.common.multi_pass()) {
            return Err(PsError::Config(
                "mf: --implicit draws its negatives from the item slice a worker holds, so it needs the rotating \
                 schedule when it has several workers, and this job does not rotate: that takes a staleness \
                 bound (not async) and one clock per pass or less"
                    .into(),
            ));
        }
        Ok(())
    }

    fn common(&self) -> &CommonArgs {
        &self.args.common
    }

    fn objective(s: &[f64]) -> Vec<(&'static str, f64)> {
        let mut v = vec![("rmse", (s[0] / s[1].max(1.0)).sqrt())];
        if s[3] > 0.0 {
            v.push(("test_rmse", (s[2] / s[3]).sqrt()));
        }
        // `--recommend` at a full evaluation: precision, recall and NDCG at K.
        v.extend(super::mf_recommend::ranking_values(s));
        v
    }

    fn objective_fn(&self) -> fn(&[f64]) -> Vec<(&'static str, f64)> {
        match self.args.implicit {
            true => super::mf_implicit::objective,
            false => Self::objective,
        }
    }

    fn create_tables(&self, ctx: &mut PsContext) -> Result<()> {
        let k = self.args.rank;
        let RowInit { low, high, seed } = self.init();
        ctx.create_table(L.config("users", k).with_init(low, high, seed))?;
        // Rotating slices: each clock's item rows are asked for ahead (`begin_clock`), when their
        // turn comes, rather than prefetched or pushed after every change.
        let announced = self.rotates && self.args.refresh_ahead;
        ctx.create_table(
            R.config("items", k * self.item_rows().per_row as usize)
                .with_init(low, high, seed ^ 1)
                .with_announced_reads(announced),
        )?;
        ctx.create_table(MEAN.config("mean", 2))?;
        let workers = ctx.num_processes() * ctx.config().threads;
        ctx.create_table(OWNER.config("owner", workers))
    }

    fn start(&self, w: &mut Worker, saved: Option<&SavedState>) -> Result<MfWorker> {
        self.load(w, saved)
    }

    /// Asks for every row this clock will read, in one batch: a clock covers 1/C of a pass, so
    /// most of its user rows were not read in the previous clock and the runtime's automatic
    /// prefetch (rows read last clock) does not cover them; without this each would be a
    /// blocking round trip on first read.
    fn begin_clock(&self, st: &mut MfWorker, clock: i64) -> Result<()> {
        if !self.args.refresh_ahead {
            return Ok(());
        }
        // Rotating: also the next clock's block, which arrives while this one trains (its
        // previous holder is done with it once the slowest worker finishes this clock - s).
        let st_rotates = st.plan.rotates();
        let ahead = if st_rotates { 1 } else { 0 };
        for ahead in (0..=ahead).filter(|a| clock + a < self.args.common.total_clocks()) {
            if let Some(imp) = &st.implicit {
                imp.fetch_block(&mut st.rt, &st.plan, &st.blocks, st.gid, clock + ahead, ahead);
                continue;
            }
            if let Some(sh) = &st.shared {
                // This thread loads its sub-slice for the whole process.
                st.rt.fetch_ahead_rows(sh.rows_at(&st.plan, clock + ahead).iter().flatten().copied(), ahead);
                continue;
            }
            let ranges = self.ranges(st, clock + ahead);
            let MfWorker { train, lt, rt, segment_rows, local, ir, .. } = &mut *st;
            for (_, range) in ranges {
                // The ratings' order is fixed, so a segment's rows are the same every pass:
                // computed once (a sort of the segment's items) instead of every clock.
                let (users, items) = segment_rows.entry((range.start, range.end)).or_insert_with(|| {
                    let seg = &train[range.clone()];
                    let users = match local {
                        Some(_) => Vec::new(),
                        None => {
                            // Ratings are grouped by user (sgd_order).
                            let mut users: Vec<u64> = seg.iter().map(|r| r.user as u64).collect();
                            users.dedup();
                            users
                        }
                    };
                    // Linear, through an id-indexed array: sorting the segment's item ids took
                    // seconds at Netflix size.
                    (users, ir.rows_of(&distinct_sorted(&[seg], |r| r.item)))
                });
                if ahead == 0 && !st_rotates {
                    lt.refresh_rows(users.iter().copied());
                    rt.refresh_rows(items.iter().copied());
                } else {
                    // What the previous clock asked for ahead is not asked for again.
                    lt.fetch_ahead_rows(users.iter().copied(), ahead);
                    rt.fetch_ahead_rows(items.iter().copied(), ahead);
                }
            }
        }
        Ok(())
    }

    fn rows_skipped(st: &MfWorker) -> Option<u64> {
        Some(st.skipped)
    }

    fn run_clock(&self, st: &mut MfWorker, clock: i64) -> Result<()> {
        let a = &self.args;
        let ranges = self.ranges(st, clock);
        if st.implicit.is_some() {
            return self.run_implicit_clock(st, clock, ranges);
        }
        if st.shared.is_some() {
            // One segment: the clock's slice.
            let pass = ranges.first().map_or(0, |(p, _)| *p);
            return super::mf_shared::run_steps(st, clock, a.lr() * a.lr_decay.powi(pass as i32), a.lambda());
        }
        let MfWorker { train, mu, lt, rt, local, seen, ir, .. } = st;
        let step = sgd_step_fn();
        for (pass, range) in ranges {
            let lr = a.lr() * a.lr_decay.powi(pass as i32);
            let mut sse = 0f64;
            // Rows are changed in place (get_mut): the runtime hands on the difference.
            if let Some(local) = local.as_mut() {
                let seg = &train[range.clone()];
                for (n, r) in seg.iter().enumerate() {
                    if let Some(next) = seg.get(n + HINT_AHEAD) {
                        rt.hint_cols(ir.row(next.item), ir.cols(next.item));
                        // Users are visited in order but sparsely (a clock holds only the ratings
                        // of one item slice), which the hardware prefetcher does not follow.
                        ps_runtime::prefetch(local.row(next.user));
                    }
                    let mut items = rt.get_mut(ir.row(r.item))?;
                    let e = step(local.row_mut(r.user), &mut items[ir.cols(r.item)], r.value - *mu, lr, a.lambda());
                    sse += (e * e) as f64;
                }
            } else {
                let seg = &train[range.clone()];
                for (n, r) in seg.iter().enumerate() {
                    if let Some(next) = seg.get(n + HINT_AHEAD) {
                        lt.hint(next.user as u64);
                        rt.hint_cols(ir.row(next.item), ir.cols(next.item));
                    }
                    let mut lu = lt.get_mut(r.user as u64)?;
                    let mut items = rt.get_mut(ir.row(r.item))?;
                    let e = step(&mut lu, &mut items[ir.cols(r.item)], r.value - *mu, lr, a.lambda());
                    sse += (e * e) as f64;
                }
            }
            seen[0] += sse;
            seen[1] += range.len() as f64;
        }
        Ok(())
    }

    /// Squared errors and counts of the training and the held-out ratings. The training part is
    /// what the SGD steps saw since the last evaluation (see the module docs) unless `--target`
    /// is set or nothing was trained yet. Evaluating a set reads every rated row fresh and costs
    /// about half a pass, so intermediate samples (`full` false) use every k-th rating of each
    /// set, at most `sample_budget` of them; the last is exact. The subsample is the same at
    /// every sample, so the curve moves only with the model.
    fn evaluate(&self, st: &mut MfWorker, full: bool) -> Result<Vec<f64>> {
        let budget = self.sample_budget(st.train.len());
        let step = |n: usize| if full { 1 } else { n.div_ceil(budget).max(1) };
        let progressive = self.args.common.target.is_none() && st.seen[1] > 0.0;
        let mut s = vec![0f64; 4];
        if progressive {
            s[..2].copy_from_slice(&st.seen);
        }
        st.seen = [0.0; 2];
        if st.implicit.is_some() {
            return self.evaluate_implicit(st, s, progressive, [step(st.train.len()), step(st.test.len())], full);
        }
        let MfWorker { train, test, lt, rt, users, items, local, mu, ir, .. } = st;
        let train: &[Rating] = if progressive { &[] } else { train };
        let (ts, hs) = (step(train.len()), step(test.len()));
        // Items are few and nearly all rated by every worker: refresh them all.
        rt.refresh_rows(ir.rows_of(items));
        if local.is_none() {
            if ts == 1 && hs == 1 {
                lt.refresh_rows(users.iter().copied());
            } else {
                lt.refresh_rows(train.iter().step_by(ts).chain(test.iter().step_by(hs)).map(|r| r.user as u64));
            }
        }
        // The held-out ratings are in item order with local users (index_users): an item row is
        // looked up and copied once per run of its ratings, and the user rows, whose order no
        // hardware prefetcher guesses, are asked for a few ratings ahead.
        for (set, base, k) in [(train, 0, ts), (&test[..], 2, hs)] {
            let (mut item, mut ri) = (None, Vec::new());
            for (n, r) in set.iter().step_by(k).enumerate() {
                if item != Some(r.item) {
                    ri.clear();
                    rt.read_with(ir.row(r.item), |row| ri.extend_from_slice(&row[ir.cols(r.item)]))?;
                    item = Some(r.item);
                }
                let p = *mu
                    + match &local {
                        Some(l) => {
                            if let Some(next) = set.get((n + HINT_AHEAD) * k) {
                                ps_runtime::prefetch(l.row(next.user));
                            }
                            dot(l.row(r.user), &ri)
                        }
                        None => dot(&lt.get(r.user as u64)?, &ri),
                    };
                s[base] += ((r.value - p) as f64).powi(2);
                s[base + 1] += 1.0;
            }
        }
        if let (Some(k), true) = (self.args.recommend, full) {
            s.extend(self.recommend_for(st, k)?);
        }
        Ok(s)
    }

    fn save(&self, st: &MfWorker) -> (serde_json::Value, Vec<u8>) {
        // As bits: a resumed job continues the sums exactly.
        let ids = fingerprints(&[st.dicts[0].as_ref(), st.dicts[1].as_ref()]);
        (serde_json::json!({"seen": [st.seen[0].to_bits(), st.seen[1].to_bits()], "ids": ids}), Vec::new())
    }

    /// Local user factors go into the users table (the change since the last write).
    fn sync_tables(&self, st: &mut MfWorker) -> Result<()> {
        if let Some(l) = st.local.as_mut() {
            l.sync(&mut st.lt, &st.users);
        }
        Ok(())
    }

    /// Writes the factors, and the recommendations with `--recommend` (`mf_output`).
    fn write_output(&self, st: &mut MfWorker, w: &mut Worker, out: &Output) -> Result<()> {
        self.write_model(st, w, out)
    }
}
