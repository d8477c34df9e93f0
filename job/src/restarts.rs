//! The one restart policy of a job, used by both drivers: the local launcher (`yarn-submit
//! --master local[N]`) and the YARN application master. After a runtime process fails, every
//! process starts again (`ps-runtime run --attempt K`) from the newest complete, resumable
//! checkpoint (from the start if there is none yet), up to `--restarts N` times. A job whose
//! output is already committed is not redone, and a job whose checkpoints cannot be looked at is
//! not restarted blind: both end it, saying why.

use crate::restart_log::RestartLog;
use ps_runtime::snapshot::CheckpointStore;
use ps_runtime::storage::storage_for;

/// The job's restart budget, what it has used, and where it resumes from.
pub struct RestartPolicy {
    pub log: RestartLog,
    checkpoint: Option<String>,
    output: Option<String>,
}

impl RestartPolicy {
    /// Up to `max` restarts of a job with these `--checkpoint` and `--output` locations.
    pub fn new(max: u32, checkpoint: Option<String>, output: Option<String>) -> Self {
        RestartPolicy { log: RestartLog::new(max), checkpoint, output }
    }

    /// After failure `what` (the job had reported clock `reached`): records a restart and returns
    /// the clock it continues from, or the message that ends the job, listing every failure.
    /// Blocking (it reads the checkpoint store).
    pub fn restart(&mut self, what: &str, reached: Option<i64>) -> Result<i64, String> {
        if !self.log.can_restart() {
            return Err(self.log.give_up(what, &self.log.used_up()));
        }
        match self.resume_clock() {
            Ok(from) => {
                self.log.record(what, reached, from);
                Ok(from)
            }
            Err(why) => Err(self.log.give_up(what, &why)),
        }
    }

    /// The clock a new attempt continues from: the newest resumable checkpoint's (0 without
    /// one). A committed output means the job's result exists: it is not redone (the restarted
    /// processes replace an uncommitted one).
    pub fn resume_clock(&self) -> Result<i64, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("ps-restarts-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// The policy both drivers follow, checked once: the budget, a committed output, a checkpoint
    /// store that cannot be read, and no checkpoint at all.
    #[test]
    fn restarts_until_the_budget_or_a_reason_to_stop() {
        let d = tmp("policy");
        let s = |p: &std::path::Path| Some(p.to_string_lossy().into_owned());
        // No checkpoint: from the start, twice, then the budget is used up and every failure listed.
        let mut p = RestartPolicy::new(2, None, None);
        assert_eq!(p.restart("process 1 failed", Some(5)), Ok(0));
        assert_eq!(p.restart("process 0 failed", Some(7)), Ok(0));
        let end = p.restart("process 1 failed again", Some(3)).unwrap_err();
        assert!(end.starts_with("process 1 failed again (not restarted: 2 restarts of --restarts 2 used)"), "{end}");
        assert!(end.contains("process 0 failed (restart 2") && end.contains("process 1 failed (restart 1"), "{end}");
        assert_eq!(p.log.to_json()["clocks_redone"], 12);
        // A committed output is never redone.
        let out = d.join("out");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("_SUCCESS"), "").unwrap();
        let end = RestartPolicy::new(3, None, s(&out)).restart("process 0 failed", None).unwrap_err();
        assert!(end.contains(&format!("--output {} was already committed", out.display())), "{end}");
        // An output without _SUCCESS is replaced by the restarted job.
        std::fs::remove_file(out.join("_SUCCESS")).unwrap();
        assert_eq!(RestartPolicy::new(3, None, s(&out)).restart("p", None), Ok(0));
        // A checkpoint location that is a file cannot be looked at: no blind restart from clock 0.
        let bad = d.join("not-a-store");
        std::fs::write(&bad, "x").unwrap();
        let end = RestartPolicy::new(3, s(&bad), None).restart("p", None).unwrap_err();
        assert!(end.contains(&format!("looking for a checkpoint under {}", bad.display())), "{end}");
        // An empty store: from the start.
        assert_eq!(RestartPolicy::new(3, s(&d.join("ck")), None).restart("p", None), Ok(0));
        let _ = std::fs::remove_dir_all(&d);
    }
}
