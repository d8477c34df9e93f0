//! The papers' experiments at small scale, on matrix factorization (MovieLens-100K by default):
//! each writes a CSV into `<out>/`; `scripts/plot_experiments.py` draws the PNGs.
//!   staleness   time to a target RMSE vs work per clock (A-BSP) and vs slack (SSP)   [LazyTable 5.2]
//!   stragglers  mean pass time vs injected delay for BSP, A-BSP, SSP, ESSP           [LazyTable Fig. 6]
//!   background  the same with every process disrupted in 10% of its clocks          [LazyTable §5.3]
//!   bytes       bytes sent/received per pass for {wpc 4, s 0}, {2, 1}, {1, 3}       [LazyTable Table 2]
//!   prefetch    compute vs wait per pass, prefetch off / conservative / aggressive  [LazyTable Fig. 9]
//!   essp        observed staleness distribution, split into delivery lag and lead over the
//!               slowest worker (rank 100, 1% of a pass per clock), and RMSE vs slack,
//!               SSP vs ESSP                                                          [ESSP Fig. 2-3]

use ps_runtime::apps;
use ps_runtime::run_local_cluster;
use ps_runtime::{Consistency, PrefetchPolicy, ProcessStats, RowTypeRegistry, RuntimeConfig};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// staleness, stragglers, bytes, prefetch, essp, or all.
    #[arg(default_value = "all")]
    which: String,
    /// Ratings input.
    #[arg(long, default_value = "data/ml-100k/ratings.tsv")]
    input: String,
    #[arg(long, default_value = "results/experiments")]
    out: PathBuf,
    /// Processes (one worker thread each).
    #[arg(long, default_value_t = 4)]
    procs: usize,
    #[arg(long, default_value_t = 20)]
    rank: usize,
    /// Target training RMSE for time-to-quality.
    #[arg(long, default_value_t = 0.9)]
    target: f64,
}

/// A finished run; `stats` is empty if training diverged (every metric is then NaN).
struct Run {
    stats: Vec<ProcessStats>,
}

impl Run {
    fn app(&self, k: &str) -> f64 {
        self.stats.first().and_then(|s| s.app.get(k)).and_then(Value::as_f64).unwrap_or(f64::NAN)
    }
    fn objective(&self) -> Vec<(f64, f64)> {
        let Some(first) = self.stats.first() else { return Vec::new() };
        first.app["objective"]
            .as_array()
            .map(|v| {
                v.iter()
                    .map(|r| (r["time_s"].as_f64().unwrap_or(0.0), r["rmse"].as_f64().unwrap_or(f64::NAN)))
                    .collect()
            })
            .unwrap_or_default()
    }
    fn final_rmse(&self) -> f64 {
        self.objective().last().map(|x| x.1).unwrap_or(f64::NAN)
    }
    /// First evaluation time at which training RMSE <= target (NaN if never).
    fn time_to(&self, target: f64) -> f64 {
        self.objective().iter().find(|x| x.1 <= target).map(|x| x.0).unwrap_or(f64::NAN)
    }
    fn sum(&self, f: impl Fn(&ProcessStats) -> f64) -> f64 {
        if self.stats.is_empty() {
            return f64::NAN;
        }
        self.stats.iter().map(f).sum()
    }
    fn mean(&self, f: impl Fn(&ProcessStats) -> f64) -> f64 {
        self.sum(f) / self.stats.len() as f64
    }
}

/// MF in the papers' setup: both factor matrices are parameter-server tables (the default keeps
/// user factors in the workers, which removes most of the traffic these experiments study).
fn mf(a: &Args, cfg: RuntimeConfig, extra: &str) -> Run {
    let args: Vec<String> = format!("--input {} --rank {} --user-factors table {extra}", a.input, a.rank)
        .split_whitespace()
        .map(String::from)
        .collect();
    eprintln!("  mf {:?} s={} {extra}", cfg.consistency, cfg.staleness);
    let res = run_local_cluster(a.procs, &cfg, &RowTypeRegistry::with_builtins(), |_| {
        apps::build("mf", &args).expect("args")
    })
    .expect("cluster");
    match res.into_iter().collect::<ps_runtime::Result<Vec<_>>>() {
        Ok(stats) => Run { stats },
        Err(e) if e.to_string().contains("diverged") => {
            eprintln!("  -> diverged");
            Run { stats: Vec::new() }
        }
        Err(e) => panic!("mf run failed: {e}"),
    }
}

