//! Local master: N `ps-runtime` processes on 127.0.0.1 with a hostfile, a job secret and a job
//! config in a job directory; their logs are streamed with a `[pK]` prefix; the first process to
//! fail (or Ctrl-C) stops all of them; per-process stats are merged into `--stats`.

use crate::console::{BarAppender, Console, Progress};
use crate::error::{ClientError, Result};
use crate::local_ports::free_ports;
use crate::tracker::Tracker;
use crate::Cli;
use log::LevelFilter;
use log4rs::config::{Appender, Config, Logger};
use log4rs::encode::pattern::PatternEncoder;
use ps_job::driver::{self, Attempt, Launcher, Stop};
use ps_job::restart_log::RestartLog;
use ps_job::restarts::RestartPolicy;
use ps_runtime::logging::{LogLevels, TIME_PATTERN};
use ps_runtime::secret::{generate as generate_secret, write_new_file as write_secret_file};
use ps_runtime::stats::{self, ProcessSummary};
use ps_runtime::storage::Storage;
use ps_runtime::{Hostfile, JobConfig};
use rand::RngCore;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Launcher messages get a timestamp; child lines are passed through under the `child` target
/// (they carry their own). Both go to stderr through `console`, below which a progress bar may
/// stand.
/// yarn-submit's logging: its own lines (levels from `PS_LOG`, or debug with `--verbose`) and the
/// processes' lines as they come, both above the progress bar.
pub fn init_logging(console: Arc<Console>, verbose: bool) {
    let (levels, bad) = LogLevels::from_env();
    let default = if verbose { LevelFilter::Debug } else { LevelFilter::Info };
    let own = BarAppender {
        console: console.clone(),
        encoder: Box::new(PatternEncoder::new(&format!("{} {{h({{l:5}})}} [submit] {{m}}{{n}}", TIME_PATTERN))),
    };
    let child = BarAppender { console, encoder: Box::new(PatternEncoder::new("{m}{n}")) };
    let cfg = Config::builder()
        .appender(Appender::builder().build("own", Box::new(own)))
        .appender(Appender::builder().build("child", Box::new(child)))
        .logger(Logger::builder().appender("child").additive(false).build("child", LevelFilter::Trace));
    if let Some(cfg) = levels.build(cfg, "own", default) {
        let _ = log4rs::init_config(cfg);
    }
    if let Some(e) = bad {
        log::warn!("{e}");
    }
}

/// The processes of a local job, and its threads per process where the master sets them.
/// `local[*]` is one worker per core, as Spark's `local[*]` is one task thread per core: without
/// a thread count from the user, one process with a thread per core (on 16 cores, 1 x 16 ran MF,
/// LDA and PageRank 1.5x, 1.4x and 2.6x as fast as 16 processes of one thread, with less CPU:
/// docs/SCALE-OUT.md); with one, cores / threads processes.
fn local_shape(cli: &Cli, runtime: &mut ps_runtime::RuntimeConfig) -> Result<usize> {
    if cli.master != "local[*]" {
        return parse_master(&cli.master);
    }
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    if cli.threads_chosen()? {
        return Ok((cores / runtime.threads.max(1)).max(1));
    }
    runtime.threads = cores;
    Ok(1)
}

fn parse_master(m: &str) -> Result<usize> {
    let n = match m {
        "local" => return Ok(1),
        _ => m
            .strip_prefix("local[")
            .and_then(|r| r.strip_suffix(']'))
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| ClientError::MasterProcessCount(m.to_string()))?,
    };
    if n == 0 {
        return Err(ClientError::NoLocalProcesses);
    }
    Ok(n)
}

pub fn runtime_bin(cli: &Cli) -> Result<PathBuf> {
    if let Some(p) = cli.runtime_bin.clone().or_else(|| std::env::var_os("PS_RUNTIME_BIN").map(PathBuf::from)) {
        return Ok(p);
    }
    next_to_me("ps-runtime", "use --runtime-bin")
}

