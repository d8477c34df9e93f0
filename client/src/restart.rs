//! Automatic recovery (`--restarts N`): after a runtime process fails, every process of the job
//! starts again from the newest complete, resumable checkpoint under `--checkpoint` (from the start
//! if there is none yet), up to N times. The launcher records each restart for the job's stats.

use crate::Cli;
use ps_runtime::snapshot::CheckpointStore;
use ps_runtime::storage::storage_for;
use serde_json::{json, Value};
use std::time::Instant;

/// One failure the job recovered from (or the last one, which it did not).
#[derive(Debug, Clone)]
pub struct Failure {
    /// What failed: `process 1 was killed by signal 9: ...`.
    pub what: String,
    /// Seconds since the job started.
    pub at_s: f64,
    /// The newest clock any process reported before the failure.
    pub reached: Option<i64>,
}

/// The job's restart budget and what it has used.
pub struct Restarts {
    max: u32,
    start: Instant,
    checkpoint: Option<String>,
    output: Option<String>,
    /// Failures recovered from, with the clock each restart resumed at (0: from the start).
    done: Vec<(Failure, i64)>,
}

impl Restarts {
    /// `--restarts N` (default `default_max`), for a job with these `--checkpoint` / `--output`.
    pub fn new(cli: &Cli, default_max: u32, output: Option<String>) -> Self {
        Restarts {
            max: cli.restarts.unwrap_or(default_max),
            start: Instant::now(),
            checkpoint: cli.checkpoint.clone(),
            output,
            done: Vec::new(),
        }
    }

    pub fn failure(&self, what: String, reached: Option<i64>) -> Failure {
        Failure { what, at_s: self.start.elapsed().as_secs_f64(), reached }
    }

    /// Decides whether to restart after `f`: returns the clock to resume at (0: from the start),
    /// having cleared what the failed attempt left that a new one would refuse; or `Err` with
    /// the message that ends the job, listing every failure.
    pub fn restart(&mut self, f: Failure) -> Result<i64, String> {
        let used = self.done.len() as u32;
        if used >= self.max {
            return Err(self.give_up(&f, &format!("{used} restarts of --restarts {} used", self.max)));
        }
        match self.prepare() {
            Ok(from) => {
                log::warn!(
                    "{}; restart {} of {}: {}",
                    f.what,
                    used + 1,
                    self.max,
                    if from > 0 { format!("from the checkpoint at clock {from}") } else { "from the start".into() }
                );
                self.done.push((f, from));
                Ok(from)
            }
            Err(why) => Err(self.give_up(&f, &why)),
        }
    }

    /// The message of a job that cannot go on: every failure, the last one first.
    fn give_up(&self, last: &Failure, why: &str) -> String {
        let mut s = format!("{} (not restarted: {why})", last.what);
        for (i, (f, from)) in self.done.iter().enumerate().rev() {
            s += &format!("; before that, at {:.1}s: {} (restart {} from clock {from})", f.at_s, f.what, i + 1);
        }
        s
    }

    /// The clock the next attempt resumes at; removes an output the failed attempt left
    /// uncommitted (a committed one means the job's result exists: it is not redone).
    fn prepare(&self) -> Result<i64, String> {
        if let Some(out) = &self.output {
            let st = storage_for(out).map_err(|e| format!("checking --output {out}: {e}"))?;
            let exists = |p: &str| st.exists(p).map_err(|e| format!("checking --output {out}: {e}"));
            if exists(&format!("{}/_SUCCESS", out.trim_end_matches('/')))? {
                return Err(format!("--output {out} was already committed"));
            }
            if exists(out)? {
                st.delete(out).map_err(|e| format!("removing the uncommitted --output {out}: {e}"))?;
            }
        }
        let Some(url) = &self.checkpoint else { return Ok(0) };
        let latest = CheckpointStore::open(url).and_then(|s| s.latest_resumable());
        let m = latest.map_err(|e| format!("looking for a checkpoint under {url}: {e}"))?;
        Ok(m.map_or(0, |m| m.clock))
    }

    /// `restarts` (what failed, when, the clock reached and the checkpoint clock resumed from)
    /// and `clocks_redone` (clocks reached again after a restart, as far as progress told),
    /// for the job's stats.
    pub fn stats(&self) -> (Value, Value) {
        let list: Vec<Value> = self
            .done
            .iter()
            .map(|(f, from)| json!({"failed": f.what, "at_s": f.at_s, "reached_clock": f.reached, "from_clock": from}))
            .collect();
        let redone: i64 = self.done.iter().map(|(f, from)| f.reached.map_or(0, |r| (r - from).max(0))).sum();
        (Value::from(list), Value::from(redone))
    }
}
