//! Automatic restarts on YARN (against the stand-in on Hadoop's own server code and the real test
//! HDFS): a runtime container killed with SIGKILL after a checkpoint makes the AM stop the others,
//! allocate a fresh set of containers and start every process again from the newest checkpoint;
//! the job succeeds as an uninterrupted one does.

mod common;

use common::yarn::{ratings, runtime_pids, s, submit, submit_app, Submitted, SERIAL};
use common::{output, wait_for, wait_within, JOB_LIMIT};
use ps_runtime::snapshot::CheckpointStore;
use ps_testkit::{needs, Service};
use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

fn test_rmse(stats: &Path) -> (f64, Value) {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(stats).unwrap()).unwrap();
    let r = v["objective"].as_array().and_then(|a| a.last()).and_then(|r| r["test_rmse"].as_f64()).expect("test_rmse");
    (r, v)
}

/// MF on YARN, 2 workers (4 rotating item slices a pass at staleness 1), every clock slowed by
/// 0.1 s so that a kill lands mid-job.
fn mf_job(input: &str, stats: &Path, extra: &[&str]) -> Vec<String> {
    let mut a = s(&["--master", "yarn", "--workers", "2", "--threads", "1", "--worker-memory", "256"]);
    a.extend(s(&["--stats", stats.to_str().unwrap()]));
    a.extend(s(extra));
    a.extend(s(&["mf", "--input", input, "--passes", "6", "--clocks-per-pass", "4", "--rank", "6", "--seed", "3"]));
    a.extend(s(&["--test-fraction", "0.1", "--straggler", "random", "--straggler-p", "1", "--straggler-delay", "0.1"]));
    a
}

/// The held-out RMSE of the job run without interruption.
fn uninterrupted(input: &str, dir: &Path) -> f64 {
    let plain = dir.join("plain.json");
    let o = output(submit().args(mf_job(input, &plain, &[])));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    test_rmse(&plain).0
}

/// Waits (at most a minute) until a checkpoint of `app` under `ck` is complete.
fn wait_checkpoint(ck: &str, app: &str) {
    let t0 = Instant::now();
    let store = CheckpointStore::open(ck).unwrap();
    while !store.list().unwrap_or_default().iter().any(|x| x.1) {
        assert!(t0.elapsed() < Duration::from_secs(60), "no checkpoint of {app} completed");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn containers_killed_after_a_checkpoint_restart_from_it_and_the_job_succeeds() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, input) = ratings("recover");
    let base = input.trim_end_matches("/ratings").to_string();
    let want = uninterrupted(&input, &dir);
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for run in 0..10 {
        let (stats, ck) = (dir.join(format!("run{run}.json")), format!("{base}/ck{run}"));
        // --restarts left at its YARN default (3 with a checkpoint).
        let args = mf_job(&input, &stats, &["--checkpoint", &ck, "--checkpoint-every", "2"]);
        let Submitted { child, rx, mut log, app, _guard } = submit_app(submit().args(&args));
        wait_for(&rx, ": RUNNING", &mut log);
        wait_checkpoint(&ck, &app);
        std::thread::sleep(Duration::from_millis(rng.gen_range(0..500)));
        let victim = format!("--id {} ", rng.gen_range(0..2));
        let pid = runtime_pids(&app).into_iter().find(|(_, c)| c.contains(&victim)).expect("the victim runs").0;
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        let status = wait_within(child, JOB_LIMIT, "yarn-submit of a job with a killed container");
        log.extend(rx.iter());
        let text = log.join("\n");
        assert!(status.success(), "run {run}: {text}");
        let (rmse, v) = test_rmse(&stats);
        let r = v["restarts"].as_array().unwrap_or_else(|| panic!("run {run}: no restarts in the stats: {v}"));
        assert_eq!(r.len(), 1, "run {run}: {r:?}");
        assert!(r[0]["failed"].as_str().unwrap().contains("exit status 137"), "run {run}: {r:?}");
        assert!(r[0]["from_clock"].as_i64().unwrap() >= 2, "run {run}: resumed from a checkpoint: {r:?}");
        assert!((rmse - want).abs() <= 0.01 * want, "run {run}: held-out RMSE {rmse} against {want} uninterrupted");
    }
    let _ = ps_runtime::storage::storage_for(&base).and_then(|fs| fs.delete(&base));
    std::fs::remove_dir_all(&dir).ok();
}

