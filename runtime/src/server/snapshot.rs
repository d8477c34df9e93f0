//! The server's side of snapshots: which clocks are due, which batches must be kept apart for a
//! pure snapshot, and encoding the shard files handed to the writer thread.

use super::Server;
use crate::clock::Age;
use crate::report::{Report, SnapshotState};
use crate::snapshot::format::{crc32c, FileEntry, ProcessPart, ShardHeader, FLAG_APPROX, FLAG_FINAL};
use crate::snapshot::{CheckpointStore, Snapshots};
use crate::state::ClientCmd;

pub(crate) struct SnapPlan {
    every: i64,
    pure: bool,
    /// This server writes table shards (under ASP, only in process 0's data center), so pure
    /// snapshots keep rows apart for them.
    shards: bool,
    /// ASP: snapshots wait for process 0's decision (it reaches other data centers on links
    /// of its own) and, where shards are written, for the copies to sync.
    asp: bool,
    /// Last snapshot clock taken (or skipped).
    taken: i64,
    /// Last periodic snapshot clock skipped.
    skipped: i64,
    /// Last real (not "finished") clock completed by each client.
    last_real: Vec<i64>,
    /// Process 0's decisions (`SnapshotPlan`): periodic snapshots taken (`true`) or skipped.
    decisions: std::collections::BTreeMap<i64, bool>,
}

impl SnapPlan {
    pub fn new(s: &Snapshots, clients: usize, start: i64, topo: &crate::geo::Topology, pid: usize) -> Self {
        SnapPlan {
            every: s.cfg.every,
            pure: s.pure(),
            shards: topo.writes_shards(pid),
            asp: topo.is_asp(),
            taken: start,
            skipped: -1,
            last_real: vec![start - 1; clients],
            decisions: Default::default(),
        }
    }

    /// Process 0 decided whether periodic snapshot `t` is taken.
    pub fn decided(&mut self, t: i64, take: bool) {
        self.decisions.insert(t, take);
    }

    /// Whether periodic snapshot `t` is taken (one not decided is, as before plans existed), and
    /// forgets decisions up to it.
    fn take(&mut self, t: i64) -> bool {
        let later = self.decisions.split_off(&(t + 1));
        let d = std::mem::replace(&mut self.decisions, later);
        d.get(&t).copied().unwrap_or(true)
    }

    /// The snapshots due now that every client completed clock `g` (and, for one that is taken,
    /// the copies synced at `synced`) and, at the end of the job, the final one at `end`:
    /// `(clock, is_final, taken)`, marked handled.
    fn due(&mut self, g: i64, synced: i64, end: Option<i64>) -> Vec<(i64, bool, bool)> {
        let last = end.unwrap_or(i64::MAX);
        let mut due = Vec::new();
        let mut waiting = false;
        if self.every > 0 {
            let mut t = (self.taken / self.every + 1) * self.every;
            while t - 1 <= g && t <= last {
                let decision = self.decisions.get(&t).copied();
                // Once the job is over every decision process 0 made has arrived (on the link
                // its server's last sync came by); one it never made is a clock it never got to.
                if self.asp && end.is_none() && decision.is_none() {
                    waiting = true;
                    break;
                }
                if decision != Some(false) && t - 1 > synced {
                    break;
                }
                due.push((t, t == last));
                t += self.every;
            }
        }
        // The end-of-job snapshot, unless a periodic one at its clock was taken (one skipped
        // there before the job was known to end does not count: the final tables must be
        // written; the rows are all in by now).
        if let Some(end) = end.filter(|_| !waiting) {
            if due.last().map(|d| d.0) != Some(end) && (end > self.taken || end == self.skipped) {
                due.push((end, true));
            }
        }
        if let Some(&(t, _)) = due.last() {
            self.taken = self.taken.max(t);
        }
        due.into_iter()
            .map(|(t, is_final)| {
                // The end-of-job snapshot is always taken, whatever was planned for its clock.
                let take = self.take(t) || is_final;
                if !take {
                    self.skipped = t;
                } else if t == self.skipped {
                    self.skipped = -1;
                }
                (t, is_final, take)
            })
            .collect()
    }

    /// The job's length so far: every client's last real clock, plus one.
    fn final_clock(&self) -> i64 {
        self.last_real.iter().copied().max().unwrap_or(0) + 1
    }

