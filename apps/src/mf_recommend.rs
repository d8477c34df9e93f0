//! `mf --recommend K`: for each of its users, a worker ranks every item of the job by predicted
//! rating (mean + dot product of the factors), leaves out the items the user rated in training,
//! and keeps the best K, as Spark's `recommendForAllUsers` does. With held-out ratings it also
//! measures precision@K, recall@K and NDCG@K (a held-out item of the user counts as relevant,
//! with binary gains).

use super::mf::{Mf, MfWorker};
use super::output::Output;
use super::rows_out::RowKeys;
use super::rows_parquet::IdColumn;
use ps_runtime::input::Rating;
use ps_runtime::Worker;
use ps_runtime::{PsError, Result};

impl Mf {
    /// Ranks every item of the job for each of this worker's users, keeps the lists for the
    /// output (`--recommend`), and returns the sums of precision@k, recall@k, their users and
    /// NDCG@k.
    pub(super) fn recommend_for(&self, st: &mut MfWorker, k: usize) -> Result<[f64; 4]> {
        let Some(local) = st.local.as_ref() else { return Ok([0.0; 4]) };
        st.rt.refresh_rows(st.ir.rows_of(&st.all_items));
        let mut factors = Vec::with_capacity(st.all_items.len() * self.args.rank);
        for &i in &st.all_items {
            st.rt.read_with(st.ir.row(i as u32), |row| factors.extend_from_slice(&row[st.ir.cols(i as u32)]))?;
        }
        let user = |j: usize| local.row(j as u32).to_vec();
        let (recs, sums) = recommend(k, st.mu, &st.users, user, &st.all_items, &factors, &st.train, &st.test);
        // Without --recommend (an implicit job's measures) the lists are not kept.
        st.recs = if self.args.recommend.is_some() { recs } else { Recs::default() };
        Ok(sums)
    }
}

/// The recommendations of one worker's users: `k` items per user, best first.
#[derive(Default)]
pub struct Recs {
    pub users: Vec<u64>,
    pub items: Vec<u64>,
    pub scores: Vec<f32>,
}

/// Every item rated anywhere in the job, sorted: each worker sends its own to all (collective).
pub fn all_items(w: &mut Worker, mine: &[u64]) -> Result<Vec<u64>> {
    let bytes: Vec<u8> = mine.iter().flat_map(|i| i.to_le_bytes()).collect();
    let got = w.exchange(vec![bytes; w.total_threads()])?;
    let mut all = Vec::new();
    for (from, b) in got.iter().enumerate() {
        if b.len() % 8 != 0 {
            return Err(PsError::codec(format!("mf: worker {from} sent {} bytes of item ids", b.len())));
        }
        all.extend(b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))));
    }
    all.sort_unstable();
    all.dedup();
    Ok(all)
}

/// Items of each local user, as positions in `items` (sorted ids): CSR offsets and positions.
fn by_user(ratings: &[Rating], users: usize, items: &[u64]) -> (Vec<usize>, Vec<u32>) {
    let mut start = vec![0usize; users + 1];
    ratings.iter().for_each(|r| start[r.user as usize + 1] += 1);
    for u in 0..users {
        start[u + 1] += start[u];
    }
    let mut at = start.clone();
    let mut pos = vec![0u32; ratings.len()];
    for r in ratings {
        // Every rated item is in `items` (the job's items); `unwrap_or` only keeps this total.
        let p = items.binary_search(&(r.item as u64)).unwrap_or(0);
        pos[at[r.user as usize]] = p as u32;
        at[r.user as usize] += 1;
    }
    (start, pos)
}

/// The top `k` items for each user `j` (id `users[j]`, factors `user(j)`), given every item's
/// factors (`factors`, `items.len()` rows of `rank`), and the sums of precision@k, recall@k, the
/// number of users with held-out ratings and NDCG@k. `train` and `test` index users by `j`.
#[allow(clippy::too_many_arguments)]
pub fn recommend(
    k: usize,
    mean: f32,
    users: &[u64],
    user: impl Fn(usize) -> Vec<f32>,
    items: &[u64],
    factors: &[f32],
    train: &[Rating],
    test: &[Rating],
) -> (Recs, [f64; 4]) {
    let rank = if items.is_empty() { 0 } else { factors.len() / items.len() };
    let (rated, rated_pos) = by_user(train, users.len(), items);
    let (held, held_pos) = by_user(test, users.len(), items);
    let mut recs = Recs::default();
    let (mut sums, mut scored) = ([0f64; 4], Vec::with_capacity(items.len()));
    for (j, &id) in users.iter().enumerate() {
        let u = user(j);
        scored.clear();
        scored.extend(
            factors.chunks_exact(rank.max(1)).enumerate().map(|(p, f)| (mean + super::mf_kernel::dot(&u, f), p as u32)),
        );
        for &p in &rated_pos[rated[j]..rated[j + 1]] {
            scored[p as usize].0 = f32::NEG_INFINITY;
        }
        // Best first; equal scores by item id, so the list does not depend on the workers.
        let best = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        // (A user may have rated an item twice: count what is left.)
        let n = k.min(scored.iter().filter(|s| s.0 != f32::NEG_INFINITY).count());
        if n < scored.len() && n > 0 {
            scored.select_nth_unstable_by(n - 1, best);
        }
        let top = &mut scored[..n];
        top.sort_unstable_by(best);
        for &(s, p) in top.iter() {
            recs.users.push(id);
            recs.items.push(items[p as usize]);
            recs.scores.push(s);
        }
        let test_items = &held_pos[held[j]..held[j + 1]];
        if !test_items.is_empty() && k > 0 {
            let hit: Vec<bool> = top.iter().map(|(_, p)| test_items.contains(p)).collect();
            let hits = hit.iter().filter(|&&h| h).count() as f64;
            sums[0] += hits / k as f64;
            sums[1] += hits / test_items.len() as f64;
            sums[2] += 1.0;
            sums[3] += ndcg(&hit, test_items.len().min(k));
        }
    }
    (recs, sums)
}

