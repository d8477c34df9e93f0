//! In-process cluster: N runtime processes as threads of the test binary, each with its own
//! communication runtime, client and server, talking over loopback TCP exactly as separate
//! processes do. Lets property tests run many small jobs quickly.
#![allow(dead_code)]

use ps_runtime::{App, ProcessStats, Result, RowTypeRegistry, RuntimeConfig};

pub fn run_cluster(
    n: usize,
    cfg: &RuntimeConfig,
    make_app: impl Fn(usize) -> Box<dyn App>,
) -> Vec<Result<ProcessStats>> {
    run_cluster_with(n, cfg, RowTypeRegistry::with_builtins(), make_app)
}

pub fn run_cluster_with(
    n: usize,
    cfg: &RuntimeConfig,
    registry: RowTypeRegistry,
    make_app: impl Fn(usize) -> Box<dyn App>,
) -> Vec<Result<ProcessStats>> {
    ps_runtime::logging::init(log::LevelFilter::Warn);
    ps_runtime::local_cluster::run_local_cluster(n, cfg, &registry, make_app).expect("cluster start")
}

pub fn demo(args: &str) -> Box<dyn App> {
    let args: Vec<String> = args.split_whitespace().map(String::from).collect();
    Box::new(ps_runtime::apps::demo::Demo::from_args(&args).unwrap())
}

/// Mean observed staleness and blocked gets over all processes.
pub fn summary(stats: &[Result<ProcessStats>]) -> (f64, u64, u64) {
    let (mut n, mut sum, mut misses) = (0u64, 0f64, 0u64);
    for s in stats {
        let s = s.as_ref().expect("process failed");
        for (k, v) in &s.staleness_hist {
            n += v;
            sum += *k as f64 * *v as f64;
        }
        misses += s.get_misses;
    }
    (sum / n.max(1) as f64, misses, n)
}