/// The stand-in's node (`node-<i>`) a runtime process of `app` runs on, from its container's
/// working directory.
fn runtime_nodes(app: &str) -> Vec<(u32, String)> {
    let node = |pid: u32| {
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
        cwd.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).find(|c| c.starts_with("node-"))
    };
    runtime_pids(app).into_iter().filter_map(|(pid, _)| node(pid).map(|n| (pid, n))).collect()
}

/// Waits for `n` runtime processes of `app` none of which is in `old`.
fn new_processes(app: &str, n: usize, old: &[u32]) -> Vec<(u32, String)> {
    let t0 = Instant::now();
    loop {
        let now: Vec<_> = runtime_nodes(app).into_iter().filter(|(p, _)| !old.contains(p)).collect();
        if now.len() == n {
            return now;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{n} new runtime processes of {app} never appeared: {now:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_node_that_failed_twice_gets_no_more_containers() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, input) = ratings("avoid");
    let base = input.trim_end_matches("/ratings").to_string();
    let mut args = s(&["--master", "yarn", "--workers", "2", "--threads", "1", "--worker-memory", "256"]);
    args.extend(s(&["--restarts", "3", "--stats", dir.join("s.json").to_str().unwrap()]));
    args.extend(s(&["mf", "--input", &input, "--passes", "30", "--rank", "4", "--straggler", "random"]));
    args.extend(s(&["--straggler-p", "1", "--straggler-delay", "0.05"]));
    let Submitted { child, rx, mut log, app, _guard } = submit_app(submit().args(&args));
    wait_for(&rx, ": RUNNING", &mut log);
    let mut seen: Vec<u32> = Vec::new();
    for kill in 0..2 {
        let procs = new_processes(&app, 2, &seen);
        seen.extend(procs.iter().map(|p| p.0));
        let on_node0 = procs.iter().find(|(_, n)| n == "node-0").unwrap_or_else(|| panic!("kill {kill}: {procs:?}"));
        unsafe { libc::kill(on_node0.0 as i32, libc::SIGKILL) };
    }
    // Two failures on node-0: the third attempt runs on node-1 only.
    let third = new_processes(&app, 2, &seen);
    assert!(third.iter().all(|(_, n)| n == "node-1"), "{third:?}");
    let status = wait_within(child, JOB_LIMIT, "yarn-submit of a job that lost a node twice");
    log.extend(rx.iter());
    let text = log.join("\n");
    assert!(status.success(), "{text}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("s.json")).unwrap()).unwrap();
    assert_eq!(v["restarts"].as_array().map(Vec::len), Some(2), "{}", v["restarts"]);
    let _ = ps_runtime::storage::storage_for(&base).and_then(|fs| fs.delete(&base));
    std::fs::remove_dir_all(&dir).ok();
}

/// The pid of `app`'s application master process (found by its container directory).
fn am_pid(app: &str) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_string_lossy().parse().ok()?;
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let exe = String::from_utf8_lossy(cmd.split(|b| *b == 0).next()?).into_owned();
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
        (exe.ends_with("ps-app-master") && cwd.to_string_lossy().contains(app)).then_some(pid)
    })
}

#[test]
fn a_new_application_master_attempt_continues_the_job_from_its_checkpoint() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, input) = ratings("am");
    let base = input.trim_end_matches("/ratings").to_string();
    let ck = format!("{base}/ck");
    let want = uninterrupted(&input, &dir);
    // No process restarts: only YARN's second AM attempt can save this job.
    let stats = dir.join("am.json");
    let extra = ["--am-attempts", "2", "--restarts", "0", "--checkpoint", &ck, "--checkpoint-every", "2"];
    let Submitted { child, rx, mut log, app, _guard } = submit_app(submit().args(mf_job(&input, &stats, &extra)));
    wait_for(&rx, ": RUNNING", &mut log);
    wait_checkpoint(&ck, &app);
    let pid = am_pid(&app).expect("the application master runs");
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let status = wait_within(child, JOB_LIMIT, "yarn-submit of a job whose AM was killed");
    log.extend(rx.iter());
    let text = log.join("\n");
    assert!(status.success(), "{text}");
    let (rmse, v) = test_rmse(&stats);
    let r = v["restarts"].as_array().unwrap_or_else(|| panic!("no restarts in the stats: {v}"));
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["failed"], "application master attempt 1 ended", "{r:?}");
    assert!(r[0]["from_clock"].as_i64().unwrap() >= 2, "resumed from a checkpoint: {r:?}");
    assert!((rmse - want).abs() <= 0.01 * want, "held-out RMSE {rmse} against {want} uninterrupted");
    let _ = ps_runtime::storage::storage_for(&base).and_then(|fs| fs.delete(&base));
    std::fs::remove_dir_all(&dir).ok();
}
