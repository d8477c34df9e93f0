//! `--master yarn`: stage the binaries and job files on HDFS under
//! `/user/<user>/.ps-staging/<app-id>/` (mode 0700) and the binaries in the content-hash cache
//! beside it (`staging`), submit the application master to the RM
//! (`ApplicationClientProtocol` over IPC as the submitting user, or `--submit-via rest`), then
//! follow the application until it ends (exit 0 only on FINISHED + SUCCEEDED). Also
//! `yarn-submit status APP_ID` and `yarn-submit kill APP_ID`.

use crate::app_info::AppInfo;
use crate::console::{Console, Progress};
use crate::error::{ClientError, Result};
use crate::local::{next_to_me, report_stats, runtime_bin};
use crate::paths;
use crate::staging::{cached_binary, stage, warn_if_not_portable};
use crate::Cli;
use ps_hadoop::filesystems::{token_sources, TokenSource};
use ps_runtime::secret::{generate as generate_secret, CREDENTIALS_ALIAS};
use ps_runtime::storage::storage_for;
use ps_runtime::JobConfig;
use ps_yarn::appclient::{Caller, RmIpc};
use ps_yarn::conf::HadoopConf;
use ps_yarn::credentials::Token;
use ps_yarn::gssapi::Login;
use ps_yarn::hdfs_token;
use ps_yarn::rest::RmRest;
use ps_yarn::submit::{AppReport, ResourceManager, Submission};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The YARN application type of our jobs (what `yarn application -list -appTypes` filters on).
const APP_TYPE: &str = "PARAMETER_SERVER";

/// The submitting user: `HADOOP_USER_NAME` as Hadoop tools use it, else the login name.
fn user() -> String {
    std::env::var("HADOOP_USER_NAME").or_else(|_| std::env::var("USER")).unwrap_or_else(|_| "root".into())
}

/// How `yarn-submit` reaches the ResourceManager.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SubmitVia {
    /// `ApplicationClientProtocol` over Hadoop IPC (`yarn.resourcemanager.address`), as the
    /// submitting user: what the `yarn` CLI and Spark use.
    #[default]
    Ipc,
    /// The RM's REST API (`yarn.resourcemanager.webapp.address`); real RMs submit those as their
    /// web filter's user (`dr.who` by default), not as you.
    Rest,
}

/// How this client logs in to a Kerberos cluster: `--principal`/`--keytab`, else the ticket cache.
fn login(cli: Option<&Cli>) -> Login {
    match cli.and_then(|c| c.principal.clone().zip(c.keytab.clone())) {
        Some((principal, keytab)) => Login::Keytab { principal, keytab: keytab.to_string_lossy().into_owned() },
        None => Login::TicketCache,
    }
}

/// The cluster from `--conf-dir`, else `HADOOP_CONF_DIR`; the error says what to set.
fn cluster(conf_dir: Option<&Path>, via: SubmitVia, login: &Login) -> Result<(HadoopConf, Box<dyn ResourceManager>)> {
    let conf = match conf_dir {
        Some(d) => HadoopConf::load_dir(d),
        None => HadoopConf::from_env(),
    }
    .map_err(ClientError::HadoopConf)?;
    let Some(dir) = &conf.dir else { return Err(ClientError::NoHadoopConf) };
    let has = |k: &str| conf.get(k).map(|v| v.is_some()).map_err(ClientError::HadoopConf);
    let key = match via {
        SubmitVia::Ipc => "yarn.resourcemanager.address",
        SubmitVia::Rest => "yarn.resourcemanager.webapp.address",
    };
    if !has(key)? && !has("yarn.resourcemanager.hostname")? && !has("yarn.resourcemanager.ha.rm-ids")? {
        return Err(ClientError::NoResourceManager { dir: dir.display().to_string(), key });
    }
    let secure = conf.kerberos().map_err(ClientError::HadoopConf)?;
    let rm: Box<dyn ResourceManager> = match via {
        SubmitVia::Rest if secure => return Err(ClientError::RestOnKerberos),
        SubmitVia::Ipc => {
            let addrs = conf.rm_addresses().map_err(ClientError::HadoopConf)?;
            let caller = if secure { Caller::Kerberos(login.clone()) } else { Caller::User(user()) };
            Box::new(RmIpc::connect_as(&addrs, caller).map_err(ClientError::Rm)?)
        }
        SubmitVia::Rest => Box::new(
            RmRest::new(&conf.rm_web_urls().map_err(ClientError::HadoopConf)?, &user()).map_err(ClientError::Rm)?,
        ),
    };
    Ok((conf, rm))
}

