//! Run statistics. Each process writes one JSON summary; the launcher merges them into the job's
//! stats file (schema in docs/CONFIGURATION.md, "Stats JSON").

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Counters kept by one worker thread (no sharing, merged at the end).
#[derive(Clone, Debug, Default)]
pub struct ThreadStats {
    pub gets: u64,
    /// Gets that found no fresh enough row in the process cache and blocked.
    pub get_misses: u64,
    /// Gets not served by the thread cache alone.
    pub thread_cache_misses: u64,
    pub incs: u64,
    /// Time blocked: in the runtime (`get`, barriers) and in the app's own hand-offs.
    pub wait_ns: u64,
    /// The part of `wait_ns` spent in the app's hand-offs between threads ([`WaitMeter`]).
    pub handoff_ns: u64,
    /// `staleness[d]`: reads that returned data age `clock - d`.
    pub staleness: Vec<u64>,
    /// With `staleness_profile`: `lag[k]`: reads whose age was k clocks older than the freshest
    /// the servers could serve then; `ahead[k]`: reads by a thread k clocks ahead of the slowest
    /// worker (for staleness d: lag + ahead = d - 1).
    pub lag: Vec<u64>,
    pub ahead: Vec<u64>,
    /// The most bytes the cache held after a clock's eviction (`thread_cache_mb`); summed over
    /// a process's threads and tables.
    pub cache_peak_bytes: u64,
}

/// Adds one to bucket `k` (clamped to 0..2^20), growing the histogram as needed.
#[inline]
fn bump(h: &mut Vec<u64>, k: i64) {
    let k = k.clamp(0, 1 << 20) as usize;
    if k >= h.len() {
        h.resize(k + 1, 0);
    }
    h[k] += 1;
}

