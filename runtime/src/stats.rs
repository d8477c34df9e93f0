//! Run statistics. Each process writes one JSON summary; the launcher merges them into the job's
//! stats file (schema in README.md, "Stats JSON").

use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Counters kept by one worker thread (no sharing, merged at the end).
#[derive(Clone, Debug, Default)]
pub struct ThreadStats {
    pub gets: u64,
    /// Gets that found no fresh enough row in the process cache and blocked.
    pub get_misses: u64,
    /// Gets not served by the thread cache alone.
    pub thread_cache_misses: u64,
    pub incs: u64,
    pub wait_ns: u64,
    /// `staleness[d]`: reads that returned data age `clock - d`.
    pub staleness: Vec<u64>,
}

impl ThreadStats {
    #[inline]
    pub fn record_get(&mut self, clock: i64, age: i64) {
        self.gets += 1;
        let d = (clock - age).clamp(0, 1 << 20) as usize;
        if d >= self.staleness.len() {
            self.staleness.resize(d + 1, 0);
        }
        self.staleness[d] += 1;
    }

    pub fn add(&mut self, o: &ThreadStats) {
        self.gets += o.gets;
        self.get_misses += o.get_misses;
        self.thread_cache_misses += o.thread_cache_misses;
        self.incs += o.incs;
        self.wait_ns += o.wait_ns;
        if o.staleness.len() > self.staleness.len() {
            self.staleness.resize(o.staleness.len(), 0);
        }
        for (a, b) in self.staleness.iter_mut().zip(&o.staleness) {
            *a += b;
        }
    }
}

/// Summary of one process.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessStats {
    pub process: usize,
    pub clocks: i64,
    pub wall_s: f64,
    /// Mean per worker thread of time not spent blocked in the runtime.
    pub compute_s: f64,
    /// Mean per worker thread of time blocked in `get` and `global_barrier`.
    pub wait_s: f64,
    pub threads: usize,
    pub gets: u64,
    pub get_misses: u64,
    pub thread_cache_misses: u64,
    pub incs: u64,
    pub bytes_sent: u64,
    pub bytes_recv: u64,
    pub rows_recv: u64,
    pub rows_recv_remote: u64,
    pub updates_sent: u64,
    pub fetches_sent: u64,
    /// Observed staleness (row data age minus reader clock) -> count.
    pub staleness_hist: BTreeMap<i64, u64>,
    pub mean_staleness: f64,
    pub config: Value,
    /// Application-specific results (e.g. `objective`), merged into the top level.
    #[serde(flatten)]
    pub app: Map<String, Value>,
}

pub(crate) fn hist_of(staleness: &[u64]) -> (BTreeMap<i64, u64>, f64) {
    let mut h = BTreeMap::new();
    let (mut n, mut sum) = (0u64, 0f64);
    for (d, &c) in staleness.iter().enumerate() {
        if c > 0 {
            h.insert(-(d as i64), c);
            n += c;
            sum += -(d as f64) * c as f64;
        }
    }
    (h, if n > 0 { sum / n as f64 } else { 0.0 })
}

/// Merges per-process summaries into the job summary: counters add up, times are means over all
/// worker threads, `wall_s` is the slowest process, `clocks` the fewest completed, and the
/// application's keys come from process 0. Per-process summaries are kept under `processes`.
pub fn merge(procs: &[Value]) -> Value {
    let num = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let sum = |k: &str| procs.iter().map(|p| num(p, k)).sum::<f64>();
    let threads: f64 = procs.iter().map(|p| num(p, "threads")).sum::<f64>().max(1.0);
    let wmean = |k: &str| procs.iter().map(|p| num(p, k) * num(p, "threads")).sum::<f64>() / threads;
    let mut hist: BTreeMap<i64, u64> = BTreeMap::new();
    for p in procs {
        if let Some(h) = p.get("staleness_hist").and_then(Value::as_object) {
            for (k, v) in h {
                if let (Ok(k), Some(v)) = (k.parse::<i64>(), v.as_u64()) {
                    *hist.entry(k).or_default() += v;
                }
            }
        }
    }
    let n: u64 = hist.values().sum();
    let mean = if n > 0 { hist.iter().map(|(k, v)| *k as f64 * *v as f64).sum::<f64>() / n as f64 } else { 0.0 };
    let int = |k: &str| Value::from(sum(k) as u64);
    let mut out = json!({
        "processes_count": procs.len(),
        "clocks": procs.iter().map(|p| num(p, "clocks") as i64).min().unwrap_or(0),
        "wall_s": procs.iter().map(|p| num(p, "wall_s")).fold(0.0, f64::max),
        "compute_s": wmean("compute_s"),
        "wait_s": wmean("wait_s"),
        "gets": int("gets"),
        "get_misses": int("get_misses"),
        "thread_cache_misses": int("thread_cache_misses"),
        "incs": int("incs"),
        "bytes_sent": int("bytes_sent"),
        "bytes_recv": int("bytes_recv"),
        "rows_recv": int("rows_recv"),
        "rows_recv_remote": int("rows_recv_remote"),
        "updates_sent": int("updates_sent"),
        "fetches_sent": int("fetches_sent"),
        "staleness_hist": hist.iter().map(|(k, v)| (k.to_string(), Value::from(*v))).collect::<Map<_, _>>(),
        "mean_staleness": mean,
        "config": procs.first().and_then(|p| p.get("config")).cloned().unwrap_or(Value::Null),
    });
    let known: Vec<String> = out.as_object().unwrap().keys().cloned().collect();
    if let (Some(o), Some(first)) = (out.as_object_mut(), procs.first().and_then(Value::as_object)) {
        for (k, v) in first {
            if !known.contains(k) && !matches!(k.as_str(), "process" | "threads") {
                o.insert(k.clone(), v.clone());
            }
        }
        o.insert("processes".into(), Value::Array(procs.to_vec()));
    }
    out
}
