//! The papers' experiments at small scale, each writing CSVs into `<out>/` for
//! `scripts/plot_experiments.py`. The LazyTable ones run on all three applications (`--apps`):
//! MF on MovieLens-100K, LDA on the NYT corpus, PageRank on a generated 1M-node graph, each sized
//! so that a clock is tens of milliseconds of computation on 4 processes.
//!   staleness   time to a target objective vs work per clock (A-BSP) and vs slack (SSP) [LazyTable 5.2]
//!   stragglers  mean pass time vs injected delay for BSP, A-BSP, SSP, ESSP           [LazyTable Fig. 6]
//!   background  the same with every process disrupted in 10% of its clocks          [LazyTable §5.3]
//!   bytes       bytes sent/received per pass for {wpc 4, s 0}, {2, 1}, {1, 3}       [LazyTable Table 2]
//!   prefetch    compute vs wait per pass, prefetch off / conservative / aggressive  [LazyTable Fig. 9]
//!   essp        SSP vs ESSP: staleness profile, convergence per clock and per second
//!               and the compute/wait split across slack (MF, LDA), MF robustness
//!               to large slack at several step sizes                                [ESSP Fig. 2-3]

mod essp;
mod lazytable;

use ps_apps as apps;
use ps_runtime::run_local_cluster;
use ps_runtime::{Consistency, PrefetchPolicy, ProcessStats, RowTypeRegistry, RuntimeConfig};
use serde_json::Value;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// staleness, stragglers, background, bytes, prefetch, essp, or all.
    #[arg(default_value = "all")]
    which: String,
    /// Applications for the LazyTable experiments (all but essp).
    #[arg(long, value_delimiter = ',', default_value = "mf,lda,pagerank")]
    apps: Vec<String>,
    /// Ratings input (MF).
    #[arg(long, default_value = "data/ml-100k/ratings.tsv")]
    input: String,
    /// Corpus (LDA, UCI docword).
    #[arg(long, default_value = "data/nyt/docword.nyt.txt")]
    corpus: String,
    /// Graph (PageRank, edge list); scripts/experiments.sh generates it.
    #[arg(long, default_value = "data/bench/graph-1000000.tsv")]
    graph: String,
    #[arg(long, default_value = "results/experiments")]
    out: PathBuf,
    /// Processes (one worker thread each).
    #[arg(long, default_value_t = 4)]
    procs: usize,
    #[arg(long, default_value_t = 20)]
    rank: usize,
    /// Target training RMSE for MF's time-to-quality.
    #[arg(long, default_value_t = 0.8)]
    target: f64,
    /// Target log-likelihood per token for LDA's time-to-quality.
    #[arg(long, default_value_t = -9.8)]
    lda_target: f64,
    /// Target L1 distance to the exact ranks for PageRank's time-to-quality.
    #[arg(long, default_value_t = 0.02)]
    pagerank_target: f64,
}

/// One application on one input, as the experiments run it.
#[derive(Clone)]
struct Workload {
    /// `mf`, `lda` or `pagerank`.
    app: &'static str,
    /// The app's arguments apart from passes, clocks and stragglers.
    args: String,
    /// Which objective field time-to-quality and convergence read.
    key: &'static str,
    target: f64,
    higher_is_better: bool,
    /// The smallest work per clock, in passes. PageRank's iteration reads the previous
    /// iteration's whole output, so a clock is at least one iteration.
    min_wpc: f64,
    /// Passes for time-to-quality runs: long enough for most configurations to reach the target.
    quality_passes: i64,
    /// Passes for the straggler curves (enough clocks for 10% draws to average out, within the
    /// time budget of `scripts/experiments.sh`).
    background_passes: i64,
}

