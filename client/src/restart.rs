//! Automatic recovery of local jobs (`--restarts N`): after a runtime process fails, every
//! process starts again (`ps-runtime run --attempt K`) from the newest complete, resumable
//! checkpoint under `--checkpoint` (from the start if there is none yet), up to N times.

use crate::Cli;
use ps_runtime::internal::RestartLog;
use ps_runtime::snapshot::CheckpointStore;
use ps_runtime::storage::storage_for;

/// The job's restart budget and what it has used.
pub struct Restarts {
    pub log: RestartLog,
    checkpoint: Option<String>,
    output: Option<String>,
}

impl Restarts {
    /// `--restarts N` (default `default_max`), for a job with these `--checkpoint` / `--output`.
    pub fn new(cli: &Cli, default_max: u32, output: Option<String>) -> Self {
        Restarts {
            log: RestartLog::new(cli.restarts.unwrap_or(default_max)),
            checkpoint: cli.checkpoint.clone(),
            output,
        }
    }

    /// After failure `what` (the job had reported clock `reached`): Ok if the job is to start
    /// again, or the message that ends it, listing every failure.
    pub fn restart(&mut self, what: &str, reached: Option<i64>) -> Result<(), String> {
        if !self.log.can_restart() {
            return Err(self.log.give_up(what, &self.log.used_up()));
        }
        match self.resume_clock() {
            Ok(from) => {
                self.log.record(what, reached, from);
                Ok(())
            }
            Err(why) => Err(self.log.give_up(what, &why)),
        }
    }

    /// The clock the next attempt continues from. A committed output means the job's result
    /// exists: it is not redone (the restarted processes replace an uncommitted one).
    fn resume_clock(&self) -> Result<i64, String> {
        if let Some(out) = &self.output {
            let st = storage_for(out).map_err(|e| format!("checking --output {out}: {e}"))?;
            let done = st.exists(&format!("{}/_SUCCESS", out.trim_end_matches('/')));
            if done.map_err(|e| format!("checking --output {out}: {e}"))? {
                return Err(format!("--output {out} was already committed"));
            }
        }
        let Some(url) = &self.checkpoint else { return Ok(0) };
        let latest = CheckpointStore::open(url).and_then(|s| s.latest_resumable());
        let m = latest.map_err(|e| format!("looking for a checkpoint under {url}: {e}"))?;
        Ok(m.map_or(0, |m| m.clock))
    }
}
