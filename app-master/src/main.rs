//! `ps-app-master`: the YARN application master of a parameter-server job. It registers with the
//! ResourceManager, gang-allocates N containers, starts `ps-runtime` in each through the
//! NodeManagers (binaries and job files localized from the HDFS staging directory), builds the
//! hostfile from the ports the processes bound and reported, writes it to HDFS, heartbeats with
//! the job's progress, and finishes SUCCEEDED when every process exits 0, or FAILED (after stopping
//! the others) with the failed container's exit status and diagnostics (the cause's: a process
//! that only reports a lost peer yields to the peer's own status, `drive::cause`).
//!
//! ## The whole path on YARN
//!
//! ```text
//! yarn-submit --master yarn ─ IPC (ApplicationClientProtocol, SIMPLE as <u>; or REST) getNewApplication ─▶ RM ;
//!     │                          mkdir 0700 hdfs:///user/<u>/.ps-staging/<app>/ (job.json) ; binaries into
//!     │                          .ps-staging/cache/<sha256> once (client/src/staging.rs) ; submitApplication
//!     │                          with the job secret in the AM's credentials ; poll getApplicationReport ;
//!     │                          --dc-by rack: getClusterNodes first → staging dc-map.json (node → rack; or
//!     │                          --dc-hosts FILE), the AM looks up each container's node → hostfile column 4
//!     ▼
//! RM starts ps-app-master (container 1; token file with the AMRMToken and the job secret)
//! ps-app-master ─ IPC+SASL(AMRMToken) ─▶ RM: register(tracking URL) → allocate(ask N) … N containers + NMTokens
//!     ├─ IPC+SASL(NMToken) ─▶ each NM: startContainers(ps-runtime run --id i --rendezvous am:port,
//!     │                               LocalResources from staging, tokens (and secret) minus AMRMToken)
//!     ├─ rendezvous port ◀─ "hello i host port nonce mac" from each process (bound port 0; MAC under the
//!     │                     secret, host must be container i's node) ; ─▶ "hosts N mac …" to all (MACed
//!     │                     for the nonce), hostfile also written to staging ; then report lines
//!     │                     (`report.rs`: clock, tick, objective, staleness, snapshot) into the JobView
//!     │                     and a "failed reason" line before a process exits with an error ; HTTP on the
//!     │                     same port: the page and status.json ; at the end stats/report.html
//!     └─ heartbeat allocate(progress) ; completed statuses: non-zero exit → stopContainers, wait until all
//!        ended; with --restarts left: allocate N again, start `ps-runtime run --attempt K` (resumes from the
//!        newest checkpoint), new rendezvous and hostfile; else finish FAILED (every failure listed);
//!        a node that failed twice is blacklisted; an AM attempt > 1 (CONTAINER_ID) starts as a restart;
//!        all 0 → finish SUCCEEDED (repeat until unregistered)
//! ps-runtime ×N: the usual start-up (name node = process 0) with the AM-provided hostfile; secret from
//!               $HADOOP_TOKEN_FILE_LOCATION; stats to staging/stats
//! ```

mod drive;
mod error;
mod refresh;
mod rendezvous;
mod restarts;

use clap::Parser;
use error::{AmError, Result};
use ps_job::tracking::JobView;
use ps_runtime::secret::{check as check_secret, CREDENTIALS_ALIAS};
use ps_runtime::storage::{storage_for, write_atomic};
use ps_runtime::Hostfile;
use ps_yarn::amrm::{ask_anywhere, node_key, AmRmClient};
use ps_yarn::conf::HadoopConf;
use ps_yarn::credentials::{Credentials, KIND_AMRM};
use ps_yarn::nm;
use ps_yarn::proto::*;
use rendezvous::{lock, Shared, SharedRef};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

