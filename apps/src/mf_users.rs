//! MF's user factors kept in the worker (`--user-factors local`, the default). Each user's
//! ratings all go to one worker (picked by a hash of the user id, through `Worker::exchange` at
//! load time), so no other worker ever reads or writes that user's row: it can live in a plain
//! array beside the ratings and be updated in place, and only item rows go through the parameter
//! server. This is how data-parallel MF is usually run (user factors follow the data; only the
//! item factors are shared), and it removes the bulk of the traffic: a pass touches every user
//! row once but the item rows once per clock, and there are ~27 times more users than items in
//! the Netflix data.
//!
//! The users table still exists and still holds the model when it matters: the rows are written
//! into it (as the change since the last write) during every clock that ends in a snapshot or
//! checkpoint and at the end of a job that writes snapshots, and a resumed worker reads its rows
//! back from it.

use super::mf::L;
use ps_runtime::input::Rating;
use ps_runtime::DenseRow;
use ps_runtime::{mix64, RowInit};
use ps_runtime::{PsError, Result};
use ps_runtime::{TableHandle, Worker};
use rustc_hash::FxHashMap;

/// The worker that owns `user` (every rating of the user goes there).
pub fn owner_of(user: u32, workers: usize) -> usize {
    // Multiply-shift instead of a modulo: a division per rating was a visible part of loading.
    (((mix64(user as u64 ^ 0x6d66_5f75_7365_7273) >> 32) * workers as u64) >> 32) as usize
}

const RECORD: usize = 12;

/// Sends every rating to the worker owning its user and returns the ones this worker owns: its
/// own stay where they are (in their order), the others' follow in the order of their senders.
/// Only what moves is encoded: at Netflix size each fresh copy of the ratings cost about 0.3 s in
/// page faults alone.
pub fn exchange_by_user(w: &mut Worker, mut ratings: Vec<Rating>) -> Result<Vec<Rating>> {
    let (n, me) = (w.total_threads(), w.global_thread_id());
    // Built one by one: `vec![Vec::with_capacity(..); n]` clones, and a clone keeps no capacity.
    let per = ratings.len() * RECORD / n + 64;
    let mut parts: Vec<Vec<u8>> = (0..n).map(|to| Vec::with_capacity(if to == me { 0 } else { per })).collect();
    ratings.retain(|r| {
        let to = owner_of(r.user, n);
        if to != me {
            let mut rec = [0u8; RECORD];
            rec[..4].copy_from_slice(&r.user.to_le_bytes());
            rec[4..8].copy_from_slice(&r.item.to_le_bytes());
            rec[8..].copy_from_slice(&r.value.to_le_bytes());
            parts[to].extend_from_slice(&rec);
        }
        to == me
    });
    let got = w.exchange(parts)?;
    ratings.reserve_exact(got.iter().map(|b| b.len() / RECORD).sum());
    for (from, b) in got.iter().enumerate() {
        if b.len() % RECORD != 0 {
            return Err(PsError::codec(format!("mf: worker {from} sent {} bytes of ratings", b.len())));
        }
        for c in b.chunks_exact(RECORD) {
            let word = |i: usize| <[u8; 4]>::try_from(&c[i..i + 4]).expect("4 bytes");
            ratings.push(Rating {
                user: u32::from_le_bytes(word(0)),
                item: u32::from_le_bytes(word(4)),
                value: f32::from_le_bytes(word(8)),
            });
        }
    }
    Ok(ratings)
}

/// Maps ids to small numbers: a plain array when the largest id is within a few entries per
/// record (ids of real rating data are dense), a hash map otherwise.
enum IdIndex {
    Dense(Vec<u32>),
    Hashed(FxHashMap<u32, u32>),
}

impl IdIndex {
    const NONE: u32 = u32::MAX;

