//! One runtime process: start-up (listen, connect, register with the name node), the worker
//! threads of an [`App`], and orderly shutdown. Every process hosts a client and a server shard.
//!
//! ## Processes and threads
//!
//! ```text
//! yarn-submit --master local[N]  ── writes hostfile, secret, job.json; spawns N × ps-runtime; merges stats
//!                                   (to a local path or hdfs://, via the runtime's Storage trait); with
//!                                   --restarts, after a failure spawns all N again (`run --attempt K`)
//! ps-runtime (process p = client id = hostfile line p; process 0 also runs the name node)
//!   worker threads (T)      App::run_worker: get / inc / clock / global_barrier; own thread caches
//!   tokio comm runtime      (comm_threads) – no application thread ever touches a socket
//!     client task           ClientCmd channel in, packs fetches per server, ships oplogs at clocks,
//!                           installs replies/pushes into the process cache, handles name-node control
//!     server task           master rows of this shard, vector clock, pending updates, parked reads,
//!                           ESSP subscriptions; name node state on p = 0
//!     per connection        writer task (batches frames, heartbeats) + reader task (decode, liveness)
//!   ps-snapshot thread      (with --checkpoint) writes encoded shards and, on p = 0, manifests, in order
//!   hdfs-io runtime         shared by all HDFS clients of the process (hdfs-native pools connections)
//!   ps-memwatch thread      (on YARN) checks the resident set each second; warns once at 90% of the container
//!   ps-progress thread      sends the tracker (AM, or the local launcher) a report each second: clock, ticks
//!                           (queued by the client task per process clock), objective evaluations (queued by
//!                           the reporting worker), snapshots, the staleness histogram (workers add their new
//!                           counts at each clock(): atomics, off the read path); flushed once more at the end
//! yarn-submit (local)       tracker thread: a tokio listener that takes each process's authenticated hello and
//!                           report lines into one `tracking::JobView`, and with --ui serves its page; a display
//!                           thread draws the progress bar from it; report.html next to --stats at the end
//! ```
//! Process p dials every q ≠ p; that connection carries p's client → q's server (and → name node for
//! q = 0) and q's replies/pushes back. Traffic to oneself skips sockets. Each connection starts with an
//! HMAC-SHA256 challenge/response over the job secret (both directions, on a codec of 256-byte frames,
//! at most 64 at once), which also derives one key per direction (HKDF-SHA256). Every later frame is
//! `len | message | tag`: the tag (`wire_protection`: Poly1305 for `integrity`, AES-256-GCM with
//! encryption for `privacy`, the default, none for `authentication`) uses the frame's sequence number as nonce, so
//! tampering, replay, reordering and loss end the connection. Every task of the communication runtime
//! and every worker thread runs under a panic guard: a panic fails the process and, through the name
//! node, the job.
//! In a geo job (`--datacenters`), the writer of a connection to a process in another data center
//! encodes each batch into a buffer and hands it, in 16 KB pieces, to a pump task that writes each
//! piece at the time the link's `Shaper` (shared by both connections to that peer) says it arrives;
//! bytes across data centers are also counted as WAN bytes. Under `--inter-dc asp` a client routes
//! each row to `servers[slot(row) mod |servers|]` of its own data center only (`Shared::servers`) and
//! sends `Clock` only there; a server's vector clock counts only its data center's clients (the others
//! start FINISHED), and when its global clock advances it mirrors significant sums and its clock to the
//! row's servers in the other data centers; it serves `min(global, slowest mirror clock + DS)`.

use crate::client::comm::ClientTask;
use crate::client::{Client, TableSlot, Worker};
use crate::clock::Clock;
use crate::config::{RuntimeConfig, TableConfig};
use crate::error::{catch_panic, PsError, Result};
use crate::hostfile::Hostfile;
use crate::net;
use crate::registry::RowTypeRegistry;
use crate::server::{Server, ServerIn};
use crate::state::{ClientCmd, Shared, Wake};
use crate::stats::{hist_of, peak_rss_bytes, ProcessStats, StalenessProfile, ThreadStats};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

