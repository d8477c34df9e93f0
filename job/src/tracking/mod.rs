//! The job as its tracker sees it: the YARN application master, or the local launcher. Both feed
//! the processes' [`Report`] lines into one [`JobView`], serve it as `status.json` and as an
//! HTML page (`page`), and write the final page as `report.html` (`serve`).
//!
//! `status.json` (the page shows exactly these numbers):
//! ```text
//! app, status, attempt, elapsed_s, processes, clock (slowest process), total_clocks, fraction,
//! eta_s, progress {id: [clock, total]}, failures {id: reason},
//! per_process [{process, clock, done, compute_s, wait_s, bytes_sent, bytes_recv}],
//! objective [{clock, time_s, value, <name>: v ...}]   time_s: seconds into the job
//! bytes_per_clock [{clock, sent, recv}]                 all processes, by clock
//! staleness [{staleness, reads}]                        data age - reader clock
//! snapshots [{clock, parts, state}], restarts [...], clocks_redone
//! ```

pub mod page;
pub mod serve;

use ps_runtime::report::{Report, SnapshotState, Tick};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::Instant;

/// A process clock at or beyond this is a finished process (`Age::FINISHED`).
const FINISHED: i64 = 1 << 60;
/// Clocks of byte counts kept (a longer job keeps its first ones).
const MAX_CLOCKS: usize = 200_000;
/// Objective evaluations kept.
const MAX_EVALS: usize = 100_000;

#[derive(Default, Clone)]
struct Proc {
    clock: Option<i64>,
    total: i64,
    last: Option<Tick>,
    staleness: Vec<u64>,
}

pub struct JobView {
    app: String,
    started: Instant,
    /// `starting`, `running`, `succeeded`, `failed`, or what the tracker is doing.
    pub status: String,
    attempt: u32,
    /// Seconds into the job when this attempt's processes started (their `time_s` origin).
    offset_s: f64,
    /// The first tick of an attempt drops the byte counts of the clocks it runs again.
    fresh_attempt: bool,
    /// (seconds into the job, slowest clock) when this attempt's progress was first seen: the
    /// ETA's starting point.
    progress_origin: Option<(f64, i64)>,
    procs: Vec<Proc>,
    objective: BTreeMap<i64, (f64, Vec<(String, f64)>)>,
    bytes: BTreeMap<i64, (u64, u64)>,
    snapshots: BTreeMap<i64, (Vec<usize>, Option<SnapshotState>)>,
    restarts: Value,
    pub failures: BTreeMap<usize, String>,
}

impl JobView {
    /// A view of job `app` (the application and its arguments) with `n` processes.
    pub fn new(app: &str, n: usize) -> JobView {
        JobView {
            app: app.to_string(),
            started: Instant::now(),
            status: "starting".into(),
            attempt: 0,
            offset_s: 0.0,
            fresh_attempt: false,
            progress_origin: None,
            procs: vec![Proc::default(); n],
            objective: BTreeMap::new(),
            bytes: BTreeMap::new(),
            snapshots: BTreeMap::new(),
            restarts: json!({"restarts": [], "clocks_redone": 0}),
            failures: BTreeMap::new(),
        }
    }

    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Restart `attempt` starts its processes now: their figures start over, the history stays.
    pub fn begin_attempt(&mut self, attempt: u32, restarts: Value) {
        self.attempt = attempt;
        self.offset_s = self.elapsed_s();
        self.fresh_attempt = true;
        self.progress_origin = None;
        self.procs.iter_mut().for_each(|p| *p = Proc::default());
        self.failures.clear();
        self.restarts = restarts;
    }

    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Takes a report of process `id` of the current attempt.
    pub fn apply(&mut self, id: usize, r: Report) {
        let now = self.elapsed_s();
        let Some(p) = self.procs.get_mut(id) else { return };
        match r {
            Report::Clock(c, t) => {
                p.clock = Some(c);
                p.total = t;
                let slowest = self.clock();
                if let (None, Some(c)) = (self.progress_origin, slowest) {
                    self.progress_origin = Some((now, c));
                }
            }
            Report::Failed(why) => {
                self.failures.insert(id, why);
            }
            Report::Tick(t) => {
                if std::mem::take(&mut self.fresh_attempt) {
                    self.bytes.retain(|c, _| *c < t.clock);
                }
                let (s0, r0) = p.last.map_or((0, 0), |l| (l.bytes_sent, l.bytes_recv));
                p.last = Some(t);
                if self.bytes.len() < MAX_CLOCKS || self.bytes.contains_key(&t.clock) {
                    let e = self.bytes.entry(t.clock).or_default();
                    e.0 += t.bytes_sent.saturating_sub(s0);
                    e.1 += t.bytes_recv.saturating_sub(r0);
                }
            }
            Report::Objective { label, time_s, values } => {
                if self.objective.len() < MAX_EVALS || self.objective.contains_key(&label) {
                    self.objective.insert(label, (self.offset_s + time_s, values));
                }
            }
            Report::Staleness(s) => p.staleness = s,
            Report::Snapshot(c, state) => {
                let e = self.snapshots.entry(c).or_default();
                match state {
                    SnapshotState::Part if !e.0.contains(&id) => e.0.push(id),
                    SnapshotState::Part => {}
                    done => e.1 = Some(done),
                }
            }
        }
    }