fn cfg(consistency: Consistency, staleness: u32, prefetch: PrefetchPolicy) -> RuntimeConfig {
    RuntimeConfig { consistency, staleness, prefetch, threads: 1, ..RuntimeConfig::default() }
}

fn write(a: &Args, name: &str, csv: &str) {
    std::fs::create_dir_all(&a.out).expect("results dir");
    let p = a.out.join(format!("{name}.csv"));
    std::fs::write(&p, csv).expect("write csv");
    println!("wrote {}", p.display());
}

/// Work per clock in passes, as the CLI expresses it.
fn wpc_args(wpc: f64) -> String {
    if wpc > 1.0 {
        format!("--passes-per-clock {}", wpc as i64)
    } else {
        format!("--clocks-per-pass {}", (1.0 / wpc).round() as i64)
    }
}

fn staleness(a: &Args) {
    let mut csv = String::from("model,wpc,slack,time_to_target_s,final_rmse,train_s\n");
    let passes = 24;
    for wpc in [4.0, 2.0, 1.0, 0.5, 0.25, 0.125] {
        let r = mf(
            a,
            cfg(Consistency::Bsp, 0, PrefetchPolicy::Aggressive),
            &format!("--passes {passes} --samples 24 {}", wpc_args(wpc)),
        );
        writeln!(csv, "A-BSP,{wpc},0,{},{},{}", r.time_to(a.target), r.final_rmse(), r.app("train_s")).ok();
    }
    for s in [0u32, 1, 2, 3, 5, 8] {
        let r = mf(
            a,
            cfg(Consistency::Ssp, s, PrefetchPolicy::Aggressive),
            &format!("--passes {passes} --samples 24 --clocks-per-pass 4"),
        );
        writeln!(csv, "SSP,0.25,{s},{},{},{}", r.time_to(a.target), r.final_rmse(), r.app("train_s")).ok();
    }
    write(a, "staleness", &csv);
}

fn stragglers(a: &Args) {
    straggle(a, "delayed", 1.0, 12, "stragglers");
}

/// LazyTable's background-work disruptions (PAPERS.md §7): in every clock each process is
/// disrupted (sleeps d) with probability 10%.
fn background(a: &Args) {
    // Many clocks, so that the 10% draws average out (12 passes see about 5 disruptions).
    straggle(a, "random --straggler-p 0.1", 0.1, 60, "background");
}

/// Mean pass time against the delay d for BSP, A-BSP, SSP and ESSP, under `--straggler <how>`
/// in which a process sleeps in a fraction `share` of its clocks (the ideal spreads that evenly).
fn straggle(a: &Args, how: &str, share: f64, passes: i64, out: &str) {
    let mut csv = String::from("config,delay_s,pass_s,ideal_pass_s\n");
    let configs: [(&str, Consistency, u32, f64); 4] = [
        ("BSP", Consistency::Bsp, 0, 1.0),
        ("A-BSP wpc=2", Consistency::Bsp, 0, 2.0),
        ("SSP s=3", Consistency::Ssp, 3, 1.0),
        ("ESSP s=3", Consistency::Essp, 3, 1.0),
    ];
    let mut base = std::collections::HashMap::new();
    for d in [0.0, 0.05, 0.1, 0.2, 0.3] {
        for (name, c, s, wpc) in configs {
            let extra =
                format!("--passes {passes} --samples 1 {} --straggler {how} --straggler-delay {d}", wpc_args(wpc));
            let r = mf(a, cfg(c, s, PrefetchPolicy::Aggressive), &extra);
            let pass_s = r.app("train_s") / passes as f64;
            let b = *base.entry(name).or_insert(pass_s);
            // Ideal: the sleeping spread evenly over the processes' clocks (delayed: one of N
            // sleeps per clock; background: each sleeps in 10% of its clocks).
            let clocks_per_pass = 1.0 / wpc;
            let per_clock = if share < 1.0 { share } else { 1.0 / a.procs as f64 };
            writeln!(csv, "{name},{d},{pass_s},{}", b + d * clocks_per_pass * per_clock).ok();
        }
    }
    write(a, out, &csv);
}