/// NDCG of a top list with binary gains (`hit`: whether each position is relevant), against the
/// ideal list of `relevant` hits first.
fn ndcg(hit: &[bool], relevant: usize) -> f64 {
    let gain = |r: usize| 1.0 / ((r + 2) as f64).log2();
    let dcg: f64 = hit.iter().enumerate().filter(|(_, &h)| h).map(|(r, _)| gain(r)).sum();
    let ideal: f64 = (0..relevant).map(gain).sum();
    if ideal > 0.0 {
        dcg / ideal
    } else {
        0.0
    }
}

/// The ranking measures of summed partials whose fields 4.. are `recommend`'s sums (precision,
/// recall, users, NDCG), when a full evaluation had users with held-out ratings.
pub fn ranking_values(s: &[f64]) -> Vec<(&'static str, f64)> {
    match s.get(4..8) {
        Some(&[p, r, users, n]) if users > 0.0 => {
            vec![("precision_at_k", p / users), ("recall_at_k", r / users), ("ndcg_at_k", n / users)]
        }
        _ => Vec::new(),
    }
}

/// `recommendations/part-NNNNN`: lines `user<TAB>item<TAB>score`, best first per user (also with
/// `--output-format binary`), or Parquet columns `user`, `item` (int32 where `narrow`, as the
/// factor tables' ids) and `score` (float).
pub fn write_recs(
    recs: &Recs,
    keys: [Option<RowKeys>; 2],
    narrow: [bool; 2],
    parquet: bool,
    out: &Output,
    gid: usize,
) -> Result<()> {
    use std::io::Write;
    let [users, items] = keys;
    if parquet {
        return out.write_file(gid, "recommendations", &format!("part-{gid:05}.snappy.parquet"), |f| {
            let u = IdColumn { ids: &recs.users, keys: users.as_ref(), narrow: narrow[0] };
            let i = IdColumn { ids: &recs.items, keys: items.as_ref(), narrow: narrow[1] };
            super::rows_parquet::write_recs(u, i, &recs.scores, f)
        });
    }
    // An id, or the input's own id when a dictionary numbered them.
    let name = |keys: &Option<RowKeys>, ids: &[u64], j: usize| match keys {
        Some(k) => k.keys[j].to_string(),
        None => ids[j].to_string(),
    };
    out.write_part(gid, "recommendations", gid, |f| {
        let mut text = Vec::with_capacity(recs.users.len() * 24);
        for (j, s) in recs.scores.iter().enumerate() {
            writeln!(text, "{}\t{}\t{s}", name(&users, &recs.users, j), name(&items, &recs.items, j))?;
        }
        f.write_all(&text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_leaves_out_rated_items_and_counts_held_out_hits() {
        // Items 10, 20, 30, 40 with one factor each: scores for a user factor 1 are 1, 2, 3, 4.
        let items = [10u64, 20, 30, 40];
        let factors = [1.0f32, 2.0, 3.0, 4.0];
        let r = |user: u32, item: u32| Rating { user, item, value: 1.0 };
        let (train, test) = (vec![r(0, 40), r(1, 10)], vec![r(0, 20), r(0, 10)]);
        let (recs, sums) = recommend(2, 0.5, &[7, 8], |_| vec![1.0], &items, &factors, &train, &test);
        assert_eq!(recs.users, vec![7, 7, 8, 8]);
        assert_eq!(recs.items, vec![30, 20, 40, 30], "best first, rated items left out");
        assert_eq!(recs.scores, vec![3.5, 2.5, 4.5, 3.5]);
        // User 7: one of its two held-out items in its top 2 (at rank 2); user 8 has none held out.
        let ndcg = (1.0 / 3f64.log2()) / (1.0 + 1.0 / 3f64.log2());
        assert_eq!(sums[..3], [0.5, 0.5, 1.0]);
        assert!((sums[3] - ndcg).abs() < 1e-12, "{sums:?}");
        let v = ranking_values(&[0.0, 0.0, 0.0, 0.0, sums[0], sums[1], sums[2], sums[3]]);
        assert_eq!(v.iter().map(|x| x.0).collect::<Vec<_>>(), ["precision_at_k", "recall_at_k", "ndcg_at_k"]);
    }
}
