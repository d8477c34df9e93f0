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

/// Upper bound of one in-process job: they take seconds, this only turns a hang into a failure.
pub const JOB_LIMIT: std::time::Duration = std::time::Duration::from_secs(180);

pub fn run_cluster_with(
    n: usize,
    cfg: &RuntimeConfig,
    registry: RowTypeRegistry,
    make_app: impl Fn(usize) -> Box<dyn App>,
) -> Vec<Result<ProcessStats>> {
    ps_runtime::init_logging(log::LevelFilter::Warn);
    // Apps are built here (the closure need not be Send); the job runs on a thread of its own
    // so that a hang fails the test after JOB_LIMIT instead of stalling the suite.
    let apps: Vec<Box<dyn App>> = (0..n).map(make_app).collect();
    let apps = std::sync::Mutex::new(apps.into_iter().map(Some).collect::<Vec<_>>());
    let (cfg, (tx, rx)) = (cfg.clone(), std::sync::mpsc::channel());
    std::thread::spawn(move || {
        let take = |pid: usize| apps.lock().unwrap()[pid].take().expect("one app per process");
        let _ = tx.send(ps_runtime::run_local_cluster(n, &cfg, &registry, take));
    });
    match rx.recv_timeout(JOB_LIMIT) {
        Ok(r) => r.expect("cluster start"),
        Err(_) => panic!("in-process job of {n} processes did not finish within {JOB_LIMIT:?}"),
    }
}

pub fn demo(args: &str) -> Box<dyn App> {
    let args: Vec<String> = args.split_whitespace().map(String::from).collect();
    Box::new(ps_apps::demo::Demo::from_args(&args).unwrap())
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
