//! In-process cluster: N runtime processes as threads of the test binary, each with its own
//! communication runtime, client and server, talking over loopback TCP exactly as separate
//! processes do. Lets property tests run many small jobs quickly.
#![allow(dead_code)]

use ps_runtime::{
    run_app, App, Hostfile, ProcessSpec, ProcessStats, Result, RowTypeRegistry, RuntimeConfig,
};
use std::net::TcpListener;

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
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let hosts = Hostfile::new(
        listeners
            .iter()
            .map(|l| ("127.0.0.1".to_string(), l.local_addr().unwrap().port()))
            .collect(),
    );
    let secret = b"test-secret".to_vec();
    let handles: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(pid, l)| {
            let spec = ProcessSpec {
                cfg: cfg.clone(),
                hosts: hosts.clone(),
                pid,
                secret: secret.clone(),
                listener: Some(l),
                stats_dir: None,
            };
            let app = make_app(pid);
            let registry = registry.clone();
            std::thread::spawn(move || run_app(spec, registry, app, serde_json::Value::Null))
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("process thread panicked"))
        .collect()
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
