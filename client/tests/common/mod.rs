//! Helpers shared by the end-to-end tests: the built binaries, and running a job while reading
//! its log lines. Every wait on a job is bounded: a hang fails the test (and kills the job)
//! instead of stalling CI.
#![allow(dead_code)]

pub mod browser;
pub mod yarn;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Upper bound of one job in these tests (they take seconds; this only catches hangs).
pub const JOB_LIMIT: Duration = Duration::from_secs(180);

/// A binary of this workspace (they are built next to `yarn-submit`).
pub fn bin(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_yarn-submit")).with_file_name(name)
}

/// A fresh directory for test `tag` of suite `suite` under the temp dir.
pub fn tmpdir(suite: &str, tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ps-{suite}-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Netflix-shaped ratings with a planted rank-5 model (`ps-runtime gen ratings`), written to
/// `dir/ratings.tsv`; returns its path.
pub fn gen_ratings(dir: &std::path::Path, ratings: u32, users: u32, items: u32) -> String {
    let out = dir.join("ratings.tsv");
    let (r, u, i) = (ratings.to_string(), users.to_string(), items.to_string());
    let st = output(
        Command::new(bin("ps-runtime"))
            .args(["gen", "ratings", "--ratings", &r, "--users", &u, "--items", &i, "--rank", "5", "--out"])
            .arg(&out),
    );
    assert!(st.status.success());
    out.to_string_lossy().into_owned()
}

/// Children die with the test thread that started them, so an aborted test leaves nothing behind
/// (yarn-submit in turn takes its runtime processes down with it).
fn die_with_parent(cmd: &mut Command) -> &mut Command {
    // SAFETY: prctl in the child between fork and exec; async-signal-safe, no allocation.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        })
    }
}

/// Starts `cmd` and returns it with a channel of its stdout and stderr lines. The channel ends
/// when both streams close.
pub fn spawn_lines(cmd: &mut Command) -> (Child, mpsc::Receiver<String>) {
    let mut child = die_with_parent(cmd).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (tx, rx) = mpsc::channel();
    for stream in
        [Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>, Box::new(child.stderr.take().unwrap())]
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(stream).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
    }
    (child, rx)
}

/// Reads lines until each of `pats` has been seen, in any order, and returns the first line
/// with each (processes log concurrently: a process may say "job ready" before the launcher
/// logs that it started the last one). Every line read is added to `log`. Panics with the log
/// after two minutes.
pub fn wait_for_all(rx: &mpsc::Receiver<String>, pats: &[&str], log: &mut Vec<String>) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut found: Vec<Option<String>> = vec![None; pats.len()];
    while found.iter().any(Option::is_none) {
        let l = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).unwrap_or_else(|_| {
            let missing: Vec<&str> = pats.iter().zip(&found).filter(|(_, f)| f.is_none()).map(|(p, _)| *p).collect();
            panic!("no {missing:?} in log:\n{}", log.join("\n"))
        });
        log.push(l.clone());
        if let Some(i) = pats.iter().zip(&found).position(|(p, f)| f.is_none() && l.contains(p)) {
            found[i] = Some(l);
        }
    }
    found.into_iter().flatten().collect()
}

/// Reads lines until one contains `pat` and returns it; every line read is added to `log`.
/// Panics with the log after two minutes.
pub fn wait_for(rx: &mpsc::Receiver<String>, pat: &str, log: &mut Vec<String>) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let l = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no '{pat}' in log:\n{}", log.join("\n")));
        log.push(l.clone());
        if l.contains(pat) {
            return l;
        }
    }
}

/// Waits for `child` to exit within `limit`. `None` if it did not (it has then been killed).
pub fn exit_within(child: Child, limit: Duration) -> Option<ExitStatus> {
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut child = child;
        let _ = tx.send(child.wait());
    });
    match rx.recv_timeout(limit) {
        Ok(r) => Some(r.expect("waiting for a child")),
        Err(_) => {
            // SAFETY: kill(2) on the pid of a child that has not been reaped (the waiter still
            // blocks in wait()).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let _ = rx.recv_timeout(Duration::from_secs(10));
            None
        }
    }
}

/// Waits for `child` to exit within `limit`; on timeout kills it and fails the test.
pub fn wait_within(child: Child, limit: Duration, what: &str) -> ExitStatus {
    exit_within(child, limit).unwrap_or_else(|| panic!("{what} did not finish within {limit:?}; killed it"))
}

/// `cmd.output()` with a time limit: on timeout the command is killed and the test fails with
/// what it printed.
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    let what = format!("{cmd:?}");
    let mut child =
        die_with_parent(cmd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut readers = [child.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>), None];
    readers[1] = child.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>);
    let [so, se] = readers.map(|r| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    });
    let status = exit_within(child, limit);
    let (stdout, stderr) = (so.join().unwrap_or_default(), se.join().unwrap_or_default());
    match status {
        Some(status) => Output { status, stdout, stderr },
        None => panic!(
            "{what} did not finish within {limit:?}; killed it. Its output:\n{}\n{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        ),
    }
}

/// `output_within` with the default job limit.
pub fn output(cmd: &mut Command) -> Output {
    output_within(cmd, JOB_LIMIT)
}
