//! `--master yarn`: stage the binaries and job files on HDFS under
//! `/user/<user>/.ps-staging/<app-id>/` (mode 0700), submit the application master through the RM REST API,
//! then follow the application until it ends (exit 0 only on FINISHED + SUCCEEDED). Also
//! `yarn-submit status APP_ID` and `yarn-submit kill APP_ID`.

use crate::error::{ClientError, Result};
use crate::local::{next_to_me, report_stats, runtime_bin};
use crate::Cli;
use ps_runtime::internal::{generate_secret, CREDENTIALS_ALIAS};
use ps_runtime::storage::storage_for;
use ps_runtime::{apps, JobConfig};
use ps_yarn::conf::HadoopConf;
use ps_yarn::rest::{AppReport, LocalResource, RmRest, Submission};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The submitting user: `HADOOP_USER_NAME` as Hadoop tools use it, else the login name.
fn user() -> String {
    std::env::var("HADOOP_USER_NAME").or_else(|_| std::env::var("USER")).unwrap_or_else(|_| "root".into())
}

/// The cluster from `--conf-dir`, else `HADOOP_CONF_DIR`; the error says what to set.
fn cluster(conf_dir: Option<&Path>) -> Result<(HadoopConf, RmRest)> {
    let conf = match conf_dir {
        Some(d) => HadoopConf::load_dir(d),
        None => HadoopConf::from_env(),
    }
    .map_err(ClientError::HadoopConf)?;
    let Some(dir) = &conf.dir else { return Err(ClientError::NoHadoopConf) };
    let has = |k: &str| conf.get(k).map(|v| v.is_some()).map_err(ClientError::HadoopConf);
    if !has("yarn.resourcemanager.webapp.address")? && !has("yarn.resourcemanager.hostname")? {
        return Err(ClientError::NoResourceManager { dir: dir.display().to_string() });
    }
    let rest = RmRest::new(&conf.rm_webapp().map_err(ClientError::HadoopConf)?, &user()).map_err(ClientError::Rest)?;
    Ok((conf, rest))
}

fn app_master_bin() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("PS_APP_MASTER_BIN") {
        return Ok(PathBuf::from(p));
    }
    next_to_me("ps-app-master", "set PS_APP_MASTER_BIN")
}

/// Uploads `data` to `url` and returns it as a LocalResource (size and mtime read back from HDFS).
fn stage(url: &str, data: &[u8]) -> Result<LocalResource> {
    let st = storage_for(url).map_err(ClientError::Storage)?;
    let upload = |source| ClientError::Upload { url: url.to_string(), source };
    let mut f = st.create(url).map_err(upload)?;
    f.write_all(data).map_err(|source| ClientError::UploadWrite { url: url.to_string(), source })?;
    f.close().map_err(upload)?;
    let (size, timestamp) = st.status(url).map_err(ClientError::Storage)?;
    Ok(LocalResource {
        resource: url.to_string(),
        kind: "FILE".into(),
        visibility: "APPLICATION".into(),
        size,
        timestamp,
    })
}

fn read(p: &Path) -> Result<Vec<u8>> {
    std::fs::read(p).map_err(|source| ClientError::ReadFile { path: p.to_path_buf(), source })
}

pub fn run(cli: &Cli) -> i32 {
    match submit_and_follow(cli) {
        Ok(code) => code,
        Err(e) => {
            log::error!("{e}");
            1
        }
    }
}

