//! What the applications share: the common options, objective tracking through a parameter-server
//! table, stopping at a target quality, and committed (temp name, then rename) outputs.

use crate::config::TableConfig;
use crate::error::{PsError, Result};
use crate::input::{storage_for, BadRecords, Storage};
use crate::row::{ColumnGet, DenseRow};
use crate::{PsContext, TableHandle, Worker};
use serde_json::{json, Map, Value};
use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Options every application takes (interface contract: names are fixed).
#[derive(clap::Args, Debug, Clone)]
pub struct CommonArgs {
    /// Input URL (a file or a directory of part files).
    #[arg(long)]
    pub input: String,
    /// Output URL (a directory; refused if it exists unless --overwrite).
    #[arg(long)]
    pub output: Option<String>,
    #[arg(long)]
    pub overwrite: bool,
    /// Passes over the data.
    #[arg(long, default_value_t = 10)]
    pub passes: i64,
    /// Clocks per pass (work per clock = 1/C of a pass; C > 1 is A-BSP-style minibatching).
    /// Default: the app's (mf 10, lda and pagerank 1).
    #[arg(long)]
    pub clocks_per_pass: Option<i64>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Stop once the objective reaches this value.
    #[arg(long)]
    pub target: Option<f64>,
    /// Objective evaluations per run, evenly spaced.
    #[arg(long, default_value_t = 16)]
    pub samples: i64,
    /// Count and skip malformed input lines instead of failing.
    #[arg(long)]
    pub skip_bad_records: bool,
    /// Passes per clock (W > 1 makes a clock several passes: LazyTable's wpc > 1).
    #[arg(long, default_value_t = 1)]
    pub passes_per_clock: i64,
    /// Straggler injection for experiments: `delayed` (process k sleeps --straggler-delay seconds
    /// in clock k, round robin) or `random` (each process sleeps that long in a clock with
    /// probability --straggler-p).
    #[arg(long)]
    pub straggler: Option<Straggler>,
    #[arg(long, default_value_t = 0.0)]
    pub straggler_delay: f64,
    #[arg(long, default_value_t = 0.1)]
    pub straggler_p: f64,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Straggler {
    Delayed,
    Random,
}

impl CommonArgs {
    pub fn bad_records(&self) -> BadRecords {
        if self.skip_bad_records {
            BadRecords::Skip
        } else {
            BadRecords::Fail
        }
    }
    pub fn total_clocks(&self) -> i64 {
        if self.passes_per_clock > 1 {
            (self.passes + self.passes_per_clock - 1) / self.passes_per_clock
        } else {
            self.passes * self.cpp()
        }
    }

    /// The work of clock `clock` over `n` items: (pass, item range) segments.
    pub fn segments(&self, clock: i64, n: usize) -> Vec<(i64, std::ops::Range<usize>)> {
        if self.passes_per_clock > 1 {
            let first = clock * self.passes_per_clock;
            (first..(first + self.passes_per_clock).min(self.passes)).map(|p| (p, 0..n)).collect()
        } else {
            let cpp = self.cpp();
            let per = n.div_ceil(cpp as usize);
            let part = (clock % cpp) as usize;
            vec![(clock / cpp, (part * per).min(n)..((part + 1) * per).min(n))]
        }
    }

    /// Injected straggling for clock `clock` of process `pid` of `nprocs` (every thread of the
    /// process sleeps, as when the machine is slow).
    pub fn straggle(&self, pid: usize, nprocs: usize, clock: i64) {
        let hit = match self.straggler {
            None => false,
            Some(Straggler::Delayed) => clock.rem_euclid(nprocs as i64) as usize == pid,
            Some(Straggler::Random) => {
                let h = crate::config::mix64(self.seed ^ (pid as u64) << 40 ^ clock as u64);
                ((h >> 11) as f64 / (1u64 << 53) as f64) < self.straggler_p
            }
        };
        if hit && self.straggler_delay > 0.0 {
            std::thread::sleep(std::time::Duration::from_secs_f64(self.straggler_delay));
        }
    }
    /// Clocks per pass.
    pub fn cpp(&self) -> i64 {
        self.clocks_per_pass.unwrap_or(1)
    }
    /// Fills in the app's default clocks per pass and checks ranges.
    pub fn validate(&mut self, app: &str, default_cpp: i64) -> Result<()> {
        if self.passes_per_clock > 1 && self.clocks_per_pass.is_some_and(|c| c > 1) {
            return Err(PsError::Config(format!("{app}: use either --clocks-per-pass or --passes-per-clock")));
        }
        self.clocks_per_pass.get_or_insert(if self.passes_per_clock > 1 { 1 } else { default_cpp });
        if self.passes_per_clock <= 0 || self.straggler_delay < 0.0 || !(0.0..=1.0).contains(&self.straggler_p) {
            return Err(PsError::Config(format!(
                "{app}: --passes-per-clock must be positive, --straggler-delay >= 0, --straggler-p in [0, 1]"
            )));
        }
        if self.passes <= 0 || self.cpp() <= 0 || self.samples < 0 {
            return Err(PsError::Config(format!("{app}: --passes and --clocks-per-pass must be positive")));
        }
        Ok(())
    }
    /// True if the objective should be evaluated at the end of clock `c` (0-based).
    pub fn is_sample_clock(&self, c: i64) -> bool {
        let t = self.total_clocks();
        let s = self.samples.min(t).max(1);
        (0..s).any(|i| (i + 1) * t / s - 1 == c)
    }
}

pub const OBJECTIVE_TABLE: u32 = 100;
pub const CONTROL_TABLE: u32 = 101;
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
    started: Mutex<Option<Instant>>,
    /// Worker 0's training time without evaluations, and the clocks it ran.
    train: Mutex<Option<(f64, i64)>>,
}

