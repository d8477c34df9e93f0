//! Snapshots and checkpoints (LazyTable §3.3). Servers are told the schedule in advance (every
//! `checkpoint.every` clocks, and at the end): when every client has finished clock `t - 1`, each
//! server encodes its shard of every table and a background writer thread stores it under
//! `<url>/clock-<t>/`. Worker threads save their own state (`Worker::clock_saving`) at the same
//! clocks. Each process then reports its files to the name node, which writes `MANIFEST.json`
//! last and prunes old snapshots. A restarted job (`checkpoint.resume`) loads the newest
//! complete, resumable one and continues at its clock.
//!
//! ## Pure snapshots, step by step
//!
//! Clients cut shipments at snapshot boundaries, so every batch a server applies is wholly before or
//! after a snapshot clock `t`. Pure mode: a batch of clock `>= t` arriving while `t` is pending copies
//! each row it touches first (`ServerTable::forks[t]`); later batches of clocks `< t` update those
//! copies too. When `global` reaches `t-1` the server encodes every table (copy if forked, else the live
//! row), tells the name node what the files will be (`SnapshotDone`, its part not yet `stored`) and
//! hands the bytes to the `ps-snapshot` thread, which writes `clock-<t>/server-<s>.table-<id>` and the
//! worker-state files and then reports the part `stored`. Meanwhile the name node writes the manifest
//! under its temporary name (on its `ps-manifest` thread): on HDFS every close waits about half a
//! second for the NameNode to hear of the block, and this way a checkpoint waits for one close, not
//! two. Once every part is stored, the staged manifest is renamed to `MANIFEST.json` (so it still
//! appears last, whole), then old snapshots are pruned. `Worker::clock_saving` writes the
//! thread's state before its clock moves, so it is listed with the process's part. Resume: every process
//! picks the newest manifest that is resumable, loads its server shards in `create_table`, starts all
//! clocks (threads, tracker, `vc`, `sent_upto`) at `t`, and workers read their state with
//! `resume_state()`. Shutdown waits for the final snapshot and its manifest.
//!
//! Under ASP (several data centers, each with its own copy of the tables) the copies sync at each
//! snapshot clock and only process 0's data center writes shards; `server::mirror_snap` says how.

pub(crate) mod format;
pub mod read;
mod store;

pub use format::{crc32c, FileEntry, Manifest, ProcessPart, ShardHeader};
pub use store::CheckpointStore;

use crate::config::{CheckpointConfig, SnapshotMode, WhenBusy};
use crate::error::{PsError, Result};
use crate::state::{ClientCmd, Shared};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send>;
/// A worker state saved but not yet written: its manifest entry and file bytes.
type SavedState = (FileEntry, Vec<u8>);

/// Per-process snapshot state: the store, the writer thread, worker states saved per clock, and
/// the checkpoint this process resumed from.
pub(crate) struct Snapshots {
    pub store: CheckpointStore,
    pub cfg: CheckpointConfig,
    pub resume: Option<Manifest>,
    writer: Mutex<Sender<Job>>,
    /// The name node's manifests, staged and committed in clock order on a thread of their own,
    /// so that they are not queued behind this process's shard files.
    committer: Mutex<Sender<Job>>,
    /// Worker states saved per clock, not yet written: (manifest entry, file bytes).
    states: Mutex<BTreeMap<i64, Vec<SavedState>>>,
    /// Process 0: the last periodic snapshot planned to be taken, and the newest one settled
    /// (committed or given up) at the name node.
    last_taken: AtomicI64,
    settled: AtomicI64,
    /// Whether a worker of this process has saved its state (the app clocks with
    /// `clock_saving`), and the periodic snapshots process 0 then declined for want of states.
    saves_states: AtomicBool,
    stateless: Mutex<BTreeSet<i64>>,
}

