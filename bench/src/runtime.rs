//! Runtime micro-benchmarks, each printed as a ratio against a baseline measured in the same run,
//! and written to `<out>/bench-runtime.{json,csv}`.
//!
//! 1. Cache-hit `get` + `inc` per thread vs the same loop on a plain `Vec` and `HashMap`.
//! 2. Remote row throughput over loopback for rows of 100 f32: rows/s, MB/s, and bytes on the
//!    wire per payload byte.

use ps_runtime::run_local_cluster;
use ps_runtime::{
    App, Consistency, DenseRow, PrefetchPolicy, PsContext, Result, RowTypeRegistry, RuntimeConfig, TableConfig, Worker,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Process counts to run.
    #[arg(long, value_delimiter = ',', default_value = "2,4")]
    procs: Vec<usize>,
    /// Worker threads per process.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Rows each thread cycles through in the cache-hit loop.
    #[arg(long, default_value_t = 1000)]
    hot_rows: u64,
    /// Operations per thread in the cache-hit loop.
    #[arg(long, default_value_t = 20_000_000)]
    ops: u64,
    /// Rows of the remote-throughput table.
    #[arg(long, default_value_t = 20_000)]
    rows: u64,
    /// Clocks of the remote-throughput run (each re-reads every row).
    #[arg(long, default_value_t = 10)]
    clocks: i64,
    /// Wire protections to run the remote-throughput benchmark with; the first is the baseline
    /// the others are compared to.
    #[arg(long, value_delimiter = ',', default_value = "authentication,integrity,privacy")]
    protections: Vec<ps_runtime::WireProtection>,
    /// Rounds of the remote-throughput runs (protections interleaved; medians reported).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[arg(long, default_value = "results")]
    out: PathBuf,
}

const COLS: usize = 100;

struct HitLoop {
    rows: u64,
    ops: u64,
    rates: Mutex<Vec<f64>>,
}

impl App for HitLoop {
    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        ctx.create_table(TableConfig::new(0, "hot", "dense_f32", COLS))
    }
    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let mut t = w.table::<DenseRow<f32>>(0)?;
        let base = w.global_thread_id() as u64 * self.rows;
        // Warm-up pass: fetch every row and create its oplog entry.
        for r in 0..self.rows {
            black_box(t.get(base + r)?[0]);
            t.inc_col(base + r, 0, 1.0f32)?;
        }
        let t0 = Instant::now();
        let mut acc = 0f32;
        for i in 0..self.ops {
            let row = base + i % self.rows;
            let col = (i % COLS as u64) as u32;
            acc += t.get(row)?[col as usize];
            t.inc_col(row, col, 1.0f32)?;
        }
        let rate = self.ops as f64 / t0.elapsed().as_secs_f64();
        black_box(acc);
        self.rates.lock().unwrap().push(rate);
        w.clock()
    }
}

fn baseline_vec(rows: u64, ops: u64) -> f64 {
    let mut m: Vec<Vec<f32>> = vec![vec![0.0; COLS]; rows as usize];
    let t0 = Instant::now();
    let mut acc = 0f32;
    for i in 0..ops {
        let row = black_box((i % rows) as usize);
        let col = (i % COLS as u64) as usize;
        acc += m[row][col];
        m[row][col] += 1.0;
    }
    black_box(acc);
    ops as f64 / t0.elapsed().as_secs_f64()
}

fn baseline_hashmap(rows: u64, ops: u64) -> f64 {
    let mut m: HashMap<u64, Vec<f32>> = (0..rows).map(|r| (r, vec![0.0; COLS])).collect();
    let t0 = Instant::now();
    let mut acc = 0f32;
    for i in 0..ops {
        let row = black_box(i % rows);
        let col = (i % COLS as u64) as usize;
        let r = m.get_mut(&row).expect("present");
        acc += r[col];
        r[col] += 1.0;
    }
    black_box(acc);
    ops as f64 / t0.elapsed().as_secs_f64()
}

struct ReadAll {
    rows: u64,
    clocks: i64,
    secs: Mutex<Vec<f64>>,
}