#[derive(Parser, Debug, Clone)]
#[command(name = "ps-app-master", about = "YARN application master of a parameter-server job")]
struct Args {
    /// HDFS staging directory holding job.json (and ps-runtime, unless --runtime-url).
    #[arg(long)]
    staging: String,
    /// The ps-runtime binary to localize (yarn-submit's content-hash cache); default
    /// `<staging>/ps-runtime`.
    #[arg(long)]
    runtime_url: Option<String>,
    /// Runtime processes (one container each).
    #[arg(long)]
    workers: usize,
    #[arg(long, default_value_t = 1024)]
    worker_memory: i64,
    #[arg(long, default_value_t = 1)]
    worker_vcores: i32,
    /// Listen on a port in this range (`A-B`) for the rendezvous and status page.
    #[arg(long, value_name = "A-B")]
    port_range: Option<ps_runtime::ports::PortRange>,
    /// Keep the staging directory's binaries and job files after a successful job (for debugging).
    #[arg(long)]
    keep_staging: bool,
    /// Data centers of a geo-distributed job: a JSON file `{"by": how, "nodes": {node: dc}}`
    /// (node `host:port` or `host`) that yarn-submit wrote from the racks (`--dc-by rack`) or
    /// `--dc-hosts`; each process's data center goes into the hostfile.
    #[arg(long, value_name = "URL")]
    dc_map: Option<String>,
    /// After a runtime process fails, start every process again (from the newest resumable
    /// checkpoint, if the job has one), up to N times.
    #[arg(long, default_value_t = 0)]
    restarts: u32,
    /// Give up if the containers are not all allocated within this many seconds.
    #[arg(long, default_value_t = 600)]
    allocation_timeout_s: u64,
    /// Secure clusters: obtain fresh delegation tokens as this principal, from --keytab, before
    /// the job's expire (see `refresh`).
    #[arg(long, requires = "keytab")]
    principal: Option<String>,
    /// The principal's keytab (a private local resource of this container).
    #[arg(long, requires = "principal")]
    keytab: Option<std::path::PathBuf>,
    /// A file system the job's tokens are for (repeated; yarn-submit's list).
    #[arg(long = "token-fs", value_name = "URL")]
    token_fs: Vec<String>,
}

fn env(k: &'static str) -> Result<String> {
    std::env::var(k).map_err(|_| AmError::NotInContainer(k))
}

/// The files localized into each runtime container, with their exact HDFS size and mtime (the
/// job secret is not one: it travels in the containers' credentials).
fn local_resources(args: &Args) -> Result<Vec<StringLocalResourceMapProto>> {
    let staging = &args.staging;
    let runtime = match &args.runtime_url {
        Some(u) => (u.clone(), PRIVATE),
        None => (format!("{staging}/ps-runtime"), APPLICATION),
    };
    let files = [("ps-runtime", runtime), ("job.json", (format!("{staging}/job.json"), APPLICATION))];
    let st = storage_for(staging).map_err(AmError::Staging)?;
    files
        .into_iter()
        .map(|(name, (url, visibility))| {
            let (size, mtime) = st.status(&url).map_err(AmError::Staging)?;
            Ok(StringLocalResourceMapProto {
                key: Some(name.to_string()),
                value: Some(LocalResourceProto {
                    resource: Some(UrlProto::from_url(&url).map_err(AmError::StagingUrl)?),
                    size: Some(size as i64),
                    timestamp: Some(mtime as i64),
                    r#type: Some(FILE),
                    visibility: Some(visibility),
                    pattern: None,
                }),
            })
        })
        .collect()
}

struct Am {
    args: Args,
    rm: AmRmClient,
    shared: SharedRef,
    /// Allocated containers by process index.
    procs: Vec<ContainerProto>,
    dc_map: Option<DcMap>,
    restarts: restarts::Restarts,
    /// Every node a container of this job ran on, and the failures per node.
    nodes_seen: HashSet<String>,
    node_failures: HashMap<String, u32>,
}

/// Which data center each node is in (`--dc-map`).
struct DcMap {
    /// How the map was made (for messages): `--dc-by rack`, `--dc-hosts FILE`.
    by: String,
    nodes: std::collections::HashMap<String, String>,
}

