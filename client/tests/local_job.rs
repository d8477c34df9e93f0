//! End-to-end tests of `yarn-submit --master local[N]` with real `ps-runtime` processes.

mod common;

use common::{bin, exit_within, output, spawn_lines, wait_for, wait_for_all};
use ps_testkit::{needs, Service};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn submit() -> Command {
    let mut c = Command::new(bin("yarn-submit"));
    c.env("PS_RUNTIME_BIN", bin("ps-runtime"));
    c
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ps-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Starts a job and returns it with a channel of its log lines.
fn spawn_job(args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    spawn_lines(submit().args(args))
}

#[test]
fn demo_job_succeeds_and_writes_stats() {
    let dir = tmpdir("stats");
    let stats = dir.join("stats.json");
    let out = output(
        submit()
            .args(["--master", "local[3]", "--threads", "2", "--consistency", "essp", "--staleness", "2"])
            .arg("--stats")
            .arg(&stats)
            .arg("--stats-per-clock")
            .args(["demo", "--clocks", "15", "--jitter-ms", "2"]),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The per-clock lines outlive the (temporary) job directory, next to the stats file.
    for k in 0..3 {
        let text = std::fs::read_to_string(dir.join(format!("clocks-{k}.jsonl"))).expect("per-clock stats kept");
        let clocks: Vec<i64> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["clock"].as_i64().unwrap())
            .collect();
        assert_eq!(clocks, (0..15).collect::<Vec<i64>>(), "process {k}: one line per clock");
    }
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    for k in [
        "clocks",
        "wall_s",
        "compute_s",
        "wait_s",
        "handoff_wait_s",
        "gets",
        "get_misses",
        "bytes_sent",
        "bytes_recv",
        "staleness_hist",
        "config",
    ] {
        assert!(v.get(k).is_some(), "stats lack {k}: {v}");
    }
    assert_eq!(v["clocks"], 15);
    assert_eq!(v["handoff_wait_s"], 0.0, "the demo's threads hand nothing to each other");
    assert_eq!(v["config"]["runtime"]["consistency"], "essp");
    assert_eq!(v["config"]["runtime"]["staleness"], 2);
    // 6 threads x 15 clocks x (6 own rows + 4 shared rows) reads.
    assert_eq!(v["gets"], 6 * 15 * 10);
    assert!(v["bytes_sent"].as_u64().unwrap() > 0);
    let hist = v["staleness_hist"].as_object().unwrap();
    assert_eq!(hist.values().map(|c| c.as_u64().unwrap()).sum::<u64>(), 900);
    assert!(hist.keys().all(|k| (-3..=-1).contains(&k.parse::<i64>().unwrap())), "{hist:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_options_fail_fast_with_a_clear_message() {
    let out = output(submit().args(["--master", "local[2]", "demo", "--clocks", "x"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--clocks"));
    let out = output(submit().args(["--master", "local[2]", "nosuchapp"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown application 'nosuchapp'"));
    let out = output(submit().args(["--consistency", "eventual", "demo"]));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bsp, ssp, essp, async"));
    // spark-submit conventions: an app's --help exits 0; an unknown option before the app is
    // reported as such; usage errors exit 2 with --master yarn too (checked before any cluster).
    let out = output(submit().args(["mf", "--help"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(text.contains("Usage: mf") && text.contains("--rank"), "{text}");
    let out = output(submit().args(["--bogus", "mf"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown option '--bogus'"));
    let out = output(submit().args(["--master", "yarn", "mf", "--input", "hdfs:///x", "--bogus"]));
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let help = String::from_utf8_lossy(&output(submit().arg("--help")).stdout).to_string();
    for (app, _) in ps_job::AppCatalog::builtin().apps() {
        assert!(help.lines().any(|l| l.trim_start().starts_with(app) && l.len() > 20), "{app} in:\n{help}");
    }
    assert!(help.contains("yarn-submit status APP_ID") && help.contains("yarn-submit kill APP_ID"));
    // --conf KEY=VALUE: a bad key or value is reported with the key.
    for (kv, says) in [
        ("stalenes=2", "--conf stalenes: no setting 'stalenes'"),
        ("checkpoint.evry=2", "--conf checkpoint.evry: no setting 'evry'"),
        ("threads.x=1", "--conf threads.x: 'threads' is a setting, not a section"),
        ("staleness=x", "--conf staleness: invalid type"),
    ] {
        let out = output(submit().args(["--conf", kv, "demo"]));
        assert_eq!(out.status.code(), Some(2), "{kv}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{kv}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// Runtime settings as spark-submit takes them: `--conf KEY=VALUE` (nested keys with dots) over
/// `--properties-file` (JSON), flags over both; `--conf FILE` still reads a file, with a warning.
#[test]
fn conf_settings_layer_over_the_properties_file() {
    let dir = tmpdir("conf");
    let (props, stats) = (dir.join("rt.json"), dir.join("stats.json"));
    std::fs::write(&props, r#"{"staleness": 1, "comm_threads": 2, "checkpoint": {"keep": 7, "snapshot": "approx"}}"#)
        .unwrap();
    let run = |args: &[&str]| {
        let out = output(
            submit().args(["--master", "local[2]", "--stats"]).arg(&stats).args(args).args(["demo", "--clocks", "4"]),
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        (v["config"]["runtime"].clone(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let p = props.to_str().unwrap();
    let (rt, _) =
        run(&["--properties-file", p, "--conf", "staleness=3", "--conf", "checkpoint.keep=5", "--prefetch", "off"]);
    assert_eq!((rt["staleness"].as_u64(), rt["comm_threads"].as_u64()), (Some(3), Some(2)), "{rt}");
    assert_eq!(rt["checkpoint"]["keep"].as_u64(), Some(5), "--conf over the file: {rt}");
    assert_eq!(rt["checkpoint"]["snapshot"], "approx", "the file's other keys in the section stay: {rt}");
    assert_eq!(rt["prefetch"], "off");
    let (rt, log) = run(&["--conf", p]);
    assert_eq!(rt["checkpoint"]["keep"].as_u64(), Some(7), "{rt}");
    assert!(log.contains("a file goes to --properties-file now"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `local[*]` is one worker per core: one process with a thread per core unless the user chose
/// the threads, then cores / threads processes.
#[test]
fn local_star_is_one_worker_per_core() {
    let dir = tmpdir("local-star");
    let stats = dir.join("stats.json");
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let shape = |args: &[&str]| {
        let out = output(
            submit().args(["--master", "local[*]", "--stats"]).arg(&stats).args(args).args(["demo", "--clocks", "3"]),
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        (
            v["config"]["processes"].as_u64().unwrap() as usize,
            v["config"]["runtime"]["threads"].as_u64().unwrap() as usize,
        )
    };
    assert_eq!(shape(&[]), (1, cores), "no thread count: one process, a thread per core");
    assert_eq!(shape(&["--threads", "1"]), (cores, 1));
    assert_eq!(shape(&["--conf", "threads=2"]), ((cores / 2).max(1), 2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn geo_flags_place_processes_in_data_centers_and_count_wan_bytes() {
    let dir = tmpdir("geo");
    let stats = dir.join("stats.json");
    let out = output(
        submit()
            .args(["--master", "local[4]", "--threads", "1", "--dc-of", "0,1,0,1", "--wan-mbps", "200"])
            .args(["--wan-delay-ms", "5", "--inter-dc", "ssp", "--stats"])
            .arg(&stats)
            .args(["demo", "--clocks", "6"]),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let geo = &v["config"]["runtime"]["geo"];
    assert_eq!(geo["dc_of"], serde_json::json!([0, 1, 0, 1]), "{geo}");
    assert_eq!((geo["wan_mbps"].as_f64(), geo["wan_delay_ms"].as_f64()), (Some(200.0), Some(5.0)));
    let (wan, all) = (v["wan_bytes_sent"].as_u64().unwrap(), v["bytes_sent"].as_u64().unwrap());
    assert!(wan > 0 && wan < all, "WAN {wan} of {all} bytes");
    for p in v["processes"].as_array().unwrap() {
        assert!(p["wan_bytes_recv"].as_u64().unwrap() > 0, "{p}");
    }
    // Per-pair links from a file, carried in the job's configuration.
    let matrix = dir.join("wan.json");
    std::fs::write(
        &matrix,
        r#"{"datacenters": ["east", "west"], "mbps": [[0, 500], [400, 0]], "delay_ms": [[0, 3], [4, 0]]}"#,
    )
    .unwrap();
    let out = output(
        submit()
            .args(["--master", "local[2]", "--threads", "1", "--datacenters", "2", "--wan-matrix"])
            .arg(&matrix)
            .arg("--stats")
            .arg(&stats)
            .args(["demo", "--clocks", "3"]),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(v["config"]["runtime"]["geo"]["wan_matrix"]["datacenters"], serde_json::json!(["east", "west"]));
    std::fs::write(&matrix, r#"{"datacenters": ["east", "west"], "mbps": [[0, -1], [400, 0]]}"#).unwrap();
    let out =
        output(submit().args(["--master", "local[2]", "--datacenters", "2", "--wan-matrix"]).arg(&matrix).arg("demo"));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mbps from east to west must be positive"));
    // ASP through the flags: every change mirrored, so the demo's exact checks hold.
    let out = output(
        submit()
            .args(["--master", "local[2]", "--threads", "1", "--datacenters", "2", "--inter-dc", "asp"])
            .args(["--significance", "0", "--mirror-clock-bound", "0", "--stats"])
            .arg(&stats)
            .args(["--soft-significance", "demo", "--clocks", "5", "--window", "2"]),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(v["config"]["runtime"]["geo"]["inter_dc"], "asp");
    assert_eq!(v["config"]["runtime"]["geo"]["soft_significance"], true);
    assert!(v["significant_updates"].as_u64().unwrap() > 0, "{v}");
    assert!(v["selective_barriers"].is_u64(), "{v}");
    let out = output(submit().args(["--master", "local[2]", "--soft-significance=maybe", "demo"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'maybe' is not one of on, off"));
    // ASP jobs checkpoint: one data center's copy holds the tables, every worker its state.
    let ck = dir.join("asp-ck");
    let out = output(
        submit()
            .args(["--master", "local[2]", "--threads", "1", "--datacenters", "2", "--inter-dc", "asp"])
            .arg("--checkpoint")
            .arg(&ck)
            .args(["--checkpoint-every", "2", "--conf", "checkpoint.when_busy=wait", "demo", "--clocks", "5"]),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ck.join("clock-4/MANIFEST.json")).unwrap()).unwrap();
    assert_eq!(m["resumable"], true, "{m}");
    assert_eq!(m["workers"].as_array().unwrap().len(), 2, "{m}");
    for t in m["tables"].as_array().unwrap() {
        let owners: Vec<u64> = t["shards"].as_array().unwrap().iter().map(|f| f["owner"].as_u64().unwrap()).collect();
        assert_eq!(owners, [0], "{m}");
    }
    // Placement by YARN node needs YARN.
    let out = output(submit().args(["--master", "local[2]", "--dc-by", "rack", "demo"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--dc-by and --dc-hosts place processes by the YARN nodes"));
    // Data centers that do not fit the job are a usage error, before anything starts.
    let out = output(submit().args(["--master", "local[2]", "--datacenters", "3", "demo"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("geo.datacenters"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// SIGKILL of one process: the whole job exits non-zero within 30 s, naming the process, and no
/// runtime process is left behind.
#[test]
fn killed_process_fails_the_job_naming_it() {
    let (child, rx) =
        spawn_job(&["--master", "local[3]", "--threads", "2", "demo", "--clocks", "100000", "--delay-ms", "5"]);
    let mut log = Vec::new();
    let started = wait_for(&rx, "process 1 started (pid", &mut log);
    let pid: i32 = started.rsplit("pid ").next().unwrap().trim_end_matches(')').parse().unwrap();
    wait_for(&rx, "job ready", &mut log);
    let t0 = Instant::now();
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let st = exit_within(child, Duration::from_secs(30)).expect("job did not exit within 30 s");
    assert!(t0.elapsed() < Duration::from_secs(30));
    assert!(!st.success());
    log.extend(rx.try_iter());
    let text = log.join("\n");
    assert!(text.contains("process 1 was killed by signal 9"), "{text}");
    // The survivors say which peer they lost.
    assert!(text.contains("lost process 1"), "{text}");
}

/// A connection that does not know the job secret is refused and logged; the job carries on.
#[test]
fn connection_without_secret_is_rejected_and_job_continues() {
    let dir = tmpdir("secret");
    let (child, rx) = spawn_job(&[
        "--master",
        "local[2]",
        "--job-dir",
        dir.to_str().unwrap(),
        "demo",
        "--clocks",
        "150",
        "--delay-ms",
        "10",
    ]);
    let mut log = Vec::new();
    wait_for(&rx, "job ready", &mut log);
    let hosts = std::fs::read_to_string(dir.join("hostfile")).unwrap();
    let addr = hosts.lines().next().unwrap().split_whitespace().skip(1).collect::<Vec<_>>().join(":");
    // 1: garbage instead of a handshake.
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    let _ = s.write_all(b"\x00\x00\x00\x44GET / HTTP/1.1\r\n\r\n".repeat(4).as_slice());
    wait_for(&rx, "refused connection", &mut log);
    // 2: a well-formed handshake with the wrong secret.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let err = rt.block_on(async {
        let sock = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let mut conn = tokio_util::codec::Framed::new(sock, ps_runtime::wire::auth::handshake_codec());
        let p = ps_runtime::WireProtection::default();
        ps_runtime::wire::auth::connect(&mut conn, b"not the secret", 1, p).await.map(|_| ())
    });
    assert!(err.is_err(), "handshake with a wrong secret succeeded");
    wait_for(&rx, "wrong job secret", &mut log);
    let st = exit_within(child, Duration::from_secs(120)).expect("job hung");
    log.extend(rx.try_iter());
    assert!(st.success(), "job failed after the bad connections:\n{}", log.join("\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A process that stops answering (SIGSTOP) is declared lost after `peer_timeout_ms`; the job
/// fails naming it instead of hanging, and the stopped process is cleaned up.
#[test]
fn silent_process_is_detected_by_heartbeat_timeout() {
    let dir = tmpdir("hang");
    let conf = dir.join("rt.json");
    std::fs::write(&conf, r#"{"heartbeat_ms": 200, "peer_timeout_ms": 2000}"#).unwrap();
    let (child, rx) = spawn_job(&[
        "--master",
        "local[3]",
        "--properties-file",
        conf.to_str().unwrap(),
        "demo",
        "--clocks",
        "100000",
        "--delay-ms",
        "5",
    ]);
    let mut log = Vec::new();
    let started = wait_for_all(&rx, &["process 2 started (pid", "job ready"], &mut log).remove(0);
    let pid: i32 = started.rsplit("pid ").next().unwrap().trim_end_matches(')').parse().unwrap();
    let t0 = Instant::now();
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let st = exit_within(child, Duration::from_secs(30)).expect("job hung on a silent process");
    assert!(!st.success());
    assert!(t0.elapsed() >= Duration::from_millis(1500), "declared lost before the timeout");
    log.extend(rx.try_iter());
    let text = log.join("\n");
    assert!(text.contains("lost process 2") && text.contains("no message for 2000 ms"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--stats` accepts an `hdfs://` URL (the test command starts a real HDFS and exports HDFS_URL).
#[test]
fn stats_can_be_written_to_hdfs() {
    if !needs(&[Service::Hdfs]) {
        return;
    }
    let hdfs = std::env::var("HDFS_URL").expect("HDFS_URL is not set: run through scripts/test.sh (it starts HDFS)");
    let url = format!("{hdfs}/ps-test/stats-{}.json", std::process::id());
    let out = output(submit().args(["--master", "local[2]", "--stats", &url, "demo", "--clocks", "5"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let st = ps_runtime::storage::storage_for(&url).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut st.open(&url, 0).unwrap(), &mut text).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["clocks"], 5);
    assert!(!st.exists(&format!("{url}.tmp")).unwrap());
    st.delete(&url).unwrap();
}

/// The user's own runtime binary (`job/examples/custom_runtime.rs`: `runtime_main` with an
/// app `tally` added to the built-in catalog): yarn-submit asks it about the app, so the app's
/// `--help`, its usage errors and the job itself work as for a built-in app.
#[test]
fn a_user_runtime_binary_runs_its_own_app() {
    let rt = bin("examples/custom_runtime");
    assert!(rt.exists(), "{} is missing: cargo build --release -p ps-job --example custom_runtime", rt.display());
    let dir = tmpdir("user-runtime");
    let stats = dir.join("s.json");
    let with_rt = |args: &[&str]| {
        let mut c = submit();
        c.arg("--runtime-bin").arg(&rt).args(args);
        output(&mut c)
    };
    let o = with_rt(&[
        "--master",
        "local[2]",
        "--threads",
        "3",
        "--stats",
        stats.to_str().unwrap(),
        "tally",
        "--clocks",
        "6",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    // Each of process 0's 3 threads read 6 clocks x 6 workers after the barrier.
    assert_eq!((v["tally"].as_i64(), v["processes_count"].as_i64()), (Some(3 * 6 * 6), Some(2)));
    let help = with_rt(&["tally", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Counts clocks per worker"));
    let bad = with_rt(&["tally", "--bogus"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unexpected argument '--bogus'"));
    let unknown = with_rt(&["nope"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("known: demo, mf, lda, pagerank, tally"));
    std::fs::remove_dir_all(&dir).ok();
}

/// A ViewFs mount table over the test HDFS (hdfs-native resolves it from HADOOP_CONF_DIR, and
/// needs a fallback link): a
/// job reads its input and writes its output through `viewfs://` URLs, and the files land on
/// the mounted HDFS directory.
#[test]
fn viewfs_urls_resolve_through_the_mount_table() {
    if !needs(&[Service::Hdfs]) {
        return;
    }
    let hdfs = std::env::var("HDFS_URL").expect("HDFS_URL is not set: run through scripts/test.sh (it starts HDFS)");
    let dir = tmpdir("viewfs");
    let target = format!("{hdfs}/ps-test/viewfs-{}", std::process::id());
    let conf = dir.join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("core-site.xml"),
        format!(
            "<configuration><property><name>fs.viewfs.mounttable.pscluster.link./data</name>\
             <value>{target}</value></property>\
             <property><name>fs.viewfs.mounttable.pscluster.linkFallback</name><value>{hdfs}/</value></property>\
             </configuration>"
        ),
    )
    .unwrap();
    let st = ps_runtime::storage::storage_for(&target).unwrap();
    let mut f = st.create(&format!("{target}/in/part-00000")).unwrap();
    f.write_all(b"0\t1\n1\t2\n2\t0\n2\t3\n3\t0\n").unwrap();
    f.close().unwrap();
    let args = ["--master", "local[2]", "pagerank", "--input", "viewfs://pscluster/data/in", "--passes", "3"];
    let out =
        output(submit().env("HADOOP_CONF_DIR", &conf).args(args).args(["--output", "viewfs://pscluster/data/out"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ranks = st.list(&format!("{target}/out/ranks")).unwrap();
    assert!(ranks.iter().map(|f| f.1).sum::<u64>() > 0, "{ranks:?}");
    st.delete(&target).unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

/// A worker thread that panics fails the whole job at once (well within `peer_timeout_ms`), and
/// the job's final message names the process and the panic message; no process is left hanging.
#[test]
fn panicking_worker_fails_the_job_fast_naming_process_and_panic() {
    let dir = tmpdir("panic");
    let t0 = Instant::now();
    // Global worker 3 is thread 1 of process 1 (2 threads per process).
    let args = ["--master", "local[3]", "--threads", "2", "--conf", "peer_timeout_ms=8000", "demo"];
    let out = output(submit().args(args).args(["--clocks", "100000", "--delay-ms", "5"]).args([
        "--fail-at-clock",
        "20",
        "--fail-worker",
        "3",
    ]));
    let elapsed = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(elapsed < Duration::from_millis(8000), "took {elapsed:?}, beyond peer_timeout_ms:\n{err}");
    let last = err.lines().rev().find(|l| l.contains("job failed")).unwrap_or_default();
    assert!(
        last.contains("process 1 failed: worker thread 1 panicked: demo: injected failure of worker 3 at clock 20"),
        "final message does not name the process and the panic:\n{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The job directory is private (0700) and the secret fresh for every run: a planted symlink is
/// replaced, not followed; the runtime refuses a short secret or one other users can read.
#[test]
fn job_directory_and_secret_are_private_and_fresh() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tmpdir("private");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let target = dir.with_extension("target");
    std::fs::write(&target, "precious").unwrap();
    std::os::unix::fs::symlink(&target, dir.join("secret")).unwrap();
    let out =
        output(submit().args(["--master", "local[2]", "--job-dir", dir.to_str().unwrap(), "demo", "--clocks", "3"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious", "the secret was written through a symlink");
    let meta = std::fs::symlink_metadata(dir.join("secret")).unwrap();
    assert!(meta.is_file() && meta.permissions().mode() & 0o777 == 0o600 && meta.len() == 32, "{meta:?}");
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    let first = std::fs::read(dir.join("secret")).unwrap();
    let out =
        output(submit().args(["--master", "local[2]", "--job-dir", dir.to_str().unwrap(), "demo", "--clocks", "3"]));
    assert!(out.status.success());
    assert_ne!(std::fs::read(dir.join("secret")).unwrap(), first, "the secret was reused");
    // The runtime itself refuses weak or exposed secrets.
    let run = |secret: &[u8], mode: u32| {
        std::fs::remove_file(dir.join("secret")).unwrap();
        std::fs::write(dir.join("secret"), secret).unwrap();
        std::fs::set_permissions(dir.join("secret"), std::fs::Permissions::from_mode(mode)).unwrap();
        let job = dir.join("job.json");
        let o = output(Command::new(bin("ps-runtime")).args(["run", "--job", job.to_str().unwrap(), "--id", "0"]));
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = run(b"12345678", 0o600);
    assert!(e.contains("is 8 bytes; at least 16 are required"), "{e}");
    let e = run(&[7u8; 32], 0o644);
    assert!(e.contains("readable by other users"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&target);
}

/// Peak resident memory of a process, in bytes (`VmHWM`).
fn peak_rss(pid: i32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 =
        s.lines().find_map(|l| l.strip_prefix("VmHWM:")).unwrap().trim().trim_end_matches(" kB").parse().unwrap();
    kb * 1024
}

/// Unauthenticated connections cannot exhaust memory: hundreds of them announcing a 2 GiB or a
/// 200 MiB frame and pushing data leave the processes' peak RSS within 50 MB of what it was,
/// and the job completes correctly.
#[test]
fn handshake_flood_leaves_memory_flat_and_the_job_correct() {
    let dir = tmpdir("flood");
    let (child, rx) = spawn_job(&[
        "--master",
        "local[2]",
        "--job-dir",
        dir.to_str().unwrap(),
        "demo",
        "--clocks",
        "500",
        "--delay-ms",
        "10",
    ]);
    let mut log = Vec::new();
    let pid_of = |l: String| -> i32 { l.rsplit("pid ").next().unwrap().trim_end_matches(')').parse().unwrap() };
    let seen = wait_for_all(&rx, &["process 0 started (pid", "process 1 started (pid", "job ready"], &mut log);
    let (p0, p1) = (pid_of(seen[0].clone()), pid_of(seen[1].clone()));
    let before = [peak_rss(p0), peak_rss(p1)];
    let hosts = std::fs::read_to_string(dir.join("hostfile")).unwrap();
    let addrs: Vec<String> =
        hosts.lines().map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(":")).collect();
    // 10 threads x 30 connections, alternating between the two processes.
    let attackers: Vec<_> = (0..10)
        .map(|t| {
            let addrs = addrs.clone();
            std::thread::spawn(move || {
                let mut held = Vec::new();
                for i in 0..30 {
                    let Ok(mut c) = std::net::TcpStream::connect(&addrs[(t + i) % 2]) else { continue };
                    c.set_write_timeout(Some(Duration::from_secs(2))).ok();
                    let len: u32 = if i % 2 == 0 { 0x8000_0000 } else { 200 << 20 };
                    let _ = c.write_all(&len.to_be_bytes());
                    let _ = c.write_all(&vec![0x5a; 1 << 20]);
                    held.push(c);
                }
                held.len()
            })
        })
        .collect();
    let connected: usize = attackers.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(connected >= 200, "only {connected} attack connections were made");
    let after = [peak_rss(p0), peak_rss(p1)];
    let st = exit_within(child, Duration::from_secs(120)).expect("job hung under the flood");
    log.extend(rx.try_iter());
    assert!(st.success(), "the job failed under the flood:\n{}", log.join("\n"));
    for k in 0..2 {
        let grew = after[k].saturating_sub(before[k]);
        assert!(grew < 50 << 20, "process {k}: peak RSS grew by {} MB under the flood", grew >> 20);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
