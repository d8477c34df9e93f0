//! Automatic restarts on YARN (`--restarts N`): after a runtime process fails, the AM stops the
//! job's other containers, waits until they are gone, asks for a fresh set and starts every
//! process again as restart K (`ps-runtime run --attempt K`), which continues from the newest
//! resumable checkpoint if the job has one. The record goes to `<staging>/stats/restarts.json`, which
//! yarn-submit adds to the job's stats.

use crate::error::{AmError, Result};
use ps_runtime::internal::RestartLog;
use ps_runtime::snapshot::CheckpointStore;
use ps_runtime::storage::{storage_for, write_atomic};
use ps_runtime::JobConfig;

pub struct Restarts {
    pub log: RestartLog,
    staging: String,
    /// The job's `checkpoint.url`, if any (from its job.json).
    checkpoint: Option<String>,
}

/// The job staged at `staging` (its job.json: the app, and the checkpoint restarts resume from).
pub async fn read_job(staging: &str) -> Result<JobConfig> {
    let url = format!("{staging}/job.json");
    let u = url.clone();
    let read = tokio::task::spawn_blocking(move || -> ps_runtime::Result<JobConfig> {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut *storage_for(&u)?.open(&u, 0)?, &mut text)
            .map_err(|e| ps_runtime::PsError::io("reading", e))?;
        serde_json::from_str(&text).map_err(|e| ps_runtime::PsError::Config(format!("not a job configuration: {e}")))
    });
    read.await.map_err(AmError::Task)?.map_err(|source| AmError::JobFile { url, source })
}

impl Restarts {
    /// Up to `max` restarts of the job staged at `staging`, resuming from `checkpoint` if any.
    pub fn new(max: u32, staging: &str, checkpoint: Option<String>) -> Self {
        Restarts { log: RestartLog::new(max), staging: staging.to_string(), checkpoint }
    }

    /// After failure `what` (the newest clock a process had reported: `reached`): records a
    /// restart and returns true, or returns false when none is left.
    pub async fn restart(&mut self, what: &str, reached: Option<i64>) -> bool {
        if !self.log.can_restart() {
            return false;
        }
        let from = self.resume_clock().await;
        self.log.record(what, reached, from);
        true
    }

    /// This AM is YARN's attempt `attempt` > 1 (`--am-attempts`): the previous AM died with the
    /// job running. Recorded as a restart (outside the `--restarts` budget's check): every
    /// process starts as a restart, from the newest checkpoint.
    pub async fn after_am_attempt(&mut self, attempt: u32) {
        let from = self.resume_clock().await;
        self.log.record(&format!("application master attempt {} ended", attempt - 1), None, from);
    }

    /// The clock of the newest resumable checkpoint (0 without one).
    async fn resume_clock(&self) -> i64 {
        match self.checkpoint.clone() {
            Some(url) => {
                let latest =
                    tokio::task::spawn_blocking(move || CheckpointStore::open(&url).and_then(|s| s.latest_resumable()));
                match latest.await {
                    Ok(Ok(m)) => m.map_or(0, |m| m.clock),
                    Ok(Err(e)) => {
                        log::warn!("looking for a checkpoint: {e} (the restarted processes look again)");
                        0
                    }
                    Err(e) => {
                        log::warn!("looking for a checkpoint: {e}");
                        0
                    }
                }
            }
            None => 0,
        }
    }

    /// Writes the record for yarn-submit (best effort: the job's outcome does not depend on it).
    pub async fn write(&self) {
        let (url, body) = (format!("{}/stats/restarts.json", self.staging), self.log.to_json().to_string());
        let u = url.clone();
        let w = tokio::task::spawn_blocking(move || {
            storage_for(&u).and_then(|st| write_atomic(st.as_ref(), &u, body.as_bytes(), "restart records"))
        });
        match w.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => log::warn!("writing {url}: {e}"),
            Err(e) => log::warn!("writing {url}: {e}"),
        }
    }
}
