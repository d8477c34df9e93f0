//! Committed outputs: parts are written under a temporary name and moved into place once every
//! worker has written, as Hadoop jobs do, so a partial output never looks complete.

use super::options::CommonArgs;
use ps_runtime::storage::{storage_for, Storage};
use ps_runtime::{PsContext, Worker};
use ps_runtime::{PsError, Result};
use std::io::Write;
use std::sync::Arc;

/// A committed output directory: parts go to `<out>/_temporary/<task>/...`; `commit` (by one
/// worker, after all wrote) moves them into place and writes `_SUCCESS`, so a partial output never
/// looks complete.
pub struct Output {
    storage: Arc<dyn Storage>,
    pub url: String,
}

impl Output {
    pub fn new(url: &str) -> Result<Self> {
        Ok(Output { storage: storage_for(url)?, url: url.trim_end_matches('/').to_string() })
    }

    /// The job's `--output`, if any; process 0 checks it (and clears it with `--overwrite`).
    pub fn for_job(ctx: &PsContext, args: &CommonArgs) -> Result<Option<Self>> {
        let Some(url) = &args.output else { return Ok(None) };
        let out = Output::new(url)?;
        if ctx.process_id() == 0 {
            // A job that continues an interrupted one (resumed, or restarted by the launcher)
            // replaces the output that run left uncommitted.
            let cfg = ctx.config();
            let continues = ctx.is_resumed() || cfg.checkpoint.resume || cfg.restart_attempt > 0;
            out.prepare(args.overwrite || (continues && !out.is_committed()?))?;
        }
        Ok(Some(out))
    }

    /// True if the output was completed (`_SUCCESS` exists). A resumed job replaces an output its
    /// interrupted run left uncommitted, but, like any job, refuses a committed one.
    pub fn is_committed(&self) -> Result<bool> {
        self.storage.exists(&format!("{}/_SUCCESS", self.url))
    }

    /// Refuses an existing output unless `overwrite` (then removes it). Call once, before work.
    pub fn prepare(&self, overwrite: bool) -> Result<()> {
        if self.storage.exists(&self.url)? {
            if !overwrite {
                return Err(PsError::Config(format!("--output {} exists (use --overwrite to replace it)", self.url)));
            }
            self.storage.delete(&self.url)?;
        }
        Ok(())
    }

    /// Writes part `part` of dataset `name` (e.g. "user_factors") for task `task`.
    pub fn write_part(
        &self,
        task: usize,
        name: &str,
        part: usize,
        body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        self.write_file(task, name, &format!("part-{part:05}"), body)
    }

    /// Writes file `file` of dataset `name` for task `task`.
    pub fn write_file(
        &self,
        task: usize,
        name: &str,
        file: &str,
        body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        let path = format!("{}/_temporary/{task}/{name}/{file}", self.url);
        let mut f = self.storage.create(&path)?;
        body(&mut f).map_err(|e| PsError::io(format!("writing {path}"), e))?;
        f.close()
    }

    /// For outputs every worker writes parts of: waits (a global barrier) until all have written,
    /// then global thread 0 commits and logs "`what` written to `<url>`".
    pub fn commit_when_all_wrote(&self, w: &mut Worker, what: &str) -> Result<()> {
        w.global_barrier()?;
        if w.global_thread_id() == 0 {
            self.commit()?;
            log::info!("{what} written to {}", self.url);
        }
        Ok(())
    }

    /// Moves every task's parts into place and marks the output complete.
    pub fn commit(&self) -> Result<()> {
        let tmp = format!("{}/_temporary", self.url);
        for task in self.storage.children(&tmp)? {
            for name in self.storage.children(&format!("{tmp}/{task}"))? {
                for part in self.storage.children(&format!("{tmp}/{task}/{name}"))? {
                    self.storage
                        .rename(&format!("{tmp}/{task}/{name}/{part}"), &format!("{}/{name}/{part}", self.url))?;
                }
            }
        }
        self.storage.delete(&tmp)?;
        self.storage.create(&format!("{}/_SUCCESS", self.url))?.close()
    }
}
