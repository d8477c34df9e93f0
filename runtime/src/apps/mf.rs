//! `mf`: matrix factorization by SGD (LazyTable §4, JBösen Appendix C, ESSP). Tables L (users x K)
//! and R (items x K); each worker owns a shard of the ratings (its byte range of the input) and,
//! per rating (u, i, x), reads L_u and R_i and adds the gradient step of
//! `(x - L_u.R_i)^2 + lambda (|L_u|^2 + |R_i|^2)` to both. A clock is 1/C of a pass over the
//! shard; the step size decays per pass. Quality: training RMSE, and held-out RMSE with
//! `--test-fraction` (a fixed hash of (user, item, seed) picks the held-out ratings, so the split
//! does not depend on the number of workers).

use super::driver::Iterative;
use super::options::{parse, CommonArgs};
use super::output::Output;
use super::rows_out::RowsPart;
use super::state::SavedState;
use crate::config::{mix64, TableConfig};
use crate::error::{PsError, Result};
use crate::input::{read_ratings, Rating, RatingFormat};
use crate::row::DenseRow;
use crate::{PsContext, TableHandle, Worker};
use clap::Parser;

#[derive(Parser, Debug, Clone)]
#[command(name = "mf", about = "Matrix factorization by SGD")]
pub struct MfArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[arg(long, default_value_t = 20)]
    pub rank: usize,
    #[arg(long, default_value_t = 0.05)]
    pub lambda: f32,
    /// Initial step size.
    #[arg(long = "lr", default_value_t = 0.015)]
    pub lr: f32,
    /// Step size multiplier per pass.
    #[arg(long, default_value_t = 0.95)]
    pub lr_decay: f32,
    /// Hold out this fraction of ratings for a test RMSE.
    #[arg(long, default_value_t = 0.0)]
    pub test_fraction: f64,
    /// Initial factor entries are uniform in [-s, s) with s = init-scale / sqrt(rank).
    #[arg(long, default_value_t = 0.5)]
    pub init_scale: f64,
    /// auto, tsv/csv, movielens or netflix.
    #[arg(long, default_value = "auto")]
    pub format: RatingFormat,
}

pub const L: u32 = 0;
pub const R: u32 = 1;
pub const OWNER: u32 = 2;
/// Row 0: (sum, count) of the training ratings, for the global mean.
pub const MEAN: u32 = 3;
/// Ratings of each set (training, held-out) an intermediate evaluation looks at, per worker.
pub const EVAL_SAMPLE: usize = 200_000;

/// Whether a rating is held out (independent of how the input is split).
pub fn held_out(r: &Rating, seed: u64, fraction: f64) -> bool {
    fraction > 0.0
        && (mix64(((r.user as u64) << 32 | r.item as u64) ^ seed) >> 11) as f64 / (1u64 << 53) as f64 <= fraction
}

/// SGD visiting order: users in a random order, each user's ratings together (in random order).
/// A user's row then stays in cache while its ratings are processed, which matters far more for
/// speed than a full shuffle does for convergence (LIBMF's block scheduling makes the same trade).
pub fn sgd_order(ratings: &mut [Rating], seed: u64) {
    ratings
        .sort_unstable_by_key(|r| (mix64(r.user as u64 ^ seed), mix64((r.item as u64) << 32 ^ r.user as u64 ^ seed)));
}

/// SGD step for one rating on plain slices; returns the error before the step.
#[inline]
pub fn sgd_step(l: &[f32], r: &[f32], x: f32, lr: f32, lambda: f32, dl: &mut [f32], dr: &mut [f32]) -> f32 {
    let e = x - dot(l, r);
    let n = l.len().min(r.len()).min(dl.len()).min(dr.len());
    let (l, r, dl, dr) = (&l[..n], &r[..n], &mut dl[..n], &mut dr[..n]);
    for k in 0..n {
        dl[k] = lr * (e * r[k] - lambda * l[k]);
        dr[k] = lr * (e * l[k] - lambda * r[k]);
    }
    e
}