    fn new(records: &[&[Rating]], id: fn(&Rating) -> u32) -> Self {
        let n: usize = records.iter().map(|s| s.len()).sum();
        let max = records.iter().flat_map(|s| s.iter()).map(id).max().unwrap_or(0) as usize;
        if max < 4 * n + (1 << 20) {
            IdIndex::Dense(vec![Self::NONE; max + 1])
        } else {
            IdIndex::Hashed(FxHashMap::default())
        }
    }

    #[inline]
    fn get(&self, id: u32) -> Option<u32> {
        match self {
            IdIndex::Dense(v) => v.get(id as usize).copied().filter(|&x| x != Self::NONE),
            IdIndex::Hashed(m) => m.get(&id).copied(),
        }
    }

    #[inline]
    fn set(&mut self, id: u32, to: u32) {
        match self {
            IdIndex::Dense(v) => v[id as usize] = to,
            IdIndex::Hashed(m) => {
                m.insert(id, to);
            }
        }
    }

    /// The distinct ids of `records`, in order of first appearance (each marked as seen).
    fn distinct(records: &[&[Rating]], id: fn(&Rating) -> u32) -> (Self, Vec<u32>) {
        let mut index = Self::new(records, id);
        let mut ids = Vec::new();
        for r in records.iter().flat_map(|s| s.iter()) {
            if index.get(id(r)).is_none() {
                index.set(id(r), 0);
                ids.push(id(r));
            }
        }
        (index, ids)
    }
}

/// The worker that writes row `id`: of the workers with a non-zero count in its owner row, the
/// one at a hashed position.
pub fn elected(owners: &[i64], id: u64) -> Option<usize> {
    let n = owners.iter().filter(|c| **c > 0).count();
    let k = (mix64(id) % n.max(1) as u64) as usize;
    owners.iter().enumerate().filter(|(_, c)| **c > 0).nth(k).map(|(g, _)| g)
}

/// The distinct ids of `records` (by `id`), sorted.
pub fn distinct_sorted(records: &[&[Rating]], id: fn(&Rating) -> u32) -> Vec<u64> {
    let mut v: Vec<u64> = IdIndex::distinct(records, id).1.into_iter().map(u64::from).collect();
    v.sort_unstable();
    v
}

/// Numbers this worker's users in SGD visiting order (by a hash of the user id and `seed`),
/// rewrites the ratings' `user` fields to those numbers, and puts the training ratings in
/// visiting order: users one after the other (a radix sort), each user's ratings shuffled by a
/// generator seeded from the user. Linear time: at Netflix size a comparison sort of every rating
/// took longer than a pass. The held-out ratings are put in item order (then user number), so an
/// evaluation reads each item row once per run of its ratings and the user rows in an order it
/// can prefetch: in file order each rating cost a thread-cache lookup and two cache misses (about
/// 170 ns of a held-out rating's 200). Returns the user ids by number.
pub fn index_users(train: &mut Vec<Rating>, test: &mut Vec<Rating>, seed: u64) -> Vec<u64> {
    let (mut index, mut users) = IdIndex::distinct(&[train, test], |r| r.user);
    users.sort_unstable_by_key(|&u| (mix64(u as u64 ^ seed), u));
    for (j, &u) in users.iter().enumerate() {
        index.set(u, j as u32);
    }
    for r in train.iter_mut().chain(test.iter_mut()) {
        r.user = index.get(r.user).expect("every rated user is numbered");
    }
    radix_sort_by_user(train, users.len());
    radix_sort_by_user(test, users.len());
    let items = test.iter().map(|r| r.item as usize + 1).max().unwrap_or(0);
    radix_sort_by(test, items, |r| r.item);
    for run in train.chunk_by_mut(|a, b| a.user == b.user) {
        shuffle(run, mix64(users[run[0].user as usize] as u64 ^ seed));
    }
    users.into_iter().map(u64::from).collect()
}

