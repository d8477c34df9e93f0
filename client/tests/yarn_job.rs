//! `yarn-submit --master yarn` end to end, against the YARN stand-in built on Hadoop's own server
//! code (PS_YARN_CONF) and the real test HDFS (HDFS_URL), both started by the test command:
//! submit over IPC (or REST) → our AM (IPC + SASL) → NodeManagers → runtime processes that read HDFS.

mod common;

use common::{bin, output, spawn_lines, wait_for, wait_within, JOB_LIMIT};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// YARN jobs of this file run one at a time (the kill test finds processes by name).
static SERIAL: Mutex<()> = Mutex::new(());

fn submit() -> Command {
    let conf = std::env::var("PS_YARN_CONF").expect("PS_YARN_CONF is not set: run through scripts/test.sh");
    let mut c = Command::new(bin("yarn-submit"));
    c.env("HADOOP_CONF_DIR", conf)
        .env("PS_RUNTIME_BIN", bin("ps-runtime"))
        .env("PS_APP_MASTER_BIN", bin("ps-app-master"));
    c
}

fn hdfs() -> String {
    std::env::var("HDFS_URL").expect("HDFS_URL is not set: run through scripts/test.sh")
}

fn ratings(tag: &str) -> (PathBuf, String) {
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

/// Spawns yarn-submit; returns it with a channel of its stdout and stderr lines.
fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Runtime processes of `app` (found by their container directory), as (pid, command line).
fn runtime_pids(app: &str) -> Vec<(u32, String)> {
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

#[test]
fn mf_on_yarn_reads_hdfs_and_writes_output_and_checkpoints_there() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, input) = ratings("mf");
    let base = input.trim_end_matches("/ratings").to_string();
    let (out, ck, stats) = (format!("{base}/out"), format!("{base}/ckpt"), dir.join("stats.json"));
    let mut args = s(&["--master", "yarn", "--workers", "2", "--threads", "2", "--worker-memory", "256"]);
    args.extend(s(&["--checkpoint", &ck, "--checkpoint-every", "6", "--stats", stats.to_str().unwrap()]));
    args.extend(s(&[
        "mf",
        "--input",
        &input,
        "--output",
        &out,
        "--passes",
        "6",
        "--clocks-per-pass",
        "3",
        "--rank",
        "6",
    ]));
    let o = output(submit().args(&args));
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "yarn-submit failed:\n{stdout}\n{stderr}");
    // The application id is printed first, then the tracking URL.
    let first = stdout.lines().next().unwrap_or_default();
    let app = first.strip_prefix("application id: ").expect("application id first").to_string();
    assert!(stdout.contains("tracking URL: http://"), "{stdout}");
    assert!(stderr.contains("FINISHED") && stderr.contains("SUCCEEDED"), "{stderr}");
    let fs = ps_runtime::storage::storage_for(&out).unwrap();
    assert!(fs.exists(&format!("{out}/_SUCCESS")).unwrap());
    let factors = fs.list(&format!("{out}/user_factors")).unwrap();
    assert!(factors.iter().map(|f| f.1).sum::<u64>() > 0);
    let store = ps_runtime::snapshot::CheckpointStore::open(&ck).unwrap();
    let list = store.list().unwrap();
    assert!(list.len() >= 2 && list.iter().all(|x| x.1), "{list:?}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(v["processes_count"], 2);
    let rmse = v["objective"].as_array().unwrap().last().unwrap()["value"].as_f64().unwrap();
    assert!(rmse < 1.2, "final RMSE {rmse}");
    // The RM's record agrees, and the staging directory is gone after success.
    let st = output(submit().args(["status", &app]));
    let rep: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!((rep["state"].as_str(), rep["finalStatus"].as_str()), (Some("FINISHED"), Some("SUCCEEDED")));
    assert!(!fs.exists(&format!("{}/user/{}/.ps-staging/{app}", hdfs(), whoami())).unwrap());
    fs.delete(&base).unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

/// Kills a YARN application if the test fails while it runs, so a failed test leaves no
/// application behind to slow down the next ones.
struct KillOnPanic(String);

impl Drop for KillOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = common::output_within(submit().args(["kill", &self.0]), std::time::Duration::from_secs(30));
        }
    }
}

