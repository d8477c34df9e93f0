//! Process launch: what `ps-runtime run` does in a job's process (local or in a YARN container),
//! so that every runtime binary, built-in or a user's, starts processes the same way.

use crate::rendezvous::{self, AmLink};
use ps_apps::AppCatalog;
use ps_runtime::live::Live;
use ps_runtime::storage;
use ps_runtime::Hostfile;
use ps_runtime::JobConfig;
use ps_runtime::{run_app, ProcessSpec};
use ps_runtime::{PsError, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Warn when the resident set reaches this fraction of the container's memory.
const MEMORY_WARN_FRACTION: f64 = 0.9;

/// Runs process `id` of the job described by the job config file `job` (written by
/// `yarn-submit`), with its hostfile from the job directory or, under YARN, from the application
/// master's rendezvous at `rendezvous` (`HOST:PORT`); writes `stats-<id>.json` to the job's stats
/// directory. A failure is also reported to the AM, for the application's diagnostics.
///
/// `attempt` > 0: the launcher restarted the job after a failure (`--restarts`); it continues
/// from the newest resumable checkpoint if the job has a `checkpoint.url`, else from the start.
pub fn run_job_process(job: &Path, id: usize, rendezvous: Option<&str>, attempt: u32) -> Result<()> {
    run_job_process_with(&AppCatalog::builtin(), job, id, rendezvous, attempt)
}

/// [`run_job_process`] with the apps (and row types) of `catalog`.
pub fn run_job_process_with(
    catalog: &AppCatalog,
    job: &Path,
    id: usize,
    rendezvous: Option<&str>,
    attempt: u32,
) -> Result<()> {
    let mut link = None;
    let r = run_process(catalog, job, id, rendezvous, attempt, &mut link);
    if let (Err(e), Some(l)) = (&r, &link) {
        // The AM puts this in the application's diagnostics (an exit status alone says little).
        l.report_failure(&format!("process {id} failed: {e}"));
    }
    r
}

/// Under YARN the NodeManager kills a container whose process outgrows `--worker-memory`, with
/// nothing in the process's own log. This thread checks the resident set every second and warns
/// once, naming the numbers, when it passes 90% of the limit, so the log says what is coming.
fn watch_memory(id: usize) {
    let Some(limit_mb) = std::env::var(ps_runtime::stats::MEMORY_LIMIT_ENV).ok().and_then(|v| v.parse::<u64>().ok())
    else {
        return;
    };
    let limit = limit_mb << 20;
    let spawned = std::thread::Builder::new().name("ps-memwatch".into()).spawn(move || loop {
        let rss = ps_runtime::stats::current_rss_bytes();
        if rss as f64 >= limit as f64 * MEMORY_WARN_FRACTION {
            log::warn!(
                "process {id} uses {} MB of its container's {limit_mb} MB (--worker-memory); YARN kills a \
                 container that exceeds it: raise --worker-memory",
                rss >> 20
            );
            return;
        }
        std::thread::sleep(Duration::from_secs(1));
    });
    if let Err(e) = spawned {
        log::warn!("not watching memory: {e}");
    }
}

fn run_process(
    catalog: &AppCatalog,
    job: &Path,
    id: usize,
    rendezvous: Option<&str>,
    attempt: u32,
    link: &mut Option<AmLink>,
) -> Result<()> {
    let mut job = JobConfig::load(job)?;
    if attempt > 0 {
        job.runtime.restart_attempt = attempt;
        job.runtime.checkpoint.resume |= job.runtime.checkpoint.url.is_some();
    }
    let mut app = catalog.build(&job.app, &job.app_args)?;
    let secret = job.load_secret()?;
    // Under YARN the hostfile comes from the application master (ports bound here, reported there).
    let live = Arc::new(Live::new(job.runtime.threads));
    let (hosts, listener) = match rendezvous {
        Some(am) => {
            let host = std::env::var("NM_HOST").unwrap_or_else(|_| "127.0.0.1".into());
            let cid = std::env::var("CONTAINER_ID").map_err(|_| {
                PsError::Config("--rendezvous: CONTAINER_ID is not set (not in a YARN container?)".into())
            })?;
            let app_id = ps_hadoop::container::application_of(&cid)
                .ok_or_else(|| PsError::Config(format!("CONTAINER_ID '{cid}' is not a YARN container id")))?;
            let timeout = std::time::Duration::from_millis(job.runtime.connect_timeout_ms);
            watch_memory(id);
            let (l, hosts, am_link) =
                rendezvous::join(am, &app_id, &secret, id, &host, timeout, job.runtime.port_range)?;
            // A secure job's HDFS client reads its tokens from this file; the AM may renew them.
            if let Some(path) = std::env::var_os("HADOOP_TOKEN_FILE_LOCATION") {
                crate::token_push::take_from(&am_link, &secret, &app_id, path.into())?;
            }
            *link = Some(am_link);
            (hosts, Some(l))
        }
        None => {
            if let Some(addr) = &job.tracker {
                // Progress is a nicety: a launcher that cannot be reached does not stop the job.
                match rendezvous::report_to(addr, &rendezvous::local_app(attempt), &secret, id) {
                    Ok(l) => *link = Some(l),
                    Err(e) => log::warn!("no progress reports: {e}"),
                }
            }
            (Hostfile::load(&job.hostfile)?, None)
        }
    };
    app.shape(&ps_runtime::JobShape::new(&job.runtime, hosts.len()))?;
    if let Some(l) = link.as_mut() {
        l.report_progress(live.clone(), app.total_clocks());
    }
    // On YARN with --dc-by / --dc-hosts the application master put each process's data center
    // (its node's rack or label) into the hostfile.
    if let Some(labels) = hosts.dcs() {
        job.runtime.geo.place_by_labels(labels)?;
    }
    let echo = serde_json::json!({
        "runtime": job.runtime,
        "app": job.app,
        "app_args": job.app_args,
        "processes": hosts.len(),
    });
    let stats_url = job.stats_dir.to_string_lossy().into_owned();
    let spec = ProcessSpec {
        cfg: job.runtime.clone(),
        hosts,
        pid: id,
        secret,
        listener,
        // Per-clock lines go to a local directory (the container's, when stats go to HDFS).
        stats_dir: Some(if stats_url.contains("://") { PathBuf::from(".") } else { job.stats_dir.clone() }),
        live: link.is_some().then(|| live.clone()),
    };
    let per_clock = job.runtime.stats_per_clock;
    let stats = run_app(spec, catalog.rows().clone(), app, echo)?;
    // Per-clock lines written in the container go to the stats directory, whence the client
    // copies them next to --stats (the container directory is deleted with the container).
    if per_clock && stats_url.contains("://") {
        let (from, to) =
            (format!("clocks-{id}.jsonl"), format!("{}/clocks-{id}.jsonl", stats_url.trim_end_matches('/')));
        if let Err(e) = storage::copy(&from, &to, "per-clock stats") {
            log::warn!("keeping the per-clock stats: {e}");
        }
    }
    if let Some(l) = link.as_ref() {
        l.flush();
    }
    let path = format!("{}/stats-{id}.json", stats_url.trim_end_matches('/'));
    let text = serde_json::to_string_pretty(&stats).map_err(|e| PsError::io_msg("encoding stats", e))?;
    let st = storage::storage_for(&path)?;
    storage::write_atomic(st.as_ref(), &path, text.as_bytes(), "process stats")?;
    log::info!(
        "process {id} done: {} clocks in {:.2}s (compute {:.2}s, wait {:.2}s per thread)",
        stats.clocks,
        stats.wall_s,
        stats.compute_s,
        stats.wait_s
    );
    Ok(())
}