impl Snapshots {
    /// Opens the checkpoint directory; with `resume`, finds the checkpoint to continue from and
    /// checks that it was written by a job of the same shape.
    /// Process 0 also clears what the new run would write over: snapshots of an abandoned run
    /// after the resumed clock. A fresh run refuses a directory that already holds snapshots.
    pub fn open(cfg: &CheckpointConfig, pid: usize, processes: usize, threads: usize) -> Result<Option<Self>> {
        let Some(url) = &cfg.url else { return Ok(None) };
        let store = CheckpointStore::open(url)?;
        let resume = if cfg.resume { store.latest_resumable()? } else { None };
        let existing = store.list()?;
        if !cfg.resume && !existing.is_empty() {
            return Err(PsError::Config(format!(
                "checkpoint.url: {url} already holds snapshots (clocks {:?}); use --resume to continue that job, or remove it",
                existing.iter().map(|e| e.0).collect::<Vec<_>>()
            )));
        }
        if pid == 0 {
            let from = resume.as_ref().map_or(0, |m| m.clock);
            for (t, _) in existing.into_iter().filter(|(t, _)| *t > from) {
                log::info!("removing {}: written after the checkpoint this run continues from", store.clock_dir(t));
                store.delete_clock(t)?;
            }
        }
        if let Some(m) = &resume {
            if m.processes != processes || m.threads != threads {
                return Err(PsError::Config(format!(
                    "checkpoint.resume: {} was written by {} processes x {} threads; this job has {processes} x {threads}",
                    store.clock_dir(m.clock),
                    m.processes,
                    m.threads
                )));
            }
            log::info!("resuming from {} (clock {})", store.clock_dir(m.clock), m.clock);
        } else if cfg.resume {
            log::warn!("checkpoint.resume: no complete checkpoint under {url}; starting from clock 0");
        }
        // One writer thread per process: snapshot files are written in clock order, so snapshots
        // complete in clock order (pruning relies on it), and servers never block on storage.
        let writer = Mutex::new(Self::job_thread("ps-snapshot")?);
        let committer = Mutex::new(Self::job_thread("ps-manifest")?);
        let start = resume.as_ref().map_or(0, |m| m.clock);
        Ok(Some(Snapshots {
            store,
            cfg: cfg.clone(),
            resume,
            writer,
            committer,
            states: Mutex::default(),
            last_taken: AtomicI64::new(start),
            settled: AtomicI64::new(start),
            saves_states: AtomicBool::new(false),
            stateless: Mutex::default(),
        }))
    }