/// The job's paths as the containers will use them (see `paths`); each one that changed is
/// printed, so the user sees where an input is read and an output lands.
fn qualify_paths(
    mut runtime: ps_runtime::RuntimeConfig,
    app_args: &[String],
    locations: &[(String, String)],
    fs: &str,
    user: &str,
) -> (ps_runtime::RuntimeConfig, Vec<String>) {
    let mut args = app_args.to_vec();
    let say = |flag: &str, from: &str, to: &str| {
        if from != to {
            log::info!("{flag} {from} is {to}");
        }
    };
    for (flag, path) in locations {
        let q = paths::qualify(path, fs, user);
        say(flag, path, &q);
        paths::replace_flag_value(&mut args, flag, &q);
    }
    if let Some(ck) = runtime.checkpoint.url.as_mut() {
        let q = paths::qualify(ck, fs, user);
        say("--checkpoint", ck, &q);
        *ck = q;
    }
    (runtime, args)
}

fn app_master_bin() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("PS_APP_MASTER_BIN") {
        return Ok(PathBuf::from(p));
    }
    next_to_me("ps-app-master", "set PS_APP_MASTER_BIN")
}

pub fn run(cli: &Cli, console: &Console) -> i32 {
    match submit_and_follow(cli, console) {
        Ok(code) => code,
        Err(e) => {
            log::error!("{e}");
            e.exit_code()
        }
    }
}

