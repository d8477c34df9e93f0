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
use crate::config::{mix64, RowInit};
use crate::error::{PsError, Result};
use crate::input::Rating;
use crate::row::DenseRow;
use crate::{TableHandle, Worker};
use rustc_hash::FxHashMap;

/// The worker that owns `user` (every rating of the user goes there).
pub fn owner_of(user: u32, workers: usize) -> usize {
    (mix64(user as u64 ^ 0x6d66_5f75_7365_7273) % workers as u64) as usize
}

const RECORD: usize = 12;

/// Sends every rating to the worker owning its user and returns the ones this worker owns.
pub fn exchange_by_user(w: &mut Worker, ratings: Vec<Rating>) -> Result<Vec<Rating>> {
    let n = w.total_threads();
    let mut parts = vec![Vec::with_capacity(ratings.len() * RECORD / n + 64); n];
    for r in &ratings {
        let b = &mut parts[owner_of(r.user, n)];
        b.extend_from_slice(&r.user.to_le_bytes());
        b.extend_from_slice(&r.item.to_le_bytes());
        b.extend_from_slice(&r.value.to_le_bytes());
    }
    drop(ratings);
    let got = w.exchange(parts)?;
    let mut out = Vec::with_capacity(got.iter().map(|b| b.len() / RECORD).sum());
    for (from, b) in got.iter().enumerate() {
        if b.len() % RECORD != 0 {
            return Err(PsError::codec(format!("mf: worker {from} sent {} bytes of ratings", b.len())));
        }
        for c in b.chunks_exact(RECORD) {
            let word = |i: usize| <[u8; 4]>::try_from(&c[i..i + 4]).expect("4 bytes");
            out.push(Rating {
                user: u32::from_le_bytes(word(0)),
                item: u32::from_le_bytes(word(4)),
                value: f32::from_le_bytes(word(8)),
            });
        }
    }
    Ok(out)
}

/// Numbers this worker's users in SGD visiting order (by a hash of the user id and `seed`),
/// rewrites the ratings' `user` fields to those numbers, and puts the training ratings in
/// visiting order: users one after the other, each user's ratings in an order hashed from the
/// item (the order `mf::sgd_order` gives, in linear time: a counting sort by user instead of a
/// comparison sort of every rating). Returns the user ids by number.
pub fn index_users(train: &mut Vec<Rating>, test: &mut [Rating], seed: u64) -> Vec<u64> {
    let mut index: FxHashMap<u32, u32> = FxHashMap::default();
    for r in train.iter().chain(test.iter()) {
        index.entry(r.user).or_insert(0);
    }
    let mut users: Vec<u32> = index.keys().copied().collect();
    users.sort_unstable_by_key(|&u| (mix64(u as u64 ^ seed), u));
    for (j, &u) in users.iter().enumerate() {
        index.insert(u, j as u32);
    }
    for r in train.iter_mut().chain(test.iter_mut()) {
        r.user = index[&r.user];
    }
    let mut start = vec![0usize; users.len() + 1];
    for r in train.iter() {
        start[r.user as usize + 1] += 1;
    }
    for j in 0..users.len() {
        start[j + 1] += start[j];
    }
    let mut next = start.clone();
    let mut ordered = vec![Rating { user: 0, item: 0, value: 0.0 }; train.len()];
    for r in train.iter() {
        let p = &mut next[r.user as usize];
        ordered[*p] = *r;
        *p += 1;
    }
    for (j, &u) in users.iter().enumerate() {
        ordered[start[j]..start[j + 1]].sort_unstable_by_key(|r| mix64((r.item as u64) << 32 ^ u as u64 ^ seed));
    }
    *train = ordered;
    users.into_iter().map(u64::from).collect()
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
            let mut lt: TableHandle<DenseRow<f32>> = w.table(L)?;
            users.iter().for_each(|&u| lt.refresh(u));
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
    use crate::apps::mf::sgd_order;

    #[test]
    fn index_users_visits_in_sgd_order_and_renumbers_consistently() {
        let mut train: Vec<Rating> = (0..500u32)
            .map(|i| Rating { user: mix64(i as u64 % 37) as u32 % 1000, item: i * 7 % 113, value: i as f32 })
            .collect();
        let mut test =
            vec![Rating { user: train[3].user, item: 5, value: 1.0 }, Rating { user: 4242, item: 1, value: 2.0 }];
        let mut expected = train.clone();
        sgd_order(&mut expected, 9);
        let users = index_users(&mut train, &mut test, 9);
        assert_eq!(users.len(), 38, "37 training users and one only held out");
        let back: Vec<Rating> = train.iter().map(|r| Rating { user: users[r.user as usize] as u32, ..*r }).collect();
        assert_eq!(back, expected);
        assert_eq!(users[test[0].user as usize], expected.iter().find(|r| r.value == 3.0).unwrap().user as u64);
        assert_eq!(users[test[1].user as usize], 4242);
        assert!(train.windows(2).all(|w| w[0].user <= w[1].user), "users are numbered in visiting order");
    }

    #[test]
    fn owners_spread_users_over_workers() {
        let mut n = [0usize; 4];
        (0..10_000u32).for_each(|u| n[owner_of(u, 4)] += 1);
        assert!(n.iter().all(|&c| (2300..2700).contains(&c)), "{n:?}");
    }
}
