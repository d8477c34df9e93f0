//! The record of a job's automatic restarts (`--restarts`), kept by whichever launcher restarts
//! it (yarn-submit locally, the application master on YARN): what failed, when, how far the job
//! had got and which checkpoint clock it continued from. Goes into the job's stats as `restarts`
//! and `clocks_redone`, and into the message of a job that runs out of restarts.

use serde_json::{json, Value};
use std::time::Instant;

pub struct RestartLog {
    max: u32,
    start: Instant,
    /// Per restart: what failed, seconds into the job, the newest clock reported, the clock the
    /// restart continued from.
    done: Vec<(String, f64, Option<i64>, i64)>,
}

impl RestartLog {
    /// A job allowed `max` restarts, starting now.
    pub fn new(max: u32) -> Self {
        RestartLog { max, start: Instant::now(), done: Vec::new() }
    }

    /// Restarts made so far (the number of the next attempt).
    pub fn attempts(&self) -> u32 {
        self.done.len() as u32
    }

    /// Whether another restart is allowed.
    pub fn can_restart(&self) -> bool {
        self.attempts() < self.max
    }

    /// Records a restart after `what` failed (the job had reported clock `reached`), continuing
    /// from clock `from` (0: the start), and logs it.
    pub fn record(&mut self, what: &str, reached: Option<i64>, from: i64) {
        self.done.push((what.to_string(), self.start.elapsed().as_secs_f64(), reached, from));
        let whence = if from > 0 { format!("from the checkpoint at clock {from}") } else { "from the start".into() };
        log::warn!("{what}; restart {} of {}: {whence}", self.attempts(), self.max);
    }

    /// The message of a job that cannot go on after `last`: why not, then every earlier failure,
    /// newest first.
    pub fn give_up(&self, last: &str, why: &str) -> String {
        let mut s = format!("{last} (not restarted: {why})");
        for (i, (what, at, _, from)) in self.done.iter().enumerate().rev() {
            s += &format!("; before that, at {at:.1}s: {what} (restart {} from clock {from})", i + 1);
        }
        s
    }

    /// Why no restart is left, for `give_up`.
    pub fn used_up(&self) -> String {
        format!("{} restarts of --restarts {} used", self.attempts(), self.max)
    }

    /// `{"restarts": [{failed, at_s, reached_clock, from_clock}], "clocks_redone": n}`: the
    /// clocks run again, as far as the progress reports told.
    pub fn to_json(&self) -> Value {
        let list: Vec<Value> = self
            .done
            .iter()
            .map(|(what, at, reached, from)| json!({"failed": what, "at_s": at, "reached_clock": reached, "from_clock": from}))
            .collect();
        let redone: i64 = self.done.iter().map(|(_, _, r, from)| r.map_or(0, |r| (r - from).max(0))).sum();
        json!({"restarts": list, "clocks_redone": redone})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_are_counted_listed_and_summed() {
        let mut log = RestartLog::new(2);
        assert!(log.can_restart());
        log.record("process 1 was killed by signal 9", Some(12), 8);
        log.record("process 0 exited with status 1: boom", None, 8);
        assert!(!log.can_restart());
        let msg = log.give_up("process 1 exited with status 1", &log.used_up());
        assert!(msg.starts_with("process 1 exited with status 1 (not restarted: 2 restarts of --restarts 2 used)"));
        let (second, first) =
            (msg.find("restart 2 from clock 8").unwrap(), msg.find("restart 1 from clock 8").unwrap());
        assert!(second < first, "newest first: {msg}");
        let v = log.to_json();
        assert_eq!(v["restarts"].as_array().unwrap().len(), 2);
        assert_eq!(v["clocks_redone"], 4);
        assert_eq!(v["restarts"][0]["reached_clock"], 12);
    }
}
