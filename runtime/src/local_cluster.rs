//! Runs a whole job inside one OS process: N runtime processes as threads, each with its own
//! communication runtime, client and server, connected over loopback TCP exactly like separate
//! processes. For tests, benchmarks and quick experiments; `yarn-submit` runs real processes.

use crate::config::RuntimeConfig;
use crate::error::{PsError, Result};
use crate::hostfile::Hostfile;
use crate::process::{run_app, App, ProcessSpec};
use crate::registry::RowTypeRegistry;
use crate::stats::ProcessStats;
use std::net::TcpListener;

/// Runs `n` processes of a job; `make_app(pid)` builds each process's application.
pub fn run_local_cluster(
    n: usize,
    cfg: &RuntimeConfig,
    registry: &RowTypeRegistry,
    make_app: impl Fn(usize) -> Box<dyn App>,
) -> Result<Vec<Result<ProcessStats>>> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<_>>()
        .map_err(|e| PsError::io("binding loopback ports", e))?;
    let ports = listeners
        .iter()
        .map(|l| l.local_addr().map(|a| ("127.0.0.1".to_string(), a.port())))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| PsError::io("reading bound ports", e))?;
    let hosts = Hostfile::new(ports);
    let mut secret = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut secret);
    let handles: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(pid, l)| {
            let spec = ProcessSpec {
                cfg: cfg.clone(),
                hosts: hosts.clone(),
                pid,
                secret: secret.to_vec(),
                listener: Some(l),
                stats_dir: None,
                live: None,
            };
            let (app, registry) = (make_app(pid), registry.clone());
            std::thread::spawn(move || run_app(spec, registry, app, serde_json::Value::Null))
        })
        .collect();
    Ok(handles
        .into_iter()
        .map(|h| h.join().unwrap_or_else(|_| Err(PsError::Aborted("process thread panicked".into()))))
        .collect())
}