fn submit_and_follow(cli: &Cli) -> Result<i32> {
    let runtime = cli.runtime_config()?;
    let (app, app_args) = cli.app.split_first().ok_or(ClientError::NoApplication)?;
    let built = apps::build(app, app_args).map_err(ClientError::App)?;
    let checkpoint = cli.checkpoint.iter().map(|c| ("--checkpoint", c.clone()));
    for (flag, path) in built.locations().into_iter().chain(checkpoint) {
        if path.starts_with("file:") || !path.contains("://") {
            return Err(ClientError::LocalPathOnYarn { flag, path });
        }
    }
    let n = cli.workers.ok_or(ClientError::WorkersMissing)?;
    if n == 0 {
        return Err(ClientError::NoWorkers);
    }
    let (conf, rest) = cluster(cli.conf_dir.as_deref())?;
    let fs = conf.default_fs().map_err(ClientError::HadoopConf)?.trim_end_matches('/').to_string();
    let (am_bin, rt_bin) = (app_master_bin()?, runtime_bin(cli)?);
    let app_id = rest.new_application().map_err(ClientError::Rest)?;
    println!("application id: {app_id}");
    let user = user();
    let staging = format!("{fs}/user/{user}/.ps-staging/{app_id}");
    log::info!("staging {} to {staging}", [&am_bin, &rt_bin].map(|p| p.display().to_string()).join(", "));
    let job = JobConfig {
        runtime,
        app: app.clone(),
        app_args: app_args.to_vec(),
        hostfile: "hostfile".into(),
        secret_file: None,
        secret_credential: Some(CREDENTIALS_ALIAS.into()),
        stats_dir: format!("{staging}/stats").into(),
    };
    // The staging directory is private before anything lands in it (as Spark's .sparkStaging).
    storage_for(&staging).and_then(|st| st.create_private_dir(&staging)).map_err(ClientError::StagingDir)?;
    let mut resources = BTreeMap::new();
    resources.insert("ps-app-master".to_string(), stage(&format!("{staging}/ps-app-master"), &read(&am_bin)?)?);
    stage(&format!("{staging}/ps-runtime"), &read(&rt_bin)?)?;
    stage(&format!("{staging}/job.json"), &serde_json::to_vec_pretty(&job).map_err(ClientError::Encode)?)?;
    let mut environment = BTreeMap::new();
    environment.insert("HADOOP_USER_NAME".to_string(), user.clone());
    if let Ok(l) = std::env::var("PS_LOG") {
        environment.insert("PS_LOG".into(), l);
    }
    let command = format!(
        "./ps-app-master --staging {staging} --workers {n} --worker-memory {} --worker-vcores {} \
         1><LOG_DIR>/app-master.out 2><LOG_DIR>/app-master.err",
        cli.worker_memory, cli.worker_vcores
    );
    let sub = Submission {
        app_id: app_id.clone(),
        name: cli.name.clone().unwrap_or_else(|| format!("ps-{app}")),
        app_type: "PARAMETER_SERVER".into(),
        queue: cli.queue.clone(),
        memory_mb: cli.am_memory,
        vcores: 1,
        local_resources: resources,
        environment,
        command,
        // The job secret travels in the AM's credentials, which YARN hands to the AM container
        // only (and the AM to its runtime containers); it is never a file on HDFS.
        secrets: BTreeMap::from([(CREDENTIALS_ALIAS.to_string(), generate_secret().to_vec())]),
    };
    rest.submit(&sub).map_err(ClientError::Rest)?;
    let rep = follow(&rest, &app_id)?;
    if !rep.succeeded() {
        let (state, final_status, diagnostics) = (rep.state, rep.final_status, rep.diagnostics);
        log::error!("{}", ClientError::AppFailed { app_id, state, final_status, diagnostics });
        log::error!("staging directory kept for inspection: {staging}");
        return Ok(1);
    }
    log::info!("{app_id} finished: SUCCEEDED");
    let code = report_stats(cli, n, &format!("{staging}/stats"));
    if code == 0 {
        if let Err(e) = storage_for(&staging).and_then(|st| st.delete(&staging)) {
            log::warn!("removing the staging directory {staging}: {e}");
        }
    }
    Ok(code)
}

/// Polls the application report, printing state changes and progress, until it ends.
fn follow(rest: &RmRest, app_id: &str) -> Result<AppReport> {
    let (mut state, mut url, mut pct) = (String::new(), String::new(), -1i64);
    loop {
        let rep = rest.report(app_id).map_err(ClientError::Rest)?;
        if rep.state != state {
            state = rep.state.clone();
            log::info!("{app_id}: {state}");
        }
        if !rep.tracking_url.is_empty() && rep.tracking_url != url {
            url = rep.tracking_url.clone();
            println!("tracking URL: {url}");
        }
        let p = rep.progress.round() as i64;
        if p / 10 != pct / 10 && rep.state == "RUNNING" {
            pct = p;
            log::info!("{app_id}: progress {p}%");
        }
        if rep.is_terminal() {
            return Ok(rep);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `yarn-submit status APP_ID` / `yarn-submit kill APP_ID`.
pub fn command(cmd: &str, app_id: &str) -> i32 {
    let r = cluster(None).and_then(|(_, rest)| match cmd {
        "status" => rest.report(app_id).map_err(ClientError::Rest),
        _ => rest.kill(app_id).map_err(ClientError::Rest),
    });
    match r {
        Ok(rep) => {
            println!(
                "{}",
                serde_json::json!({"id": rep.id, "state": rep.state, "finalStatus": rep.final_status,
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
