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
    /// Last snapshot clock taken.
    taken: i64,
    /// Last real (not "finished") clock completed by each client.
    last_real: Vec<i64>,
    /// Process 0's decisions (`SnapshotPlan`): periodic snapshots taken (`true`) or skipped.
    decisions: std::collections::BTreeMap<i64, bool>,
}

impl SnapPlan {
    pub fn new(s: &Snapshots, clients: usize, start: i64) -> Self {
        SnapPlan {
            every: s.cfg.every,
            pure: s.pure(),
            taken: start,
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
        if !self.pure {
            return Vec::new();
        }
        // Updates shipped with the "finished" clock (made after a worker's last `clock()`) come
        // after every periodic snapshot of the run but belong to the end-of-job one.
        let hi = if clock.is_finished() { self.final_clock() - 1 } else { clock.get() };
        let mut v = Vec::new();
        if self.every > 0 {
            let mut t = (global.get() + 2).max(self.taken + 1);
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
    pub(super) fn take_due_snapshots(&mut self) {
        let Some(plan) = self.snap.as_mut() else { return };
        let finished = self.global.is_finished();
        let g = self.global.get();
        let mut due = Vec::new();
        let end = if finished { plan.final_clock() } else { i64::MAX };
        if plan.every > 0 {
            let mut t = (plan.taken / plan.every + 1) * plan.every;
            while t - 1 <= g && t <= end {
                due.push((t, t == end));
                t += plan.every;
            }
        }
        if finished && due.last().map(|d| d.0) != Some(end) && end > plan.taken {
            due.push((end, true));
        }
        if let Some(&(t, _)) = due.last() {
            plan.taken = t;
        }
        let approx = !plan.pure;
        // The end-of-job snapshot is always taken, whatever was planned for its clock.
        let due: Vec<(i64, bool, bool)> = due.into_iter().map(|(t, f)| (t, f, plan.take(t) || f)).collect();
        for (t, is_final, take) in due {
            if take {
                self.take_snapshot(t, is_final, approx);
            } else {
                self.skip_snapshot(t);
            }
        }
    }

    /// Periodic snapshot `t` is skipped job-wide (the last one is still being written): what was
    /// kept for it goes, and process 0 counts it.
    fn skip_snapshot(&mut self, t: i64) {
        for table in self.tables.values_mut() {
            table.discard_snapshot(t);
        }
        if let Some(snaps) = &self.snaps {
            drop(snaps.take_states(t));
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
        let mut ids: Vec<u32> = self.tables.keys().copied().collect();
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