/// A submitted application: the client, its output lines, the log so far, the application id,
/// and a guard that kills the application if the test panics.
struct Submitted {
    child: std::process::Child,
    rx: mpsc::Receiver<String>,
    log: Vec<String>,
    app: String,
    _guard: KillOnPanic,
}

/// Runs `cmd` (a `yarn-submit` command) and waits for its application id.
fn submit_app(cmd: &mut std::process::Command) -> Submitted {
    let (child, rx) = spawn_lines(cmd);
    let mut log = Vec::new();
    let app = wait_for(&rx, "application id: ", &mut log).replace("application id: ", "");
    Submitted { child, rx, log, _guard: KillOnPanic(app.clone()), app }
}

fn whoami() -> String {
    std::env::var("HADOOP_USER_NAME").or_else(|_| std::env::var("USER")).unwrap_or_else(|_| "root".into())
}

#[test]
fn killed_runtime_container_fails_the_application_with_its_status() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, input) = ratings("kill");
    let mut args = s(&["--master", "yarn", "--workers", "3", "--threads", "1", "--worker-memory", "256"]);
    // Slow enough (0.1 s per clock) to be killed mid-job.
    args.extend(s(&["mf", "--input", &input, "--passes", "100", "--rank", "4"]));
    args.extend(s(&["--straggler", "random", "--straggler-p", "1", "--straggler-delay", "0.1"]));
    let Submitted { child, rx, mut log, app, _guard } = submit_app(submit().args(&args));
    wait_for(&rx, ": RUNNING", &mut log);
    let t0 = Instant::now();
    let victim = loop {
        if let Some(p) = runtime_pids(&app).into_iter().find(|(_, c)| c.contains("--id 1 ")) {
            break p.0;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "runtime process 1 of {app} never appeared");
        std::thread::sleep(Duration::from_millis(100));
    };
    unsafe { libc::kill(victim as i32, libc::SIGKILL) };
    let status = wait_within(child, JOB_LIMIT, "yarn-submit after a killed container");
    log.extend(rx.iter());
    let text = log.join("\n");
    assert!(!status.success(), "{text}");
    assert!(text.contains("FAILED") && text.contains("process 1") && text.contains("exit status 137"), "{text}");
    // The AM stopped the other processes: none of this application's is left.
    let t1 = Instant::now();
    while !runtime_pids(&app).is_empty() {
        assert!(t1.elapsed() < Duration::from_secs(20), "left behind: {:?}", runtime_pids(&app));
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = ps_runtime::storage::storage_for(&input).and_then(|fs| fs.delete(input.trim_end_matches("/ratings")));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn yarn_submit_kill_stops_a_running_application() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A 1 MB container: the stand-in does not enforce it, but each runtime process must warn.
    let args = s(&["--master", "yarn", "--workers", "2", "--threads", "1", "--worker-memory", "1"]);
    let args = [args, s(&["demo", "--clocks", "600", "--delay-ms", "50"])].concat();
    let Submitted { child, rx, mut log, app, _guard } = submit_app(submit().args(&args));
    wait_for(&rx, ": RUNNING", &mut log);
    let logs =
        PathBuf::from(std::env::var("PS_YARN_DIR").expect("PS_YARN_DIR (scripts/test.sh)")).join("userlogs").join(&app);
    let t0 = Instant::now();
    loop {
        let warned = std::fs::read_dir(&logs)
            .map(|d| {
                d.flatten()
                    .filter_map(|c| std::fs::read_to_string(c.path().join("runtime.err")).ok())
                    .filter(|t| t.contains("of its container's 1 MB (--worker-memory)"))
                    .count()
            })
            .unwrap_or(0);
        if warned == 2 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{warned} of 2 processes warned about memory in {logs:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Submitted over IPC, the application belongs to the submitting user, and only that user
    // may kill it.
    let st = output(submit().args(["status", &app]));
    let rep: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!((rep["user"].as_str(), rep["state"].as_str()), (Some(whoami().as_str()), Some("RUNNING")));
    let denied = output(submit().env("HADOOP_USER_NAME", "mallory").args(["kill", &app]));
    let err = String::from_utf8_lossy(&denied.stderr);
    assert!(!denied.status.success() && err.contains("User mallory cannot perform operation MODIFY_APP"), "{err}");
    let k = output(submit().args(["kill", &app]));
    assert!(k.status.success(), "{}", String::from_utf8_lossy(&k.stderr));
    let rep: serde_json::Value = serde_json::from_slice(&k.stdout).unwrap();
    assert_eq!(rep["state"], "KILLED");
    let status = wait_within(child, JOB_LIMIT, "yarn-submit of a killed application");
    log.extend(rx.iter());
    assert!(!status.success() && log.join("\n").contains("KILLED"), "{}", log.join("\n"));
    let t1 = Instant::now();
    while !runtime_pids(&app).is_empty() {
        assert!(t1.elapsed() < Duration::from_secs(20), "left behind: {:?}", runtime_pids(&app));
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A worker that panics on YARN fails the application at once: its reason reaches the AM over
/// the rendezvous connection and the RM's diagnostics name the process and the panic message.
#[test]
fn panicking_worker_fails_the_application_naming_process_and_panic() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut args = s(&["--master", "yarn", "--workers", "3", "--threads", "1", "--worker-memory", "256", "demo"]);
    args.extend(s(&["--clocks", "100000", "--delay-ms", "5", "--fail-at-clock", "30", "--fail-worker", "1"]));
    let Submitted { child, rx, mut log, _guard, .. } = submit_app(submit().args(&args));
    wait_for(&rx, ": RUNNING", &mut log);
    let running = Instant::now();
    let status = wait_within(child, JOB_LIMIT, "yarn-submit of a panicking job");
    let took = running.elapsed();
    log.extend(rx.iter());
    let text = log.join("\n");
    assert!(!status.success(), "{text}");
    // Default peer_timeout_ms is 15 s: the failure must not wait for a timeout.
    assert!(took < Duration::from_secs(15), "FAILED only {took:?} after RUNNING:\n{text}");
    let diag = log.iter().find(|l| l.contains(" ended ") && l.contains("/ FAILED")).unwrap_or_else(|| panic!("{text}"));
    assert!(
        diag.contains("process 1 failed: worker thread 0 panicked: demo: injected failure of worker 1 at clock 30"),
        "the diagnostics do not name the process and the panic: {diag}"
    );
}

fn hdfs_as(user: &str) -> hdfs_native::Client {
    hdfs_native::ClientBuilder::new().with_url(hdfs()).with_user(user).build().unwrap()
}

/// With HDFS permissions on (the test HDFS has them), a job's staging directory is private to the
/// submitting user and holds no job secret: another user is refused even a listing.
#[test]
fn staging_directory_is_private_and_holds_no_secret() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // The test runs as the HDFS superuser (who started the NameNode) and gives alice a home, as
    // an administrator would.
    let admin = hdfs_native::ClientBuilder::new().with_url(hdfs()).build().unwrap();
    rt.block_on(async {
        admin.mkdirs("/user/alice", 0o755, true).await.unwrap();
        admin.set_owner("/user/alice", Some("alice"), Some("alice")).await.unwrap();
    });
    let args =
        s(&["--master", "yarn", "--workers", "2", "--threads", "1", "demo", "--clocks", "400", "--delay-ms", "15"]);
    let Submitted { child, rx, mut log, app, _guard } =
        submit_app(submit().args(&args).env("HADOOP_USER_NAME", "alice"));
    wait_for(&rx, ": RUNNING", &mut log);
    let staging = format!("/user/alice/.ps-staging/{app}");
    let (alice, mallory) = (hdfs_as("alice"), hdfs_as("mallory"));
    rt.block_on(async {
        let st = alice.get_file_info(&staging).await.unwrap();
        assert_eq!((st.permission, st.owner.as_str()), (0o700, "alice"), "staging directory {staging}");
        let names: Vec<String> =
            alice.list_status(&staging, false).await.unwrap().into_iter().map(|f| f.path).collect();
        assert!(names.iter().any(|n| n.ends_with("/job.json")), "{names:?}");
        assert!(!names.iter().any(|n| n.contains("secret")), "a secret file was staged: {names:?}");
        let e = mallory.list_status(&staging, false).await.unwrap_err().to_string();
        assert!(e.contains("Permission denied") || e.contains("AccessControlException"), "{e}");
        let e = mallory.read(&format!("{staging}/job.json")).await.err().expect("mallory read job.json").to_string();
        assert!(e.contains("Permission denied") || e.contains("AccessControlException"), "{e}");
        // The binary cache is private too.
        let cache = alice.get_file_info("/user/alice/.ps-staging/cache").await.unwrap();
        assert_eq!(cache.permission, 0o700);
        assert!(mallory.list_status("/user/alice/.ps-staging/cache", false).await.is_err());
    });
    let status = wait_within(child, JOB_LIMIT, "alice's job");
    log.extend(rx.iter());
    assert!(status.success(), "{}", log.join("\n"));
    rt.block_on(async {
        assert!(alice.get_file_info(&staging).await.is_err(), "staging directory left after success");
        // Only the leaf is private: parents created on the way keep ordinary permissions.
        assert_eq!(admin.get_file_info("/user").await.unwrap().permission, 0o755);
        assert_eq!(admin.get_file_info("/user/alice/.ps-staging").await.unwrap().permission, 0o755);
        admin.delete("/user/alice", true).await.unwrap();
    });
}

/// The rendezvous port is the tracking URL, open to anyone: spoofed, garbage, oversized and
/// silent connections and HTTP writes sent to it during a job change nothing, and the job succeeds.
#[test]
fn rendezvous_port_withstands_spoofed_garbage_and_oversized_input() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let stats = std::env::temp_dir().join(format!("ps-yarn-attack-{}.json", std::process::id()));
    let mut args = s(&["--master", "yarn", "--workers", "2", "--threads", "2", "--stats", stats.to_str().unwrap()]);
    args.extend(s(&["demo", "--clocks", "150", "--delay-ms", "10"]));
    let Submitted { child, rx, mut log, _guard, .. } = submit_app(submit().args(&args));
    let url = wait_for(&rx, "tracking URL: http://", &mut log);
    let addr = url.trim_start_matches("tracking URL: http://").trim_end_matches('/').to_string();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (st, a) = (stop.clone(), addr.clone());
    let attacker = std::thread::spawn(move || {
        use std::io::{Read, Write};
        // None once the AM is gone (the job finished): the attack ends there.
        let send = |data: &[u8]| -> Option<String> {
            let mut c = std::net::TcpStream::connect(&a).ok()?;
            c.set_read_timeout(Some(Duration::from_secs(15))).ok();
            let _ = c.write_all(data);
            let mut out = Vec::new();
            let _ = c.read_to_end(&mut out);
            Some(String::from_utf8_lossy(&out).into_owned())
        };
        let (mut rounds, mut statuses) = (0, Vec::new());
        let mut silent = Vec::new();
        let spoof = format!("hello 0 127.0.0.1 1 {} {}\n", "ab".repeat(16), "cd".repeat(32));
        let foreign = format!("hello 1 10.9.9.9 1 {} {}\n", "00".repeat(16), "00".repeat(32));
        let post = b"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nkill";
        while !st.load(std::sync::atomic::Ordering::Relaxed) {
            // A hello for a real process id and node with a made-up MAC, one without a MAC (all
            // the old protocol needed to put an attacker's address in the hostfile), one from a
            // foreign host,
            // garbage, a 1 MiB line, an HTTP write; each must get no answer (or a 405).
            let answers: Option<Vec<String>> = [
                spoof.as_bytes(),
                b"hello 1 127.0.0.1 1\n",
                foreign.as_bytes(),
                b"\x00\xff\x7fgarbage\r\n",
                &vec![b'A'; 1 << 20],
                post,
            ]
            .into_iter()
            .map(send)
            .collect();
            let Some(answers) = answers else { break };
            assert!(answers[..5].iter().all(String::is_empty), "an attack got an answer: {answers:?}");
            if answers[5].is_empty() {
                // The AM may have exited between accepting the POST and answering it (the job
                // ended mid-round): that is fine if it is gone now; otherwise it must answer.
                match send(post) {
                    None => break,
                    Some(r) => assert!(r.starts_with("HTTP/1.0 405"), "POST answered {:?}, then {r:?}", answers[5]),
                }
            } else {
                assert!(answers[5].starts_with("HTTP/1.0 405"), "POST answered {:?}", answers[5]);
            }
            let Some(get) = send(b"GET / HTTP/1.1\r\n\r\n") else { break };
            statuses.push(get);
            if silent.len() < 8 {
                silent.extend(std::net::TcpStream::connect(&a).ok());
            }
            rounds += 1;
        }
        (rounds, statuses)
    });
    let status = wait_within(child, JOB_LIMIT, "the job under attack");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (rounds, statuses) = attacker.join().unwrap();
    log.extend(rx.iter());
    assert!(status.success(), "the job failed under attack:\n{}", log.join("\n"));
    assert!(rounds >= 3, "only {rounds} rounds of attack ran during the job");
    // The status page kept answering, and counted the refusals.
    let refused = statuses
        .iter()
        .filter_map(|r| r.split("\r\n\r\n").nth(1))
        .filter_map(|b| serde_json::from_str::<serde_json::Value>(b).ok())
        .filter_map(|v| v["refused_connections"].as_u64())
        .max()
        .unwrap_or(0);
    assert!(refused >= 3 * rounds as u64 / 2, "refused {refused} connections in {rounds} rounds");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!((v["clocks"].as_i64(), v["processes_count"].as_i64()), (Some(150), Some(2)));
    assert!(v["checks"].as_u64().unwrap() > 0);
    std::fs::remove_file(&stats).ok();
}

/// `--conf-dir` replaces `HADOOP_CONF_DIR` (here pointing nowhere), and the site files' values
/// are expanded as Hadoop expands them: the RM addresses are written as
/// `${yarn.resourcemanager.hostname}:PORT`, as in Hadoop's own defaults. This job goes through
/// the REST API (`--submit-via rest`), the others through IPC, the default, and the conf sets
/// `yarn.http.policy=HTTPS_ONLY`: the client uses the RM's HTTPS address and trusts the
/// stand-in's test CA only through `SSL_CERT_FILE`.
/// The stand-in's test control (not a Hadoop API): `name=NAME` arms the next application of that
/// name to fail over to the other ResourceManager right after its first ask; `app=ID` moves a
/// running application now.
fn standin_failover(query: &str) {
    let conf = std::env::var("PS_YARN_CONF").expect("PS_YARN_CONF (scripts/test.sh)");
    let web = ps_yarn::conf::HadoopConf::load_dir(std::path::Path::new(&conf)).unwrap().rm_webapp().unwrap();
    let r = reqwest::blocking::Client::new().put(format!("http://{web}/ws/v1/psyarn/failover?{query}")).send().unwrap();
    assert!(r.status().is_success(), "{}", r.text().unwrap_or_default());
}

/// ResourceManager HA (the stand-in's rm1 and rm2): the job moves to the other RM twice, right
/// after its AM's first ask (no container allocated yet, so the AM must re-send its asks to the
/// new RM) and again while its processes run. The AM fails over, registers again each time, and
/// the job ends SUCCEEDED.
#[test]
fn job_survives_resourcemanager_failovers() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let name = format!("ps-ha-{}", std::process::id());
    standin_failover(&format!("name={name}"));
    let args = s(&["--master", "yarn", "--workers", "2", "--threads", "1", "--name", &name]);
    let args = [args, s(&["demo", "--clocks", "150", "--delay-ms", "20"])].concat();
    let Submitted { child, rx, mut log, app, _guard } = submit_app(submit().args(&args));
    wait_for(&rx, ": RUNNING", &mut log);
    let t0 = Instant::now();
    while runtime_pids(&app).len() < 2 {
        assert!(t0.elapsed() < Duration::from_secs(60), "the runtime processes of {app} never appeared");
        std::thread::sleep(Duration::from_millis(100));
    }
    standin_failover(&format!("app={app}"));
    let status = wait_within(child, JOB_LIMIT, "yarn-submit across RM failovers");
    log.extend(rx.iter());
    let text = log.join("\n");
    assert!(status.success() && text.contains("SUCCEEDED"), "{text}");
    let logs = PathBuf::from(std::env::var("PS_YARN_DIR").expect("PS_YARN_DIR")).join("userlogs").join(&app);
    let am_log: String = std::fs::read_dir(&logs)
        .unwrap()
        .flatten()
        .filter_map(|c| std::fs::read_to_string(c.path().join("app-master.err")).ok())
        .collect();
    assert_eq!(am_log.matches("registered again with the ResourceManager").count(), 2, "{am_log}");
    assert!(am_log.contains("re-sending 2 outstanding container(s)"), "{am_log}");
}