fn add_hist(a: &mut Vec<u64>, b: &[u64]) {
    if b.len() > a.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

impl ThreadStats {
    #[inline]
    pub fn record_get(&mut self, clock: i64, age: i64) {
        self.gets += 1;
        bump(&mut self.staleness, clock - age);
    }

    /// The staleness profile of a read at `clock` that returned `age` while the servers could
    /// serve age `served` (the slowest worker's completed clock).
    #[inline]
    pub fn record_profile(&mut self, clock: i64, age: i64, served: i64) {
        bump(&mut self.lag, served - age);
        bump(&mut self.ahead, clock - served - 1);
    }

    pub fn add(&mut self, o: &ThreadStats) {
        self.gets += o.gets;
        self.get_misses += o.get_misses;
        self.thread_cache_misses += o.thread_cache_misses;
        self.incs += o.incs;
        self.wait_ns += o.wait_ns;
        self.handoff_ns += o.handoff_ns;
        add_hist(&mut self.staleness, &o.staleness);
        add_hist(&mut self.lag, &o.lag);
        add_hist(&mut self.ahead, &o.ahead);
        self.cache_peak_bytes += o.cache_peak_bytes;
    }
}

/// Time a worker thread spends waiting for other threads of its process in the app's own
/// hand-offs (a shared model slice's turn, a process barrier of the app's), which the runtime
/// cannot see: counted into the thread's `wait_s` and reported on its own as `handoff_wait_s`.
/// Without it, a thread waiting for its turn at a slice counted as computing, and a job whose
/// threads idled looked CPU-bound. Get one per thread from `Worker::wait_meter`; clones count
/// into the same figure. Record only time actually spent blocked (not the fast path).
#[derive(Clone, Debug, Default)]
pub struct WaitMeter(Arc<AtomicU64>);

impl WaitMeter {
    /// Counts `d` as waiting.
    pub fn add(&self, d: Duration) {
        self.0.fetch_add(d.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    /// All the waiting counted so far.
    pub fn waited(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }
}

/// Summary of one process (its `stats-<k>.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProcessStats {
    pub process: usize,
    pub clocks: i64,
    pub wall_s: f64,
    /// Mean per worker thread of time not spent blocked in the runtime.
    pub compute_s: f64,
    /// Mean per worker thread of time blocked in `get` and `global_barrier`, or waiting for
    /// another thread of the process in the app's own hand-offs.
    pub wait_s: f64,
    /// The part of `wait_s` spent in the app's hand-offs ([`WaitMeter`]).
    pub handoff_wait_s: f64,
    pub threads: usize,
    pub gets: u64,
    pub get_misses: u64,
    pub thread_cache_misses: u64,
    pub incs: u64,
    pub bytes_sent: u64,
    pub bytes_recv: u64,
    /// The part of `bytes_sent` that this process's server sent to clients (rows and acks).
    pub server_bytes_sent: u64,
    pub rows_recv: u64,
    pub rows_recv_remote: u64,
    pub updates_sent: u64,
    pub fetches_sent: u64,
    /// Bytes sent to / received from processes in other data centers (part of the totals).
    pub wan_bytes_sent: u64,
    pub wan_bytes_recv: u64,
    /// ASP: rows sent to mirror servers as significant updates; reads held back because a
    /// mirror was more than DS clocks behind; selective barriers sent (a WAN link was behind).
    pub significant_updates: u64,
    pub mirror_clock_waits: u64,
    #[serde(default)]
    pub selective_barriers: u64,
    /// Periodic checkpoints given up because they could not be written (the name node's count;
    /// 0 in the other processes).
    #[serde(default)]
    pub snapshots_abandoned: u64,
    /// Periodic checkpoints skipped because the one before was still being written
    /// (`checkpoint.when_busy=skip`; the name node's count, 0 in the other processes).
    #[serde(default)]
    pub snapshots_skipped: u64,
    /// Peak resident set size of the process (bytes, from getrusage).
    pub peak_rss_bytes: u64,
    /// The process's thread caches at their fullest: each thread's and table's peak bytes after
    /// a clock's eviction, summed (bounded by threads x tables x `thread_cache_mb`).
    #[serde(default)]
    pub thread_cache_peak_bytes: u64,
    /// CPU seconds (user + system, every thread of the process) from the first clock's work to
    /// the barrier after the last clock: what training costs in CPU, intermediate evaluations
    /// included (0 for apps outside the iterative driver). Summed over processes in the job.
    #[serde(default)]
    pub train_cpu_s: f64,
    /// Bytes on sockets over the same span as `train_cpu_s`: what training sends, without the
    /// load-time exchanges (`bytes_sent` counts the whole job). Summed over processes.
    #[serde(default)]
    pub train_bytes_sent: u64,
    /// The part of `train_bytes_sent` that crossed data centers (`wan_bytes_sent` counts the
    /// load-time exchanges too). Summed over processes.
    #[serde(default)]
    pub train_wan_bytes_sent: u64,
    /// Observed staleness (row data age minus reader clock) -> count.
    pub staleness_hist: BTreeMap<i64, u64>,
    pub mean_staleness: f64,
    /// With `staleness_profile`: the observed staleness split into its two parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staleness_profile: Option<StalenessProfile>,
    pub config: Value,
    /// Application-specific results (e.g. `objective`), merged into the top level.
    #[serde(flatten)]
    pub app: Map<String, Value>,
}

/// A read's staleness `d` (reader clock minus data age) is `1 + delivery lag + ahead`: how much
/// older the data was than what the servers could serve at that moment, and how many clocks the
/// reader was ahead of the slowest worker (what bounded staleness allows). Counts by value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StalenessProfile {
    pub delivery_lag: BTreeMap<i64, u64>,
    pub ahead_of_slowest: BTreeMap<i64, u64>,
}

impl StalenessProfile {
    pub(crate) fn of(t: &ThreadStats) -> StalenessProfile {
        let m = |h: &[u64]| h.iter().enumerate().filter(|x| *x.1 > 0).map(|(k, n)| (k as i64, *n)).collect();
        StalenessProfile { delivery_lag: m(&t.lag), ahead_of_slowest: m(&t.ahead) }
    }

    fn add(&mut self, o: &StalenessProfile) {
        for (mine, theirs) in
            [(&mut self.delivery_lag, &o.delivery_lag), (&mut self.ahead_of_slowest, &o.ahead_of_slowest)]
        {
            for (k, v) in theirs {
                *mine.entry(*k).or_default() += v;
            }
        }
    }
}

/// CPU seconds this process has used so far, user and system, all threads (getrusage).
pub fn process_cpu_s() -> f64 {
    // SAFETY: getrusage fills the zeroed struct we own; no pointers are kept.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0.0;
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
}

pub(crate) fn peak_rss_bytes() -> u64 {
    // SAFETY: getrusage fills the zeroed struct we own; no pointers are kept.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0;
    }
    u.ru_maxrss.max(0) as u64 * 1024 // kilobytes on Linux
}

/// Set by the application master in runtime containers: the container's memory in MB, against
/// which `ps_job::launch` compares [`current_rss_bytes`].
pub const MEMORY_LIMIT_ENV: &str = "PS_CONTAINER_MEMORY_MB";

/// This process's current resident set size in bytes (0 if unknown), from `/proc/self/statm`.
pub fn current_rss_bytes() -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/self/statm") else { return 0 };
    let pages = text.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(0) as u64;
    pages * page
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

