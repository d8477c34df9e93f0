//! Objective tracking: every worker's partial sums of the quality measure are added up in a
//! parameter-server table, one worker publishes them as progress lines and stats records, and
//! reaching `--target` stops the job at the same clock on every worker.

use super::options::CommonArgs;
use ps_runtime::report::Report;
use ps_runtime::TableKey;
use ps_runtime::{ColumnGet, DenseRow};
use ps_runtime::{PsContext, TableHandle, Worker};
use ps_runtime::{PsError, Result};
use serde_json::{json, Map, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub const OBJECTIVE_TABLE: TableKey<DenseRow<f64>> = TableKey::new(100);
pub const CONTROL_TABLE: TableKey<DenseRow<i64>> = TableKey::new(101);
/// Partial sums per evaluation: up to this many numbers, summed over workers.
pub const OBJECTIVE_FIELDS: usize = 8;

/// Objective tracking. Every worker adds its partial sums for evaluation `k` (row `k` of the
/// objective table) at the end of the sampled clock; global thread 0 reads each row once the
/// staleness bound guarantees every worker's contribution is in, turns the sums into values with
/// `finish`, logs a progress line, records `{clock, time_s, value, ...}`, and on `--target` sets
/// the stop clock in the control table, which every worker reads each clock.
pub struct Objective {
    /// Turns summed partials into named values; the first is the `value`.
    finish: fn(&[f64]) -> Vec<(&'static str, f64)>,
    /// Lower is better (RMSE, L1 change) or higher (log-likelihood).
    lower_is_better: bool,
    pub records: Mutex<Vec<Value>>,
    /// The origin of `time_s`: when the process's first worker set up its tracker (after its
    /// app's set-up, see `driver`).
    started: Mutex<Option<Instant>>,
    /// Worker 0's training time without evaluations, and the clocks it ran.
    train: Mutex<Option<(f64, i64)>>,
    /// Worker 0's time in the phases around training (`load_s`, `eval_s`, `output_s`): where a
    /// job's wall time outside training goes.
    phases: Mutex<Vec<(&'static str, Value)>>,
    /// This process's CPU seconds and socket bytes sent when its first thread started training
    /// and at the barrier after the last clock (`train_cpu_s`, `train_bytes_sent`,
    /// `train_wan_bytes_sent`).
    cpu: Mutex<(Option<Mark>, Option<Mark>)>,
}

impl Objective {
    pub fn new(finish: fn(&[f64]) -> Vec<(&'static str, f64)>, lower_is_better: bool) -> Arc<Self> {
        Arc::new(Objective {
            finish,
            lower_is_better,
            records: Mutex::new(Vec::new()),
            started: Mutex::new(None),
            train: Mutex::new(None),
            phases: Mutex::new(Vec::new()),
            cpu: Mutex::new((None, None)),
        })
    }

    /// Marks the start (`end` false) or the end of this process's training, in CPU seconds and
    /// the process's `bytes_sent` and `wan_bytes_sent` so far.
    pub fn record_cpu(&self, end: bool, bytes_sent: u64, wan_bytes_sent: u64) {
        let now = (ps_runtime::stats::process_cpu_s(), bytes_sent, wan_bytes_sent);
        let mut c = self.cpu.lock().unwrap_or_else(|e| e.into_inner());
        if end {
            c.1 = Some(now);
        } else {
            c.0.get_or_insert(now);
        }
    }

    /// Records worker 0's seconds in phase `name` (a stats key).
    pub fn record_phase(&self, name: &'static str, secs: f64) {
        self.record_value(name, json!(secs));
    }

    /// Records a job-wide value that worker 0 learnt (a stats key), e.g. `rows_skipped`.
    pub fn record_value(&self, name: &'static str, value: Value) {
        self.phases.lock().unwrap_or_else(|e| e.into_inner()).push((name, value));
    }

    pub fn create_tables(ctx: &mut PsContext) -> Result<()> {
        // Sums of every worker's part: across data centers (ASP) every change is mirrored.
        ctx.create_table(OBJECTIVE_TABLE.config("objective", OBJECTIVE_FIELDS).with_significance(0.0))?;
        ctx.create_table(CONTROL_TABLE.config("control", 1).with_significance(0.0))
    }

    pub fn report(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("objective".into(), Value::Array(self.records.lock().unwrap_or_else(|e| e.into_inner()).clone()));
        if let Some((s, clocks)) = *self.train.lock().unwrap_or_else(|e| e.into_inner()) {
            m.insert("train_s".into(), json!(s));
            m.insert("train_clocks".into(), json!(clocks));
        }
        if let (Some(a), Some(b)) = *self.cpu.lock().unwrap_or_else(|e| e.into_inner()) {
            m.insert("train_cpu_s".into(), json!(b.0 - a.0));
            m.insert("train_bytes_sent".into(), json!(b.1.saturating_sub(a.1)));
            m.insert("train_wan_bytes_sent".into(), json!(b.2.saturating_sub(a.2)));
        }
        for (name, v) in self.phases.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            m.insert((*name).into(), v.clone());
        }
        m
    }
}

/// CPU seconds, socket bytes sent and the part of them sent to other data centers, of a process
/// at one moment.
type Mark = (f64, u64, u64);

/// A worker's side of objective tracking.
pub struct Tracker {
    obj: Arc<Objective>,
    table: TableHandle<DenseRow<f64>>,
    control: TableHandle<DenseRow<i64>>,
    reporter: bool,
    /// Evaluations not yet read: (row, label, clock it was made in, time).
    pending: VecDeque<(u64, i64, i64, f64)>,
    next_row: u64,
    slack: Option<i64>,
    target: Option<f64>,
    total: i64,
    t0: Instant,
    /// Start of the training loop (first poll) and time spent evaluating since.
    train_start: Option<(Instant, i64)>,
    eval_s: f64,
}

impl Tracker {
    pub fn new(w: &mut Worker, obj: Arc<Objective>, args: &CommonArgs) -> Result<Self> {
        let t0 = *obj.started.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(Instant::now);
        Ok(Tracker {
            table: w.open(OBJECTIVE_TABLE)?,
            control: w.open(CONTROL_TABLE)?,
            reporter: w.global_thread_id() == 0,
            pending: VecDeque::new(),
            next_row: 0,
            // Across data centers (ASP) the other data centers' parts arrive up to DS clocks later.
            slack: w.staleness(OBJECTIVE_TABLE.id())?.map(|s| s + w.mirror_lag()),
            target: args.target,
            total: args.total_clocks(),
            obj,
            t0,
            train_start: None,
            eval_s: 0.0,
        })
    }

    /// Adds this worker's partial sums of the next evaluation, labelled `label` (clocks or passes
    /// of work done). Every worker must call it at the same points of its work.
    fn contribute(&mut self, w: &Worker, label: i64, partial: &[f64]) -> Result<()> {
        let row = self.next_row;
        self.next_row += 1;
        let upd: Vec<(u32, f64)> = partial.iter().enumerate().map(|(i, v)| (i as u32, *v)).collect();
        self.table.batch_inc(row, &upd)?;
        if self.reporter {
            self.pending.push_back((row, label, w.current_clock(), self.t0.elapsed().as_secs_f64()));
        }
        Ok(())
    }

    /// Called by every worker at the start of each clock `c`: the reporter publishes evaluations
    /// that are complete; returns true if the job should stop (target reached).
    pub fn poll(&mut self, w: &Worker) -> Result<bool> {
        let c = w.current_clock();
        self.train_start.get_or_insert((Instant::now(), c));
        if self.reporter {
            while let Some(&(row, label, made_at, t)) = self.pending.front() {
                // A read at clock c sees every update of clocks <= c - s - 1 from every worker.
                match self.slack {
                    Some(s) if made_at < c - s => {}
                    _ => break,
                }
                self.pending.pop_front();
                self.publish(w, row, label, t, c)?;
            }
        }
        let stop = self.control.get(0)?.col(0);
        Ok(stop > 0 && c + 1 >= stop)
    }

    fn publish(&mut self, w: &Worker, row: u64, done: i64, t: f64, c: i64) -> Result<()> {
        let sums: Vec<f64> = self.table.get(row)?.to_vec();
        let vals = (self.obj.finish)(&sums);
        let value = vals.first().map(|v| v.1).unwrap_or(f64::NAN);
        if !value.is_finite() {
            return Err(PsError::Usage(format!(
                "the objective became {value} after clock {done}: training diverged (lower the step size or use more --clocks-per-pass)"
            )));
        }
        let mut rec = json!({"clock": done, "time_s": t, "value": value});
        let mut line = format!("clock {done}/{} ({t:.1}s):", self.total);
        for (k, v) in &vals {
            rec[*k] = json!(v);
            line += &if v.abs() < 1e-3 && *v != 0.0 { format!(" {k} {v:.4e}") } else { format!(" {k} {v:.6}") };
        }
        log::info!("{line}");
        let values = vals.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        w.report_live(Report::Objective { label: done, time_s: t, values });
        self.obj.records.lock().unwrap_or_else(|e| e.into_inner()).push(rec);
        if let Some(target) = self.target {
            let reached = if self.obj.lower_is_better { value <= target } else { value >= target };
            if reached && self.control.get(0)?.col(0) == 0 {
                // Every worker stops at clock c + slack + 1, the first clock at which each is
                // sure to read the stop clock (set in clock c): workers that stopped at
                // different clocks left threads that share a model slice waiting for a turn
                // that never came, and stopped the job at a clock that depended on timing.
                let stop = c + 1 + self.slack.map_or(0, |s| s + 1);
                log::info!("target {target} reached at clock {done}: stopping at clock {}", stop - 1);
                self.control.inc_col(0, 0, stop)?;
            }
        }
        Ok(())
    }

    /// Runs an evaluation (`f` returns this worker's partial sums) and contributes it; its time
    /// is kept out of the training time.
    pub fn evaluate(&mut self, w: &Worker, label: i64, f: impl FnOnce() -> Result<Vec<f64>>) -> Result<()> {
        let partial = self.measure(f)?;
        self.contribute(w, label, &partial)
    }

    /// Runs `f`, quality-measurement work, keeping its time out of the training time.
    pub fn measure<T>(&mut self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let t = Instant::now();
        let r = f();
        self.eval_s += t.elapsed().as_secs_f64();
        r
    }

    /// What a resumed worker needs to continue tracking: the next objective row, and for the
    /// reporter its unpublished evaluations and the records published so far.
    pub fn save(&self) -> Value {
        let records =
            if self.reporter { self.obj.records.lock().unwrap_or_else(|e| e.into_inner()).clone() } else { vec![] };
        json!({"next_row": self.next_row, "pending": self.pending, "records": records})
    }

    pub fn restore(&mut self, v: &Value) -> Result<()> {
        let bad = || PsError::codec(format!("saved tracker state {v} is malformed"));
        self.next_row = v["next_row"].as_u64().ok_or_else(bad)?;
        self.pending = serde_json::from_value(v["pending"].clone()).map_err(|_| bad())?;
        if self.reporter {
            let recs: Vec<Value> = serde_json::from_value(v["records"].clone()).map_err(|_| bad())?;
            *self.obj.records.lock().unwrap_or_else(|e| e.into_inner()) = recs;
        }
        Ok(())
    }

    /// At the end of the run (every worker): a barrier, then the reporter publishes the rest.
    pub fn finish(&mut self, w: &mut Worker) -> Result<()> {
        if let (true, Some((t, c0))) = (self.reporter, self.train_start) {
            let s = (t.elapsed().as_secs_f64() - self.eval_s).max(0.0);
            *self.obj.train.lock().unwrap_or_else(|e| e.into_inner()) = Some((s, w.current_clock() - c0));
            self.obj.record_phase("eval_s", self.eval_s);
        }
        w.global_barrier()?;
        let c = w.current_clock();
        while let Some((row, label, _, t)) = self.pending.pop_front() {
            self.publish(w, row, label, t, c)?;
        }
        Ok(())
    }
}
