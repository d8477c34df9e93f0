//! Checkpoints of ASP jobs (`geo.inter_dc: asp` with `checkpoint.url`): each data center holds
//! its own copy of the model, and a checkpoint must be one model, the updates of every data
//! center's clocks before its clock `t` and none after.
//!
//! * Each server sums its data center's unsent updates per bucket, the next snapshot clock
//!   after their clock ([`SnapSync::bucket`]). At the boundary `t - 1` of a snapshot process 0
//!   takes, it sends everything unsent of clocks `< t`, then `MirrorSynced { t - 1 }`; later
//!   buckets are sent (significant ones) only after it. A skipped snapshot's boundary is passed
//!   over (no flush); until process 0's decision arrives, later buckets wait and the mirror
//!   clock claims no later clock ([`SnapSync::owed`]).
//! * A server counts another data center's updates arriving after that mirror's sync at `t - 1`
//!   as later than `t` (pure snapshots copy the rows they touch first, as for late clients'
//!   batches), and takes snapshot `t` once its own data center completed `t - 1`, it has sent
//!   its own sync and every mirror has synced at `t - 1` (`Mirror::synced_upto`). No worker
//!   waits for any of it: the cost is the flush (what the significance filter held back
//!   crosses the WAN at each checkpoint written).
//! * The data center of process 0 writes the table shards; the others write only their workers'
//!   states, and every process of a resumed job loads its rows from those shards
//!   (`TableEntry::shards_for` in `snapshot::format`).
//! * The final snapshot's clock is the latest clock any worker of any data center reached:
//!   at the end each server tells its mirrors its data center's latest (a `MirrorClock` before
//!   the final sync), and waits for theirs.

use crate::clock::Age;
use crate::config::{CheckpointConfig, SnapshotMode};
use std::collections::BTreeMap;

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
    /// The last snapshot boundary synced at or passed over (its checkpoint skipped).
    handled: i64,
    /// Process 0's decisions of the snapshots not yet handled: taken (`true`) or skipped.
    decisions: BTreeMap<i64, bool>,
    /// A boundary waits for its decision (the next one to arrive may free it).
    pub waiting: bool,
}

/// What a data center that completed some clock owes its mirrors for the snapshots on the way.
#[derive(Debug, PartialEq)]
pub(crate) struct Owed {
    /// Boundaries to sync at, in order.
    pub syncs: Vec<Age>,
    /// The newest bucket that may be sent now: the one of a boundary whose snapshot is not yet
    /// decided (its later updates wait until it is), else every one.
    pub upto: i64,
}

impl SnapSync {
    pub fn new(cfg: &CheckpointConfig, start: Age) -> Self {
        let on = cfg.url.is_some();
        let pure = cfg.snapshot == SnapshotMode::Pure;
        let every = if on && pure { cfg.every.max(0) } else { 0 };
        SnapSync { every, on, handled: start.get(), ..Default::default() }
    }

    /// Process 0 decided whether periodic snapshot `t` is taken.
    pub fn decided(&mut self, t: i64, take: bool) {
        if self.every > 0 && t - 1 > self.handled {
            self.decisions.insert(t, take);
        }
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

    /// The data center completed `age` (at the end: its latest clock): the snapshot boundaries
    /// up to it not yet handled, synced at if their snapshot is taken, passed over if skipped
    /// (no flush: the filter goes on as if there were none), and the first undecided one holds
    /// later buckets back. With `force` (a barrier's sync, or the end, which must send
    /// everything) an undecided one is synced at: a sync nobody needed costs only its flush.
    pub fn owed(&mut self, age: Age, force: bool) -> Owed {
        let mut owed = Owed { syncs: Vec::new(), upto: self.bucket(age) };
        if self.every == 0 {
            return owed;
        }
        let hi = if age.is_finished() { self.last_real.map_or(-1, Age::get) } else { age.get() };
        let mut b = (self.handled + 1).div_euclid(self.every) * self.every + self.every - 1;
        while b <= hi {
            if b > self.handled {
                match self.decisions.get(&(b + 1)).copied() {
                    Some(false) => {}
                    Some(true) => owed.syncs.push(Age::new(b)),
                    None if force => owed.syncs.push(Age::new(b)),
                    None => {
                        owed.upto = b + 1;
                        self.waiting = true;
                        return owed;
                    }
                }
                self.handled = b;
            }
            b += self.every;
        }
        self.decisions = self.decisions.split_off(&(self.handled + 2));
        self.waiting = false;
        owed
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
        SnapSync::new(&cfg, Age::new(-1))
    }

    fn ages(v: &[i64]) -> Vec<Age> {
        v.iter().map(|&c| Age::new(c)).collect()
    }

    #[test]
    fn updates_wait_in_the_bucket_of_the_next_snapshot_clock() {
        let s = sync(4);
        assert_eq!([0, 3, 4, 7, 8].map(|c| s.bucket(Age::new(c))), [4, 4, 8, 8, 12]);
        assert_eq!(s.bucket(Age::FINISHED), i64::MAX);
        assert_eq!(sync(0).bucket(Age::new(5)), i64::MAX);
    }

    #[test]
    fn taken_snapshots_are_synced_at_skipped_ones_passed_and_undecided_ones_wait() {
        let mut s = sync(4);
        assert_eq!(s.owed(Age::new(2), false), Owed { syncs: vec![], upto: 4 });
        assert_eq!(s.owed(Age::new(3), false), Owed { syncs: vec![], upto: 4 }, "4 undecided: later buckets wait");
        assert!(s.waiting);
        assert_eq!(s.owed(Age::new(5), false), Owed { syncs: vec![], upto: 4 });
        s.decided(4, true);
        s.decided(8, false);
        assert_eq!(s.owed(Age::new(9), false), Owed { syncs: ages(&[3]), upto: 12 }, "8 skipped: no sync at 7");
        assert!(!s.waiting);
        assert_eq!(s.owed(Age::new(9), false), Owed { syncs: vec![], upto: 12 }, "once");
        assert_eq!(s.owed(Age::new(11), true), Owed { syncs: ages(&[11]), upto: 12 }, "a barrier forces 12's");
        s.client_clock(Age::new(16));
        assert_eq!(s.owed(Age::FINISHED, true), Owed { syncs: ages(&[15]), upto: i64::MAX }, "the end forces too");
        assert_eq!(s.final_clock(17), 17);
        s.mirror_clock(Age::new(19));
        s.mirror_clock(Age::FINISHED);
        assert_eq!(s.final_clock(17), 20, "another data center got further");
    }
}