/// One process's summary as read back from its stats file: typed for merging, and the file's
/// own JSON, which the job summary keeps verbatim under `processes`.
#[derive(Clone, Debug)]
pub struct ProcessSummary {
    pub stats: ProcessStats,
    pub json: Value,
}

impl ProcessSummary {
    /// Reads a `stats-<k>.json`. Every field of [`ProcessStats`] is required: a field renamed on
    /// one side only is an error here, not a counter that silently merges as 0.
    pub fn parse(text: &str) -> serde_json::Result<ProcessSummary> {
        let json: Value = serde_json::from_str(text)?;
        Ok(ProcessSummary { stats: ProcessStats::deserialize(&json)?, json })
    }
}

/// The job summary (docs/CONFIGURATION.md, "Stats JSON"); its field names are the keys tooling reads.
#[derive(Serialize)]
struct JobStats {
    processes_count: usize,
    clocks: i64,
    wall_s: f64,
    compute_s: f64,
    wait_s: f64,
    handoff_wait_s: f64,
    gets: u64,
    get_misses: u64,
    thread_cache_misses: u64,
    incs: u64,
    bytes_sent: u64,
    bytes_recv: u64,
    server_bytes_sent: u64,
    rows_recv: u64,
    rows_recv_remote: u64,
    updates_sent: u64,
    fetches_sent: u64,
    wan_bytes_sent: u64,
    wan_bytes_recv: u64,
    significant_updates: u64,
    mirror_clock_waits: u64,
    selective_barriers: u64,
    snapshots_abandoned: u64,
    snapshots_skipped: u64,
    /// The largest process's peak RSS.
    peak_rss_bytes: u64,
    /// The largest process's thread-cache peak.
    thread_cache_peak_bytes: u64,
    train_cpu_s: f64,
    train_bytes_sent: u64,
    train_wan_bytes_sent: u64,
    staleness_hist: BTreeMap<i64, u64>,
    mean_staleness: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    staleness_profile: Option<StalenessProfile>,
    config: Value,
}