impl Workload {
    fn all(a: &Args) -> Vec<Workload> {
        let known = [
            Workload {
                app: "mf",
                // The papers' setup: both factor matrices are parameter-server tables (the default
                // keeps user factors in the workers, which removes most of the traffic studied here),
                // and data-parallel SGD (rotating item slices would hand each item to one worker
                // per clock, which takes staleness out of the picture).
                args: format!("--input {} --rank {} --user-factors table --schedule ratings", a.input, a.rank),
                key: "rmse",
                target: a.target,
                higher_is_better: false,
                min_wpc: 0.125,
                quality_passes: 24,
                background_passes: 60,
            },
            Workload {
                app: "lda",
                // Data-parallel sampling as in LazyTable (word rotation would hand each word to one
                // worker per clock, which takes staleness out of the picture).
                args: format!("--input {} --schedule docs", a.corpus),
                key: "loglik_per_token",
                target: a.lda_target,
                higher_is_better: true,
                min_wpc: 0.125,
                quality_passes: 24,
                background_passes: 24,
            },
            Workload {
                app: "pagerank",
                args: format!("--input {} --reference", a.graph),
                key: "ref_l1",
                target: a.pagerank_target,
                higher_is_better: false,
                min_wpc: 1.0,
                quality_passes: 40,
                background_passes: 40,
            },
        ];
        let picked: Vec<Workload> = known.into_iter().filter(|w| a.apps.iter().any(|x| x == w.app)).collect();
        if picked.is_empty() {
            eprintln!("--apps: none of {:?} is mf, lda or pagerank", a.apps);
            std::process::exit(2);
        }
        picked
    }

    fn mf(a: &Args) -> Workload {
        Workload::all(&Args { apps: vec!["mf".into()], ..a.clone() }).remove(0)
    }

    fn lda(a: &Args) -> Workload {
        Workload::all(&Args { apps: vec!["lda".into()], ..a.clone() }).remove(0)
    }

    /// Runs the workload on `a.procs` in-process nodes (real TCP between them) with `extra` args.
    fn run(&self, a: &Args, cfg: RuntimeConfig, extra: &str) -> Run {
        let args: Vec<String> = format!("{} {extra}", self.args).split_whitespace().map(String::from).collect();
        eprintln!("  {} {:?} s={} {extra}", self.app, cfg.consistency, cfg.staleness);
        let res = run_local_cluster(a.procs, &cfg, &RowTypeRegistry::with_builtins(), |_| {
            apps::build(self.app, &args).expect("args")
        })
        .expect("cluster");
        let w = self.clone();
        match res.into_iter().collect::<ps_runtime::Result<Vec<_>>>() {
            Ok(stats) => Run { stats, w },
            Err(e) if e.to_string().contains("diverged") => {
                eprintln!("  -> diverged");
                Run { stats: Vec::new(), w }
            }
            Err(e) => panic!("{} run failed: {e}", self.app),
        }
    }
}

/// A finished run; `stats` is empty if training diverged (every metric is then NaN).
struct Run {
    stats: Vec<ProcessStats>,
    w: Workload,
}

/// One objective evaluation: (clock, seconds since training started, value).
type Point = (f64, f64, f64);

impl Run {
    fn app(&self, k: &str) -> f64 {
        self.stats.first().and_then(|s| s.app.get(k)).and_then(Value::as_f64).unwrap_or(f64::NAN)
    }
    fn objective(&self) -> Vec<Point> {
        let Some(first) = self.stats.first() else { return Vec::new() };
        let f = |r: &Value, k: &str| r[k].as_f64().unwrap_or(f64::NAN);
        first.app["objective"]
            .as_array()
            .map(|v| v.iter().map(|r| (f(r, "clock"), f(r, "time_s"), f(r, self.w.key))).collect())
            .unwrap_or_default()
    }
    fn final_value(&self) -> f64 {
        self.objective().last().map(|x| x.2).unwrap_or(f64::NAN)
    }
    /// First evaluation time at which the objective reaches the workload's target (NaN if never).
    fn time_to_target(&self) -> f64 {
        let w = &self.w;
        let reached = |v: f64| if w.higher_is_better { v >= w.target } else { v <= w.target };
        self.objective().iter().find(|x| reached(x.2)).map(|x| x.1).unwrap_or(f64::NAN)
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

/// An experiment: its name on the command line and what it runs.
type Experiment = (&'static str, fn(&Args));

const EXPERIMENTS: [Experiment; 6] = [
    ("staleness", lazytable::staleness),
    ("stragglers", lazytable::stragglers),
    ("background", lazytable::background),
    ("bytes", lazytable::bytes),
    ("prefetch", lazytable::prefetch),
    ("essp", essp::essp),
];

pub fn run(a: Args) {
    let all = a.which == "all";
    let mut ran = false;
    for (name, f) in EXPERIMENTS {
        if all || a.which == name {
            println!("experiment {name}");
            f(&a);
            ran = true;
        }
    }
    if !ran {
        let names: Vec<&str> = EXPERIMENTS.iter().map(|e| e.0).collect();
        eprintln!("unknown experiment '{}' ({}, all)", a.which, names.join(", "));
        std::process::exit(2);
    }
}