/// A parameter-server application. The runtime calls `initialize` once per process (create the
/// same tables in every process, load this process's data), then runs `run_worker` on every
/// worker thread and joins them.
pub trait App: Send + Sync + 'static {
    /// Sizes the app to the job before anything else is called on it (and before
    /// [`App::total_clocks`] is asked): how many workers it has and how stale their reads may be.
    /// An app whose schedule depends on them (MF's and LDA's rotating slices) fixes its clocks
    /// here. Called again, with the same shape, before `initialize`.
    fn shape(&mut self, _job: &JobShape) -> Result<()> {
        Ok(())
    }
    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()>;
    fn run_worker(&self, worker: &mut Worker) -> Result<()>;
    /// The clocks a worker will run, if known in advance (progress reports).
    fn total_clocks(&self) -> Option<i64> {
        None
    }
    /// Extra keys for this process's stats (e.g. `objective`); process 0's reach the job stats.
    fn report(&self) -> Map<String, Value> {
        Map::new()
    }
    /// The storage locations named by the app's arguments, with the flag that named each, so a
    /// submitter can check them before a job starts (a local path means a different disk in
    /// every YARN container).
    fn locations(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// The consistency model this job should run under when the job names none (no flag, no
    /// setting): PageRank's BSP, for one. `yarn-submit` asks through `describe`, so a user's app
    /// in its own runtime binary is heard the same way.
    fn default_consistency(&self) -> Option<crate::config::Consistency> {
        None
    }
    /// What a fresh job does with its `--output` location, so that a submitter can refuse an
    /// existing output, or warn that none was named, once and before any process starts.
    fn output_policy(&self) -> OutputPolicy {
        OutputPolicy::Unknown
    }
}

/// How an app treats its `--output` at the start of a fresh job (a resumed one continues an
/// output that is not committed yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputPolicy {
    /// The app does not say; the submitter checks nothing.
    Unknown,
    /// The app can write an output, but the job names none: its result is not kept.
    NotNamed,
    /// An existing output fails the job (the built-in apps without `--overwrite`).
    MustNotExist,
    /// An existing output is replaced (`--overwrite`).
    Replaced,
}

impl OutputPolicy {
    /// The name `describe` prints.
    pub fn name(self) -> &'static str {
        match self {
            OutputPolicy::Unknown => "unknown",
            OutputPolicy::NotNamed => "not_named",
            OutputPolicy::MustNotExist => "must_not_exist",
            OutputPolicy::Replaced => "replaced",
        }
    }

    /// The policy `describe` named (`unknown` for anything else, such as an older binary's silence).
    pub fn from_name(s: &str) -> OutputPolicy {
        [OutputPolicy::NotNamed, OutputPolicy::MustNotExist, OutputPolicy::Replaced]
            .into_iter()
            .find(|p| p.name() == s)
            .unwrap_or(OutputPolicy::Unknown)
    }
}

/// What an app may size itself by: the job's processes and worker threads, and the staleness
/// bound of tables that do not set their own (`None`: unbounded, async).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobShape {
    pub processes: usize,
    pub threads: usize,
    pub staleness: Option<i64>,
}

impl JobShape {
    pub fn new(cfg: &RuntimeConfig, processes: usize) -> Self {
        JobShape { processes, threads: cfg.threads, staleness: cfg.slack(None) }
    }

    /// Worker threads of the whole job.
    pub fn workers(&self) -> usize {
        self.processes * self.threads
    }
}

/// What a process needs to join a job.
pub struct ProcessSpec {
    pub cfg: RuntimeConfig,
    pub hosts: Hostfile,
    pub pid: usize,
    pub secret: Vec<u8>,
    /// A socket already bound to this process's hostfile address (tests); else it is bound here.
    pub listener: Option<std::net::TcpListener>,
    /// Where per-clock stats lines go when enabled.
    pub stats_dir: Option<PathBuf>,
    /// Progress figures and events for the job's tracker (the YARN AM or the local launcher),
    /// which a reporter thread sends; `None`: nobody tracks this process.
    pub live: Option<Arc<crate::live::Live>>,
}