fn submit_and_follow(cli: &Cli, console: &Console) -> Result<i32> {
    let mut runtime = cli.runtime_config()?;
    cli.container_threads(&mut runtime)?;
    let (app, app_args) = cli.app.split_first().ok_or(ClientError::NoApplication)?;
    let info = crate::app_info::info(cli)?;
    let locations = info.locations.clone();
    paths::refuse_local(&locations)?;
    paths::refuse_local(&cli.checkpoint.iter().map(|c| ("--checkpoint".to_string(), c.clone())).collect::<Vec<_>>())?;
    let n = cli.workers.ok_or(ClientError::WorkersMissing)?;
    if n == 0 {
        return Err(ClientError::NoWorkers);
    }
    runtime.geo.validate_for(n).map_err(ClientError::Config)?;
    let login = login(Some(cli));
    let (conf, rm) = cluster(cli.conf_dir.as_deref(), cli.submit_via, &login)?;
    let fs = conf.default_fs().map_err(ClientError::HadoopConf)?.trim_end_matches('/').to_string();
    // A secure cluster: the containers get HDFS delegation tokens (renewed by the RM) for every
    // file system the job names, never a ticket (the AM gets the keytab, if one was given), and
    // the user is the Kerberos principal's.
    let secure = conf.kerberos().map_err(ClientError::HadoopConf)?;
    // Every file system the job names; relative paths are on the default one.
    let named = locations.iter().map(|(_, u)| u).chain(&cli.checkpoint).chain(&cli.access_filesystems);
    let token_urls: Vec<String> = std::iter::once(&fs).chain(named).cloned().collect();
    let (user, tokens) =
        if secure { delegation(&conf, token_urls.iter().map(String::as_str), &login)? } else { (user(), Vec::new()) };
    let (runtime, app_args) = qualify_paths(runtime, app_args, &locations, &fs, &user);
    let qualified = AppInfo {
        locations: locations.iter().map(|(f, p)| (f.clone(), paths::qualify(p, &fs, &user))).collect(),
        output_policy: info.output_policy,
        default_consistency: info.default_consistency,
    };
    let ck = &runtime.checkpoint;
    crate::preflight::check(app, &qualified, ck.url.as_deref(), ck.resume)?;
    let (am_bin, rt_bin) = (app_master_bin()?, runtime_bin(cli)?);
    // Before the application exists: a bad --dc-hosts file leaves nothing behind.
    let dc_map = crate::placement::dc_map(cli, rm.as_ref())?;
    let app_id = rm.new_application().map_err(ClientError::Rm)?;
    println!("application id: {app_id}");
    let staging = format!("{fs}/user/{user}/.ps-staging/{app_id}");
    log::info!("staging {} to {staging}", [&am_bin, &rt_bin].map(|p| p.display().to_string()).join(", "));
    for b in [&am_bin, &rt_bin] {
        warn_if_not_portable(b);
    }
    let job = JobConfig {
        runtime,
        app: app.clone(),
        app_args,
        hostfile: "hostfile".into(),
        secret_file: None,
        secret_credential: Some(CREDENTIALS_ALIAS.into()),
        stats_dir: format!("{staging}/stats").into(),
        // The processes report to the AM's rendezvous instead.
        tracker: None,
        output: qualified.locations.iter().find(|(f, _)| f == "--output").map(|(_, u)| u.clone()),
    };
    // The staging directory is private before anything lands in it (as Spark's .sparkStaging).
    storage_for(&staging).and_then(|st| st.create_private_dir(&staging)).map_err(ClientError::StagingDir)?;
    // Binaries go to the per-user cache by content hash (uploaded once, reused by later jobs);
    // the job's own files to its staging directory.
    let cache = format!("{fs}/user/{user}/.ps-staging/cache");
    let mut resources = BTreeMap::new();
    resources.insert("ps-app-master".to_string(), cached_binary(&cache, &am_bin)?);
    let runtime_url = cached_binary(&cache, &rt_bin)?.resource;
    // With a keytab the AM renews the job's tokens itself (jobs longer than a token's life).
    let renewal = match (&cli.principal, &cli.keytab) {
        (Some(p), Some(k)) if secure => {
            resources.insert(KEYTAB_RESOURCE.to_string(), crate::staging::stage_keytab(&staging, KEYTAB_RESOURCE, k)?);
            // Relative paths are on the default file system, which the list starts with.
            let mut urls: Vec<&String> = token_urls.iter().filter(|u| u.contains("://")).collect();
            urls.dedup();
            let fs_args: String = urls.iter().map(|u| format!(" --token-fs {u}")).collect();
            format!(" --principal {p} --keytab {KEYTAB_RESOURCE}{fs_args}")
        }
        _ => String::new(),
    };
    let job_bytes = serde_json::to_vec_pretty(&job).map_err(ClientError::Encode)?;
    stage(&format!("{staging}/job.json"), &job_bytes, "APPLICATION")?;
    let dc_map = match dc_map {
        Some(m) => {
            let url = format!("{staging}/dc-map.json");
            stage(&url, &serde_json::to_vec_pretty(&m).map_err(ClientError::Encode)?, "APPLICATION")?;
            format!(" --dc-map {url}")
        }
        None => String::new(),
    };
    let mut environment = BTreeMap::new();
    if !secure {
        // With a token, the token names the user; a different name would be impersonation.
        environment.insert("HADOOP_USER_NAME".to_string(), user.clone());
    }
    if let Ok(l) = std::env::var("PS_LOG") {
        environment.insert("PS_LOG".into(), l);
    }
    // As on YARN's own AM retries: recover by default when there is something to recover from.
    let restarts = cli.restarts.unwrap_or(if cli.checkpoint.is_some() { 3 } else { 0 });
    let command = format!(
        "./ps-app-master --staging {staging} --runtime-url {runtime_url} --workers {n} --worker-memory {} \
         --worker-vcores {} --restarts {restarts}{dc_map}{renewal}{}{} 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr",
        cli.worker_memory,
        cli.worker_vcores.or(cli.executor_cores.map(|c| c as i32)).unwrap_or(1),
        if cli.keep_staging { " --keep-staging" } else { "" },
        job.runtime.port_range.map(|r| format!(" --port-range {r}")).unwrap_or_default(),
    );
    let sub = Submission {
        app_id: app_id.clone(),
        name: cli.name.clone().unwrap_or_else(|| format!("ps-{app}")),
        app_type: APP_TYPE.into(),
        queue: cli.queue.clone(),
        memory_mb: cli.am_memory,
        vcores: 1,
        local_resources: resources,
        environment,
        command,
        // The job secret travels in the AM's credentials, which YARN hands to the AM container
        // only (and the AM to its runtime containers); it is never a file on HDFS.
        secrets: BTreeMap::from([(CREDENTIALS_ALIAS.to_string(), generate_secret().to_vec())]),
        tokens,
        max_attempts: cli.am_attempts,
    };
    rm.submit(&sub).map_err(ClientError::Rm)?;
    let patience = Patience::of(&conf)?;
    let rep = follow(rm.as_ref(), &app_id, console, patience);
    console.clear();
    let rep = rep?;
    if !renewal.is_empty() {
        // Never left behind, not even in a failed job's staging directory kept for inspection.
        let keytab = format!("{staging}/{KEYTAB_RESOURCE}");
        if let Err(e) = storage_for(&keytab).and_then(|st| st.delete(&keytab)) {
            log::warn!("removing the staged keytab {keytab}: {e}");
        }
    }
    copy_report(cli, &staging);
    crate::local::keep_clock_logs(cli, &format!("{staging}/stats"));
    if !rep.succeeded() {
        let (state, final_status, diagnostics) = (rep.state, rep.final_status, rep.diagnostics);
        let app_id_for_logs = app_id.clone();
        log::error!("{}", ClientError::AppFailed { app_id, state, final_status, diagnostics });
        log::error!("staging directory kept for inspection: {staging}");
        log::error!("the containers' logs (stdout, stderr): yarn logs -applicationId {app_id_for_logs}");
        return Ok(1);
    }
    log::info!("{app_id} finished: SUCCEEDED");
    let code = report_stats(cli, n, &format!("{staging}/stats"), restart_record(&staging));
    if cli.keep_staging {
        log::info!("staging directory kept (--keep-staging): {staging}");
    } else if code == 0 {
        if let Err(e) = storage_for(&staging).and_then(|st| st.delete(&staging)) {
            log::warn!("removing the staging directory {staging}: {e}");
        }
    }
    Ok(code)
}