/// Dot product with 8 independent partial sums, so the compiler can vectorise it (a single
/// running f32 sum cannot be reordered and runs at one add per FP-add latency).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

pub struct Mf {
    args: MfArgs,
}

/// A worker's ratings, model handles and SGD buffers.
pub struct MfWorker {
    gid: usize,
    train: Vec<Rating>,
    test: Vec<Rating>,
    /// The global mean rating: the model predicts mean + L_u . R_i.
    mu: f32,
    lt: TableHandle<DenseRow<f32>>,
    rt: TableHandle<DenseRow<f32>>,
    dl: DenseRow<f32>,
    dr: DenseRow<f32>,
    /// Every user and item this worker has ratings of (sorted), for batched prefetching before a
    /// full scan and for writing the factors.
    users: Vec<u64>,
    items: Vec<u64>,
    /// Reused buffer: the items of a clock.
    scratch: Vec<u64>,
}

// The ratings order is fixed by the seed, so the loop position (the driver's clock) is the data
// position: a worker saves no state of its own.
impl Iterative for Mf {
    const NAME: &'static str = "mf";
    const LOWER_IS_BETTER: bool = true;
    type State = MfWorker;

    fn from_args(args: &[String]) -> Result<Self> {
        let mut args: MfArgs = parse("mf", args)?;
        args.common.validate("mf", 10)?;
        if args.rank == 0 || !(0.0..1.0).contains(&args.test_fraction) {
            return Err(PsError::Config("mf: --rank must be positive and --test-fraction in [0, 1)".into()));
        }
        Ok(Mf { args })
    }

    fn common(&self) -> &CommonArgs {
        &self.args.common
    }

    fn objective(s: &[f64]) -> Vec<(&'static str, f64)> {
        let mut v = vec![("rmse", (s[0] / s[1].max(1.0)).sqrt())];
        if s[3] > 0.0 {
            v.push(("test_rmse", (s[2] / s[3]).sqrt()));
        }
        v
    }

    fn create_tables(&self, ctx: &mut PsContext) -> Result<()> {
        let k = self.args.rank;
        let hi = self.args.init_scale / (k as f64).sqrt();
        ctx.create_table(TableConfig::new(L, "users", "dense_f32", k).with_init(-hi, hi, self.args.common.seed))?;
        ctx.create_table(TableConfig::new(R, "items", "dense_f32", k).with_init(-hi, hi, self.args.common.seed ^ 1))?;
        ctx.create_table(TableConfig::new(MEAN, "mean", "dense_f64", 2))?;
        let workers = ctx.num_processes() * ctx.config().threads;
        ctx.create_table(TableConfig::new(OWNER, "owner", "dense_i64", workers))
    }