#[test]
fn conf_dir_with_variables_in_site_files_submits() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let from = PathBuf::from(std::env::var("PS_YARN_CONF").expect("PS_YARN_CONF (scripts/test.sh)"));
    let dir = std::env::temp_dir().join(format!("ps-yarnjob-confdir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["core-site.xml", "hdfs-site.xml", "yarn-site.xml"] {
        let text = std::fs::read_to_string(from.join(f)).unwrap_or_default();
        let text = if f == "yarn-site.xml" {
            let host = "<value>127.0.0.1:";
            assert!(text.matches(host).count() >= 4, "the stand-in's addresses: {text}");
            let https = "<property><name>yarn.http.policy</name><value>HTTPS_ONLY</value></property>";
            text.replace(host, "<value>${yarn.resourcemanager.hostname}:")
                .replace("</configuration>", &format!("{https}</configuration>"))
        } else {
            text
        };
        std::fs::write(dir.join(f), text).unwrap();
    }
    let conf = ["--conf-dir", dir.to_str().unwrap(), "--submit-via", "rest"];
    let ca = PathBuf::from(std::env::var("PS_YARN_DIR").expect("PS_YARN_DIR")).join("ssl/ca.pem");
    // Without the CA the RM's certificate is not trusted, and the error says what to do.
    let untrusted = output(
        submit()
            .env("HADOOP_CONF_DIR", "/nonexistent")
            .env("SSL_CERT_FILE", "/dev/null")
            .args(["status", "application_1_1"])
            .args(conf),
    );
    let text = String::from_utf8_lossy(&untrusted.stderr);
    assert!(!untrusted.status.success() && text.contains("https://") && text.contains("SSL_CERT_FILE"), "{text}");
    let args = s(&["--master", "yarn", "--workers", "1", "--threads", "1"]);
    let submit = || {
        let mut c = submit();
        c.env("HADOOP_CONF_DIR", "/nonexistent").env("SSL_CERT_FILE", &ca);
        c
    };
    let o = output(submit().args(conf).args(&args).args(["demo", "--clocks", "20"]));
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "yarn-submit failed:\n{stdout}\n{stderr}");
    assert!(stderr.contains("FINISHED") && stderr.contains("SUCCEEDED"), "{stderr}");
    // status takes the same options.
    let app = stdout.lines().find_map(|l| l.strip_prefix("application id: ")).expect("an application id").to_string();
    let st = output(submit().args(["status", &app]).args(conf));
    let rep: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!((rep["state"].as_str(), rep["finalStatus"].as_str()), (Some("FINISHED"), Some("SUCCEEDED")));
    std::fs::remove_dir_all(&dir).ok();
}