/// The binary `name` in yarn-submit's own directory; `hint` says how to point elsewhere.
pub fn next_to_me(name: &'static str, hint: &'static str) -> Result<PathBuf> {
    let me = std::env::current_exe().map_err(ClientError::LocateSelf)?;
    let p = me.with_file_name(name);
    if p.exists() {
        Ok(p)
    } else {
        Err(ClientError::BinaryNotFound { name, exe: me, hint })
    }
}

struct Job {
    dir: PathBuf,
    temp: bool,
    job_file: PathBuf,
    n: usize,
    /// Where the processes report to; serves the job's page with `--ui`.
    tracker: Tracker,
    /// What a restart resumes from and must not redo (`RestartPolicy`).
    checkpoint: Option<String>,
    output: Option<String>,
}

fn prepare(cli: &Cli) -> Result<Job> {
    let mut runtime = cli.runtime_config()?;
    let n = local_shape(cli, &mut runtime)?;
    runtime.geo.validate_for(n).map_err(ClientError::Config)?;
    if cli.dc_by.is_some() || cli.dc_hosts.is_some() {
        return Err(ClientError::Config(ps_runtime::PsError::Config(
            "--dc-by and --dc-hosts place processes by the YARN nodes they run on; with --master local use --dc-of \
             or --datacenters"
                .into(),
        )));
    }
    let (app, app_args) = cli.app.split_first().ok_or(ClientError::NoApplication)?;
    let (dir, temp) = match &cli.job_dir {
        Some(d) => (d.clone(), false),
        None => {
            let mut r = [0u8; 6];
            rand::rngs::OsRng.fill_bytes(&mut r);
            let tag: String = r.iter().map(|b| format!("{b:02x}")).collect();
            (std::env::temp_dir().join(format!("ps-job-{tag}")), true)
        }
    };
    let io = |what, source| ClientError::JobFile { what, dir: dir.clone(), source };
    // The job directory holds the secret: owner-only, whoever else shares this machine.
    ps_runtime::storage::LocalFs.create_private_dir(&dir.to_string_lossy()).map_err(ClientError::JobDir)?;
    let ports = free_ports(n).map_err(|e| io("picking ports", e))?;
    let hosts = Hostfile::new(ports.into_iter().map(|p| ("127.0.0.1".to_string(), p)).collect());
    let hostfile = dir.join("hostfile");
    std::fs::write(&hostfile, hosts.render()).map_err(|e| io("writing hostfile", e))?;
    // Fresh for every run; an existing file or symlink is replaced, never reused or followed.
    let secret_file = dir.join("secret");
    let secret = generate_secret();
    write_secret_file(&secret_file, &secret).map_err(|e| io("writing job secret", e))?;
    let bind = cli.ui_bind.as_deref().unwrap_or("127.0.0.1:0");
    let tracker = Tracker::start(bind, secret.to_vec(), &cli.app.join(" "), n, cli.ui)
        .map_err(|source| ClientError::Tracker { bind: bind.to_string(), source })?;
    let job = JobConfig {
        runtime,
        app: app.clone(),
        app_args: app_args.to_vec(),
        hostfile,
        secret_file: Some(secret_file),
        secret_credential: None,
        stats_dir: dir.clone(),
        tracker: Some(tracker.addr.to_string()),
        output: output_of(cli),
    };
    let job_file = dir.join("job.json");
    let text = serde_json::to_string_pretty(&job).map_err(ClientError::Encode)?;
    std::fs::write(&job_file, text).map_err(|e| io("writing job config", e))?;
    let (checkpoint, output) = (job.runtime.checkpoint.url.clone(), job.output.clone());
    Ok(Job { dir, temp, job_file, n, tracker, checkpoint, output })
}

enum Event {
    Exited(usize, ExitStatus),
    Interrupted,
}