/// Stable LSD radix sort of ratings by `key` (below `keys`), in passes of at most 11 bits: each
/// pass streams the ratings into at most 2048 runs, which stays cache- and TLB-friendly where a
/// one-pass counting sort into 240K runs (users) missed the cache on nearly every rating.
fn radix_sort_by(v: &mut Vec<Rating>, keys: usize, key: impl Fn(&Rating) -> u32) {
    let bits = usize::BITS - keys.saturating_sub(1).leading_zeros();
    let mut tmp = vec![Rating { user: 0, item: 0, value: 0.0 }; v.len()];
    let mut shift = 0;
    while shift < bits {
        let width = (bits - shift).min(11);
        let mask = (1u32 << width) - 1;
        let mut next = vec![0usize; (mask as usize) + 2];
        for r in v.iter() {
            next[((key(r) >> shift) & mask) as usize + 1] += 1;
        }
        for k in 1..next.len() {
            next[k] += next[k - 1];
        }
        for r in v.iter() {
            let p = &mut next[((key(r) >> shift) & mask) as usize];
            tmp[*p] = *r;
            *p += 1;
        }
        std::mem::swap(v, &mut tmp);
        shift += width;
    }
}

fn radix_sort_by_user(v: &mut Vec<Rating>, users: usize) {
    radix_sort_by(v, users, |r| r.user)
}

/// Fisher-Yates with a SplitMix64 stream from `seed` (multiply-shift instead of a modulo).
fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut state = seed;
    for i in (1..v.len()).rev() {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let j = ((mix64(state) >> 32) * (i as u64 + 1)) >> 32;
        v.swap(i, j as usize);
    }
}

/// The factors of this worker's users: row `j` belongs to user number `j` of [`index_users`].
pub struct LocalUsers {
    rank: usize,
    f: Vec<f32>,
    /// The values last written into the users table (only kept when the job writes snapshots).
    synced: Option<Vec<f32>>,
}

impl LocalUsers {
    /// Sets up the factors of `users` (see [`index_users`]): the table's initial values on a
    /// fresh start, the table's rows on a resume.
    pub fn new(w: &mut Worker, users: &[u64], rank: usize, init: RowInit, resumed: bool) -> Result<Self> {
        let mut f = vec![0f32; users.len() * rank];
        if resumed {
            let mut lt: TableHandle<DenseRow<f32>> = w.open(L)?;
            lt.refresh_rows(users.iter().copied());
            for (j, &u) in users.iter().enumerate() {
                f[j * rank..(j + 1) * rank].copy_from_slice(&lt.get(u)?);
            }
        } else {
            let mut row = DenseRow(vec![0f32; rank]);
            for (j, &u) in users.iter().enumerate() {
                init.fill(u, &mut row);
                f[j * rank..(j + 1) * rank].copy_from_slice(&row);
            }
        }
        let synced = w.writes_snapshots().then(|| f.clone());
        Ok(LocalUsers { rank, f, synced })
    }

    #[inline]
    pub fn row(&self, j: u32) -> &[f32] {
        &self.f[j as usize * self.rank..][..self.rank]
    }

    /// Every row, in the order of the users they were set up for.
    pub fn all(&self) -> &[f32] {
        &self.f
    }

    #[inline]
    pub fn row_mut(&mut self, j: u32) -> &mut [f32] {
        &mut self.f[j as usize * self.rank..][..self.rank]
    }