/// Under `--master yarn` a local path would name a different disk in every container: inputs,
/// outputs and checkpoints given as local paths are refused before anything is submitted.
#[test]
fn local_paths_are_refused_before_submission() {
    for (extra, named) in [
        (&["mf", "--input", "data/r.tsv"][..], "--input data/r.tsv"),
        (&["mf", "--input", "hdfs:///r", "--output", "file:///tmp/out"], "--output file:///tmp/out"),
        (&["--checkpoint", "/tmp/ck", "mf", "--input", "hdfs:///r"], "--checkpoint /tmp/ck"),
    ] {
        let o = output(submit().args(["--master", "yarn", "--workers", "1"]).args(extra));
        let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(!o.status.success(), "{extra:?} was accepted");
        assert!(stderr.contains(&format!("{named}: a local path under --master yarn")), "{stderr}");
        assert!(!stdout.contains("application id"), "submitted anyway: {stdout}");
    }
}

/// The staging directory of `app` on the test HDFS.
fn staging_of(app: &str) -> String {
    format!("{}/user/{}/.ps-staging/{app}", hdfs(), whoami())
}

/// The AM removes the job's files from its staging directory after it unregisters, even when
/// nobody follows the job (the client was killed): only `stats/` stays, for `yarn-submit` to
/// merge. With `--keep-staging` everything stays.
#[test]
fn am_cleans_staging_without_the_client_and_keep_staging_keeps_it() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fs = ps_runtime::storage::storage_for(&hdfs()).unwrap();
    let args =
        s(&["--master", "yarn", "--workers", "1", "--threads", "1", "demo", "--clocks", "60", "--delay-ms", "20"]);
    let Submitted { mut child, rx, mut log, app, _guard } = submit_app(submit().args(&args));
    wait_for(&rx, ": RUNNING", &mut log);
    child.kill().unwrap();
    child.wait().unwrap();
    let staging = staging_of(&app);
    let t0 = Instant::now();
    loop {
        let st = output(submit().args(["status", &app]));
        let rep: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
        let children = fs.children(&staging).unwrap_or_default();
        if rep["state"] == "FINISHED" && children == ["stats"] {
            assert_eq!(rep["finalStatus"], "SUCCEEDED", "{rep}");
            break;
        }
        assert!(t0.elapsed() < JOB_LIMIT, "state {rep} with staging {children:?} after {JOB_LIMIT:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(fs.children(&format!("{staging}/stats")).unwrap().len(), 1, "the process's stats are kept");
    fs.delete(&staging).unwrap();

    // With --keep-staging (and listening ports confined to a range, as on a firewalled cluster).
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let first = probe.local_addr().unwrap().port().min(65000);
    drop(probe);
    let range = first..=first + 30;
    let ports = format!("{}-{}", range.start(), range.end());
    let o = output(submit().args(["--keep-staging", "--port-range", &ports]).args(&args));
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "yarn-submit failed:\n{stdout}\n{stderr}");
    let app = stdout.lines().find_map(|l| l.strip_prefix("application id: ")).expect("an application id").to_string();
    let staging = staging_of(&app);
    let kept = fs.children(&staging).unwrap();
    for f in ["hostfile", "job.json", "stats"] {
        assert!(kept.iter().any(|k| k == f), "{f} is missing from {kept:?}");
    }
    let hostfile = String::from_utf8(fs.read_at(&format!("{staging}/hostfile"), 0, 1 << 20).unwrap()).unwrap();
    let hosts = ps_runtime::Hostfile::parse(&hostfile, "hostfile").unwrap();
    let runtime_port: u16 = hosts.addr(0).rsplit(':').next().unwrap().parse().unwrap();
    let url = stdout.lines().find_map(|l| l.strip_prefix("tracking URL: ")).expect("a tracking URL");
    let am_port: u16 = url.trim_end_matches('/').rsplit(':').next().unwrap().parse().unwrap();
    assert!(range.contains(&runtime_port) && range.contains(&am_port), "{ports}: runtime {runtime_port}, AM {url}");
    assert!(stderr.contains("staging directory kept (--keep-staging)"), "{stderr}");
    fs.delete(&staging).unwrap();
}