/// Copies the AM's final page (`stats/report.html` in staging) next to `--stats`.
fn copy_report(cli: &Cli, staging: &str) {
    let Some(stats) = &cli.stats else { return };
    let (from, to) = (format!("{staging}/stats/report.html"), ps_job::tracking::serve::report_next_to(stats));
    let copied = storage_for(&from).and_then(|src| {
        let mut page = Vec::new();
        std::io::Read::read_to_end(&mut *src.open(&from, 0)?, &mut page)
            .map_err(|e| ps_runtime::PsError::io(format!("reading {from}"), e))?;
        let dst = storage_for(&to)?;
        ps_runtime::storage::write_atomic(dst.as_ref(), &to, &page, "job report page")
    });
    match copied {
        Ok(()) => log::info!("job report written to {to}"),
        Err(e) => log::warn!("no job report: {e}"),
    }
}

/// The AM's record of automatic restarts (`stats/restarts.json` in staging), if it made any.
fn restart_record(staging: &str) -> Option<serde_json::Value> {
    let url = format!("{staging}/stats/restarts.json");
    let st = storage_for(&url).ok()?;
    if !st.exists(&url).ok()? {
        return None;
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut *st.open(&url, 0).ok()?, &mut text).ok()?;
    match serde_json::from_str(&text) {
        Ok(v) => Some(v),
        Err(e) => {
            log::warn!("{url}: {e}");
            None
        }
    }
}