    /// Client `from` sends its updates of clocks up to `clock`: the pending pure-snapshot clocks
    /// `t` (not yet taken, so `t - 1 > global`) that these updates come after (`t <= clock`).
    /// Clients cut their shipments at snapshot boundaries, so no batch straddles one.
    pub fn pending_before(&mut self, from: usize, clock: Age, global: Age) -> Vec<i64> {
        if !clock.is_finished() {
            self.last_real[from] = self.last_real[from].max(clock.get());
        }
        // Updates shipped with the "finished" clock (made after a worker's last `clock()`) come
        // after every periodic snapshot of the run but belong to the end-of-job one.
        let hi = if clock.is_finished() { self.final_clock() - 1 } else { clock.get() };
        self.pending_upto(hi, global)
    }

    /// The pending pure-snapshot clocks `t <= hi` (not yet taken; without ASP, `t - 1 > global`
    /// too, since those are taken as soon as the clock gets there) whose rows this server keeps.
    pub fn pending_upto(&self, hi: i64, global: Age) -> Vec<i64> {
        let mut v = Vec::new();
        if self.pure && self.shards && self.every > 0 {
            let mut t = if self.asp { self.taken + 1 } else { (global.get() + 2).max(self.taken + 1) };
            t = t.div_euclid(self.every) * self.every + if t % self.every == 0 { 0 } else { self.every };
            while t <= hi {
                v.push(t);
                t += self.every;
            }
        }
        v
    }
}

impl Server {
    /// Takes every snapshot whose clock every client has now finished, and the end-of-job one.
    /// Under ASP, where shards are written, once the copies have synced there too, and only
    /// snapshots process 0 has decided on ([`super::mirror_snap`]).
    pub(super) fn take_due_snapshots(&mut self) {
        let Some(plan) = self.snap.as_mut() else { return };
        let synced = self.mirror.as_ref().map_or(Age::FINISHED, |m| m.synced_upto());
        let finished = self.global.is_finished() && synced.is_finished();
        let g = self.global.get();
        // Only the copy written must have synced (a skipped snapshot needs no sync).
        let g_synced = if plan.shards && plan.pure { self.global.min(synced).get() } else { g };
        let end = match (finished, &self.mirror) {
            (false, _) => None,
            (true, None) => Some(plan.final_clock()),
            (true, Some(m)) => Some(m.snaps.final_clock(plan.final_clock())),
        };
        let approx = !plan.pure;
        for (t, is_final, take) in plan.due(g, g_synced, end) {
            if take {
                self.take_snapshot(t, is_final, approx);
            } else {
                self.skip_snapshot(t);
            }
        }
    }

    /// Periodic snapshot `t` is skipped job-wide (the last one is still being written, or the
    /// workers saved no state for it: `Snapshots::plan`): what was kept for it goes, and process
    /// 0 counts those skipped for a busy writer.
    fn skip_snapshot(&mut self, t: i64) {
        for table in self.tables.values_mut() {
            table.discard_snapshot(t);
        }
        if let Some(snaps) = &self.snaps {
            drop(snaps.take_states(t));
            if self.shared.pid == 0 && snaps.was_stateless(t) {
                log::debug!("snapshot {t} not taken: the workers saved no state at this clock (not resumable)");
                return;
            }
        }
        if self.shared.pid == 0 {
            let n = self.shared.net.snapshots_skipped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let how = "checkpoint.when_busy=skip; counted in snapshots_skipped";
            if n == 0 {
                log::info!("snapshot {t} skipped: the one before is still being written ({how})");
            } else {
                log::debug!("snapshot {t} skipped: the one before is still being written");
            }
        }
    }