/// A started process: its communication runtime, client and server. Create tables, call
/// [`PsContext::ready`], run workers, then [`PsContext::finish`].
pub struct PsContext {
    core: Arc<Client>,
    /// Taken by `finish`; otherwise dropped after `Drop` flushed what a failing process queued.
    rt: Option<tokio::runtime::Runtime>,
    registry: RowTypeRegistry,
    server_in: UnboundedSender<ServerIn>,
    tables: Vec<TableConfig>,
}

impl PsContext {
    pub fn start(spec: ProcessSpec, registry: RowTypeRegistry) -> Result<Self> {
        spec.cfg.validate()?;
        crate::secret::check(&spec.secret, "of this process")?;
        let n = spec.hosts.len();
        if spec.pid >= n {
            return Err(PsError::Config(format!("process id {} is not in the hostfile ({n} processes)", spec.pid)));
        }
        spec.cfg.geo.validate_for(n)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(spec.cfg.comm_threads)
            .thread_name(format!("ps-comm-{}", spec.pid))
            .enable_all()
            .build()
            .map_err(|e| PsError::io("starting the communication runtime", e))?;
        let addr = spec.hosts.addr(spec.pid);
        let std_listener = match spec.listener {
            Some(l) => l,
            None => std::net::TcpListener::bind(&addr).map_err(|e| PsError::io(format!("listening on {addr}"), e))?,
        };
        std_listener.set_nonblocking(true).map_err(|e| PsError::io("configuring listener", e))?;
        let (cmd_tx, cmd_rx) = unbounded_channel();
        let (client_tx, client_rx) = unbounded_channel();
        let (server_tx, server_rx) = unbounded_channel();
        let snaps =
            crate::snapshot::Snapshots::open(&spec.cfg.checkpoint, spec.pid, n, spec.cfg.threads)?.map(Arc::new);
        let start_clock = Clock::new(snaps.as_ref().map_or(0, |s| s.start_clock()));
        let live = spec.live.clone().unwrap_or_else(|| Arc::new(crate::live::Live::disabled(spec.cfg.threads)));
        // A resumed process starts at its checkpoint's clock, not at 0 (the tracker's ETA).
        live.clock.store(start_clock.get(), std::sync::atomic::Ordering::Relaxed);
        let shared = Arc::new(Shared::new(spec.pid, n, spec.cfg.clone(), start_clock, cmd_tx, live));
        let core = Client::new(shared.clone(), snaps.clone());
        let clock_log = match (&spec.stats_dir, spec.cfg.stats_per_clock) {
            (Some(d), true) => {
                let p = d.join(format!("clocks-{}.jsonl", spec.pid));
                Some(std::fs::File::create(&p).map_err(|e| PsError::io(format!("creating {}", p.display()), e))?)
            }
            _ => None,
        };
        let secret = Arc::new(spec.secret);
        {
            let _g = rt.enter();
            let listener =
                tokio::net::TcpListener::from_std(std_listener).map_err(|e| PsError::io("registering listener", e))?;
            let to_server = server_tx.clone();
            let deliver: net::ToServer = Arc::new(move |from, m| to_server.send(ServerIn::Net(from, m)).is_ok());
            let links = net::start(shared.clone(), &spec.hosts, listener, secret, deliver, client_tx);
            let client = ClientTask {
                core: core.clone(),
                to_server: links.to_server.clone(),
                sent_upto: start_clock.completed(),
                clock_log,
                last_progress: Instant::now(),
                sync: Default::default(),
            };
            net::spawn_guarded(shared.clone(), "the client task", client.run(cmd_rx, client_rx));
            let server = Server::new(shared.clone(), snaps, links.to_client, links.to_server, server_tx.clone());
            net::spawn_guarded(shared.clone(), "the server task", server.run(server_rx));
        }
        log::info!("process {} of {n} listening on {addr}", spec.pid);
        Ok(PsContext { core, rt: Some(rt), registry, server_in: server_tx, tables: Vec::new() })
    }