    /// A thread that runs the jobs sent to it, in order.
    fn job_thread(name: &str) -> Result<Sender<Job>> {
        let (tx, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .map_err(|e| PsError::io(format!("starting the {name} thread"), e))?;
        Ok(tx)
    }

    /// Writes files of snapshot `t` concurrently: on HDFS each close waits for the NameNode to
    /// see the block (often a 0.5 s retry), so writing them one by one would add those waits up.
    pub fn write_all(&self, t: i64, files: &[(String, &[u8], String)]) -> Result<()> {
        for chunk in files.chunks(8) {
            std::thread::scope(|s| {
                let handles: Vec<_> = chunk
                    .iter()
                    .map(|(name, bytes, what)| s.spawn(move || self.store.write(t, name, bytes, what)))
                    .collect();
                handles.into_iter().try_for_each(|h| {
                    h.join().unwrap_or_else(|_| Err(PsError::Io(format!("snapshot {t}: a writer thread panicked"))))
                })
            })?;
        }
        Ok(())
    }

    /// Process 0, as its client ships clock `t - 1`: whether periodic snapshot `t` is taken.
    /// Under `when_busy = skip` only once the last one taken has settled at the name node, so
    /// that at most one checkpoint is being written at a time and no worker ever waits for one.
    /// Once the app saves worker states, a pure snapshot at a clock its workers ended without
    /// saving (the barriers after training: evaluation, output) is declined too: it would be
    /// complete but not resumable, and `keep` could then prune a resumable one in its favour.
    pub fn plan(&self, t: i64) -> bool {
        let saved = self.states.lock().unwrap_or_else(|e| e.into_inner()).contains_key(&t);
        if self.pure() && self.saves_states.load(Ordering::Acquire) && !saved {
            self.stateless.lock().unwrap_or_else(|e| e.into_inner()).insert(t);
            return false;
        }
        let take = self.cfg.when_busy == WhenBusy::Wait
            || self.settled.load(Ordering::Acquire) >= self.last_taken.load(Ordering::Acquire);
        if take {
            self.last_taken.fetch_max(t, Ordering::AcqRel);
        }
        take
    }

    /// Process 0: whether periodic snapshot `t` was declined for want of worker states (not
    /// skipped for a busy writer), and forgets it.
    pub fn was_stateless(&self, t: i64) -> bool {
        self.stateless.lock().unwrap_or_else(|e| e.into_inner()).remove(&t)
    }

    /// The name node: snapshot `t` is committed or given up.
    pub fn settle(&self, t: i64) {
        self.settled.fetch_max(t, Ordering::AcqRel);
    }

    pub fn pure(&self) -> bool {
        self.cfg.snapshot == SnapshotMode::Pure
    }

    /// The clock the job starts at (that of the resumed checkpoint, else 0).
    pub fn start_clock(&self) -> i64 {
        self.resume.as_ref().map_or(0, |m| m.clock)
    }

    /// Runs `job` on the writer thread. A failure fails the job everywhere, with the error's
    /// description of what was being written where.
    pub fn submit(&self, shared: &Arc<Shared>, job: impl FnOnce() -> Result<()> + Send + 'static) {
        Self::submit_to(&self.writer, shared, job)
    }

    /// As [`Snapshots::submit`], on the name node's manifest thread.
    pub fn submit_commit(&self, shared: &Arc<Shared>, job: impl FnOnce() -> Result<()> + Send + 'static) {
        Self::submit_to(&self.committer, shared, job)
    }

    fn submit_to(lane: &Mutex<Sender<Job>>, shared: &Arc<Shared>, job: impl FnOnce() -> Result<()> + Send + 'static) {
        shared.update_ctl(|c| c.snap_jobs += 1);
        let core2 = shared.clone();
        let run = move || {
            if let Err(e) = crate::error::catch_panic("the snapshot writer", job) {
                core2.send(ClientCmd::Abort(e.to_string()));
                core2.fail(e);
            }
            core2.update_ctl(|c| c.snap_jobs -= 1);
        };
        let sent = lane.lock().unwrap_or_else(|e| e.into_inner()).send(Box::new(run));
        if let Err(e) = sent {
            // Only possible if the writer thread died, which fails the job as well.
            (e.0)();
        }
    }

    /// A worker thread saved its state for clock `t`; it is written with the process's shards.
    pub fn add_state(&self, t: i64, entry: FileEntry, bytes: Vec<u8>) {
        self.saves_states.store(true, Ordering::Release);
        self.states.lock().unwrap_or_else(|e| e.into_inner()).entry(t).or_default().push((entry, bytes));
    }

    /// The worker states saved for clock `t` (and forgets older ones).
    pub fn take_states(&self, t: i64) -> Vec<SavedState> {
        let mut s = self.states.lock().unwrap_or_else(|e| e.into_inner());
        let later = s.split_off(&(t + 1));
        let mut upto = std::mem::replace(&mut *s, later);
        upto.remove(&t).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snaps(when_busy: WhenBusy, tag: &str) -> (Snapshots, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("ps-snap-plan-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = CheckpointConfig { url: Some(dir.display().to_string()), every: 10, when_busy, ..Default::default() };
        (Snapshots::open(&cfg, 0, 1, 1).unwrap().unwrap(), dir)
    }

    #[test]
    fn a_busy_checkpoint_is_skipped_until_the_last_taken_settles_unless_told_to_wait() {
        let (s, dir) = snaps(WhenBusy::Skip, "skip");
        assert!(s.plan(10), "nothing in flight");
        assert!(!s.plan(20) && !s.plan(30), "10 is still being written");
        s.settle(10);
        assert!(s.plan(40));
        s.settle(20); // an older clock settling says nothing about 40
        assert!(!s.plan(50));
        s.settle(40);
        assert!(s.plan(60));
        std::fs::remove_dir_all(dir).ok();
        let (s, dir) = snaps(WhenBusy::Wait, "wait");
        assert!((1..=5).all(|k| s.plan(10 * k)), "wait takes every one");
        std::fs::remove_dir_all(dir).ok();
    }
}
