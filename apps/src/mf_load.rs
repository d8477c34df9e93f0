//! `mf`'s loading: a worker reads its share of the ratings (text or a table's columns), settles
//! the ids, moves the held-out ratings aside, takes the global mean, orders the ratings (by user
//! with local user factors, into item blocks when slices rotate) and opens its tables; a resumed
//! worker takes its training-error sums from its saved state.

use super::dictionary::{check_resumed, settle_ids};
use super::mf::{held_out, sgd_order, Mf, MfWorker, UserFactors, L, MEAN, R};
use super::mf_blocks::{into_blocks, Blocks};
use super::mf_implicit::Implicit;
use super::mf_recommend::{all_items, Recs};
use super::mf_shared::SharedItems;
use super::mf_users::{distinct_sorted, exchange_by_user, index_users, LocalUsers};
use super::rotation::plan_for_worker;
use super::shared_slice::{subs_per_thread, ProcessSlice, ThreadSlice};
use super::state::SavedState;
use ps_runtime::input::{read_interactions, read_rating_table_keyed, read_ratings, resolve_format, InputFormat};
use ps_runtime::input::{Rating, RatingColumns, RatingTable};
use ps_runtime::Worker;
use ps_runtime::{PsError, Result};
use std::sync::Arc;

impl Mf {
    /// Worker `gid`'s share (of `nw`) of the ratings: a table's columns (CSV, Parquet) or the
    /// text formats.
    fn read(&self, gid: usize, nw: usize) -> Result<RatingTable> {
        let (a, c) = (&self.args, &self.args.common);
        let named = a.user_col.is_some() || a.item_col.is_some() || a.rating_col.is_some();
        match resolve_format(&c.input, c.input_format, named)? {
            InputFormat::Text | InputFormat::Auto => {
                let read = if a.implicit { read_interactions } else { read_ratings };
                let (ratings, stats) = read(&c.input, gid, nw, a.format, c.bad_records())?;
                Ok(RatingTable { ratings, stats, users: Default::default(), items: Default::default() })
            }
            table => {
                let (u, i, r) = (a.user_col.as_deref(), a.item_col.as_deref(), a.rating_col.as_deref());
                let cols = if a.implicit { RatingColumns::interactions(u, i, r) } else { RatingColumns::new(u, i, r) };
                read_rating_table_keyed(&c.input, gid, nw, table, &cols, c.bad_records())
            }
        }
    }