fn describe(status: &ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => "ended".into(),
    }
}

/// The last failure each process reported in its log (`process K failed: why`), so the job's
/// final message can say why, not just which process exited first.
type Reasons = Arc<Mutex<Vec<Option<String>>>>;

fn stream(k: usize, src: impl Read + Send + 'static, reasons: Reasons) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let marker = format!("process {k} failed: ");
        for line in BufReader::new(src).lines().map_while(Result::ok) {
            if let Some(why) = line.split_once(&marker).map(|x| x.1) {
                reasons.lock().unwrap_or_else(|e| e.into_inner())[k] = Some(why.to_string());
            }
            log::info!(target: "child", "[p{k}] {line}");
        }
    })
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) with a pid we spawned and have not reaped.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// Runs the job; returns the process exit code.
pub fn run(cli: &Cli, console: &Arc<Console>) -> i32 {
    // Before the job directory exists: a job that cannot start leaves nothing behind.
    if let Err(e) = check_locations(cli) {
        log::error!("{e}");
        return e.exit_code();
    }
    let (job, bin) = match prepare(cli).and_then(|j| Ok((j, runtime_bin(cli)?))) {
        Ok(x) => x,
        Err(e) => {
            log::error!("{e}");
            return 2;
        }
    };
    let ck = job.checkpoint.clone();
    let mut restarts = RestartPolicy::new(cli.restarts.unwrap_or(0), ck, job.output.clone());
    let (tx, rx) = mpsc::channel();
    watch_interrupt(tx.clone());
    if cli.ui {
        println!("job page: http://{}/", job.tracker.addr);
    }
    let display = ProgressDisplay::start(&job.tracker, console.clone());
    let code = run_attempts(cli, &job, &bin, &mut restarts, (&tx, &rx));
    drop(display);
    job.tracker.set_status(if code == 0 { "succeeded" } else { "failed" });
    write_report(cli, &job);
    keep_clock_logs(cli, &job.dir.to_string_lossy());
    let code = if code == 0 { finish_stats(cli, &job, &restarts) } else { code };
    // A temporary job directory goes either way (a failure's reasons are in the log above);
    // `--job-dir` keeps it.
    if job.temp {
        let _ = std::fs::remove_dir_all(&job.dir);
    }
    code
}

/// Shows the tracker's progress on the console every half second until dropped.
struct ProgressDisplay {
    stop: Arc<std::sync::atomic::AtomicBool>,
    console: Arc<Console>,
}

impl ProgressDisplay {
    fn start(tracker: &Tracker, console: Arc<Console>) -> ProgressDisplay {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (s, c, view) = (stop.clone(), console.clone(), tracker.clone());
        std::thread::spawn(move || {
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                c.show(&Progress::from_status(&view.status_json()));
                std::thread::sleep(Duration::from_millis(500));
            }
        });
        ProgressDisplay { stop, console }
    }
}

impl Drop for ProgressDisplay {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.console.clear();
    }
}

/// The final page, next to `--stats` (or in a job directory that is kept).
fn write_report(cli: &Cli, job: &Job) {
    let url = match &cli.stats {
        Some(s) => ps_job::tracking::serve::report_next_to(s),
        None if !job.temp => job.dir.join("report.html").to_string_lossy().into_owned(),
        None => return,
    };
    match ps_job::tracking::serve::write_report(&url, &job.tracker.status_json()) {
        Ok(()) => log::info!("job report written to {url}"),
        Err(e) => log::warn!("writing the job report {url}: {e}"),
    }
}

/// Copies the `--stats-per-clock` lines from `dir` (the local job directory, or the stats
/// directory in a YARN job's staging) next to `--stats`, so they outlive that directory.
pub(crate) fn keep_clock_logs(cli: &Cli, dir: &str) {
    let Some(stats) = &cli.stats else { return };
    match ps_job::tracking::serve::copy_clock_logs(dir, stats) {
        Ok(0) => {}
        Ok(n) => log::info!("per-clock stats of {n} processes written next to {stats}"),
        Err(e) => log::warn!("copying the per-clock stats next to {stats}: {e}"),
    }
}

