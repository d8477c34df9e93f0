//! Checkpoints of ASP jobs (`geo.inter_dc: asp` with `checkpoint.url`): each data center holds
//! its own copy of the model, and a checkpoint must be one model, the updates of every data
//! center's clocks before its clock `t` and none after.
//!
//! * Each server sums its data center's unsent updates per bucket, the next snapshot clock
//!   after their clock ([`SnapSync::bucket`]), and sends a bucket's sums only before it syncs
//!   at the bucket's boundary `t - 1`: there it sends everything unsent of clocks `< t`, then
//!   `MirrorSynced { t - 1 }`, while later buckets wait (significant or not) until after it.
//! * A server counts another data center's updates arriving after that mirror's sync at `t - 1`
//!   as later than `t` (pure snapshots copy the rows they touch first, as for late clients'
//!   batches), and takes snapshot `t` once its own data center completed `t - 1`, it has sent
//!   its own sync and every mirror has synced at `t - 1` (`Mirror::synced_upto`). No worker
//!   waits for any of it: the cost is the flush (what the significance filter held back
//!   crosses the WAN at each checkpoint).
//! * The data center of process 0 writes the table shards; the others write only their workers'
//!   states, and every process of a resumed job loads its rows from those shards
//!   (`snapshot::format::shards_for`).
//! * The final snapshot's clock is the latest clock any worker of any data center reached:
//!   at the end each server tells its mirrors its data center's latest (a `MirrorClock` before
//!   the final sync), and waits for theirs.

use crate::clock::Age;
use crate::config::{CheckpointConfig, SnapshotMode};

/// A server's view of the checkpoint schedule under ASP.
#[derive(Default)]
pub(crate) struct SnapSync {
    /// Pure periodic snapshots every this many clocks (0: none, so no syncs before the end).
    every: i64,
    /// The latest real clock any client of this data center completed (with snapshots on).
    pub last_real: Option<Age>,
    /// The latest real clock any mirror reported: at the end, its data center's latest.
    pub mirror_last_real: Option<Age>,
    on: bool,
}

impl SnapSync {
    pub fn new(cfg: &CheckpointConfig) -> Self {
        let on = cfg.url.is_some();
        let pure = cfg.snapshot == SnapshotMode::Pure;
        SnapSync { every: if on && pure { cfg.every.max(0) } else { 0 }, on, ..Default::default() }
    }

    /// A client of this data center completed `clock`.
    pub fn client_clock(&mut self, clock: Age) {
        if self.on && !clock.is_finished() {
            self.last_real = self.last_real.max(Some(clock));
        }
    }

    /// A mirror reported `clock`.
    pub fn mirror_clock(&mut self, clock: Age) {
        if self.on && !clock.is_finished() {
            self.mirror_last_real = self.mirror_last_real.max(Some(clock));
        }
    }

    /// The bucket of an update of clock `clock`: the next snapshot clock after it (`i64::MAX`
    /// for updates made after a worker's last clock, or without periodic snapshots).
    pub fn bucket(&self, clock: Age) -> i64 {
        if self.every > 0 && !clock.is_finished() {
            (clock.get().div_euclid(self.every) + 1) * self.every
        } else {
            i64::MAX
        }
    }

    /// True if a snapshot is due after clock `age` (`age + 1` is a snapshot clock).
    pub fn is_boundary(&self, age: Age) -> bool {
        self.every > 0 && !age.is_finished() && (age.get() + 1).rem_euclid(self.every) == 0
    }

    /// The snapshot boundaries after `sent` and before `age` that have not been synced at; at
    /// the end, those up to the data center's latest clock.
    pub fn boundaries_before(&self, age: Age, sent: Option<Age>) -> Vec<Age> {
        if self.every == 0 {
            return Vec::new();
        }
        let hi = if age.is_finished() { self.last_real.map_or(-1, Age::get) } else { age.get() - 1 };
        let lo = sent.map_or(-1, Age::get);
        let mut b = (lo + 1).div_euclid(self.every) * self.every + self.every - 1;
        let mut v = Vec::new();
        while b <= hi {
            if b > lo {
                v.push(Age::new(b));
            }
            b += self.every;
        }
        v
    }

    /// The final snapshot's clock given this data center's (`own`): the latest of all.
    pub fn final_clock(&self, own: i64) -> i64 {
        own.max(self.mirror_last_real.map_or(0, |c| c.get() + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sync(every: i64) -> SnapSync {
        let cfg = CheckpointConfig { url: Some("/x".into()), every, ..Default::default() };
        SnapSync::new(&cfg)
    }

    #[test]
    fn updates_wait_in_the_bucket_of_the_next_snapshot_clock() {
        let s = sync(4);
        assert_eq!([0, 3, 4, 7, 8].map(|c| s.bucket(Age::new(c))), [4, 4, 8, 8, 12]);
        assert_eq!(s.bucket(Age::FINISHED), i64::MAX);
        assert_eq!(sync(0).bucket(Age::new(5)), i64::MAX);
        assert!(s.is_boundary(Age::new(3)) && s.is_boundary(Age::new(7)) && !s.is_boundary(Age::new(4)));
        assert!(!s.is_boundary(Age::FINISHED));
    }

    #[test]
    fn every_boundary_crossed_gets_its_own_sync_and_the_end_covers_the_last_real_clock() {
        let mut s = sync(4);
        let b = |v: &[i64]| v.iter().map(|&c| Age::new(c)).collect::<Vec<_>>();
        assert_eq!(s.boundaries_before(Age::new(3), None), b(&[]), "3 itself is synced in its round");
        assert_eq!(s.boundaries_before(Age::new(12), Some(Age::new(3))), b(&[7, 11]));
        assert_eq!(s.boundaries_before(Age::new(12), Some(Age::new(7))), b(&[11]));
        assert_eq!(s.boundaries_before(Age::new(12), Some(Age::new(9))), b(&[11]), "a barrier's sync at 9");
        s.client_clock(Age::new(16));
        s.client_clock(Age::FINISHED);
        assert_eq!(s.boundaries_before(Age::FINISHED, Some(Age::new(11))), b(&[15]));
        assert_eq!(s.final_clock(17), 17);
        s.mirror_clock(Age::new(19));
        s.mirror_clock(Age::FINISHED);
        assert_eq!(s.final_clock(17), 20, "another data center got further");
    }
}