    fn take_snapshot(&mut self, t: i64, is_final: bool, approx: bool) {
        let Some(snaps) = self.snaps.clone() else { return };
        let pid = self.shared.pid;
        let flags = if approx { FLAG_APPROX } else { 0 } | if is_final { FLAG_FINAL } else { 0 };
        let shards = self.snap.as_ref().is_some_and(|p| p.shards);
        let mut ids: Vec<u32> = if shards { self.tables.keys().copied().collect() } else { Vec::new() };
        ids.sort_unstable();
        let mut files = Vec::with_capacity(ids.len());
        for id in ids {
            let table = self.tables.get_mut(&id).expect("listed above");
            let mut payload = Vec::new();
            let rows = table.snapshot(t, &mut payload);
            let cfg = table.config().clone();
            let h = ShardHeader {
                flags,
                clock: t,
                server: pid as u32,
                table: id,
                columns: cfg.columns as u64,
                rows,
                payload_len: payload.len() as u64,
                crc: crc32c(&payload),
                row_type: cfg.row_type.clone(),
            };
            let bytes = h.file_bytes(&payload);
            let entry = FileEntry {
                file: CheckpointStore::shard_name(pid, id),
                owner: pid as u32,
                rows,
                bytes: bytes.len() as u64,
                crc32c: h.crc,
            };
            files.push((cfg, entry, bytes));
        }
        log::debug!("server {pid}: snapshot {t} encoded ({} tables)", files.len());
        // Every worker of this process saved its state before ending clock t - 1, which all of
        // them have (the server's clock says so).
        let states = snaps.take_states(t);
        let part = ProcessPart {
            process: pid as u32,
            shards: files.iter().map(|(cfg, e, _)| (cfg.clone(), e.clone())).collect(),
            workers: states.iter().map(|(e, _)| e.clone()).collect(),
            approx,
            is_final,
            stored: false,
            failed: None,
        };
        // What the files will be, before they are written: the name node stages the manifest
        // while they are (on HDFS each close waits about half a second for the NameNode).
        let info = |p: &ProcessPart| serde_json::to_string(p).expect("serialisable");
        self.shared.send(ClientCmd::SnapshotDone { clock: t, info: info(&part) });
        let shared = self.shared.clone();
        snaps.clone().submit(&self.shared, move || {
            let mut writes: Vec<(String, &[u8], String)> = files
                .iter()
                .map(|(cfg, e, b)| (e.file.clone(), b.as_slice(), format!("snapshot shard of table {}", cfg.id)))
                .collect();
            for (e, b) in &states {
                writes.push((e.file.clone(), b.as_slice(), format!("state of worker {}", e.owner)));
            }
            // A periodic checkpoint that cannot be stored (a DataNode restarting, say) is given up,
            // and the job goes on to the next; the end-of-job one holds the final tables and must be.
            let failed = match snaps.write_all(t, &writes) {
                Err(e) if !is_final => Some(e.to_string()),
                other => other.map(|_| None)?,
            };
            match &failed {
                Some(why) => log::warn!("snapshot {t} abandoned: {why}"),
                None => shared.live.push(Report::Snapshot(t, SnapshotState::Part)),
            }
            shared
                .send(ClientCmd::SnapshotDone { clock: t, info: info(&ProcessPart { stored: true, failed, ..part }) });
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(asp: bool) -> SnapPlan {
        let (every, pure, shards, taken, skipped) = (2, true, true, 0, -1);
        SnapPlan { every, pure, shards, asp, taken, skipped, last_real: vec![-1; 2], decisions: Default::default() }
    }

    #[test]
    fn a_periodic_snapshot_skipped_at_the_last_clock_is_still_the_final_one() {
        let mut p = plan(false);
        assert_eq!(p.due(1, 1, None), [(2, false, true)], "undecided ones are taken");
        p.decided(4, false);
        assert_eq!(p.due(3, 3, None), [(4, false, false)], "skipped: the last one is being written");
        assert_eq!(
            p.due(i64::MAX / 4, i64::MAX / 4, Some(4)),
            [(4, true, true)],
            "the job ended at 4: its tables are written"
        );
        assert_eq!(p.due(i64::MAX / 4, i64::MAX / 4, Some(4)), [], "once");
        let mut p = plan(false);
        p.decided(2, true);
        assert_eq!(p.due(1, 1, None), [(2, false, true)]);
        assert_eq!(p.due(i64::MAX / 4, i64::MAX / 4, Some(2)), [], "taken as a periodic one, not twice");
    }

    #[test]
    fn under_asp_a_periodic_snapshot_waits_for_process_0s_decision() {
        let mut p = plan(true);
        assert_eq!(p.due(5, 5, None), []);
        p.decided(2, true);
        assert_eq!(p.due(5, 5, None), [(2, false, true)], "4 is not decided yet");
        p.decided(4, false);
        p.decided(6, true);
        assert_eq!(p.due(5, 5, None), [(4, false, false), (6, false, true)]);
        assert_eq!(p.pending_upto(9, Age::new(5)), [8], "pending: not yet taken");
        assert_eq!(
            p.due(i64::MAX / 4, i64::MAX / 4, Some(11)),
            [(8, false, true), (10, false, true), (11, true, true)],
            "at the end"
        );
        let mut p = plan(true);
        p.decided(2, false);
        p.decided(4, true);
        assert_eq!(p.due(5, 0, None), [(2, false, false)], "a skipped one needs no sync; 4 waits for its");
        assert_eq!(p.due(5, 3, None), [(4, false, true)]);
    }
}