    /// A reported process clock as shown: a finished process is at the planned total.
    fn shown(&self, c: i64) -> i64 {
        if c >= FINISHED {
            self.total().unwrap_or(c)
        } else {
            c
        }
    }

    /// The slowest process's clock, once every process has reported one.
    pub fn clock(&self) -> Option<i64> {
        let clocks: Option<Vec<i64>> = self.procs.iter().map(|p| p.clock).collect();
        clocks?.into_iter().map(|c| self.shown(c)).min()
    }

    /// The newest clock any process reported (how far the job got before a failure).
    pub fn newest_clock(&self) -> Option<i64> {
        self.procs.iter().filter_map(|p| p.clock).map(|c| self.shown(c)).max()
    }

    /// The planned clocks, if the app knows them.
    pub fn total(&self) -> Option<i64> {
        self.procs.iter().map(|p| p.total).max().filter(|t| *t > 0)
    }

    /// The slowest clock over the planned total (0 when unknown).
    pub fn fraction(&self) -> f64 {
        match (self.clock(), self.total()) {
            (Some(c), Some(t)) => (c as f64 / t as f64).clamp(0.0, 1.0),
            _ => 0.0,
        }
    }

    /// Seconds left at this attempt's pace so far.
    pub fn eta_s(&self) -> Option<f64> {
        let (c, t) = (self.clock()?, self.total()?);
        let (t0, c0) = self.progress_origin?;
        let rate = (c - c0) as f64 / (self.elapsed_s() - t0);
        (c > c0 && rate > 0.0).then(|| ((t - c).max(0) as f64 / rate).max(0.0))
    }

    /// The newest objective evaluation: (label, named values).
    pub fn last_objective(&self) -> Option<(i64, &[(String, f64)])> {
        self.objective.iter().next_back().map(|(l, (_, v))| (*l, v.as_slice()))
    }