/// The portable binaries of `scripts/package.sh` (glibc 2.17, stripped) run a job on YARN from
/// `dist/yarn-submit`, which ships its neighbours; each binary is uploaded once into the
/// content-hash cache and reused by the next job.
#[test]
fn dist_binaries_run_on_yarn_and_are_uploaded_once() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dist = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist");
    let names = ["yarn-submit", "ps-app-master", "ps-runtime"];
    for n in names {
        let len = std::fs::metadata(dist.join(n))
            .unwrap_or_else(|_| panic!("dist/{n} is missing: run scripts/package.sh"))
            .len();
        assert!(len < 25 << 20, "dist/{n} is {len} bytes");
    }
    let fs = ps_runtime::storage::storage_for(&hdfs()).unwrap();
    let cache = format!("{}/user/{}/.ps-staging/cache", hdfs(), whoami());
    fs.delete(&cache).unwrap();
    let conf = std::env::var("PS_YARN_CONF").expect("PS_YARN_CONF (scripts/test.sh)");
    let run = || {
        let mut c = Command::new(dist.join("yarn-submit"));
        c.env("HADOOP_CONF_DIR", &conf).env_remove("PS_RUNTIME_BIN").env_remove("PS_APP_MASTER_BIN");
        let o = output(c.args(["--master", "yarn", "--workers", "1", "--threads", "1", "demo", "--clocks", "20"]));
        let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "dist/yarn-submit failed:\n{stdout}\n{stderr}");
        stderr.to_string()
    };
    let first = run();
    let hash = |n: &str| {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(std::fs::read(dist.join(n)).unwrap()))
    };
    let mtimes: Vec<u64> = ["ps-app-master", "ps-runtime"]
        .iter()
        .map(|n| {
            assert!(first.contains(&format!("{n}: uploading")), "{first}");
            fs.status(&format!("{cache}/{}", hash(n))).unwrap().1
        })
        .collect();
    let second = run();
    for (n, m) in ["ps-app-master", "ps-runtime"].iter().zip(mtimes) {
        assert!(second.contains(&format!("{n}: reusing {cache}/{}", hash(n))), "{second}");
        assert_eq!(fs.status(&format!("{cache}/{}", hash(n))).unwrap().1, m, "{n} was uploaded again");
    }
    assert!(!second.contains("needs glibc"), "{second}");
}
