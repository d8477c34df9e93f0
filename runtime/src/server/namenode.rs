//! The name node (process 0): start-up registration with a table-configuration check, the global
//! barrier, abort broadcast and the two-phase orderly shutdown (Shutdown/Bye, then Exit) that lets
//! every process stop serving only after all of them stopped reading.
//!
//! ## Start-up, barrier, shutdown, failure
//!
//! Start: listen, dial peers (retry until `connect_timeout_ms`), create tables (each process, same
//! config), `Register` with a fingerprint of the table configs; the name node checks they match and
//! broadcasts `Ready`. `global_barrier()`: threads end their clock; the last local thread sends
//! `BarrierArrive`; the name node releases all at `B = max clock`; each process ships clocks up to
//! `B-1` and its threads resume at `B` with a read floor of `B-1`. End: workers flush, the process
//! sends `Clock{FINISHED}`, waits for all acks, sends `Done`; when all are done the name node sends
//! `Shutdown` (processes stop treating closed connections as errors, reply `Bye`), then `Exit`.
//! Any closed connection, read error, malformed frame or silence longer than `peer_timeout_ms` before
//! shutdown fails the process with "lost process q (addr): reason"; an app error is broadcast by the
//! name node as `Abort`, and so is a panic of any worker thread or communication task (caught, with
//! its message). The launcher exits non-zero naming the first failed process and its reason; on YARN
//! the process sends the reason to the AM, which puts it in the application's diagnostics.

use super::ServerIn;
use crate::clock::Clock;
use crate::error::{PsError, Result};
use crate::live::Live;
use crate::net::Link;
use crate::report::{Report, SnapshotState};
use crate::snapshot::format::{Manifest, ProcessPart, TableEntry, FORMAT_VERSION};
use crate::snapshot::Snapshots;
use crate::state::Shared;
use crate::wire::Msg;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// A snapshot on its way to completion: its manifest once staged (or why it could not be), how
/// many processes stored their files, and why one could not.
#[derive(Default)]
struct Commit {
    staged: Option<std::result::Result<Manifest, String>>,
    stored: usize,
    failed: Option<String>,
}

pub(crate) struct NameNode {
    n: usize,
    registered: Vec<Option<u64>>,
    barrier: Vec<Option<Clock>>,
    done: Vec<bool>,
    byes: Vec<bool>,
    shared: Arc<Shared>,
    snaps: Option<Arc<Snapshots>>,
    inbox: UnboundedSender<ServerIn>,
    /// Snapshot parts reported encoded so far, per clock.
    parts: BTreeMap<i64, Vec<ProcessPart>>,
    /// Snapshots whose manifest is being staged or whose files are being stored, per clock.
    commits: BTreeMap<i64, Commit>,
    /// Manifests being written; shutdown waits for them.
    manifests_pending: usize,
    shutdown_deferred: bool,
}

impl NameNode {
    pub fn new(n: usize, shared: Arc<Shared>, snaps: Option<Arc<Snapshots>>, inbox: UnboundedSender<ServerIn>) -> Self {
        NameNode {
            n,
            registered: vec![None; n],
            barrier: vec![None; n],
            done: vec![false; n],
            byes: vec![false; n],
            shared,
            snaps,
            inbox,
            parts: BTreeMap::new(),
            commits: BTreeMap::new(),
            manifests_pending: 0,
            shutdown_deferred: false,
        }
    }