    /// Writes the change since the last write of every row into the users table.
    pub fn sync(&mut self, lt: &mut TableHandle<DenseRow<f32>>, users: &[u64]) {
        let Some(synced) = self.synced.as_mut() else { return };
        let k = self.rank;
        let mut delta = DenseRow(vec![0f32; k]);
        for (j, &u) in users.iter().enumerate() {
            let (cur, old) = (&mut self.f[j * k..(j + 1) * k], &mut synced[j * k..(j + 1) * k]);
            for ((d, c), o) in delta.0.iter_mut().zip(cur.iter_mut()).zip(old.iter_mut()) {
                // The table adds `d` to what it holds (= `o`) in f32: do the same sum here and
                // continue from it, so a job resumed from this snapshot is bit-identical to one
                // that was never interrupted.
                *d = *c - *o;
                *o += *d;
                *c = *o;
            }
            lt.inc(u, &delta);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_users_groups_users_in_hash_order_and_keeps_every_rating() {
        let mut train: Vec<Rating> = (0..500u32)
            .map(|i| Rating { user: mix64(i as u64 % 37) as u32 % 1000, item: i * 7 % 113, value: i as f32 })
            .collect();
        let mut test =
            vec![Rating { user: train[3].user, item: 5, value: 1.0 }, Rating { user: 4242, item: 1, value: 2.0 }];
        let (before, before_test) = (train.clone(), test.clone());
        let users = index_users(&mut train, &mut test, 9);
        assert_eq!(users.len(), 38, "37 training users and one only held out");
        assert!(users.windows(2).all(|w| mix64(w[0] ^ 9) < mix64(w[1] ^ 9)), "numbered in visiting order");
        assert!(train.windows(2).all(|w| w[0].user <= w[1].user), "each user's ratings together, in order");
        let key = |r: &Rating| (r.user, r.item, r.value.to_bits());
        let mut back: Vec<_> =
            train.iter().map(|r| key(&Rating { user: users[r.user as usize] as u32, ..*r })).collect();
        let mut want: Vec<_> = before.iter().map(key).collect();
        back.sort_unstable();
        want.sort_unstable();
        assert_eq!(back, want, "the same ratings");
        assert!(test.windows(2).all(|w| (w[0].item, w[0].user) <= (w[1].item, w[1].user)), "held-out by item, user");
        let held = |item: u32| users[test.iter().find(|r| r.item == item).unwrap().user as usize];
        assert_eq!(held(5), before[3].user as u64);
        assert_eq!(held(1), 4242);
        // Deterministic, and not left in arrival order within a user.
        let (mut again, mut t2) = (before.clone(), before_test);
        index_users(&mut again, &mut t2, 9);
        assert!(again == train, "the same order again");
        assert_ne!(train.iter().map(|r| r.value).collect::<Vec<_>>(), {
            let mut v = train.clone();
            v.sort_by_key(|r| (r.user, r.value as u32));
            v.iter().map(|r| r.value).collect::<Vec<_>>()
        });
    }

    #[test]
    fn radix_sort_by_user_is_a_stable_sort_over_several_passes() {
        let n = 5000;
        let mut v: Vec<Rating> =
            (0..20_000u32).map(|i| Rating { user: mix64(i as u64) as u32 % n, item: i, value: 0.0 }).collect();
        let mut want = v.clone();
        want.sort_by_key(|r| r.user);
        radix_sort_by_user(&mut v, n as usize);
        assert!(v == want, "sorted by user, each user's ratings in their original order");
    }

    #[test]
    fn distinct_ids_are_sorted_and_unique_with_either_index() {
        let small = [Rating { user: 5, item: 2, value: 1.0 }, Rating { user: 1, item: 2, value: 1.0 }];
        assert_eq!(distinct_sorted(&[&small, &small[..1]], |r| r.user), vec![1, 5]);
        let sparse = [Rating { user: u32::MAX - 1, item: 0, value: 1.0 }, Rating { user: 3, item: 0, value: 1.0 }];
        assert_eq!(distinct_sorted(&[&sparse, &sparse], |r| r.user), vec![3, u32::MAX as u64 - 1]);
    }

    #[test]
    fn owners_spread_users_over_workers() {
        let mut n = [0usize; 4];
        (0..10_000u32).for_each(|u| n[owner_of(u, 4)] += 1);
        assert!(n.iter().all(|&c| (2300..2700).contains(&c)), "{n:?}");
    }
}