impl Objective {
    pub fn new(finish: fn(&[f64]) -> Vec<(&'static str, f64)>, lower_is_better: bool) -> Arc<Self> {
        Arc::new(Objective {
            finish,
            lower_is_better,
            records: Mutex::new(Vec::new()),
            started: Mutex::new(None),
            train: Mutex::new(None),
        })
    }

    pub fn create_tables(ctx: &mut PsContext) -> Result<()> {
        ctx.create_table(TableConfig::new(OBJECTIVE_TABLE, "objective", "dense_f64", OBJECTIVE_FIELDS))?;
        ctx.create_table(TableConfig::new(CONTROL_TABLE, "control", "dense_i64", 1))
    }

    pub fn report(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("objective".into(), Value::Array(self.records.lock().unwrap_or_else(|e| e.into_inner()).clone()));
        if let Some((s, clocks)) = *self.train.lock().unwrap_or_else(|e| e.into_inner()) {
            m.insert("train_s".into(), json!(s));
            m.insert("train_clocks".into(), json!(clocks));
        }
        m
    }
}

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
            table: w.table(OBJECTIVE_TABLE)?,
            control: w.table(CONTROL_TABLE)?,
            reporter: w.global_thread_id() == 0,
            pending: VecDeque::new(),
            next_row: 0,
            slack: w.staleness(OBJECTIVE_TABLE)?,
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
    pub fn contribute(&mut self, w: &Worker, label: i64, partial: &[f64]) -> Result<()> {
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
                self.publish(row, label, t, c)?;
            }
        }
        let stop = self.control.get(0)?.col(0);
        Ok(stop > 0 && c + 1 >= stop)
    }

    fn publish(&mut self, row: u64, done: i64, t: f64, c: i64) -> Result<()> {
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
        self.obj.records.lock().unwrap_or_else(|e| e.into_inner()).push(rec);
        if let Some(target) = self.target {
            let reached = if self.obj.lower_is_better { value <= target } else { value >= target };
            if reached && self.control.get(0)?.col(0) == 0 {
                log::info!("target {target} reached at clock {done}: stopping");
                self.control.inc_col(0, 0, c + 1)?;
            }
        }
        Ok(())
    }

    /// Runs an evaluation (`f` returns this worker's partial sums) and contributes it; its time
    /// is kept out of the training time.
    pub fn evaluate(&mut self, w: &Worker, label: i64, f: impl FnOnce() -> Result<Vec<f64>>) -> Result<()> {
        let t = Instant::now();
        let partial = f()?;
        self.eval_s += t.elapsed().as_secs_f64();
        self.contribute(w, label, &partial)
    }

    /// Keeps `secs` spent on quality measurement out of the training time.
    pub fn add_eval_time(&mut self, secs: f64) {
        self.eval_s += secs;
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
        }
        w.global_barrier()?;
        let c = w.current_clock();
        while let Some((row, label, _, t)) = self.pending.pop_front() {
            self.publish(row, label, t, c)?;
        }
        Ok(())
    }
}

/// A worker's checkpoint state, as the built-in apps save it: the next loop clock, the objective
/// tracker's state and app-specific JSON fields (`meta`), then raw bytes for big arrays such as
/// LDA's topic assignments. Stored as `u32 json length, json, raw`.
pub struct SavedState {
    pub clock: i64,
    pub meta: Value,
    pub raw: Vec<u8>,
}

impl SavedState {
    /// Appends a state resuming at loop clock `clock` (for `Worker::clock_saving`); `extra` is a
    /// JSON object of app fields (or null).
    pub fn write(out: &mut Vec<u8>, clock: i64, tracker: &Tracker, extra: Value, raw: &[u8]) -> Result<()> {
        let mut meta = json!({"clock": clock, "tracker": tracker.save()});
        if let Value::Object(m) = extra {
            meta.as_object_mut().expect("object").extend(m);
        }
        let json = serde_json::to_vec(&meta).map_err(|e| PsError::codec(format!("encoding worker state: {e}")))?;
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        out.extend_from_slice(&json);
        out.extend_from_slice(raw);
        Ok(())
    }

    /// This worker's state if the job resumed from a checkpoint (`None` on a fresh start); `app`
    /// names the application in errors.
    pub fn load(w: &Worker, app: &str) -> Result<Option<Self>> {
        let Some(b) = w.resume_state()? else { return Ok(None) };
        let bad = |why: String| PsError::codec(format!("{app}: saved worker state: {why}"));
        let n = b.get(..4).map(|x| u32::from_le_bytes(x.try_into().expect("4 bytes")) as usize);
        let n = n.filter(|n| b.len() >= 4 + n).ok_or_else(|| bad("truncated".into()))?;
        let meta: Value = serde_json::from_slice(&b[4..4 + n]).map_err(|e| bad(e.to_string()))?;
        let clock = meta["clock"].as_i64().ok_or_else(|| bad("no clock".into()))?;
        Ok(Some(SavedState { clock, meta, raw: b[4 + n..].to_vec() }))
    }

    /// Restores the objective tracker saved with this state.
    pub fn restore_tracker(&self, tracker: &mut Tracker) -> Result<()> {
        tracker.restore(&self.meta["tracker"])
    }
}

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
            out.prepare(args.overwrite || (ctx.is_resumed() && !out.is_committed()?))?;
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
        let path = format!("{}/_temporary/{task}/{name}/part-{part:05}", self.url);
        let mut f = self.storage.create(&path)?;
        body(&mut f).map_err(|e| PsError::io(format!("writing {path}"), e))?;
        f.close()
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