    /// `status.json` (keys in the module's doc).
    pub fn status_json(&self) -> Value {
        let total = self.total();
        let per_process: Vec<Value> = self
            .procs
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let done = p.clock.is_some_and(|c| c >= FINISHED);
                let t = p.last.unwrap_or_default();
                json!({"process": i, "clock": p.clock.map(|c| if done { total.unwrap_or(t.clock + 1) } else { c }),
                    "done": done, "compute_s": t.compute_s, "wait_s": t.wait_s,
                    "bytes_sent": t.bytes_sent, "bytes_recv": t.bytes_recv})
            })
            .collect();
        let progress: Map<String, Value> = self
            .procs
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some((i.to_string(), json!([p.clock?, p.total]))))
            .collect();
        let objective: Vec<Value> = self
            .objective
            .iter()
            .map(|(label, (t, vals))| {
                let mut m = Map::new();
                m.insert("clock".into(), json!(label));
                m.insert("time_s".into(), json!(t));
                m.insert("value".into(), json!(vals.first().map(|v| v.1)));
                for (k, v) in vals {
                    m.insert(k.clone(), json!(v));
                }
                Value::Object(m)
            })
            .collect();
        let bytes: Vec<Value> =
            self.bytes.iter().map(|(c, (s, r))| json!({"clock": c, "sent": s, "recv": r})).collect();
        let mut stale: Vec<u64> = Vec::new();
        for p in &self.procs {
            stale.resize(stale.len().max(p.staleness.len()), 0);
            stale.iter_mut().zip(&p.staleness).for_each(|(a, b)| *a += b);
        }
        let staleness: Vec<Value> = stale
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(d, n)| json!({"staleness": -(d as i64), "reads": n}))
            .collect();
        let snapshots: Vec<Value> = self
            .snapshots
            .iter()
            .map(|(c, (parts, state))| {
                let state = match state {
                    Some(SnapshotState::Committed) => "committed",
                    Some(SnapshotState::Approx) => "complete, not resumable",
                    _ => "writing",
                };
                json!({"clock": c, "parts": parts.len(), "state": state})
            })
            .collect();
        json!({
            "app": self.app, "status": self.status, "attempt": self.attempt, "elapsed_s": self.elapsed_s(),
            "processes": self.procs.len(), "clock": self.clock(), "total_clocks": total,
            "fraction": self.fraction(), "eta_s": self.eta_s(), "progress": progress, "failures": self.failures,
            "per_process": per_process, "objective": objective, "bytes_per_clock": bytes,
            "staleness": staleness, "snapshots": snapshots,
            "restarts": self.restarts["restarts"], "clocks_redone": self.restarts["clocks_redone"],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(clock: i64, sent: u64) -> Report {
        Report::Tick(Tick {
            clock,
            time_s: clock as f64,
            compute_s: 0.5,
            wait_s: 0.25,
            bytes_sent: sent,
            bytes_recv: 1,
        })
    }

    #[test]
    fn reports_become_the_status() {
        let mut v = JobView::new("mf --passes 4", 2);
        assert_eq!((v.clock(), v.fraction()), (None, 0.0));
        v.apply(0, Report::Clock(2, 4));
        assert_eq!(v.clock(), None, "process 1 has not reported");
        v.apply(1, Report::Clock(1, 4));
        assert_eq!((v.clock(), v.fraction()), (Some(1), 0.25));
        for (id, c, sent) in [(0, 0, 100), (0, 1, 150), (1, 0, 70)] {
            v.apply(id, tick(c, sent));
        }
        v.apply(0, Report::Objective { label: 1, time_s: 2.0, values: vec![("rmse".into(), 0.9)] });
        v.apply(1, Report::Staleness(vec![0, 3, 1]));
        v.apply(0, Report::Staleness(vec![0, 2]));
        v.apply(0, Report::Snapshot(2, SnapshotState::Part));
        v.apply(1, Report::Snapshot(2, SnapshotState::Part));
        v.apply(0, Report::Snapshot(2, SnapshotState::Committed));
        v.apply(5, Report::Clock(9, 9)); // no such process: ignored
        let s = v.status_json();
        assert_eq!(
            s["bytes_per_clock"],
            json!([{"clock": 0, "sent": 170, "recv": 2}, {"clock": 1, "sent": 50, "recv": 0}])
        );
        assert_eq!(s["staleness"], json!([{"staleness": -1, "reads": 5}, {"staleness": -2, "reads": 1}]));
        assert_eq!(s["objective"][0]["rmse"], json!(0.9));
        assert_eq!(s["objective"][0]["value"], json!(0.9));
        assert_eq!(s["snapshots"], json!([{"clock": 2, "parts": 2, "state": "committed"}]));
        assert_eq!(s["per_process"][0]["clock"], json!(2));
        assert_eq!(s["progress"]["1"], json!([1, 4]));
        // Finished processes count as at the total.
        v.apply(0, Report::Clock(FINISHED * 2, 4));
        v.apply(1, Report::Clock(FINISHED * 2, 4));
        assert_eq!((v.clock(), v.fraction()), (Some(4), 1.0));
        assert_eq!(v.status_json()["per_process"][1]["done"], json!(true));
    }

    #[test]
    fn a_restart_redoes_clocks_without_counting_them_twice() {
        let mut v = JobView::new("lda", 1);
        for c in 0..5 {
            v.apply(0, tick(c, 10 * (c as u64 + 1)));
        }
        v.apply(0, Report::Objective { label: 4, time_s: 1.0, values: vec![("loglik".into(), -9.0)] });
        v.begin_attempt(1, json!({"restarts": [{"failed": "process 0 was killed"}], "clocks_redone": 2}));
        assert_eq!(v.attempt(), 1);
        // Resumed at clock 3: its counters start over, clocks 3 and 4 are run again.
        v.apply(0, tick(3, 25));
        v.apply(0, tick(4, 30));
        let s = v.status_json();
        let sent: Vec<u64> =
            s["bytes_per_clock"].as_array().unwrap().iter().map(|b| b["sent"].as_u64().unwrap()).collect();
        assert_eq!(sent, [10, 10, 10, 25, 5]);
        assert_eq!(s["restarts"][0]["failed"], json!("process 0 was killed"));
        assert_eq!(s["clocks_redone"], json!(2));
        v.apply(0, Report::Objective { label: 4, time_s: 1.0, values: vec![("loglik".into(), -8.0)] });
        assert_eq!(v.last_objective().map(|(l, vals)| (l, vals[0].1)), Some((4, -8.0)));
        assert!(v.status_json()["objective"][0]["time_s"].as_f64().unwrap() >= 1.0);
    }
}
