//! Master copy of the rows of one table held by one server shard, with the copy-on-write row
//! versions that pure snapshots need.

use crate::config::TableConfig;
use crate::error::{PsError, Result};
use crate::oplog;
use crate::row::{Row, RowUpdate};
use crate::snapshot::format::payload_rows;
use bytes::BytesMut;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Server-side storage of one table, type-erased.
pub(crate) trait ServerTableOps: Send {
    fn config(&self) -> &TableConfig;
    /// Applies a batch of (row, update) pairs of clocks up to `clock`; reports each touched row.
    /// `after`: pending pure-snapshot clocks `t <= clock` whose rows must be preserved (copied
    /// before the first later update) until the snapshot is taken. `bucket`: under ASP, where
    /// the updates wait to be mirrored (the next snapshot clock after `clock`; see
    /// [`ServerTableOps::take_significant`]).
    fn apply_batch(
        &mut self,
        data: &[u8],
        clock: i64,
        after: &[i64],
        bucket: i64,
        touched: &mut dyn FnMut(u64),
    ) -> Result<()>;
    /// Appends the encoding of `row` (a zero row if it was never updated).
    fn encode_row(&mut self, row: u64, out: &mut BytesMut);
    /// Appends every row as of snapshot `t` (preserved copies where later updates arrived) to
    /// `out` in the shard payload format, sorted by id; returns the row count.
    fn snapshot(&mut self, t: i64, out: &mut Vec<u8>) -> u64;
    /// Forgets what was kept for snapshot `t` (and earlier ones): it is skipped.
    fn discard_snapshot(&mut self, t: i64);
    /// Loads the rows `keep` accepts from a shard payload (resume); returns how many.
    fn load(&mut self, payload: &[u8], keep: &dyn Fn(u64) -> bool) -> Result<u64>;
    /// ASP: from now on, also accumulate the updates of this data center's clients per row
    /// (what the other data centers have not been sent yet).
    fn start_mirroring(&mut self);
    /// ASP: hands every accumulated update of buckets `<= upto` whose significance exceeds
    /// `threshold` (all of them with `None`) to `send` as `(row, encoded update)` and forgets
    /// it; returns how many. Updates are summed per bucket (the snapshot clock they precede),
    /// so that what a data center sends before it syncs at a snapshot's clock holds no later
    /// clock's updates.
    fn take_significant(&mut self, threshold: Option<f64>, upto: i64, send: &mut dyn FnMut(u64, &[u8])) -> u64;
    /// ASP: applies another data center's updates (not accumulated: they are not sent on), as
    /// if they were of clock `clock` for pending snapshots (`after` as for `apply_batch`).
    fn apply_mirrored(&mut self, data: &[u8], clock: i64, after: &[i64], touched: &mut dyn FnMut(u64)) -> Result<()>;
}

pub(crate) struct ServerTable<R: Row> {
    cfg: TableConfig,
    rows: FxHashMap<u64, R>,
    /// Per pending pure snapshot `t`: rows as they were before their first update of a clock
    /// `>= t`. Updates of clocks `< t` that arrive later are applied to these copies too.
    forks: BTreeMap<i64, FxHashMap<u64, R>>,
    /// ASP: per bucket (the next snapshot clock after the updates' clocks; `i64::MAX` without
    /// snapshots) and row, the sum of this data center's updates not yet sent to the others.
    unsent: Option<BTreeMap<i64, FxHashMap<u64, R::Update>>>,
    scratch: BytesMut,
    /// Every received update is decoded into this one, reusing its allocation.
    update: R::Update,
}

/// The row, created on first touch: zero, or the table's deterministic random init.
fn row_mut<'a, R: Row>(rows: &'a mut FxHashMap<u64, R>, cfg: &TableConfig, row: u64) -> &'a mut R {
    rows.entry(row).or_insert_with(|| {
        let mut r = R::zero(cfg.columns);
        if let Some(i) = cfg.init {
            i.fill(row, &mut r);
        }
        r
    })
}

