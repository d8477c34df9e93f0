//! Automatic restarts on YARN (`--restarts N`): after a runtime process fails, the AM stops the
//! job's other containers, waits until they are gone, asks for a fresh set and starts every
//! process again as restart K (`ps-runtime run --attempt K`), which continues from the newest
//! resumable checkpoint if the job has one (`ps_job::driver`, the same driver and policy as a local
//! job's). The record goes to `<staging>/stats/restarts.json`, which
//! yarn-submit adds to the job's stats.

use crate::error::{AmError, Result};
use ps_job::{restart_log::RestartLog, restarts::RestartPolicy};
use ps_runtime::storage::{storage_for, write_atomic};
use ps_runtime::JobConfig;

pub struct Restarts {
    policy: RestartPolicy,
    staging: String,
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
    /// Up to `max` restarts of the job staged at `staging` (its checkpoint and output from its
    /// job.json), under the one policy the local launcher follows too.
    pub fn new(max: u32, staging: &str, job: &JobConfig) -> Self {
        let policy = RestartPolicy::new(max, job.runtime.checkpoint.url.clone(), job.output.clone());
        Restarts { policy, staging: staging.to_string() }
    }

    /// The record of restarts so far.
    pub fn log(&self) -> &RestartLog {
        &self.policy.log
    }

    /// The policy, for the job's driver to follow (an empty one in its place meanwhile).
    pub fn take_policy(&mut self) -> RestartPolicy {
        std::mem::replace(&mut self.policy, RestartPolicy::new(0, None, None))
    }

    /// The policy back from the driver, with the restarts it recorded.
    pub fn put_policy(&mut self, policy: RestartPolicy) {
        self.policy = policy;
    }

    /// This AM is YARN's attempt `attempt` > 1 (`--am-attempts`): the previous AM died with the
    /// job running. Recorded as a restart (outside the `--restarts` budget's check): every
    /// process starts as a restart, from the newest checkpoint (they look for it themselves, so
    /// a failed look here only costs the record its clock).
    pub async fn after_am_attempt(&mut self, attempt: u32) {
        let mut policy = std::mem::replace(&mut self.policy, RestartPolicy::new(0, None, None));
        let task = tokio::task::spawn_blocking(move || {
            let from = policy.resume_clock().unwrap_or_else(|e| {
                log::warn!("{e} (the restarted processes look again)");
                0
            });
            policy.log.record(&format!("application master attempt {} ended", attempt - 1), None, from);
            policy
        });
        match task.await {
            Ok(p) => self.policy = p,
            Err(e) => log::warn!("recording the AM attempt: {e}"),
        }
    }

    /// Writes the record for yarn-submit (best effort: the job's outcome does not depend on it).
    pub async fn write(&self) {
        let (url, body) = (format!("{}/stats/restarts.json", self.staging), self.policy.log.to_json().to_string());
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