impl App for ReadAll {
    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        ctx.create_table(TableConfig::new(0, "wide", "dense_f32", COLS))
    }
    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let mut t = w.table::<DenseRow<f32>>(0)?;
        let mut sum = 0f32;
        let mut t0 = Instant::now();
        for c in 0..self.clocks {
            if c == 1 {
                t0 = Instant::now(); // clock 0 includes start-up effects
            }
            for r in 0..self.rows {
                t.refresh(r);
            }
            for r in 0..self.rows {
                sum += t.get(r)?[0];
            }
            w.clock()?;
        }
        black_box(sum);
        self.secs.lock().unwrap().push(t0.elapsed().as_secs_f64());
        Ok(())
    }
}

/// Result rows of every benchmark, written to `<out>/bench-runtime.{json,csv}` at the end.
struct Results {
    json: Vec<Value>,
    csv: String,
}

pub fn run(a: Args) {
    let registry = RowTypeRegistry::with_builtins();
    let mut results = Results {
        json: Vec::new(),
        csv: String::from("benchmark,processes,threads,value,unit,baseline,baseline_unit,ratio\n"),
    };
    for &p in &a.procs {
        measure_cache_hit(&a, p, &registry, &mut results);
        measure_remote_throughput(&a, p, &registry, &mut results);
    }
    write_results(&a.out, &results);
}

/// 1. cache-hit get + inc, per thread, vs the same loop on a `Vec` and a `HashMap`.
fn measure_cache_hit(a: &Args, p: usize, registry: &RowTypeRegistry, results: &mut Results) {
    let cfg =
        RuntimeConfig { threads: a.threads, consistency: Consistency::Ssp, staleness: 1, ..RuntimeConfig::default() };
    let rates = std::sync::Arc::new(Mutex::new(Vec::new()));
    let r2 = rates.clone();
    let (rows, ops) = (a.hot_rows, a.ops);
    let res = run_local_cluster(p, &cfg, registry, move |_| {
        Box::new(Proxy(HitLoop { rows, ops, rates: Mutex::new(Vec::new()) }, r2.clone()))
    })
    .expect("start cluster");
    for r in res {
        r.expect("hit-loop job failed");
    }
    let rates = rates.lock().unwrap().clone();
    let ps = rates.iter().sum::<f64>() / rates.len() as f64;
    let vec_rate = baseline_vec(a.hot_rows, a.ops);
    let map_rate = baseline_hashmap(a.hot_rows, a.ops);
    println!(
        "cache-hit get+inc, {p} processes x {} threads: {:.1} M ops/s/thread | Vec {:.1} M (ratio {:.3}) | HashMap {:.1} M (ratio {:.3})",
        a.threads, ps / 1e6, vec_rate / 1e6, ps / vec_rate, map_rate / 1e6, ps / map_rate
    );
    results.csv += &format!(
        "cache_hit_get_inc,{p},{},{ps:.0},ops/s/thread,{vec_rate:.0},vec ops/s,{:.4}\n",
        a.threads,
        ps / vec_rate
    );
    results.csv += &format!(
        "cache_hit_get_inc,{p},{},{ps:.0},ops/s/thread,{map_rate:.0},hashmap ops/s,{:.4}\n",
        a.threads,
        ps / map_rate
    );
    results.json.push(json!({"benchmark": "cache_hit_get_inc", "processes": p, "threads": a.threads,
        "ps_ops_per_s_per_thread": ps, "vec_ops_per_s": vec_rate, "hashmap_ops_per_s": map_rate,
        "ratio_vs_vec": ps / vec_rate, "ratio_vs_hashmap": ps / map_rate}));
}