    /// A process reported its part of snapshot `clock`: encoded (the last of those stages the
    /// manifest) or stored (the last of those, with the manifest staged, completes it).
    fn snapshot_part(&mut self, from: usize, clock: i64, info: &str) -> Result<()> {
        let part: ProcessPart = serde_json::from_str(info)
            .map_err(|e| PsError::codec(format!("process {from}: snapshot {clock} report: {e}")))?;
        if part.stored {
            let c = self.commits.entry(clock).or_default();
            c.stored += 1;
            if let Some(why) = part.failed {
                c.failed.get_or_insert(format!("process {from}: {why}"));
            }
            return self.try_commit(clock);
        }
        let parts = self.parts.entry(clock).or_default();
        parts.push(part);
        if parts.len() < self.n {
            return Ok(());
        }
        let parts = self.parts.remove(&clock).unwrap_or_default();
        let m = self.manifest(clock, parts);
        let Some(snaps) = self.snaps.clone() else {
            return Err(PsError::codec(format!("process {from} reported a snapshot, but none are configured")));
        };
        self.manifests_pending += 1;
        let inbox = self.inbox.clone();
        snaps.clone().submit_commit(&self.shared, move || {
            let staged = match snaps.store.stage_manifest(&m) {
                Ok(()) => Ok(Box::new(m)),
                Err(e) if !m.is_final => Err(e.to_string()),
                Err(e) => return Err(e),
            };
            let _ = inbox.send(ServerIn::ManifestStaged { clock, staged });
            Ok(())
        });
        Ok(())
    }

    /// The manifest of snapshot `clock` from every process's part.
    fn manifest(&self, clock: i64, mut parts: Vec<ProcessPart>) -> Manifest {
        parts.sort_by_key(|p| p.process);
        let mut tables: BTreeMap<u32, TableEntry> = BTreeMap::new();
        let mut workers = Vec::new();
        for p in &parts {
            for (cfg, f) in &p.shards {
                tables.entry(cfg.id).or_insert_with(|| TableEntry { config: cfg.clone(), shards: Vec::new() });
                tables.get_mut(&cfg.id).expect("inserted").shards.push(f.clone());
            }
            workers.extend(p.workers.iter().cloned());
        }
        workers.sort_by_key(|w| w.owner);
        let threads = self.shared.cfg.threads;
        let approx = parts.iter().any(|p| p.approx);
        Manifest {
            format_version: FORMAT_VERSION,
            clock,
            mode: if approx { "approx" } else { "pure" }.into(),
            is_final: parts.iter().any(|p| p.is_final),
            resumable: !approx && workers.len() == self.n * threads,
            processes: self.n,
            threads,
            created_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            tables: tables.into_values().collect(),
            workers,
        }
    }

    /// The manifest of snapshot `clock` is staged, or could not be (`Err`: why).
    pub fn manifest_staged(&mut self, clock: i64, staged: std::result::Result<Box<Manifest>, String>) -> Result<()> {
        self.commits.entry(clock).or_default().staged = Some(staged.map(|m| *m));
        self.try_commit(clock)
    }

    /// Completes snapshot `clock` once its manifest is staged and every process stored its files:
    /// the manifest takes its name (a rename), then older snapshots are pruned. A periodic
    /// snapshot that could not be staged or stored is given up (the job goes on, and its directory
    /// is pruned as incomplete); the end-of-job one failed the job where it failed.
    fn try_commit(&mut self, clock: i64) -> Result<()> {
        let ready = self.commits.get(&clock).is_some_and(|c| c.staged.is_some() && c.stored == self.n);
        let (Some(snaps), true) = (self.snaps.clone(), ready) else { return Ok(()) };
        let c = self.commits.remove(&clock).expect("checked above");
        let m = match (c.staged.expect("checked above"), c.failed) {
            (Ok(m), None) => m,
            (Err(why), _) | (Ok(_), Some(why)) => {
                Self::abandoned(&self.shared, clock, &why);
                let _ = self.inbox.send(ServerIn::ManifestDone(clock));
                return Ok(());
            }
        };
        let (inbox, shared) = (self.inbox.clone(), self.shared.clone());
        snaps.clone().submit_commit(&self.shared, move || {
            let r = match snaps.store.commit_manifest(m.clock) {
                Ok(()) => {
                    Self::committed(&snaps, &m, &shared.live);
                    Ok(())
                }
                Err(e) if !m.is_final => {
                    Self::abandoned(&shared, m.clock, &e);
                    Ok(())
                }
                Err(e) => Err(e),
            };
            let _ = inbox.send(ServerIn::ManifestDone(m.clock));
            r
        });
        Ok(())
    }

