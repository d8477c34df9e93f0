//! Helpers of the tests that run jobs on the YARN stand-in (PS_YARN_CONF) with the test HDFS
//! (HDFS_URL), both started by scripts/test.sh.

use super::{bin, output, spawn_lines, wait_for};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{mpsc, Mutex};

/// YARN jobs of one test file run one at a time (the kill test finds processes by name).
pub static SERIAL: Mutex<()> = Mutex::new(());

pub fn submit() -> Command {
    let conf = std::env::var("PS_YARN_CONF").expect("PS_YARN_CONF is not set: run through scripts/test.sh");
    let mut c = Command::new(bin("yarn-submit"));
    c.env("HADOOP_CONF_DIR", conf)
        .env("PS_RUNTIME_BIN", bin("ps-runtime"))
        .env("PS_APP_MASTER_BIN", bin("ps-app-master"));
    c
}

pub fn hdfs() -> String {
    std::env::var("HDFS_URL").expect("HDFS_URL is not set: run through scripts/test.sh")
}

pub fn ratings(tag: &str) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("ps-yarnjob-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let local = dir.join("r.tsv");
    let st = output(
        Command::new(bin("ps-runtime"))
            .args(["gen", "ratings", "--ratings", "40000", "--users", "1500", "--items", "300", "--rank", "4", "--out"])
            .arg(&local),
    );
    assert!(st.status.success());
    let url = format!("{}/ps-test/yarn-{tag}-{}/ratings/part-00000", hdfs(), std::process::id());
    let fs = ps_runtime::storage::storage_for(&url).unwrap();
    let mut f = fs.create(&url).unwrap();
    std::io::Write::write_all(&mut f, &std::fs::read(&local).unwrap()).unwrap();
    f.close().unwrap();
    (dir, url.trim_end_matches("/part-00000").to_string())
}

/// Owned strings, for argument lists.
pub fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Runtime processes of `app` (found by their container directory), as (pid, command line).
pub fn runtime_pids(app: &str) -> Vec<(u32, String)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
        // The runtime itself, not a `bash -c` wrapper the NodeManager may have started it under.
        let exe = cmd.split(' ').next().unwrap_or_default();
        if exe.ends_with("ps-runtime") && cmd.contains(" run ") && cwd.to_string_lossy().contains(app) {
            v.push((pid, cmd));
        }
    }
    v
}

/// Kills a YARN application if the test fails while it runs, so a failed test leaves no
/// application behind to slow down the next ones.
pub struct KillOnPanic(String);

impl Drop for KillOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = super::output_within(submit().args(["kill", &self.0]), std::time::Duration::from_secs(30));
        }
    }
}

/// A submitted application: the client, its output lines, the log so far, the application id,
/// and a guard that kills the application if the test panics.
pub struct Submitted {
    pub child: std::process::Child,
    pub rx: mpsc::Receiver<String>,
    pub log: Vec<String>,
    pub app: String,
    pub _guard: KillOnPanic,
}

/// Runs `cmd` (a `yarn-submit` command) and waits for its application id.
pub fn submit_app(cmd: &mut std::process::Command) -> Submitted {
    let (child, rx) = spawn_lines(cmd);
    let mut log = Vec::new();
    let app = wait_for(&rx, "application id: ", &mut log).replace("application id: ", "");
    Submitted { child, rx, log, _guard: KillOnPanic(app.clone()), app }
}

pub fn whoami() -> String {
    std::env::var("HADOOP_USER_NAME").or_else(|_| std::env::var("USER")).unwrap_or_else(|_| "root".into())
}

pub fn hdfs_as(user: &str) -> hdfs_native::Client {
    hdfs_native::ClientBuilder::new().with_url(hdfs()).with_user(user).build().unwrap()
}

/// The staging directory of `app` on the test HDFS.
pub fn staging_of(app: &str) -> String {
    format!("{}/user/{}/.ps-staging/{app}", hdfs(), whoami())
}