impl DcMap {
    async fn load(url: String) -> Result<DcMap> {
        let u = url.clone();
        let read = tokio::task::spawn_blocking(move || -> ps_runtime::Result<DcMap> {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut *storage_for(&u)?.open(&u, 0)?, &mut text)
                .map_err(|e| ps_runtime::PsError::io("reading", e))?;
            let bad = |why: String| ps_runtime::PsError::Config(format!("not a data center map: {why}"));
            let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
            let nodes = v["nodes"].as_object().ok_or_else(|| bad("no \"nodes\" object".into()))?;
            let nodes = nodes
                .iter()
                .map(|(k, dc)| Ok((k.clone(), dc.as_str().ok_or_else(|| bad(format!("node {k}: {dc}")))?.to_string())))
                .collect::<ps_runtime::Result<_>>()?;
            Ok(DcMap { by: v["by"].as_str().unwrap_or("the data center map").to_string(), nodes })
        });
        read.await.map_err(AmError::Task)?.map_err(|source| AmError::DcMap { url, source })
    }

    /// The data center of each container: by its node `host:port`, else by its host.
    fn labels(&self, procs: &[ContainerProto]) -> Result<Vec<String>> {
        procs
            .iter()
            .map(|c| {
                let id = c.node_id.clone().unwrap_or_default();
                let key = node_key(&id);
                let host = id.host.unwrap_or_default();
                self.nodes
                    .get(&key)
                    .or_else(|| self.nodes.get(&host))
                    .cloned()
                    .ok_or_else(|| AmError::NoDataCenter { node: key, by: self.by.clone() })
            })
            .collect()
    }
}