    fn start(&self, w: &mut Worker, saved: Option<&SavedState>) -> Result<MfWorker> {
        let (a, c) = (&self.args, &self.args.common);
        let (gid, nw) = (w.global_thread_id(), w.total_threads());
        let (ratings, st) = read_ratings(&c.input, gid, nw, a.format, c.bad_records())?;
        let (mut train, test): (Vec<Rating>, Vec<Rating>) =
            ratings.into_iter().partition(|r| !held_out(r, c.seed, a.test_fraction));
        log::debug!("worker {gid}: {} training, {} held-out ratings ({} skipped)", train.len(), test.len(), st.skipped);
        sgd_order(&mut train, c.seed ^ gid as u64);
        // The model predicts mean + L_u . R_i: centring keeps early gradients small, which matters
        // when many workers' stale updates add up on popular items.
        let mut mean_t = w.table::<DenseRow<f64>>(MEAN)?;
        // A resumed worker finds the mean in the restored tables.
        if saved.is_none() {
            let sum: f64 = train.iter().map(|r| r.value as f64).sum();
            mean_t.batch_inc(0, &[(0, sum), (1, train.len() as f64)])?;
            w.global_barrier()?;
        }
        let mu = {
            let m = mean_t.get(0)?;
            (m[0] / m[1].max(1.0)) as f32
        };
        let ids = |id: fn(&Rating) -> u32| {
            let mut v: Vec<u64> = train.iter().chain(&test).map(|r| id(r) as u64).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let (users, items) = (ids(|r| r.user), ids(|r| r.item));
        let k = a.rank;
        Ok(MfWorker {
            gid,
            lt: w.table(L)?,
            rt: w.table(R)?,
            dl: DenseRow(vec![0f32; k]),
            dr: DenseRow(vec![0f32; k]),
            train,
            test,
            mu,
            users,
            items,
            scratch: Vec::new(),
        })
    }

    /// Asks for every row this clock will read, in one batch: a clock covers 1/C of a pass, so
    /// most of its user rows were not read in the previous clock and the runtime's automatic
    /// prefetch (rows read last clock) does not cover them; without this each would be a
    /// blocking round trip on first read.
    fn begin_clock(&self, st: &mut MfWorker, clock: i64) -> Result<()> {
        let MfWorker { train, lt, rt, scratch, .. } = st;
        scratch.clear();
        for (_, range) in self.args.common.segments(clock, train.len()) {
            let mut last = None;
            for r in &train[range] {
                // Ratings are grouped by user (sgd_order).
                if last != Some(r.user) {
                    lt.refresh(r.user as u64);
                    last = Some(r.user);
                }
                scratch.push(r.item as u64);
            }
        }
        scratch.sort_unstable();
        scratch.dedup();
        scratch.iter().for_each(|&i| rt.refresh(i));
        Ok(())
    }

    fn run_clock(&self, st: &mut MfWorker, clock: i64) -> Result<()> {
        let a = &self.args;
        let MfWorker { train, mu, lt, rt, dl, dr, .. } = st;
        for (pass, range) in a.common.segments(clock, train.len()) {
            let lr = a.lr * a.lr_decay.powi(pass as i32);
            for r in &train[range] {
                // The rows are borrowed from the cache until the step is computed, then updated.
                {
                    let (lu, ri) = (lt.get(r.user as u64)?, rt.get(r.item as u64)?);
                    sgd_step(&lu, &ri, r.value - *mu, lr, a.lambda, dl, dr);
                }
                lt.inc(r.user as u64, dl);
                rt.inc(r.item as u64, dr);
            }
        }
        Ok(())
    }

    /// Squared errors and counts of the training and the held-out ratings. An evaluation reads
    /// every rated row fresh and costs about a pass, so intermediate samples (`full` false) use
    /// every k-th rating, at most `EVAL_SAMPLE` of each set per worker; the last is exact.
    fn evaluate(&self, st: &mut MfWorker, full: bool) -> Result<Vec<f64>> {
        let step = |n: usize| if full { 1 } else { n.div_ceil(EVAL_SAMPLE).max(1) };
        let (ts, hs) = (step(st.train.len()), step(st.test.len()));
        if ts == 1 && hs == 1 {
            st.users.iter().for_each(|&u| st.lt.refresh(u));
            st.items.iter().for_each(|&i| st.rt.refresh(i));
        } else {
            for r in st.train.iter().step_by(ts).chain(st.test.iter().step_by(hs)) {
                st.lt.refresh(r.user as u64);
                st.rt.refresh(r.item as u64);
            }
        }
        let mut s = vec![0f64; 4];
        for (set, base, k) in [(&st.train, 0, ts), (&st.test, 2, hs)] {
            for r in set.iter().step_by(k) {
                let p = st.mu + dot(&st.lt.get(r.user as u64)?, &st.rt.get(r.item as u64)?);
                s[base] += ((r.value - p) as f64).powi(2);
                s[base + 1] += 1.0;
            }
        }
        Ok(s)
    }

    /// Writes `user_factors` and `item_factors` (text: `id<TAB>v1<TAB>...<TAB>vK`; or `.npy`
    /// with `--output-format binary`). Each id is written by one of the workers that have it,
    /// picked by a hash of the id among them through the owner table, so the parts are balanced
    /// and are written in parallel.
    fn write_output(&self, st: &mut MfWorker, w: &mut Worker, out: &Output) -> Result<()> {
        let gid = st.gid;
        let mut owner = w.table::<DenseRow<i64>>(OWNER)?;
        // Owner rows: users at 2*id, items at 2*id+1.
        for &u in &st.users {
            owner.inc_col(2 * u, gid as u32, 1i64)?;
        }
        for &i in &st.items {
            owner.inc_col(2 * i + 1, gid as u32, 1i64)?;
        }
        w.global_barrier()?;
        // Ask for every owner row and factor row at once (packed fetches, one round trip per
        // server) instead of one blocking round trip per row.
        for (ids, t, tag) in [(&st.users, &mut st.lt, 0u64), (&st.items, &mut st.rt, 1)] {
            for &id in ids {
                owner.refresh(2 * id + tag);
                t.refresh(id);
            }
        }
        let format = self.args.common.output_format;
        for (name, ids, t, tag) in
            [("user_factors", &st.users, &mut st.lt, 0u64), ("item_factors", &st.items, &mut st.rt, 1)]
        {
            let mut part = RowsPart::new::<f32>(format, self.args.rank);
            for &id in ids {
                if elected(&owner.get(2 * id + tag)?, id) == Some(gid) {
                    part.push(id, &t.get(id)?);
                }
            }
            part.write(out, gid, name, gid)?;
        }
        if gid == 0 {
            out.write_part(0, "global_mean", 0, |f| writeln!(f, "{}", st.mu))?;
        }
        out.commit_when_all_wrote(w, "factors")
    }
}

/// The worker that writes row `id`: of the workers with a non-zero count in its owner row, the
/// one at a hashed position.
fn elected(owners: &[i64], id: u64) -> Option<usize> {
    let n = owners.iter().filter(|c| **c > 0).count();
    let k = (mix64(id) % n.max(1) as u64) as usize;
    owners.iter().enumerate().filter(|(_, c)| **c > 0).nth(k).map(|(g, _)| g)
}

/// RMSE of a snapshot's model (`mean + L_u . R_i`) over the ratings at `input`: (train RMSE,
/// train count, held-out RMSE, held-out count), split as the job split them. Offline evaluation.
pub fn eval_snapshot(
    store: &crate::snapshot::CheckpointStore,
    m: &crate::snapshot::Manifest,
    input: &str,
    format: RatingFormat,
    seed: u64,
    test_fraction: f64,
) -> Result<(f64, u64, f64, u64)> {
    use crate::snapshot::read::read_table;
    let lt = read_table::<DenseRow<f32>>(store, m, L)?;
    let rt = read_table::<DenseRow<f32>>(store, m, R)?;
    let mean = read_table::<DenseRow<f64>>(store, m, MEAN)?;
    let mu = mean.get(&0).map_or(0.0, |r| r[0] / r[1].max(1.0)) as f32;
    let (ratings, _) = read_ratings(input, 0, 1, format, crate::input::BadRecords::Fail)?;
    let mut s = [0f64; 4];
    for r in &ratings {
        // Rows never updated are still at their deterministic initial value on the servers; an
        // id missing from the snapshot was never seen in training, so it predicts the mean.
        let p = match (lt.get(&(r.user as u64)), rt.get(&(r.item as u64))) {
            (Some(u), Some(i)) => mu + dot(u, i),
            _ => mu,
        };
        let k = if held_out(r, seed, test_fraction) { 2 } else { 0 };
        s[k] += ((r.value - p) as f64).powi(2);
        s[k + 1] += 1.0;
    }
    let rmse = |a: f64, n: f64| if n > 0.0 { (a / n).sqrt() } else { f64::NAN };
    Ok((rmse(s[0], s[1]), s[1] as u64, rmse(s[2], s[3]), s[3] as u64))
}