    pub fn process_id(&self) -> usize {
        self.core.shared.pid
    }
    pub fn num_processes(&self) -> usize {
        self.core.shared.nprocs
    }
    pub fn config(&self) -> &RuntimeConfig {
        &self.core.shared.cfg
    }
    /// True if this job continues from a checkpoint (`checkpoint.resume` found one).
    pub fn is_resumed(&self) -> bool {
        self.core.shared.start_clock > Clock::default()
    }

    /// Creates a table. Every process must create the same tables before `ready()`.
    pub fn create_table(&mut self, cfg: TableConfig) -> Result<()> {
        if self.tables.iter().any(|t| t.id == cfg.id) {
            return Err(PsError::Usage(format!("table {} created twice", cfg.id)));
        }
        if let Some(t) = cfg.significance.filter(|t| !(t.is_finite() && *t >= 0.0)) {
            return Err(PsError::Usage(format!("table {}: significance must be zero or more, not {t}", cfg.id)));
        }
        let mut server = self.registry.server_table(&cfg)?;
        if let Some((snaps, m)) = self.core.snaps.as_ref().and_then(|s| s.resume.as_ref().map(|m| (s, m))) {
            let dir = snaps.store.clock_dir(m.clock);
            let saved = m.table(cfg.id).ok_or_else(|| {
                PsError::Config(format!("checkpoint.resume: {dir} has no table {} ({})", cfg.id, cfg.name))
            })?;
            if saved.config != cfg {
                return Err(PsError::Config(format!(
                    "checkpoint.resume: table {} differs from the one in {dir}: saved {}, now {}",
                    cfg.id,
                    serde_json::to_string(&saved.config).unwrap_or_default(),
                    serde_json::to_string(&cfg).unwrap_or_default()
                )));
            }
            // Under ASP, only process 0's data center wrote shards: the others' rows are in them.
            let (pid, servers) = (self.process_id(), &self.core.shared.servers);
            let (read, filter) = saved.shards_for(servers, pid);
            let mine = servers.iter().position(|&q| q == pid).unwrap_or(0);
            let keep = |row: u64| !filter || cfg.server_of(row, servers.len()) == mine;
            let mut rows = 0;
            for owner in read {
                let (_, payload) = snaps.store.read_shard(m.clock, owner, cfg.id)?;
                rows += server.load(&payload, &keep)?;
            }
            log::debug!("table {} ({}): {rows} rows restored from {dir}", cfg.id, cfg.name);
        }
        let (ops, any) = self.registry.process_table(&cfg, &self.core.shared, &self.core.push)?;
        let wake: Arc<dyn Wake> = ops.clone();
        self.core.shared.failure.on_failure(Arc::downgrade(&wake));
        self.core.tables.insert(cfg.id, TableSlot { cfg: cfg.clone(), ops, any });
        let _ = self.server_in.send(ServerIn::AddTable(cfg.id, server));
        self.tables.push(cfg);
        Ok(())
    }

    /// Registers with the name node and blocks until every process has (the "ready" signal).
    pub fn ready(&mut self) -> Result<()> {
        let mut sorted = self.tables.clone();
        sorted.sort_by_key(|t| t.id);
        // The resumed clock is part of the check: every process must continue the same checkpoint.
        let start = self.core.shared.start_clock.get();
        let digest = Sha256::digest(serde_json::to_vec(&(&sorted, start)).unwrap_or_default());
        let fingerprint = u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"));
        let shared = &self.core.shared;
        shared.send(ClientCmd::Register { fingerprint });
        let t = Duration::from_millis(shared.cfg.connect_timeout_ms);
        shared.wait_ctl("every process to register with the name node", Some(t), |c| c.ready)
    }

    /// A worker handle for local thread `tid`; call it on the thread that will use it.
    pub fn worker(&self, tid: usize) -> Result<Worker> {
        let threads = self.config().threads;
        if tid >= threads {
            return Err(PsError::Usage(format!("thread id {tid} >= threads {threads}")));
        }
        Ok(Worker::new(self.core.clone(), tid))
    }

    pub(crate) fn client(&self) -> &Arc<Client> {
        &self.core
    }