/// Runs attempts of the job through the one driver until one succeeds, the job is interrupted
/// or no restart is left; returns the exit code.
fn run_attempts(
    cli: &Cli,
    job: &Job,
    bin: &Path,
    restarts: &mut RestartPolicy,
    (tx, rx): (&mpsc::Sender<Event>, &mpsc::Receiver<Event>),
) -> i32 {
    job.tracker.set_status("running");
    let mut local = LocalLauncher { cli, job, bin, tx, rx };
    match driver::drive_blocking(&mut local, restarts) {
        Ok(()) => 0,
        Err(Stop::Fatal(Halt::Launch(e))) => {
            log::error!("{e}");
            1
        }
        Err(Stop::Fatal(Halt::Failed(reason)) | Stop::GaveUp(reason)) => {
            log::error!("{}", ClientError::JobFailed { reason, dir: (!job.temp).then(|| job.dir.clone()) });
            1
        }
    }
}

/// Why an attempt of a local job ended badly.
enum Halt {
    /// The processes could not be started.
    Launch(ClientError),
    /// A process failed, the job was interrupted, or the next attempt could not be readied.
    Failed(String),
}

impl std::fmt::Display for Halt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Halt::Launch(e) => e.fmt(f),
            Halt::Failed(reason) => f.write_str(reason),
        }
    }
}

/// The job's processes as children of this one, on 127.0.0.1.
struct LocalLauncher<'a> {
    cli: &'a Cli,
    job: &'a Job,
    bin: &'a Path,
    tx: &'a mpsc::Sender<Event>,
    rx: &'a mpsc::Receiver<Event>,
}

impl Launcher for LocalLauncher<'_> {
    type Error = Halt;

    async fn run_attempt(&mut self, attempt: u32) -> std::result::Result<Attempt<Halt>, Halt> {
        let (job, cli) = (self.job, self.cli);
        log::info!("starting {} processes ({}) in {}", job.n, cli.app.join(" "), job.dir.display());
        let procs = launch(self.bin, job, attempt, self.tx).map_err(Halt::Launch)?;
        let Some((f, who)) = supervise(self.rx, &procs.pids) else { return Ok(Attempt::Succeeded) };
        // Every process has exited: once their pipes are drained, their last words are known.
        procs.streams.into_iter().for_each(|h| {
            let _ = h.join();
        });
        let heard = std::mem::take(&mut *procs.reasons.lock().unwrap_or_else(|e| e.into_inner()));
        let why = who.and_then(|k| heard[k].clone()).map(|w| format!(": {w}")).unwrap_or_default();
        let reason = Halt::Failed(format!("{f}{why}"));
        // A failed process may restart the job; Ctrl-C or SIGTERM stops it.
        Ok(match who {
            Some(_) => Attempt::ProcessFailed(reason),
            None => return Err(reason),
        })
    }

    fn reached(&self) -> Option<i64> {
        self.job.tracker.newest_clock()
    }

    async fn prepare(&mut self, attempt: u32, log: &RestartLog) -> std::result::Result<(), Halt> {
        rearm(self.job).map_err(|e| Halt::Failed(e.to_string()))?;
        self.job.tracker.begin_attempt(attempt, log.to_json());
        Ok(())
    }
}

/// The job's `--output`, if the app writes one.
fn output_of(cli: &Cli) -> Option<String> {
    let info = crate::app_info::info(cli).ok()?;
    info.locations.into_iter().find(|(flag, _)| flag == "--output").map(|(_, url)| url)
}

