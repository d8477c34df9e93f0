//! Automatic recovery (`--restarts N`, local master): a runtime process killed with SIGKILL at a
//! random moment makes every process start again from the newest resumable checkpoint, and the
//! job ends as an uninterrupted one would; restarts exhausted fail the job listing every failure.

mod common;

use common::{bin, output, spawn_lines, wait_for, wait_for_all, wait_within, JOB_LIMIT};
use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc;
use std::time::Duration;

fn submit() -> Command {
    let mut c = Command::new(bin("yarn-submit"));
    c.env("PS_RUNTIME_BIN", bin("ps-runtime"));
    c
}

fn tmpdir(tag: &str) -> PathBuf {
    common::tmpdir("recovery", tag)
}

fn ratings(dir: &Path) -> String {
    common::gen_ratings(dir, 40000, 1500, 300)
}

/// MF with a checkpoint every pass, each clock slowed by 40 ms so that a kill lands in training.
fn job(input: &str, dir: &Path, run: &str, restarts: &str) -> (Vec<String>, PathBuf) {
    let stats = dir.join(format!("{run}.json"));
    let ck = dir.join(format!("ck-{run}"));
    let v = [
        "--master",
        "local[2]",
        "--threads",
        "2",
        "--restarts",
        restarts,
        "--checkpoint",
        ck.to_str().unwrap(),
        "--checkpoint-every",
        "4",
        "--conf",
        "checkpoint.when_busy=wait",
        "--stats",
        stats.to_str().unwrap(),
        "mf",
        "--input",
        input,
        "--passes",
        "8",
        "--clocks-per-pass",
        // 2 processes at staleness 1: a multiple of 4 rotating item slices (each shared by 2 threads).
        "8",
        "--rank",
        "8",
        "--test-fraction",
        "0.1",
        "--seed",
        "3",
        "--samples",
        "4",
        "--straggler",
        "random",
        "--straggler-p",
        "1",
        "--straggler-delay",
        "0.03",
    ];
    (v.iter().map(|s| s.to_string()).collect(), stats)
}

fn test_rmse(stats: &Path) -> f64 {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(stats).unwrap()).unwrap();
    v["objective"].as_array().and_then(|a| a.last()).and_then(|r| r["test_rmse"].as_f64()).expect("test_rmse")
}

/// The pid of process `k` from the launcher's latest "process k started (pid N)" line, once the
/// attempt's last process has started and the job is ready (in either order: a process may log
/// "job ready" before the launcher logs starting it).
fn wait_pid(rx: &mpsc::Receiver<String>, k: usize, log: &mut Vec<String>) -> i32 {
    wait_for_all(rx, &["process 1 started (pid", "job ready"], log);
    let pat = format!("process {k} started (pid");
    let line = log.iter().rev().find(|l| l.contains(&pat)).expect("every process started");
    line.rsplit("pid ").next().unwrap().trim_end_matches(')').parse().unwrap()
}

fn kill9(pid: i32) {
    // SAFETY: kill(2) on a pid the launcher reported; it may have exited already (ESRCH).
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

fn finish(child: Child, rx: mpsc::Receiver<String>, mut log: Vec<String>) -> (ExitStatus, String) {
    let status = wait_within(child, JOB_LIMIT, "a job with restarts");
    log.extend(rx.iter());
    (status, log.join("\n"))
}

#[test]
fn processes_killed_at_random_moments_restart_from_checkpoints_to_the_same_result() {
    let dir = tmpdir("random");
    let input = ratings(&dir);
    let (args, stats) = job(&input, &dir, "base", "0");
    let o = output(submit().args(&args));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let base = test_rmse(&stats);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let training_ms = (v["train_s"].as_f64().expect("train_s") * 1e3) as u64;
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let mut restarted = 0;
    for run in 0..10 {
        let (args, stats) = job(&input, &dir, &format!("run{run}"), "3");
        let (child, rx) = spawn_lines(submit().args(&args));
        let mut log = Vec::new();
        let victim = rng.gen_range(0..2);
        let pid = wait_pid(&rx, victim, &mut log);
        // A random moment within the uninterrupted run's training time.
        std::thread::sleep(Duration::from_millis(rng.gen_range(0..training_ms.max(1))));
        kill9(pid);
        let (status, text) = finish(child, rx, log);
        assert!(status.success(), "run {run}: killing process {victim} failed the job:\n{text}");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        let n = v["restarts"].as_array().expect("restarts in the stats").len();
        assert_eq!(n, usize::from(text.contains("restart 1 of 3")), "run {run}: {}", v["restarts"]);
        restarted += n;
        let rmse = test_rmse(&stats);
        assert!((rmse - base).abs() <= 0.01 * base, "run {run}: held-out RMSE {rmse} against {base} uninterrupted");
    }
    eprintln!("{restarted} of 10 kills restarted the job");
    assert!(restarted >= 8, "only {restarted} of 10 kills landed while the job ran");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn two_kills_in_a_row_restart_twice_and_exhausted_restarts_list_every_failure() {
    let dir = tmpdir("twice");
    let input = ratings(&dir);
    let kill_twice = |run: &str, restarts: &str| {
        let (args, stats) = job(&input, &dir, run, restarts);
        let (child, rx) = spawn_lines(submit().args(&args));
        let mut log = Vec::new();
        let pid = wait_pid(&rx, 0, &mut log);
        wait_for(&rx, "snapshot 8 complete", &mut log);
        kill9(pid);
        wait_for(&rx, "restart 1 of", &mut log);
        let pid = wait_pid(&rx, 1, &mut log);
        kill9(pid);
        let (status, text) = finish(child, rx, log);
        (status, text, stats)
    };
    let (status, text, stats) = kill_twice("twice", "3");
    assert!(status.success(), "{text}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let r = v["restarts"].as_array().unwrap();
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[0]["from_clock"], 8, "the first restart resumes from the checkpoint of clock 8: {r:?}");
    assert!(r[0]["failed"].as_str().unwrap().contains("process 0 was killed by signal 9"), "{r:?}");
    assert!(r[1]["failed"].as_str().unwrap().contains("process 1 was killed by signal 9"), "{r:?}");
    assert!(v["clocks_redone"].as_i64().is_some(), "{v}");
    // With one restart allowed, the second kill ends the job, and the message lists both.
    let (status, text, _) = kill_twice("once", "1");
    assert!(!status.success(), "{text}");
    let last = text
        .lines()
        .find(|l| l.contains("job failed:") && l.contains("not restarted"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        last.contains("process 1 was killed by signal 9")
            && last.contains("1 restarts of --restarts 1 used")
            && last.contains("before that")
            && last.contains("process 0 was killed by signal 9"),
        "{last}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