fn bytes(a: &Args) {
    let mut csv = String::from("config,bytes_sent_per_pass,bytes_recv_per_pass,final_rmse\n");
    let passes = 12.0;
    for (wpc, s) in [(4.0, 0u32), (2.0, 1), (1.0, 3)] {
        let r = mf(
            a,
            cfg(Consistency::Ssp, s, PrefetchPolicy::Aggressive),
            &format!("--passes {passes} --samples 2 {}", wpc_args(wpc)),
        );
        let per = |x: f64| x / a.procs as f64 / passes;
        writeln!(
            csv,
            "wpc={wpc} s={s},{},{},{}",
            per(r.sum(|p| p.bytes_sent as f64)),
            per(r.sum(|p| p.bytes_recv as f64)),
            r.final_rmse()
        )
        .ok();
    }
    write(a, "bytes", &csv);
}

fn prefetch(a: &Args) {
    let mut csv = String::from("prefetch,compute_s_per_pass,wait_s_per_pass,get_misses\n");
    let passes = 10.0;
    for (name, p) in [
        ("off", PrefetchPolicy::Off),
        ("conservative", PrefetchPolicy::Conservative),
        ("aggressive", PrefetchPolicy::Aggressive),
    ] {
        let r = mf(a, cfg(Consistency::Ssp, 1, p), &format!("--passes {passes} --samples 1 --clocks-per-pass 4"));
        writeln!(
            csv,
            "{name},{},{},{}",
            r.mean(|s| s.compute_s) / passes,
            r.mean(|s| s.wait_s) / passes,
            r.sum(|s| s.get_misses as f64)
        )
        .ok();
    }
    write(a, "prefetch", &csv);
}

fn essp(a: &Args) {
    let mut hist = String::from("model,staleness,count\n");
    let mut profile = String::from("model,measure,value,count\n");
    let mut robust = String::from("model,slack,final_rmse,train_s\n");
    // The ESSP paper's setup as far as MovieLens-100K allows: rank 100, 1% of the data per clock.
    let paper = Args { rank: 100, ..a.clone() };
    for (name, c) in [("SSP", Consistency::Ssp), ("ESSP", Consistency::Essp)] {
        let mut conf = cfg(c, 3, PrefetchPolicy::Off);
        conf.staleness_profile = true;
        let r = mf(&paper, conf, "--passes 5 --samples 1 --clocks-per-pass 100");
        let mut h = std::collections::BTreeMap::new();
        let mut prof = std::collections::BTreeMap::new();
        for p in &r.stats {
            for (k, v) in &p.staleness_hist {
                *h.entry(*k).or_insert(0u64) += v;
            }
            let sp = p.staleness_profile.as_ref().expect("profiled");
            for (measure, m) in [("delivery_lag", &sp.delivery_lag), ("ahead_of_slowest", &sp.ahead_of_slowest)] {
                for (k, v) in m {
                    *prof.entry((measure, *k)).or_insert(0u64) += v;
                }
            }
        }
        for (k, v) in h {
            writeln!(hist, "{name},{k},{v}").ok();
        }
        for ((measure, k), v) in prof {
            writeln!(profile, "{name},{measure},{k},{v}").ok();
        }
        for s in [0u32, 1, 3, 7, 15, 31] {
            let r = mf(a, cfg(c, s, PrefetchPolicy::Off), "--passes 12 --samples 2 --clocks-per-pass 8 --lr 0.02");
            writeln!(robust, "{name},{s},{},{}", r.final_rmse(), r.app("train_s")).ok();
        }
    }
    write(a, "essp_staleness_hist", &hist);
    write(a, "essp_staleness_profile", &profile);
    write(a, "essp_robustness", &robust);
}

pub fn run(a: Args) {
    let all = a.which == "all";
    let mut ran = false;
    for (name, f) in [
        ("staleness", staleness as fn(&Args)),
        ("stragglers", stragglers),
        ("background", background),
        ("bytes", bytes),
        ("prefetch", prefetch),
        ("essp", essp),
    ] {
        if all || a.which == name {
            println!("experiment {name}");
            f(&a);
            ran = true;
        }
    }
    if !ran {
        eprintln!("unknown experiment '{}' (staleness, stragglers, bytes, prefetch, essp, all)", a.which);
        std::process::exit(2);
    }
}