/// The name of the keytab among the AM's local resources (in its staging directory meanwhile).
const KEYTAB_RESOURCE: &str = "ps.keytab";

/// The user (the principal's short name) and HDFS delegation tokens, renewable by the
/// ResourceManager, for every HDFS behind `urls` (the default file system first: its token's
/// owner is the user).
fn delegation<'a>(
    conf: &HadoopConf,
    urls: impl IntoIterator<Item = &'a str>,
    login: &Login,
) -> Result<(String, Vec<(String, Token)>)> {
    let urls: Vec<&str> = urls.into_iter().collect();
    let sources = token_sources(conf, urls.iter().copied()).map_err(ClientError::HadoopConf)?;
    let renewer = conf.rm_principal().map_err(ClientError::HadoopConf)?;
    let failed =
        |source: &TokenSource, e| ClientError::DelegationToken { nn: source.authority().to_string(), source: e };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
        ClientError::DelegationToken {
            nn: urls.first().copied().unwrap_or_default().to_string(),
            source: ps_yarn::YarnError::io("a runtime", e),
        }
    })?;
    let mut tokens = Vec::new();
    let mut owner = None;
    for source in &sources {
        let got = rt.block_on(hdfs_token::fetch_for(source, &renewer, login)).map_err(|e| failed(source, e))?;
        let who = hdfs_token::owner(&got[0]).map_err(|e| failed(source, e))?;
        log::info!(
            "Kerberos: HDFS delegation token for {} owned by {who}, renewable by {renewer} (service {})",
            source.authority(),
            got.iter().map(|t| t.service.as_str()).collect::<Vec<_>>().join(", ")
        );
        owner.get_or_insert(who);
        tokens.extend(got.into_iter().map(|t| (t.service.clone(), t)));
    }
    let owner = owner.ok_or_else(|| {
        ClientError::HadoopConf(ps_hadoop::HadoopError::Config(format!(
            "fs.defaultFS ({}) is not an HDFS: a secure job stages its files there",
            urls.first().copied().unwrap_or_default()
        )))
    })?;
    log::info!("Kerberos: submitting as {owner}");
    Ok((hdfs_token::short_name(&owner).to_string(), tokens))
}

/// How long following a job waits out an unreachable ResourceManager (a restart or failover
/// takes longer than one round of attempts): Hadoop's `yarn.resourcemanager.connect.max-wait.ms`,
/// retrying every `...connect.retry-interval.ms` at most.
#[derive(Clone, Copy)]
struct Patience {
    max_wait: Duration,
    interval: Duration,
}

impl Patience {
    fn of(conf: &HadoopConf) -> Result<Self> {
        let max_wait = conf.rm_connect_max_wait().map_err(ClientError::HadoopConf)?;
        let interval = conf.rm_connect_retry_interval().map_err(ClientError::HadoopConf)?;
        Ok(Patience { max_wait, interval })
    }

    /// The report, retrying connection failures (each call already tried every RM) until
    /// `max_wait` has passed since the first failure, with waits doubling from 1 s up to the
    /// retry interval.
    fn report(&self, rm: &dyn ResourceManager, app_id: &str) -> Result<AppReport> {
        let mut failing_since = None;
        let mut wait = Duration::from_secs(1).min(self.interval);
        loop {
            match rm.report(app_id) {
                Err(e) if ps_yarn::failover::worth_failover(&e) => {
                    let since = *failing_since.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() + wait > self.max_wait {
                        return Err(ClientError::Rm(e));
                    }
                    log::warn!("following {app_id}: {e}; retrying in {:.1}s", wait.as_secs_f64());
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(self.interval);
                }
                r => return r.map_err(ClientError::Rm),
            }
        }
    }
}