    /// After every worker finished: waits until all servers applied this process's last updates,
    /// reports to the name node and keeps serving until every process is done.
    pub fn finish(mut self) -> Result<()> {
        let shared = self.core.shared.clone();
        let (n, servers) = (shared.nprocs, shared.servers.len());
        shared.wait_ctl("servers to apply the final updates", None, |c| c.final_acks >= servers)?;
        if self.core.snaps.is_some() {
            shared.wait_ctl("the final snapshot to be written", None, |c| c.server_finished && c.snap_jobs == 0)?;
        }
        shared.send(ClientCmd::Done);
        shared.wait_ctl("every process to finish", None, |c| c.exit)?;
        if shared.pid == 0 {
            // Let the Exit messages reach the peers before this process (and its sockets) goes.
            let _ = shared
                .wait_ctl("peers to disconnect", Some(Duration::from_secs(10)), |c| c.closed_peers >= 2 * (n - 1));
        }
        if let Some(rt) = self.rt.take() {
            rt.shutdown_timeout(Duration::from_millis(200));
        }
        Ok(())
    }

    /// Tells every process to stop because of `reason`, then waits briefly for the echo.
    pub fn abort(&self, reason: &str) {
        let shared = &self.core.shared;
        shared.send(ClientCmd::Abort(reason.to_string()));
        let _ = shared.wait_ctl("the abort to propagate", Some(Duration::from_secs(2)), |_| false);
    }
}

impl Drop for PsContext {
    fn drop(&mut self) {
        if self.rt.is_some() && self.core.shared.check().is_err() {
            // Let abort messages reach the peers before the sockets close.
            self.core.shared.control.flush_outgoing(Duration::from_secs(2));
        }
    }
}

/// Runs `app` as process `spec.pid` of a job and returns this process's statistics.
pub fn run_app(
    spec: ProcessSpec,
    registry: RowTypeRegistry,
    mut app: Box<dyn App>,
    echo: Value,
) -> Result<ProcessStats> {
    let started = Instant::now();
    app.shape(&JobShape::new(&spec.cfg, spec.hosts.len()))?;
    let mut ctx = PsContext::start(spec, registry)?;
    if let Err(e) = catch_panic("initialization", || app.initialize(&mut ctx)) {
        ctx.abort(&e.to_string());
        return Err(e);
    }
    ctx.ready()?;
    let app: Arc<dyn App> = Arc::from(app);
    let rx = spawn_workers(ctx.client(), &app)?;
    let joined = join_workers(&ctx, rx);
    let core = ctx.client().shared.clone();
    core.check()?;
    ctx.finish()?;
    Ok(joined.into_stats(&core, started, echo, app.report()))
}

/// What a worker thread sends when it ends: its id, the app's result and the finish result
/// (thread stats, busy seconds, clocks completed).
type WorkerEnd = (usize, Result<()>, Result<(ThreadStats, f64, i64)>);

fn spawn_workers(client: &Arc<Client>, app: &Arc<dyn App>) -> Result<std::sync::mpsc::Receiver<WorkerEnd>> {
    let (tx, rx) = std::sync::mpsc::channel();
    for tid in 0..client.shared.cfg.threads {
        let (client, app, tx) = (client.clone(), app.clone(), tx.clone());
        std::thread::Builder::new()
            .name(format!("ps-worker-{tid}"))
            .spawn(move || {
                let mut w = Worker::new(client, tid);
                let r = catch_panic(&format!("worker thread {tid}"), || app.run_worker(&mut w));
                // A panicked worker's tables may be half-updated: never ship them as finished.
                let fin = match &r {
                    Err(e @ PsError::Panicked(_)) => Err(e.clone()),
                    _ => catch_panic(&format!("worker thread {tid}"), || w.finish()),
                };
                let _ = tx.send((tid, r, fin));
            })
            .map_err(|e| PsError::io("spawning worker thread", e))?;
    }
    Ok(rx)
}

/// The workers' totals, summed as they end.
struct Joined {
    total: ThreadStats,
    busy_s: f64,
    clocks: i64,
}