/// 2. remote row throughput per wire protection (the first is the baseline), rounds
///    interleaved so that drift in the machine's speed hits every protection alike
fn measure_remote_throughput(a: &Args, p: usize, registry: &RowTypeRegistry, results: &mut Results) {
    let mut runs: Vec<Vec<(f64, u64, u64)>> = vec![Vec::new(); a.protections.len()];
    for _ in 0..a.repeat {
        for (i, &prot) in a.protections.iter().enumerate() {
            runs[i].push(remote_rows(a, p, prot, registry));
        }
    }
    let median = |v: &[(f64, u64, u64)]| {
        let mut r: Vec<f64> = v.iter().map(|x| x.0).collect();
        r.sort_by(|x, y| x.total_cmp(y));
        r[r.len() / 2]
    };
    let base = median(&runs[0]);
    let payload = (COLS * 4) as f64;
    for (i, prot) in a.protections.iter().enumerate() {
        let rows_per_s = median(&runs[i]);
        let (_, wire, remote_rows) = runs[i][0];
        let overhead = wire as f64 / (remote_rows as f64 * payload);
        let name = prot.name();
        println!(
            "remote rows (100 x f32), {p} processes, wire_protection {name}: {:.0} rows/s ({:.3} x {}), {:.1} MB/s payload, wire bytes / payload bytes = {:.3} (median of {})",
            rows_per_s, rows_per_s / base, a.protections[0].name(), rows_per_s * payload / 1e6, overhead, a.repeat
        );
        results.csv += &format!(
            "row_throughput_{name},{p},{},{rows_per_s:.0},rows/s,{base:.0},rows/s ({}),{:.4}\n",
            a.threads,
            a.protections[0].name(),
            rows_per_s / base
        );
        results.csv += &format!("wire_overhead_{name},{p},{},{overhead:.4},wire/payload,,,\n", a.threads);
        results.json.push(json!({"benchmark": "remote_row_throughput", "processes": p, "threads": a.threads,
            "wire_protection": name, "rows_per_s": rows_per_s, "ratio_vs_baseline": rows_per_s / base,
            "baseline": a.protections[0].name(), "payload_mb_per_s": rows_per_s * payload / 1e6,
            "runs_rows_per_s": runs[i].iter().map(|x| x.0).collect::<Vec<_>>(),
            "wire_bytes": wire, "remote_rows": remote_rows, "wire_over_payload": overhead}));
    }
}

/// Writes `<out>/bench-runtime.{json,csv}`; exits with status 1 if that fails.
fn write_results(out: &Path, results: &Results) {
    if let Err(e) = std::fs::create_dir_all(out)
        .and_then(|_| {
            std::fs::write(
                out.join("bench-runtime.json"),
                serde_json::to_string_pretty(&results.json).unwrap_or_default(),
            )
        })
        .and_then(|_| std::fs::write(out.join("bench-runtime.csv"), &results.csv))
    {
        eprintln!("writing results to {}: {e}", out.display());
        std::process::exit(1);
    }
    println!("results written to {}/bench-runtime.{{json,csv}}", out.display());
}

/// One remote-throughput job of `p` processes: (rows/s, wire bytes received, remote rows).
fn remote_rows(a: &Args, p: usize, prot: ps_runtime::WireProtection, registry: &RowTypeRegistry) -> (f64, u64, u64) {
    let cfg = RuntimeConfig {
        threads: a.threads,
        consistency: Consistency::Bsp,
        staleness: 0,
        prefetch: PrefetchPolicy::Off,
        wire_protection: prot,
        ..RuntimeConfig::default()
    };
    let secs = std::sync::Arc::new(Mutex::new(Vec::new()));
    let s2 = secs.clone();
    let (rows, clocks) = (a.rows, a.clocks);
    let res = run_local_cluster(p, &cfg, registry, move |_| {
        Box::new(Proxy(ReadAll { rows, clocks, secs: Mutex::new(Vec::new()) }, s2.clone()))
    })
    .expect("start cluster");
    let stats: Vec<_> = res.into_iter().map(|r| r.expect("read job failed")).collect();
    let secs = secs.lock().unwrap().iter().copied().fold(0.0, f64::max);
    // Rows each process had to receive in the measured clocks (local ones skip the network).
    let rows_moved = a.rows as f64 * (a.clocks - 1) as f64 * p as f64;
    let wire: u64 = stats.iter().map(|s| s.bytes_recv).sum();
    let remote: u64 = stats.iter().map(|s| s.rows_recv_remote).sum();
    (rows_moved / secs, wire, remote)
}

/// Wraps an app to hand its measurements back after the job (apps are moved into the runtime).
struct Proxy<A>(A, std::sync::Arc<Mutex<Vec<f64>>>);

trait Measured {
    fn take(&self) -> Vec<f64>;
}
impl Measured for HitLoop {
    fn take(&self) -> Vec<f64> {
        std::mem::take(&mut self.rates.lock().unwrap())
    }
}
impl Measured for ReadAll {
    fn take(&self) -> Vec<f64> {
        std::mem::take(&mut self.secs.lock().unwrap())
    }
}

impl<A: App + Measured> App for Proxy<A> {
    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        self.0.initialize(ctx)
    }
    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        self.0.run_worker(w)?;
        self.1.lock().unwrap().extend(self.0.take());
        Ok(())
    }
}