/// Polls the application report, printing state changes and progress, until it ends. While
/// it runs, the AM's `status.json` (at its tracking URL) feeds the progress display.
fn follow(rm: &dyn ResourceManager, app_id: &str, console: &Console, patience: Patience) -> Result<AppReport> {
    let (mut state, mut url, mut pct) = (String::new(), String::new(), -1i64);
    let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(2)).build().ok();
    let (mut last_status, mut have_status) = (std::time::Instant::now() - Duration::from_secs(60), false);
    loop {
        let rep = patience.report(rm, app_id)?;
        if rep.state != state {
            state = rep.state.clone();
            log::info!("{app_id}: {state}");
        }
        if !rep.tracking_url.is_empty() && rep.tracking_url != url {
            url = rep.tracking_url.clone();
            println!("tracking URL: {url}");
        }
        if rep.state == "RUNNING" && url.starts_with("http") && last_status.elapsed() >= Duration::from_secs(1) {
            last_status = std::time::Instant::now();
            let status_url = format!("{}/status.json", url.trim_end_matches('/'));
            let got = http.as_ref().and_then(|h| h.get(&status_url).send().ok()?.json::<serde_json::Value>().ok());
            if let Some(s) = got {
                console.show(&Progress::from_status(&s));
                have_status = true; // the page's progress replaces the percentage lines
            }
        }
        let p = rep.progress.round() as i64;
        if p / 10 != pct / 10 && rep.state == "RUNNING" && !have_status {
            pct = p;
            log::info!("{app_id}: progress {p}%");
        }
        if rep.is_terminal() {
            return Ok(rep);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `yarn-submit status|kill APP_ID` and `yarn-submit list [--all]`, with `[--submit-via ipc|rest]
/// [--conf-dir DIR]`.
#[derive(clap::Parser, Debug)]
#[command(name = "yarn-submit")]
pub struct AppCommand {
    /// status: print the application's report as JSON; kill: kill it and print the final report;
    /// list: this user's parameter-server applications that are still active (all with --all).
    #[arg(value_parser = ["status", "kill", "list"])]
    cmd: String,
    /// The application id (application_<timestamp>_<number>), for status and kill.
    #[arg(required_if_eq_any([("cmd", "status"), ("cmd", "kill")]))]
    app_id: Option<String>,
    /// list: applications in every state, finished ones too.
    #[arg(long)]
    all: bool,
    /// How to reach the ResourceManager.
    #[arg(long, value_enum, default_value_t = SubmitVia::Ipc)]
    submit_via: SubmitVia,
    /// The Hadoop configuration directory (default: $HADOOP_CONF_DIR).
    #[arg(long, value_name = "DIR")]
    conf_dir: Option<PathBuf>,
}

/// The states `yarn application -list` shows by default.
const ACTIVE: [&str; 4] = ["NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING"];

pub fn command(c: &AppCommand) -> i32 {
    let (cmd, app_id) = (c.cmd.as_str(), c.app_id.as_deref().unwrap_or_default());
    let rm = match cluster(c.conf_dir.as_deref(), c.submit_via, &login(None)) {
        Ok((_, rm)) => rm,
        Err(e) => {
            log::error!("{e}");
            return 1;
        }
    };
    let r = match cmd {
        "list" => return list(rm.as_ref(), c.all),
        "status" => rm.report(app_id),
        _ => rm.kill(app_id),
    };
    match r.map_err(ClientError::Rm) {
        Ok(rep) => {
            println!(
                "{}",
                serde_json::json!({"id": rep.id, "user": rep.user, "queue": rep.queue, "state": rep.state, "finalStatus": rep.final_status,
                    "progress": rep.progress, "trackingUrl": rep.tracking_url, "diagnostics": rep.diagnostics})
            );
            if cmd == "status" || rep.state == "KILLED" || rep.is_terminal() {
                0
            } else {
                1
            }
        }
        Err(e) => {
            log::error!("{e}");
            1
        }
    }
}

/// This user's applications of our type, as `yarn application -list` prints them: a count, a
/// header, then one tab-separated line each (oldest first).
fn list(rm: &dyn ResourceManager, all: bool) -> i32 {
    let states: &[&str] = if all { &[] } else { &ACTIVE };
    match rm.list(&[user()], states, &[APP_TYPE.to_string()]) {
        Ok(mut apps) => {
            apps.sort_by(|a, b| a.id.cmp(&b.id));
            println!("Total number of applications: {}", apps.len());
            println!("Application-Id\tApplication-Name\tUser\tQueue\tState\tFinal-State\tProgress\tTracking-URL");
            for a in apps {
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{:.0}%\t{}",
                    a.id, a.name, a.user, a.queue, a.state, a.final_status, a.progress, a.tracking_url
                );
            }
            0
        }
        Err(e) => {
            log::error!("{}", ClientError::Rm(e));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ps_yarn::submit::NodeRack;
    use ps_yarn::YarnError;
    use std::cell::Cell;

    /// An RM that is unreachable for its first `down` reports (only `report` is called here).
    struct Flaky {
        down: Cell<u32>,
        calls: Cell<u32>,
    }

    impl ResourceManager for Flaky {
        fn new_application(&self) -> ps_yarn::Result<String> {
            unreachable!()
        }
        fn submit(&self, _: &Submission) -> ps_yarn::Result<()> {
            unreachable!()
        }
        fn report(&self, app: &str) -> ps_yarn::Result<AppReport> {
            self.calls.set(self.calls.get() + 1);
            match self.down.get() {
                0 => Ok(AppReport { id: app.into(), state: "RUNNING".into(), ..Default::default() }),
                u32::MAX => Err(YarnError::Remote {
                    server: "rm".into(),
                    method: "getApplicationReport".into(),
                    class: "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException".into(),
                    message: String::new(),
                }),
                n => {
                    self.down.set(n - 1);
                    Err(YarnError::Io("connection refused".into()))
                }
            }
        }
        fn request_kill(&self, _: &str) -> ps_yarn::Result<bool> {
            unreachable!()
        }
        fn node_racks(&self) -> ps_yarn::Result<Vec<NodeRack>> {
            unreachable!()
        }
    }

    #[test]
    fn following_waits_out_an_unreachable_rm_up_to_max_wait() {
        let p = Patience { max_wait: Duration::from_secs(5), interval: Duration::from_millis(20) };
        let rm = Flaky { down: Cell::new(3), calls: Cell::new(0) };
        assert_eq!(p.report(&rm, "application_1_1").unwrap().state, "RUNNING");
        assert_eq!(rm.calls.get(), 4);
        let p = Patience { max_wait: Duration::from_millis(100), interval: Duration::from_millis(20) };
        let rm = Flaky { down: Cell::new(1_000_000), calls: Cell::new(0) };
        let t = std::time::Instant::now();
        assert!(p.report(&rm, "application_1_1").unwrap_err().to_string().contains("connection refused"));
        assert!(t.elapsed() < Duration::from_secs(2) && rm.calls.get() >= 4, "{:?} {}", t.elapsed(), rm.calls.get());
        // The RM's own answer is final at once.
        let rm = Flaky { down: Cell::new(u32::MAX), calls: Cell::new(0) };
        assert!(p.report(&rm, "application_1_1").is_err());
        assert_eq!(rm.calls.get(), 1);
    }
}