impl Am {
    /// Acts on the RM's command in a heartbeat reply. Returns true after a resync (the RM lost
    /// this attempt's state: register again, and asks must be sent again).
    async fn on_command(&mut self, cmd: Option<i32>) -> Result<bool> {
        match cmd {
            Some(AM_SHUTDOWN) => Err(AmError::Shutdown),
            Some(AM_RESYNC) => {
                log::warn!("the ResourceManager asked for a resync; registering again");
                self.rm.reregister().await.map_err(AmError::Reregister)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn index_of(&self, id: &Option<ContainerIdProto>) -> Option<usize> {
        self.procs.iter().position(|c| &c.id == id)
    }

    fn set_status(&self, s: impl Into<String>) {
        lock(&self.shared).view.status = s.into();
    }

    /// Why process `i` failed, as it reported over the rendezvous connection. Its last words are
    /// sent just before it exits, so they may trail the NodeManager's exit report slightly.
    async fn failure_reason(&self, i: usize) -> Option<String> {
        for _ in 0..10 {
            if let Some(r) = lock(&self.shared).view.failures.get(&i) {
                return Some(r.clone());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }

    /// Asks for N containers and waits until all are allocated (extras are released).
    async fn gang_allocate(&mut self) -> Result<()> {
        let n = self.args.workers;
        let ask = ask_anywhere(1, self.args.worker_memory, self.args.worker_vcores, n as i32);
        let mut asks = vec![ask];
        let mut extra = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(self.args.allocation_timeout_s);
        while self.procs.len() < n {
            if Instant::now() > deadline {
                return Err(AmError::Allocation {
                    allocated: self.procs.len(),
                    wanted: n,
                    secs: self.args.allocation_timeout_s,
                });
            }
            let r = self
                .rm
                .allocate(std::mem::take(&mut asks), std::mem::take(&mut extra), 0.0)
                .await
                .map_err(AmError::Rm)?;
            if self.on_command(r.a_m_command).await? {
                // The client re-sends what is still outstanding on the next heartbeat.
                continue;
            }
            for c in r.allocated_containers {
                if self.procs.len() < n {
                    self.procs.push(c);
                } else {
                    extra.push(c.id.unwrap_or_default());
                }
            }
            // Containers of a failed attempt may still report their end: only this set's count.
            if let Some(s) = r.completed_container_statuses.iter().find(|s| self.index_of(&s.container_id).is_some()) {
                return Err(AmError::EarlyExit(s.diagnostics.clone()));
            }
            if self.procs.len() < n {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
        // Deterministic process ids: container id order.
        self.procs.sort_by_key(|c| c.id.as_ref().and_then(|i| i.id).unwrap_or(0));
        // From now on the rendezvous accepts process i only from the node of container i.
        let hosts = self.procs.iter().map(|c| c.node_id.as_ref().and_then(|n| n.host.clone()).unwrap_or_default());
        lock(&self.shared).expected = Some(hosts.collect());
        log::info!(
            "all {n} containers allocated: {:?}",
            self.procs
                .iter()
                .map(|c| node_key(c.node_id.as_ref().unwrap_or(&NodeIdProto::default())))
                .collect::<Vec<_>>()
        );
        Ok(())
    }

    /// Starts process i in container i, as restart `attempt` of the job (0: the first run).
    async fn start_all(
        &mut self,
        resources: &[StringLocalResourceMapProto],
        tokens: Vec<u8>,
        am_addr: &str,
        attempt: u32,
    ) -> Result<()> {
        let mut env: Vec<StringStringMapProto> = Vec::new();
        for k in ["HADOOP_USER_NAME", "PS_LOG", "RUST_BACKTRACE"] {
            if let Ok(v) = std::env::var(k) {
                env.push(StringStringMapProto { key: Some(k.into()), value: Some(v) });
            }
        }
        // The container's memory limit, so the runtime can warn before YARN kills it.
        let limit = self.args.worker_memory.to_string();
        env.push(StringStringMapProto { key: Some(ps_runtime::stats::MEMORY_LIMIT_ENV.into()), value: Some(limit) });
        for (i, c) in self.procs.iter().enumerate() {
            let again = if attempt > 0 { format!(" --attempt {attempt}") } else { String::new() };
            let cmd = format!(
                "./ps-runtime run --job job.json --id {i} --rendezvous {am_addr}{again} 1><LOG_DIR>/stdout \
                 2><LOG_DIR>/stderr"
            );
            let clc = ContainerLaunchContextProto {
                local_resources: resources.to_vec(),
                tokens: Some(tokens.clone()),
                environment: env.clone(),
                command: vec![cmd],
            };
            let key = node_key(c.node_id.as_ref().unwrap_or(&NodeIdProto::default()));
            let tok = self.rm.nm_tokens.get(&key).ok_or_else(|| AmError::NoNmToken(key.clone()))?;
            nm::start_container(c, tok, clc).await.map_err(|source| AmError::Launch {
                process: i,
                node: key.clone(),
                source: Box::new(source),
            })?;
        }
        log::info!("started {} runtime processes", self.procs.len());
        Ok(())
    }

    /// Stops every container not yet finished (best effort).
    async fn stop_all(&self, finished: &HashSet<usize>) {
        let mut by_node: HashMap<String, Vec<ContainerIdProto>> = HashMap::new();
        for (i, c) in self.procs.iter().enumerate() {
            if !finished.contains(&i) {
                by_node
                    .entry(node_key(c.node_id.as_ref().unwrap_or(&NodeIdProto::default())))
                    .or_default()
                    .push(c.id.clone().unwrap_or_default());
            }
        }
        for (node, ids) in by_node {
            if let Some(t) = self.rm.nm_tokens.get(&node) {
                if let Err(e) = nm::stop_containers(&node, t, ids).await {
                    log::warn!("stopping containers on {node}: {e}");
                }
            }
        }
    }
}

async fn run(args: Args) -> Result<()> {
    let conf = HadoopConf::from_env().map_err(AmError::HadoopConf)?;
    let creds = Credentials::read_file(std::path::Path::new(&env("HADOOP_TOKEN_FILE_LOCATION")?))
        .map_err(AmError::Credentials)?;
    let amrm = creds.find_kind(KIND_AMRM).ok_or(AmError::NoAmRmToken)?.clone();
    let secret = creds.secrets.iter().find(|(a, _)| a == CREDENTIALS_ALIAS).map(|(_, s)| s.clone());
    let secret = secret.ok_or(AmError::NoSecret)?;
    check_secret(&secret, "of the application's credentials").map_err(AmError::Secret)?;
    let host = env("NM_HOST")?;
    let cid = env("CONTAINER_ID")?;
    let app_id = ContainerIdProto::application_of(&cid).ok_or_else(|| AmError::ContainerId(cid.clone()))?;
    log::info!("application master {cid} for {} processes; staging {}", args.workers, args.staging);
    let a = args.clone();
    let resources = tokio::task::spawn_blocking(move || local_resources(&a)).await.map_err(AmError::Task)??;

    // Rendezvous/status server first: its address is the tracking URL.
    let listener = ps_runtime::ports::bind("0.0.0.0", args.port_range)
        .and_then(|l| {
            l.set_nonblocking(true).map_err(|e| ps_runtime::PsError::io("making the listener non-blocking", e))?;
            tokio::net::TcpListener::from_std(l).map_err(|e| ps_runtime::PsError::io("registering the listener", e))
        })
        .map_err(AmError::BindRendezvous)?;
    let port = listener.local_addr().map_err(AmError::RendezvousAddr)?.port();
    let am_addr = format!("{host}:{port}");
    let tracking = format!("http://{am_addr}/");
    let job = restarts::read_job(&args.staging).await?;
    let what = format!("{} {}", job.app, job.app_args.join(" "));
    let shared = Arc::new(Mutex::new(Shared::new(JobView::new(what.trim(), args.workers))));
    let (hello_tx, mut hello_rx) = mpsc::unbounded_channel();
    let (hosts_tx, hosts_rx) = watch::channel(None);
    let (token_lines, token_lines_rx) = watch::channel(None);
    let (container_tokens, container_tokens_rx) = watch::channel(creds.without_kind(KIND_AMRM).to_bytes());
    let secret = Arc::new(secret);
    if let (Some(principal), Some(keytab)) = (args.principal.clone(), args.keytab.clone()) {
        let r = refresh::Refresher {
            principal,
            keytab,
            urls: args.token_fs.clone(),
            conf: conf.clone(),
            secret: secret.clone(),
            app_id: app_id.clone(),
            token_file: env("HADOOP_TOKEN_FILE_LOCATION")?.into(),
        };
        let out = refresh::Outlets { containers: container_tokens, lines: token_lines };
        tokio::spawn(r.run(creds.clone(), out));
    }
    let rcfg = rendezvous::Config {
        secret,
        tokens: token_lines_rx,
        app_id,
        first_line_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(60),
        // Every process keeps one connection open; the rest is room for status requests.
        max_connections: args.workers + 32,
    };
    tokio::spawn(rendezvous::serve(listener, rcfg, shared.clone(), hello_tx, hosts_rx));

    let schedulers = conf.rm_schedulers().map_err(AmError::HadoopConf)?;
    let max_wait = conf.rm_connect_max_wait().map_err(AmError::HadoopConf)?;
    let interval = conf.rm_connect_retry_interval().map_err(AmError::HadoopConf)?;
    let mut rm =
        AmRmClient::connect(&schedulers, amrm, max_wait).await.map_err(AmError::Rm)?.with_retry_interval(interval);
    rm.register(&host, port as i32, &tracking).await.map_err(AmError::Rm)?;
    let dc_map = match args.dc_map.clone() {
        Some(url) => Some(DcMap::load(url).await?),
        None => None,
    };
    let mut restarts = restarts::Restarts::new(args.restarts, &args.staging, &job);
    if let Some(k) = ContainerIdProto::attempt_of(&cid).filter(|k| *k > 1) {
        restarts.after_am_attempt(k).await;
        lock(&shared).view.begin_attempt(restarts.log().attempts(), restarts.log().to_json());
    }
    let mut am = Am {
        args: args.clone(),
        rm,
        shared,
        procs: Vec::new(),
        dc_map,
        restarts,
        nodes_seen: HashSet::new(),
        node_failures: HashMap::new(),
    };
    let mut launch = drive::Launch {
        resources: &resources,
        tokens: container_tokens_rx,
        am_addr: &am_addr,
        hello_rx: &mut hello_rx,
        hosts_tx: &hosts_tx,
    };
    let outcome = drive::drive(&mut am, &mut launch).await;
    if am.restarts.log().attempts() > 0 {
        am.restarts.write().await;
    }
    let (status, diag) = match &outcome {
        Ok(()) => (APP_SUCCEEDED, format!("all {} processes finished", args.workers)),
        Err(d) => (APP_FAILED, d.to_string()),
    };
    if let Some(k) = args.keytab.as_ref().and_then(|k| k.file_name()) {
        // The staged keytab goes whatever the outcome (yarn-submit, if still following, also tries).
        let url = format!("{}/{}", args.staging, k.to_string_lossy());
        let u = url.clone();
        match tokio::task::spawn_blocking(move || storage_for(&u).and_then(|st| st.delete(&u))).await {
            Ok(Ok(())) => log::info!("removed the staged keytab {url}"),
            Ok(Err(e)) => log::warn!("removing the staged keytab {url}: {e}"),
            Err(e) => log::warn!("removing the staged keytab {url}: {e}"),
        }
    }
    am.set_status(if outcome.is_ok() { "succeeded" } else { "failed" });
    let page = lock(&am.shared).status_json();
    write_report(&args.staging, page).await;
    log::info!("finishing: {}: {diag}", if outcome.is_ok() { "SUCCEEDED" } else { "FAILED" });
    am.rm.finish(status, &diag, &tracking).await.map_err(AmError::Unregister)?;
    if outcome.is_ok() && !args.keep_staging {
        let staging = args.staging.clone();
        tokio::task::spawn_blocking(move || clean_staging(&staging)).await.map_err(AmError::Task)?;
    }
    outcome
}

/// Writes the job's final page to `<staging>/stats/report.html`, which yarn-submit puts next to
/// `--stats` (best effort: the job's outcome does not depend on it).
async fn write_report(staging: &str, status: serde_json::Value) {
    let url = format!("{staging}/stats/report.html");
    let u = url.clone();
    match tokio::task::spawn_blocking(move || ps_job::tracking::serve::write_report(&u, &status)).await {
        Ok(Ok(())) => log::info!("job report written to {url}"),
        Ok(Err(e)) => log::warn!("writing {url}: {e}"),
        Err(e) => log::warn!("writing {url}: {e}"),
    }
}

/// After a successful unregister, removes what only this application needed from its staging
/// directory: the binaries, `job.json` and the hostfile, so nothing is left behind if nobody
/// follows the job. `stats/` stays: `yarn-submit` merges it into `--stats` and then removes the
/// whole directory. After a failure everything is kept for inspection. A failure to delete is
/// logged, not fatal: the job itself succeeded.
fn clean_staging(staging: &str) {
    let r = storage_for(staging).and_then(|st| {
        for name in st.children(staging)? {
            if name != "stats" {
                st.delete(&format!("{staging}/{name}"))?;
            }
        }
        Ok(())
    });
    match r {
        Ok(()) => log::info!("removed the job's files from {staging} (stats/ stays for yarn-submit)"),
        Err(e) => log::warn!("cleaning the staging directory {staging}: {e}"),
    }
}

/// What to do when YARN killed a container for its memory: exit status -104 (physical) or -103
/// (virtual), or the NodeManager's "running beyond ... memory limits" diagnostics.
fn memory_hint(code: i32, diagnostics: &str, worker_memory: i64) -> Option<String> {
    let over = code == -104
        || code == -103
        || diagnostics.contains("beyond physical memory limits")
        || diagnostics.contains("beyond virtual memory limits");
    over.then(|| {
        format!(
            "the process needed more than its container's {worker_memory} MB and YARN killed it: \
             raise --worker-memory (it covers everything the process uses; see peak_rss_bytes in a smaller run's stats)"
        )
    })
}

fn main() {
    ps_runtime::init_logging(log::LevelFilter::Info);
    let args = Args::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            log::error!("starting the runtime: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = rt.block_on(run(args)) {
        log::error!("{e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod memory_tests {
    use super::memory_hint;

    #[test]
    fn memory_kills_say_what_to_raise() {
        let nm = "Container [pid=1] is running beyond physical memory limits. Current usage: 1.1 GB of 1 GB";
        for (code, diag) in [(-104, ""), (-103, ""), (143, nm)] {
            let h = memory_hint(code, diag, 1024).expect("a memory kill");
            assert!(h.contains("1024 MB") && h.contains("raise --worker-memory"), "{h}");
        }
        assert!(memory_hint(137, "killed", 1024).is_none());
        assert!(memory_hint(1, "", 1024).is_none());
    }
}