/// Waits for every worker thread. The first failure aborts the job; after it, threads still deep
/// in their own computation get a bounded grace period (threads blocked in the runtime wake up
/// with the error at once).
fn join_workers(ctx: &PsContext, rx: std::sync::mpsc::Receiver<WorkerEnd>) -> Joined {
    let core = &ctx.client().shared;
    let mut j = Joined { total: ThreadStats::default(), busy_s: 0.0, clocks: i64::MAX };
    let mut failed_at: Option<Instant> = None;
    let mut done = 0;
    while done < core.cfg.threads {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok((tid, r, fin)) => {
                done += 1;
                if let Err(e) = r.and(fin.as_ref().map(|_| ()).map_err(|e| e.clone())) {
                    if core.check().is_ok() {
                        log::error!("worker thread {tid} failed: {e}");
                        ctx.abort(&e.to_string());
                    }
                    // After a peer's failure too: the worker's own reason replaces "lost process".
                    core.fail(e.clone());
                    continue;
                }
                let (st, secs, c) = fin.expect("checked above");
                j.total.add(&st);
                j.busy_s += secs;
                j.clocks = j.clocks.min(c);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(_) => break,
        }
        if core.check().is_err() && failed_at.get_or_insert_with(Instant::now).elapsed() > Duration::from_secs(5) {
            break;
        }
    }
    j
}

impl Joined {
    fn into_stats(self, core: &Shared, started: Instant, echo: Value, mut app: Map<String, Value>) -> ProcessStats {
        let threads = core.cfg.threads;
        let wait_s = self.total.wait_ns as f64 / 1e9;
        let (staleness_hist, mean_staleness) = hist_of(&self.total.staleness);
        let net = &core.net;
        ProcessStats {
            process: core.pid,
            clocks: if self.clocks == i64::MAX { 0 } else { self.clocks },
            wall_s: started.elapsed().as_secs_f64(),
            compute_s: (self.busy_s - wait_s).max(0.0) / threads as f64,
            wait_s: wait_s / threads as f64,
            handoff_wait_s: self.total.handoff_ns as f64 / 1e9 / threads as f64,
            threads,
            gets: self.total.gets,
            get_misses: self.total.get_misses,
            thread_cache_misses: self.total.thread_cache_misses,
            incs: self.total.incs,
            bytes_sent: net.bytes_sent.load(Ordering::Relaxed),
            bytes_recv: net.bytes_recv.load(Ordering::Relaxed),
            server_bytes_sent: net.server_bytes_sent.load(Ordering::Relaxed),
            wan_bytes_sent: net.wan_bytes_sent.load(Ordering::Relaxed),
            wan_bytes_recv: net.wan_bytes_recv.load(Ordering::Relaxed),
            significant_updates: net.significant_updates.load(Ordering::Relaxed),
            mirror_clock_waits: net.mirror_clock_waits.load(Ordering::Relaxed),
            selective_barriers: net.selective_barriers.load(Ordering::Relaxed),
            snapshots_abandoned: net.snapshots_abandoned.load(Ordering::Relaxed),
            snapshots_skipped: net.snapshots_skipped.load(Ordering::Relaxed),
            rows_recv: net.rows_recv.load(Ordering::Relaxed),
            rows_recv_remote: net.rows_recv_remote.load(Ordering::Relaxed),
            updates_sent: net.updates_sent.load(Ordering::Relaxed),
            fetches_sent: net.fetches_sent.load(Ordering::Relaxed),
            peak_rss_bytes: peak_rss_bytes(),
            thread_cache_peak_bytes: self.total.cache_peak_bytes,
            // The iterative driver measures it (`ps_apps`'s `objective`); a typed field, summed.
            train_cpu_s: app.remove("train_cpu_s").and_then(|v| v.as_f64()).unwrap_or(0.0),
            train_bytes_sent: app.remove("train_bytes_sent").and_then(|v| v.as_u64()).unwrap_or(0),
            train_wan_bytes_sent: app.remove("train_wan_bytes_sent").and_then(|v| v.as_u64()).unwrap_or(0),
            staleness_hist,
            mean_staleness,
            staleness_profile: core.cfg.staleness_profile.then(|| StalenessProfile::of(&self.total)),
            config: echo,
            app,
        }
    }
}