/// Before a restart: fresh ports (sockets of the failed attempt may still hold the old ones).
fn rearm(job: &Job) -> Result<()> {
    let io = |what, source| ClientError::JobFile { what, dir: job.dir.clone(), source };
    let ports = free_ports(job.n).map_err(|e| io("picking ports", e))?;
    let hosts = Hostfile::new(ports.into_iter().map(|p| ("127.0.0.1".to_string(), p)).collect());
    std::fs::write(job.dir.join("hostfile"), hosts.render()).map_err(|e| io("writing hostfile", e))
}

/// The job's locations, checked once before any process starts (`preflight`).
fn check_locations(cli: &Cli) -> Result<()> {
    let info = crate::app_info::info(cli)?;
    let app = cli.app.first().map(String::as_str).unwrap_or_default();
    let ck = cli.runtime_config()?.checkpoint;
    crate::preflight::check(app, &info, ck.url.as_deref(), ck.resume)
}

/// The job's running processes: their pids, the threads relaying their output, and the failure
/// reasons those threads picked out of it.
struct Launched {
    pids: Vec<u32>,
    streams: Vec<std::thread::JoinHandle<()>>,
    reasons: Reasons,
}

/// Starts one runtime process per hostfile line (restart `attempt` of the job); each sends
/// `Event::Exited` on `tx` when it ends. If one cannot be started, those already started are
/// killed.
fn launch(bin: &Path, job: &Job, attempt: u32, tx: &mpsc::Sender<Event>) -> Result<Launched> {
    let mut l = Launched { pids: Vec::new(), streams: Vec::new(), reasons: Arc::new(Mutex::new(vec![None; job.n])) };
    for k in 0..job.n {
        let mut cmd = Command::new(bin);
        cmd.arg("run").arg("--job").arg(&job.job_file).arg("--id").arg(k.to_string());
        if attempt > 0 {
            cmd.arg("--attempt").arg(attempt.to_string());
        }
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).stdin(Stdio::null());
        // SAFETY: prctl in the child before exec; no allocation. Children die with the launcher.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|source| {
            l.pids.iter().for_each(|p| signal(*p, libc::SIGKILL));
            ClientError::Launch { bin: bin.to_path_buf(), source }
        })?;
        l.pids.push(child.id());
        log::info!("process {k} started (pid {})", child.id());
        l.streams.push(stream(k, child.stdout.take().expect("piped"), l.reasons.clone()));
        l.streams.push(stream(k, child.stderr.take().expect("piped"), l.reasons.clone()));
        let tx = tx.clone();
        std::thread::spawn(move || {
            if let Ok(st) = child.wait() {
                let _ = tx.send(Event::Exited(k, st));
            }
        });
    }
    Ok(l)
}

/// Sends `Event::Interrupted` on Ctrl-C or SIGTERM.
fn watch_interrupt(tx: mpsc::Sender<Event>) {
    std::thread::spawn(move || {
        if let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
            rt.block_on(async {
                let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
                }
                let _ = tx.send(Event::Interrupted);
            });
        }
    });
}