    /// Worker `w`'s state at the start (or, `saved`, on resuming) of a job.
    pub(super) fn load(&self, w: &mut Worker, saved: Option<&SavedState>) -> Result<MfWorker> {
        let (a, c) = (&self.args, &self.args.common);
        let (gid, nw) = (w.global_thread_id(), w.total_threads());
        // Taken first: should this thread stop, the others are not left waiting at the steps.
        let threads = w.threads_per_process();
        // Slices rotating among processes are shared by a process's threads, one thread too.
        let by_process = self.rotates && self.names().by_process;
        let per = subs_per_thread(w.num_processes());
        let subs = if by_process { threads * per } else { 1 };
        let slice = by_process.then(|| self.slice.get_or_init(|| Arc::new(ProcessSlice::new(threads, per))).clone());
        let slice = slice.map(|s| ThreadSlice::new(s, w.thread_id(), w.wait_meter()));
        let t0 = std::time::Instant::now();
        let RatingTable { mut ratings, stats: st, users: user_keys, items: item_keys } = self.read(gid, nw)?;
        let skipped = super::bad_rows::settle(w, c, "mf", &st)?;
        if a.implicit {
            let n = super::mf_implicit::keep_positive(&mut ratings);
            if n > 0 {
                log::info!("worker {gid}: {n} interactions with a count of zero or less left out");
            }
        }
        // Ids that are not all in 0..2^32 (strings, 64-bit) are numbered job-wide.
        let dicts = [
            settle_ids(w, user_keys, &mut |f| ratings.iter_mut().for_each(|r| f(&mut r.user)))?,
            settle_ids(w, item_keys, &mut |f| ratings.iter_mut().for_each(|r| f(&mut r.item)))?,
        ];
        if let Some(s) = saved {
            check_resumed("mf", &[dicts[0].as_ref(), dicts[1].as_ref()], s.meta.get("ids"))?;
        }
        // Where loading goes (debug log): each phase's end, in seconds from the start.
        let mut phases = vec![("read", t0.elapsed().as_secs_f64())];
        if a.user_factors == UserFactors::Local {
            let read = ratings.len();
            ratings = exchange_by_user(w, ratings)?;
            phases.push(("exchange", t0.elapsed().as_secs_f64()));
            log::debug!("worker {gid}: read {read} ratings, owns {} after the exchange by user", ratings.len());
        }
        // The held-out ratings move out; the training ones stay in place (no second copy).
        let mut test: Vec<Rating> = ratings.extract_if(.., |r| held_out(r, c.seed, a.test_fraction)).collect();
        let mut train = ratings;
        log::debug!("worker {gid}: {} training, {} held-out ratings ({} skipped)", train.len(), test.len(), st.skipped);
        // The model predicts mean + L_u . R_i: centring keeps early gradients small, which matters
        // when many workers' stale updates add up on popular items.
        let mut mean_t = w.open(MEAN)?;
        // A resumed worker finds the mean in the restored tables. Implicit feedback has none.
        if saved.is_none() && !a.implicit {
            let sum: f64 = train.iter().map(|r| r.value as f64).sum();
            mean_t.batch_inc(0, &[(0, sum), (1, train.len() as f64)])?;
            w.global_barrier()?;
        }
        phases.push(("mean", t0.elapsed().as_secs_f64()));
        let mu = match a.implicit {
            true => 0.0,
            false => {
                let m = mean_t.get(0)?;
                (m[0] / m[1].max(1.0)) as f32
            }
        };
        let items = distinct_sorted(&[&train, &test], |r| r.item);
        let plan = plan_for_worker(a.schedule.rotation(), self.names(), w, R.id(), c)?;
        if plan.rotates() != self.rotates {
            return Err(PsError::Usage("mf: the job's shape and this worker's table disagree on rotating".into()));
        }
        let k = a.rank;
        let (users, local) = match a.user_factors {
            UserFactors::Local => {
                let users = index_users(&mut train, &mut test, c.seed ^ gid as u64);
                phases.push(("index", t0.elapsed().as_secs_f64()));
                let local = LocalUsers::new(w, &users, k, self.init(), saved.is_some())?;
                phases.push(("init", t0.elapsed().as_secs_f64()));
                (users, Some(local))
            }
            UserFactors::Table => {
                sgd_order(&mut train, c.seed ^ gid as u64);
                (distinct_sorted(&[&train, &test], |r| r.user), None)
            }
        };
        // In block order, each block's users still one after the other.
        let ir = self.item_rows();
        // Implicit feedback draws from its block's slice, a single one when one worker does not rotate.
        let blocked = plan.rotates() || a.implicit;
        let blocks = if blocked { into_blocks(w, &plan, ir.per_row, subs, &mut train)? } else { Blocks::default() };
        let shared = slice.map(|s| SharedItems::new(s, w.process_id(), &blocks.fine_rows));
        phases.push(("blocks", t0.elapsed().as_secs_f64()));
        log::info!(
            "worker {gid}: {} ratings of {} users and {} items loaded in {:.1}s",
            train.len() + test.len(),
            users.len(),
            items.len(),
            t0.elapsed().as_secs_f64()
        );
        let phases: Vec<String> = phases.iter().map(|(p, s)| format!("{p} {s:.2}")).collect();
        log::debug!("worker {gid}: loading phases ended at (s): {}", phases.join(", "));
        // Recommendations rank every item of the job, not only this worker's.
        let all_items = match self.args.recommend.is_some() || a.implicit {
            true => all_items(w, &items)?,
            false => Vec::new(),
        };
        Ok(MfWorker {
            gid,
            skipped,
            all_items,
            recs: Recs::default(),
            lt: w.open(L)?,
            rt: w.open(R)?,
            ir,
            train,
            test,
            mu,
            users,
            items,
            segment_rows: Default::default(),
            local,
            seen: match saved {
                Some(s) => saved_seen(&s.meta)?,
                None => [0.0; 2],
            },
            plan,
            blocks: blocks.ranges,
            shared,
            implicit: a.implicit.then(|| Implicit::new(blocks.slice_items, ir, gid == 0)),
            dicts,
        })
    }
}

/// The training errors summed since the last evaluation, from a saved state (zero in states
/// saved before they were kept).
fn saved_seen(meta: &serde_json::Value) -> Result<[f64; 2]> {
    let Some(v) = meta.get("seen") else { return Ok([0.0; 2]) };
    let bits = |i: usize| v.get(i).and_then(|x| x.as_u64()).map(f64::from_bits);
    match (bits(0), bits(1)) {
        (Some(a), Some(b)) => Ok([a, b]),
        _ => Err(PsError::codec(format!("mf: saved worker state has a malformed \"seen\": {v}"))),
    }
}