/// Merges per-process summaries into the job summary: counters add up, times are means over all
/// worker threads, `wall_s` is the slowest process, `clocks` the fewest completed, and the
/// application's keys come from process 0. Per-process summaries are kept under `processes`.
pub fn merge(procs: &[ProcessSummary]) -> Value {
    let stats = || procs.iter().map(|p| &p.stats);
    // Counters add up exactly (the JSON-key merge went through f64, equal below 2^53).
    let sum = |f: fn(&ProcessStats) -> u64| stats().fold(0u64, |a, p| a.saturating_add(f(p)));
    let threads = stats().map(|p| p.threads as f64).sum::<f64>().max(1.0);
    let wmean = |f: fn(&ProcessStats) -> f64| stats().map(|p| f(p) * p.threads as f64).sum::<f64>() / threads;
    let mut hist: BTreeMap<i64, u64> = BTreeMap::new();
    for p in stats() {
        for (k, v) in &p.staleness_hist {
            *hist.entry(*k).or_default() += v;
        }
    }
    let n: u64 = hist.values().sum();
    let mean = if n > 0 { hist.iter().map(|(k, v)| *k as f64 * *v as f64).sum::<f64>() / n as f64 } else { 0.0 };
    let job = JobStats {
        processes_count: procs.len(),
        clocks: stats().map(|p| p.clocks).min().unwrap_or(0),
        wall_s: stats().map(|p| p.wall_s).fold(0.0, f64::max),
        compute_s: wmean(|p| p.compute_s),
        wait_s: wmean(|p| p.wait_s),
        handoff_wait_s: wmean(|p| p.handoff_wait_s),
        gets: sum(|p| p.gets),
        get_misses: sum(|p| p.get_misses),
        thread_cache_misses: sum(|p| p.thread_cache_misses),
        incs: sum(|p| p.incs),
        bytes_sent: sum(|p| p.bytes_sent),
        bytes_recv: sum(|p| p.bytes_recv),
        server_bytes_sent: sum(|p| p.server_bytes_sent),
        rows_recv: sum(|p| p.rows_recv),
        rows_recv_remote: sum(|p| p.rows_recv_remote),
        updates_sent: sum(|p| p.updates_sent),
        fetches_sent: sum(|p| p.fetches_sent),
        wan_bytes_sent: sum(|p| p.wan_bytes_sent),
        wan_bytes_recv: sum(|p| p.wan_bytes_recv),
        significant_updates: sum(|p| p.significant_updates),
        mirror_clock_waits: sum(|p| p.mirror_clock_waits),
        selective_barriers: sum(|p| p.selective_barriers),
        snapshots_abandoned: sum(|p| p.snapshots_abandoned),
        snapshots_skipped: sum(|p| p.snapshots_skipped),
        peak_rss_bytes: stats().map(|p| p.peak_rss_bytes).max().unwrap_or(0),
        thread_cache_peak_bytes: stats().map(|p| p.thread_cache_peak_bytes).max().unwrap_or(0),
        train_cpu_s: stats().map(|p| p.train_cpu_s).sum(),
        train_bytes_sent: sum(|p| p.train_bytes_sent),
        train_wan_bytes_sent: sum(|p| p.train_wan_bytes_sent),
        staleness_hist: hist,
        mean_staleness: mean,
        staleness_profile: stats().filter_map(|p| p.staleness_profile.as_ref()).fold(None, |acc, p| {
            let mut acc: StalenessProfile = acc.unwrap_or_default();
            acc.add(p);
            Some(acc)
        }),
        config: procs.first().map(|p| p.stats.config.clone()).unwrap_or(Value::Null),
    };
    let mut out = serde_json::to_value(job).expect("numbers, strings and JSON values always serialize");
    if let (Some(o), Some(first)) = (out.as_object_mut(), procs.first().map(|p| &p.stats)) {
        // The application's own keys, unless they would shadow one of the job's.
        for (k, v) in &first.app {
            o.entry(k.clone()).or_insert_with(|| v.clone());
        }
        o.insert("processes".into(), Value::Array(procs.iter().map(|p| p.json.clone()).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The merge before it was typed, verbatim: it read JSON keys by name (a missing or renamed
    /// one counted as 0). Kept as the reference the typed merge must agree with.
    fn merge_by_keys(procs: &[Value]) -> Value {
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
            "handoff_wait_s": wmean("handoff_wait_s"),
            "gets": int("gets"),
            "get_misses": int("get_misses"),
            "thread_cache_misses": int("thread_cache_misses"),
            "incs": int("incs"),
            "bytes_sent": int("bytes_sent"),
            "bytes_recv": int("bytes_recv"),
            "server_bytes_sent": int("server_bytes_sent"),
            "rows_recv": int("rows_recv"),
            "rows_recv_remote": int("rows_recv_remote"),
            "updates_sent": int("updates_sent"),
            "fetches_sent": int("fetches_sent"),
            "wan_bytes_sent": int("wan_bytes_sent"),
            "wan_bytes_recv": int("wan_bytes_recv"),
            "significant_updates": int("significant_updates"),
            "mirror_clock_waits": int("mirror_clock_waits"),
            "selective_barriers": int("selective_barriers"),
            "snapshots_abandoned": int("snapshots_abandoned"),
            "snapshots_skipped": int("snapshots_skipped"),
            "peak_rss_bytes": procs.iter().map(|p| num(p, "peak_rss_bytes") as u64).max().unwrap_or(0),
            "thread_cache_peak_bytes": procs.iter().map(|p| num(p, "thread_cache_peak_bytes") as u64).max().unwrap_or(0),
            "train_cpu_s": sum("train_cpu_s"),
            "train_bytes_sent": int("train_bytes_sent"),
            "train_wan_bytes_sent": int("train_wan_bytes_sent"),
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

    /// Process `k` of a job like results/demo-stats.json (demo, 2 processes, ESSP), with the
    /// numbers varied per process and an ML app's keys, as `stats-<k>.json` holds it.
    fn realistic(k: u64, threads: u64) -> String {
        let text = json!({
            "process": k, "clocks": 200 - k, "wall_s": 0.772613123 - k as f64 * 1e-4,
            "compute_s": 0.726183944 + k as f64 * 0.0103, "wait_s": 0.0439693385 / (k + 1) as f64,
            "handoff_wait_s": 0.0139693385 / (k + 2) as f64,
            "threads": threads, "gets": 3200 + k, "get_misses": 93 - 30 * k, "thread_cache_misses": 3200,
            "incs": 2000, "bytes_sent": 1583137 - 283528 * k, "bytes_recv": 1299609 + 283528 * k,
            "server_bytes_sent": 700000 + 1000 * k,
            "rows_recv": 1553, "rows_recv_remote": 589 + 375 * k, "updates_sent": 1200, "fetches_sent": 8,
            "wan_bytes_sent": 7000 * k, "wan_bytes_recv": 6000 + k,
            "significant_updates": 40 + k, "mirror_clock_waits": 3 * k,
            "selective_barriers": 2 * k, "snapshots_abandoned": k, "snapshots_skipped": 3 * k,
            "peak_rss_bytes": 104_857_600 + 4096 * k,
            "thread_cache_peak_bytes": 1_048_576 + 512 * k,
            "staleness_hist": {"-1": 1157 + k, "-2": 797, "-3": 1246, format!("-{}", 4 + k): 7},
            "mean_staleness": -2.0278125,
            "config": {"app": "demo", "app_args": ["--clocks", "200"], "processes": 3,
                "runtime": {"consistency": "essp", "staleness": 2, "threads": threads}},
            "checks": 321600 + k, "objective": [{"clock": 0, "time_s": 0.1, "value": 2.5 - k as f64}],
            "train_s": 0.5 + k as f64,
        });
        serde_json::to_string_pretty(&text).unwrap()
    }

    fn job(texts: &[String]) -> (Vec<ProcessSummary>, Vec<Value>) {
        let typed = texts.iter().map(|t| ProcessSummary::parse(t).unwrap()).collect();
        (typed, texts.iter().map(|t| serde_json::from_str(t).unwrap()).collect())
    }

    #[test]
    fn current_rss_is_measured_and_within_the_peak() {
        let now = current_rss_bytes();
        assert!(now > 1 << 20, "{now}");
        assert!(now <= peak_rss_bytes() + (1 << 20), "{now} vs peak {}", peak_rss_bytes());
    }

    #[test]
    fn typed_merge_equals_the_key_based_merge() {
        for texts in [vec![realistic(0, 2), realistic(1, 2), realistic(2, 3)], vec![realistic(0, 1)], vec![]] {
            let (typed, values) = job(&texts);
            let (new, old) = (merge(&typed), merge_by_keys(&values));
            assert_eq!(new, old);
            // Byte for byte as written to --stats, so numbers keep their exact form too.
            assert_eq!(serde_json::to_string_pretty(&new).unwrap(), serde_json::to_string_pretty(&old).unwrap());
        }
    }

    const JOB_KEYS: [&str; 32] = [
        "bytes_recv",
        "bytes_sent",
        "clocks",
        "compute_s",
        "config",
        "fetches_sent",
        "get_misses",
        "gets",
        "handoff_wait_s",
        "incs",
        "mean_staleness",
        "mirror_clock_waits",
        "peak_rss_bytes",
        "processes_count",
        "rows_recv",
        "rows_recv_remote",
        "selective_barriers",
        "server_bytes_sent",
        "significant_updates",
        "snapshots_abandoned",
        "snapshots_skipped",
        "staleness_hist",
        "thread_cache_misses",
        "thread_cache_peak_bytes",
        "train_bytes_sent",
        "train_cpu_s",
        "train_wan_bytes_sent",
        "updates_sent",
        "wait_s",
        "wall_s",
        "wan_bytes_recv",
        "wan_bytes_sent",
    ];

    /// The keys of the "Stats JSON" table in docs/CONFIGURATION.md, which tooling reads: renaming a field of
    /// `ProcessStats` or `JobStats` must fail here, not silently drop or zero a key.
    #[test]
    fn stats_keys_are_the_documented_ones() {
        let (typed, _) = job(&[realistic(0, 2), realistic(1, 2)]);
        let merged = merge(&typed);
        let keys: Vec<&str> = merged.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want = JOB_KEYS.to_vec();
        want.extend(["checks", "objective", "processes", "train_s"]);
        want.sort();
        assert_eq!(keys, want);
        let own = serde_json::to_value(&typed[0].stats).unwrap();
        let mut keys: Vec<&str> = own.as_object().unwrap().keys().map(String::as_str).collect();
        keys.retain(|k| !typed[0].stats.app.contains_key(*k));
        let mut want: Vec<&str> = JOB_KEYS.iter().copied().filter(|k| *k != "processes_count").collect();
        want.extend(["process", "threads"]);
        want.sort();
        assert_eq!(keys, want);
    }

    #[test]
    fn a_renamed_or_missing_field_is_an_error_not_zero() {
        let mut v: Value = serde_json::from_str(&realistic(0, 2)).unwrap();
        let o = v.as_object_mut().unwrap();
        let gets = o.remove("gets").unwrap();
        o.insert("get_count".into(), gets);
        let err = ProcessSummary::parse(&v.to_string()).unwrap_err();
        assert!(err.to_string().contains("missing field `gets`"), "{err}");
        let mut v: Value = serde_json::from_str(&realistic(0, 2)).unwrap();
        v["clocks"] = json!("200");
        assert!(ProcessSummary::parse(&v.to_string()).is_err());
    }
}
