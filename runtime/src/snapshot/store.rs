//! A checkpoint directory (`--checkpoint URL`) on any [`Storage`]: paths of the `clock-<t>`
//! snapshot directories, reading and writing their files, finding the latest complete one and
//! pruning old ones.

use super::format::{parse_state, Manifest, ShardHeader, MANIFEST};
use crate::error::{PsError, Result};
use crate::storage::{commit_staged, storage_for, write_staged, Storage};
use std::io::Read;
use std::sync::Arc;

#[derive(Clone)]
pub struct CheckpointStore {
    storage: Arc<dyn Storage>,
    url: String,
}

impl CheckpointStore {
    pub fn open(url: &str) -> Result<Self> {
        Ok(CheckpointStore { storage: storage_for(url)?, url: url.trim_end_matches('/').to_string() })
    }
    pub fn url(&self) -> &str {
        &self.url
    }
    pub fn clock_dir(&self, t: i64) -> String {
        format!("{}/clock-{t}", self.url)
    }
    pub fn shard_name(server: usize, table: u32) -> String {
        format!("server-{server}.table-{table}")
    }
    pub fn state_name(worker: usize) -> String {
        format!("worker-{worker}.state")
    }

    /// Writes a whole file; `what` says which part of which snapshot it is (for error messages).
    pub fn write(&self, t: i64, name: &str, bytes: &[u8], what: &str) -> Result<()> {
        let path = format!("{}/{name}", self.clock_dir(t));
        // Through `write_file`: on HDFS a shard of several blocks may meet a NameNode that has
        // not seen the last one replicated yet, and is written again.
        self.storage.write_file(&path, bytes).map_err(|e| PsError::Io(format!("writing {path} ({what}): {e}")))
    }

    pub fn read(&self, t: i64, name: &str) -> Result<Vec<u8>> {
        let path = format!("{}/{name}", self.clock_dir(t));
        let mut buf = Vec::new();
        self.storage
            .open(&path, 0)?
            .read_to_end(&mut buf)
            .map_err(|e| PsError::io(format!("reading snapshot file {path}"), e))?;
        Ok(buf)
    }

    /// Reads and verifies a table shard.
    pub fn read_shard(&self, t: i64, server: usize, table: u32) -> Result<(ShardHeader, Vec<u8>)> {
        let name = Self::shard_name(server, table);
        let bytes = self.read(t, &name)?;
        let what = format!("{}/{name}", self.clock_dir(t));
        let (h, payload) = ShardHeader::parse(&bytes, &what)?;
        if h.clock != t || h.server as usize != server || h.table != table {
            return Err(PsError::codec(format!(
                "snapshot file {what}: header says clock {}, server {}, table {}",
                h.clock, h.server, h.table
            )));
        }
        Ok((h, payload.to_vec()))
    }

    /// Reads and verifies worker `worker`'s saved state.
    pub fn read_state(&self, t: i64, worker: usize) -> Result<Vec<u8>> {
        let name = Self::state_name(worker);
        let bytes = self.read(t, &name)?;
        parse_state(&bytes, t, worker as u32, &format!("{}/{name}", self.clock_dir(t)))
    }

    /// Writes the manifest of snapshot `m.clock` under its temporary name, where it does not make
    /// the snapshot complete: while the shards are still being written. With
    /// [`CheckpointStore::commit_manifest`] after, it appears complete or not at all.
    pub fn stage_manifest(&self, m: &Manifest) -> Result<()> {
        let text = serde_json::to_vec_pretty(m).map_err(|e| PsError::codec(format!("encoding manifest: {e}")))?;
        write_staged(self.storage.as_ref(), &self.manifest_path(m.clock), &text, "snapshot manifest")
    }

    /// Completes snapshot `t` once every file it lists is stored: its staged manifest takes its
    /// name.
    pub fn commit_manifest(&self, t: i64) -> Result<()> {
        commit_staged(self.storage.as_ref(), &self.manifest_path(t))
    }

    fn manifest_path(&self, t: i64) -> String {
        format!("{}/{MANIFEST}", self.clock_dir(t))
    }

    pub fn read_manifest(&self, t: i64) -> Result<Manifest> {
        let bytes = self.read(t, MANIFEST)?;
        serde_json::from_slice(&bytes)
            .map_err(|e| PsError::codec(format!("manifest {}/{MANIFEST}: {e}", self.clock_dir(t))))
    }

    /// Every `clock-<t>` directory, ascending, with whether it is complete (has a manifest).
    pub fn list(&self) -> Result<Vec<(i64, bool)>> {
        if !self.storage.exists(&self.url)? {
            return Ok(Vec::new());
        }
        let mut v = Vec::new();
        for name in self.storage.children(&self.url)? {
            let Some(t) = name.strip_prefix("clock-").and_then(|s| s.parse::<i64>().ok()) else { continue };
            let complete = self.storage.exists(&format!("{}/{MANIFEST}", self.clock_dir(t)))?;
            v.push((t, complete));
        }
        v.sort_unstable();
        Ok(v)
    }

    /// The manifest of the newest complete snapshot a job can continue from.
    pub fn latest_resumable(&self) -> Result<Option<Manifest>> {
        for (t, complete) in self.list()?.into_iter().rev() {
            if complete {
                let m = self.read_manifest(t)?;
                if m.resumable {
                    return Ok(Some(m));
                }
                log::info!("snapshot {} is complete but not resumable ({}); looking further back", t, m.mode);
            }
        }
        Ok(None)
    }

    pub fn delete_clock(&self, t: i64) -> Result<()> {
        self.storage.delete(&self.clock_dir(t))
    }

    /// Keeps the newest `keep` complete snapshots (0: all). Deletes older complete ones and any
    /// incomplete directory older than the newest complete one (left by a failed run; snapshots
    /// complete in clock order, so none of those is still being written).
    pub fn prune(&self, keep: usize) -> Result<Vec<i64>> {
        let all = self.list()?;
        let complete: Vec<i64> = all.iter().filter(|(_, c)| *c).map(|(t, _)| *t).collect();
        let Some(&newest) = complete.last() else { return Ok(Vec::new()) };
        let keep_from = if keep == 0 || complete.len() <= keep { i64::MIN } else { complete[complete.len() - keep] };
        let mut deleted = Vec::new();
        for (t, c) in all {
            if (c && t < keep_from) || (!c && t < newest) {
                self.storage.delete(&self.clock_dir(t))?;
                deleted.push(t);
            }
        }
        Ok(deleted)
    }
}