impl<R: Row> ServerTable<R> {
    pub fn new(cfg: TableConfig) -> Self {
        let update = R::Update::zero(cfg.columns);
        ServerTable {
            cfg,
            rows: FxHashMap::default(),
            forks: BTreeMap::new(),
            unsent: None,
            scratch: BytesMut::new(),
            update,
        }
    }
}

impl<R: Row> ServerTableOps for ServerTable<R> {
    fn config(&self) -> &TableConfig {
        &self.cfg
    }

    fn apply_batch(
        &mut self,
        data: &[u8],
        clock: i64,
        after: &[i64],
        bucket: i64,
        touched: &mut dyn FnMut(u64),
    ) -> Result<()> {
        self.apply_entries(data, clock, after, Some(bucket), touched)
    }

    fn encode_row(&mut self, row: u64, out: &mut BytesMut) {
        row_mut(&mut self.rows, &self.cfg, row).encode(out);
    }

    fn discard_snapshot(&mut self, t: i64) {
        self.forks = self.forks.split_off(&(t + 1));
    }

    fn snapshot(&mut self, t: i64, out: &mut Vec<u8>) -> u64 {
        let fork = self.forks.remove(&t).unwrap_or_default();
        // Forks of earlier snapshots are no longer needed either.
        self.forks = self.forks.split_off(&t);
        let mut ids: Vec<u64> = self.rows.keys().copied().collect();
        ids.sort_unstable();
        for &id in &ids {
            let r = fork.get(&id).unwrap_or(&self.rows[&id]);
            self.scratch.clear();
            r.encode(&mut self.scratch);
            out.extend_from_slice(&id.to_le_bytes());
            out.extend_from_slice(&(self.scratch.len() as u32).to_le_bytes());
            out.extend_from_slice(&self.scratch);
        }
        ids.len() as u64
    }

    fn load(&mut self, payload: &[u8], keep: &dyn Fn(u64) -> bool) -> Result<u64> {
        let mut n = 0;
        for rec in payload_rows(payload) {
            let (id, mut bytes) = rec?;
            if !keep(id) {
                continue;
            }
            let r = R::decode(&mut bytes, self.cfg.columns)
                .map_err(|e| PsError::codec(format!("table {} row {id}: {e}", self.cfg.id)))?;
            if !bytes.is_empty() {
                return Err(PsError::codec(format!("table {} row {id}: {} trailing bytes", self.cfg.id, bytes.len())));
            }
            self.rows.insert(id, r);
            n += 1;
        }
        Ok(n)
    }

    fn start_mirroring(&mut self) {
        self.unsent.get_or_insert_with(BTreeMap::new);
    }

    fn take_significant(&mut self, threshold: Option<f64>, upto: i64, send: &mut dyn FnMut(u64, &[u8])) -> u64 {
        let Some(unsent) = self.unsent.as_mut() else { return 0 };
        // What goes now goes as one sum per row (a round lists each row once): the buckets up to
        // `upto` merge into the newest of them (usually there is just one).
        let keys: Vec<i64> = unsent.range(..=upto).map(|(k, _)| *k).collect();
        let Some((&newest, older)) = keys.split_last() else { return 0 };
        for k in older {
            for (row, u) in unsent.remove(k).unwrap_or_default() {
                add_to(unsent.entry(newest).or_default(), row, &u);
            }
        }
        let (rows, cfg, scratch) = (&mut self.rows, &self.cfg, &mut self.scratch);
        let mut n = 0;
        if let Some(bucket) = unsent.get_mut(&newest) {
            bucket.retain(|&row, u| {
                let due = match threshold {
                    None => true,
                    Some(t) => row_mut(rows, cfg, row).significance(u) > t,
                };
                if due {
                    scratch.clear();
                    u.encode(scratch);
                    send(row, scratch);
                    n += 1;
                }
                !due
            });
        }
        // Emptied buckets go (the newest stays: updates keep arriving there).
        let newest = unsent.keys().next_back().copied();
        unsent.retain(|k, b| !b.is_empty() || Some(*k) == newest);
        n
    }