    /// Periodic snapshot `clock` is given up: says why, and counts it for the stats.
    fn abandoned(shared: &Shared, clock: i64, why: &dyn std::fmt::Display) {
        log::warn!("snapshot {clock} not committed ({why}); the job goes on to the next one");
        shared.net.snapshots_abandoned.fetch_add(1, Ordering::Relaxed);
    }

    /// Snapshot `m` is complete: says so, then prunes older ones.
    fn committed(snaps: &Snapshots, m: &Manifest, live: &Live) {
        log::info!(
            "snapshot {} complete: {} ({} tables, {:.1} MB, {})",
            m.clock,
            snaps.store.clock_dir(m.clock),
            m.tables.len(),
            m.total_bytes() as f64 / 1e6,
            if m.resumable { "resumable" } else { "not resumable" }
        );
        live.push(Report::Snapshot(
            m.clock,
            if m.resumable { SnapshotState::Committed } else { SnapshotState::Approx },
        ));
        // Old snapshots left in place cost space, not correctness: the next prune retries.
        match snaps.store.prune(snaps.cfg.keep) {
            Ok(d) if d.is_empty() => {}
            Ok(d) => log::info!("pruned snapshots of clocks {d:?} (keeping {})", snaps.cfg.keep),
            Err(e) => log::warn!("pruning old snapshots: {e}"),
        }
    }

    /// A manifest write finished (its failure, if any, already failed the job).
    pub fn manifest_done(&mut self, _clock: i64, out: &[Link]) -> Result<()> {
        self.manifests_pending = self.manifests_pending.saturating_sub(1);
        if self.manifests_pending == 0 && self.shutdown_deferred {
            self.shutdown_deferred = false;
            log::info!("name node: every process finished; shutting down");
            Self::broadcast(out, Msg::Shutdown);
        }
        Ok(())
    }

    fn broadcast(out: &[Link], m: Msg) {
        for o in out {
            o.send(m.clone());
        }
    }

    pub fn handle(&mut self, from: usize, msg: Msg, out: &[Link]) -> Result<()> {
        match msg {
            Msg::Register { fingerprint } => {
                self.registered[from] = Some(fingerprint);
                log::debug!("name node: process {from} registered");
                if self.registered.iter().all(Option::is_some) {
                    let first = self.registered[0];
                    if let Some(bad) = self.registered.iter().position(|f| *f != first) {
                        let reason = format!("process {bad} created different tables than process 0");
                        Self::broadcast(out, Msg::Abort { reason: reason.clone() });
                        return Err(PsError::Config(reason));
                    }
                    log::info!("name node: all {} processes registered; job ready", self.n);
                    Self::broadcast(out, Msg::Ready);
                }
            }
            Msg::BarrierArrive { epoch, clock } => {
                self.barrier[from] = Some(clock);
                if self.barrier.iter().all(Option::is_some) {
                    let b = self.barrier.iter().flatten().copied().max().unwrap_or(clock);
                    self.barrier.iter_mut().for_each(|x| *x = None);
                    Self::broadcast(out, Msg::BarrierRelease { epoch, clock: b });
                }
            }
            Msg::Done => {
                self.done[from] = true;
                if self.done.iter().all(|d| *d) {
                    if self.manifests_pending > 0 {
                        self.shutdown_deferred = true;
                    } else {
                        log::info!("name node: every process finished; shutting down");
                        Self::broadcast(out, Msg::Shutdown);
                    }
                }
            }
            Msg::Bye => {
                self.byes[from] = true;
                if self.byes.iter().all(|d| *d) {
                    Self::broadcast(out, Msg::Exit);
                }
            }
            Msg::Abort { reason } => {
                Self::broadcast(out, Msg::Abort { reason: format!("process {from} failed: {reason}") });
            }
            Msg::SnapshotDone { clock, info } => self.snapshot_part(from, clock, &info)?,
            other => return Err(PsError::codec(format!("name node got unexpected {other:?} from process {from}"))),
        }
        Ok(())
    }
}