/// Waits until every process has exited. Returns the first failure (what happened, and which
/// process if one failed) or `None` if all succeeded.
fn supervise(rx: &mpsc::Receiver<Event>, pids: &[u32]) -> Option<(String, Option<usize>)> {
    let mut running = vec![true; pids.len()];
    let mut failure: Option<(String, Option<usize>)> = None;
    // Escalation after a failure: survivors get a grace period to notice the lost peer and exit
    // with their own message, then SIGTERM, then SIGKILL.
    let mut escalation: Vec<(Instant, libc::c_int)> = Vec::new();
    while running.iter().any(|r| *r) {
        let ev = match escalation.first().copied() {
            Some((at, sig)) => match rx.recv_timeout(at.saturating_duration_since(Instant::now())) {
                Ok(ev) => ev,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    escalation.remove(0);
                    for (k, pid) in pids.iter().enumerate().filter(|(k, _)| running[*k]) {
                        log::warn!("sending signal {sig} to process {k}");
                        signal(*pid, sig);
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            },
            None => match rx.recv() {
                Ok(ev) => ev,
                Err(_) => break,
            },
        };
        let (reason, who, grace) = match ev {
            Event::Exited(k, st) => {
                running[k] = false;
                if st.success() || failure.is_some() {
                    continue;
                }
                (format!("process {k} {}", describe(&st)), Some(k), Duration::from_secs(5))
            }
            Event::Interrupted => {
                if failure.is_some() {
                    continue;
                }
                ("interrupted".to_string(), None, Duration::ZERO)
            }
        };
        log::error!("job failed: {reason}; stopping the other processes");
        failure = Some((reason, who));
        let now = Instant::now();
        escalation = vec![(now + grace, libc::SIGTERM), (now + grace + Duration::from_secs(3), libc::SIGKILL)];
    }
    failure
}

fn finish_stats(cli: &Cli, job: &Job, restarts: &RestartPolicy) -> i32 {
    report_stats(cli, job.n, &job.dir.to_string_lossy(), Some(restarts.log.to_json()))
}

/// Merges the per-process `stats-<k>.json` under `dir` (local or `hdfs://`), adds the restarts,
/// logs the summary and writes `--stats`. Returns the exit code.
pub fn report_stats(cli: &Cli, n: usize, dir: &str, restarts: Option<serde_json::Value>) -> i32 {
    match merge_stats(cli, n, dir, restarts) {
        Ok(()) => 0,
        Err(e) => {
            log::error!("{e}");
            1
        }
    }
}

/// Reads process `k`'s stats file `path`.
fn read_stats(k: usize, path: &str) -> Result<ProcessSummary> {
    let read = ps_runtime::storage::storage_for(path).and_then(|st| {
        let mut t = String::new();
        st.open(path, 0)?.read_to_string(&mut t).map_err(|e| ps_runtime::PsError::io(format!("reading {path}"), e))?;
        Ok(t)
    });
    let text = read.map_err(|source| ClientError::ReadStats { process: k, path: path.to_string(), source })?;
    ProcessSummary::parse(&text).map_err(|source| ClientError::ParseStats {
        process: k,
        path: path.to_string(),
        source,
    })
}

fn merge_stats(cli: &Cli, n: usize, dir: &str, restarts: Option<serde_json::Value>) -> Result<()> {
    let procs = (0..n)
        .map(|k| read_stats(k, &format!("{}/stats-{k}.json", dir.trim_end_matches('/'))))
        .collect::<Result<Vec<_>>>()?;
    let mut merged = stats::merge(&procs);
    // The launcher's restart record: `restarts` and `clocks_redone`.
    if let (Some(serde_json::Value::Object(r)), Some(obj)) = (restarts, merged.as_object_mut()) {
        obj.extend(r);
    }
    log::info!(
        "job done: {} clocks, {:.2}s wall, compute {:.2}s / wait {:.2}s per thread, {} gets ({} blocked), {} bytes sent",
        merged["clocks"],
        merged["wall_s"].as_f64().unwrap_or(0.0),
        merged["compute_s"].as_f64().unwrap_or(0.0),
        merged["wait_s"].as_f64().unwrap_or(0.0),
        merged["gets"],
        merged["get_misses"],
        merged["bytes_sent"]
    );
    if let Some(out) = &cli.stats {
        let text = serde_json::to_string_pretty(&merged).unwrap_or_default();
        write_committed(out, text.as_bytes()).map_err(|source| ClientError::WriteStats { url: out.clone(), source })?;
        log::info!("stats written to {out}");
    }
    Ok(())
}

/// Writes `data` to a local path or `hdfs://` URL so that a reader never sees a partial file.
fn write_committed(url: &str, data: &[u8]) -> ps_runtime::Result<()> {
    let st = ps_runtime::storage::storage_for(url)?;
    ps_runtime::storage::write_atomic(st.as_ref(), url, data, "job stats")
}