    fn apply_mirrored(&mut self, data: &[u8], clock: i64, after: &[i64], touched: &mut dyn FnMut(u64)) -> Result<()> {
        self.apply_entries(data, clock, after, None, touched)
    }
}

impl<R: Row> ServerTable<R> {
    /// Applies a batch's entries as of clock `clock` (`after`: as for `apply_batch`); under ASP,
    /// with `bucket`, also adds them to what this data center has not yet mirrored.
    fn apply_entries(
        &mut self,
        data: &[u8],
        clock: i64,
        after: &[i64],
        bucket: Option<i64>,
        touched: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let forking = !after.is_empty() || !self.forks.is_empty();
        let ServerTable { cfg, rows, forks, unsent, update, .. } = self;
        let mut unsent = unsent.as_mut().zip(bucket).map(|(u, b)| u.entry(b).or_default());
        oplog::each_entry(data, cfg.columns, update, |row, u| {
            let r = row_mut(rows, cfg, row);
            if forking {
                fork_for(forks, after, clock, row, r, u);
            }
            r.apply(u);
            if let Some(unsent) = unsent.as_mut() {
                add_to(unsent, row, u);
            }
            touched(row);
        })
    }
}

/// Adds update `u` of `row` to the row's sum in `sums`.
fn add_to<U: RowUpdate>(sums: &mut FxHashMap<u64, U>, row: u64, u: &U) {
    match sums.entry(row) {
        std::collections::hash_map::Entry::Occupied(mut e) => e.get_mut().merge(u),
        std::collections::hash_map::Entry::Vacant(e) => {
            e.insert(u.clone());
        }
    }
}

/// Pure snapshots: before `r` takes update `u` of clock `clock`, it is copied for every pending
/// snapshot in `after` (those `u` comes after), and `u` goes into the copies of the snapshots
/// it comes before (`t > clock`).
fn fork_for<R: Row>(
    forks: &mut BTreeMap<i64, FxHashMap<u64, R>>,
    after: &[i64],
    clock: i64,
    row: u64,
    r: &R,
    u: &R::Update,
) {
    for &t in after {
        forks.entry(t).or_default().entry(row).or_insert_with(|| r.clone());
    }
    for (_, fork) in forks.range_mut(clock.saturating_add(1)..) {
        if let Some(f) = fork.get_mut(&row) {
            f.apply(u);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::DenseRow;
    use bytes::BufMut;

    /// One batch entry: row `row` changed by `v` in its one column.
    fn entry(row: u64, v: f64) -> Vec<u8> {
        let mut b = BytesMut::new();
        b.put_u64_le(row);
        Row::encode(&DenseRow(vec![v]), &mut b);
        b.to_vec()
    }

    #[test]
    fn a_row_waiting_in_two_buckets_goes_once_with_their_sum() {
        let cfg = TableConfig::new(1, "t", DenseRow::<f64>::type_name(), 1);
        let mut t = ServerTable::<DenseRow<f64>>::new(cfg);
        t.start_mirroring();
        t.apply_batch(&entry(7, 1.0), 2, &[], 4, &mut |_| {}).unwrap();
        t.apply_batch(&entry(7, 2.0), 5, &[], 8, &mut |_| {}).unwrap();
        t.apply_batch(&entry(9, 4.0), 9, &[], 12, &mut |_| {}).unwrap();
        let mut sent = Vec::new();
        let n = t.take_significant(None, 8, &mut |row, mut u| {
            sent.push((row, <DenseRow<f64> as Row>::decode(&mut u, 1).unwrap()));
        });
        assert_eq!(n, 1);
        assert_eq!(sent, [(7, DenseRow(vec![3.0]))], "bucket 12 waits");
        assert_eq!(t.take_significant(None, i64::MAX, &mut |row, _| assert_eq!(row, 9)), 1);
    }
}
