//! `yarn-submit --master yarn` end to end, against the YARN stand-in built on Hadoop's own server
//! code (PS_YARN_CONF) and the real test HDFS (HDFS_URL), both started by the test command:
//! submit over IPC (or REST) → our AM (IPC + SASL) → NodeManagers → runtime processes that read HDFS.

mod common;

use common::browser::{clock_of, dom, last_value, points, status, text_of, wait_evaluations};
use common::yarn::{hdfs, ratings, runtime_pids, s, submit, submit_app, whoami, Submitted, SERIAL};
use common::{output, wait_for, wait_within, JOB_LIMIT};
use ps_testkit::{needs, Service};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[test]
fn mf_on_yarn_reads_hdfs_and_writes_output_and_checkpoints_there() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, input) = ratings("mf");
    let base = input.trim_end_matches("/ratings").to_string();
    let (ck, stats) = (format!("{base}/ckpt"), dir.join("stats.json"));
    // Paths as a spark-submit user writes them: without a scheme they are on fs.defaultFS, a
    // relative one under /user/<user>; a glob picks the input's part files.
    let pattern = format!("{}/part-*", input.strip_prefix(&hdfs()).unwrap());
    let rel_out = format!("ps-test-out-{}", std::process::id());
    let out = format!("{}/user/{}/{rel_out}", hdfs(), whoami());
    let mut args = s(&["--master", "yarn", "--workers", "2", "--threads", "2", "--worker-memory", "256"]);
    args.extend(s(&["--checkpoint", &ck, "--checkpoint-every", "6", "--stats", stats.to_str().unwrap()]));
    args.push("--stats-per-clock".into());
    args.extend(s(&[
        "mf",
        "--input",
        &pattern,
        "--output",
        &rel_out,
        "--passes",
        "6",
        "--clocks-per-pass",
        // 2 processes at staleness 1: a multiple of 4 rotating item slices (each shared by 2 threads).
        "8",
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
    assert!(stderr.contains(&format!("--output {rel_out} is {out}")), "{stderr}");
    assert!(stderr.contains(&format!("--input {pattern} is {}{pattern}", hdfs())), "{stderr}");
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
    // Per-clock lines written in the containers come back next to --stats.
    for k in 0..2 {
        let text = std::fs::read_to_string(dir.join(format!("clocks-{k}.jsonl"))).expect("per-clock stats kept");
        assert!(text.lines().count() >= 6 * 3, "process {k}: {text}");
    }
    // The RM's record agrees, and the staging directory is gone after success.
    let st = output(submit().args(["status", &app]));
    let rep: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!((rep["state"].as_str(), rep["finalStatus"].as_str()), (Some("FINISHED"), Some("SUCCEEDED")));
    assert!(!fs.exists(&format!("{}/user/{}/.ps-staging/{app}", hdfs(), whoami())).unwrap());
    fs.delete(&base).unwrap();
    fs.delete(&out).unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn killed_runtime_container_fails_the_application_with_its_status() {
    if !needs(&[Service::Yarn]) {
        return;
    }
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
    if !needs(&[Service::Yarn]) {
        return;
    }
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
                    .filter_map(|c| std::fs::read_to_string(c.path().join("stderr")).ok())
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
    // `list` shows this user's active applications, as `yarn application -list`: this one, not
    // another user's, and after the kill only with --all.
    let listed = |user: &str, extra: &[&str]| {
        let o = output(submit().env("HADOOP_USER_NAME", user).arg("list").args(extra));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).lines().find(|l| l.starts_with(&format!("{app}\t"))).map(String::from)
    };
    let line = listed(&whoami(), &[]).expect("the running application is listed");
    assert!(line.contains("\tRUNNING\t"), "{line}");
    assert_eq!(listed("mallory", &["--all"]), None);
    let denied = output(submit().env("HADOOP_USER_NAME", "mallory").args(["kill", &app]));
    let err = String::from_utf8_lossy(&denied.stderr);
    assert!(!denied.status.success() && err.contains("User mallory cannot perform operation MODIFY_APP"), "{err}");
    let k = output(submit().args(["kill", &app]));
    assert!(k.status.success(), "{}", String::from_utf8_lossy(&k.stderr));
    let rep: serde_json::Value = serde_json::from_slice(&k.stdout).unwrap();
    assert_eq!(rep["state"], "KILLED");
    assert_eq!(listed(&whoami(), &[]), None);
    assert!(listed(&whoami(), &["--all"]).is_some_and(|l| l.contains("\tKILLED\t")));
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
    if !needs(&[Service::Yarn]) {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut args = s(&["--master", "yarn", "--workers", "3", "--threads", "1", "--worker-memory", "256", "demo"]);
    args.extend(s(&["--clocks", "100000", "--delay-ms", "5", "--fail-at-clock", "30", "--fail-worker", "1"]));
    let Submitted { child, rx, mut log, _guard, app } = submit_app(submit().args(&args));
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
    assert!(text.contains(&format!("yarn logs -applicationId {app}")), "{text}");
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
    if !needs(&[Service::Yarn]) {
        return;
    }
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
        .filter_map(|c| std::fs::read_to_string(c.path().join("stderr")).ok())
        .collect();
    assert_eq!(am_log.matches("registered again with the ResourceManager").count(), 2, "{am_log}");
    assert!(am_log.contains("re-sending 2 outstanding container(s)"), "{am_log}");
}

#[test]
fn conf_dir_with_variables_in_site_files_submits() {
    if !needs(&[Service::Yarn]) {
        return;
    }
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
    // --dc-by rack lists the nodes over REST too (GET /ws/v1/cluster/nodes); one process is one
    // data center.
    let o = output(submit().args(conf).args(&args).args(["--dc-by", "rack", "demo", "--clocks", "20"]));
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "yarn-submit failed:\n{stdout}\n{stderr}");
    assert!(stderr.contains("FINISHED") && stderr.contains("SUCCEEDED"), "{stderr}");
    assert!(stderr.contains("data centers (--dc-by rack): /rack-0 (1 node), /rack-1 (1 node)"), "{stderr}");
    // status takes the same options.
    let app = stdout.lines().find_map(|l| l.strip_prefix("application id: ")).expect("an application id").to_string();
    let st = output(submit().args(["status", &app]).args(conf));
    let rep: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!((rep["state"].as_str(), rep["finalStatus"].as_str()), (Some("FINISHED"), Some("SUCCEEDED")));
    std::fs::remove_dir_all(&dir).ok();
}

/// The AM's tracking URL is the job's live page: loaded in a real headless browser through
/// Hadoop's own web proxy (`WebAppProxy`, which the stand-in runs in front of the AMs, under
/// `/proxy/<app>/` as on a real cluster) while the job runs, it shows what `status.json` (fetched
/// through the proxy by the page's relative link) says; the final page lands next to `--stats` as
/// report.html with the job's own final numbers.
/// The stand-in's `yarn.web-proxy.address` (from PS_YARN_CONF's yarn-site.xml).
fn web_proxy() -> String {
    let conf = std::env::var("PS_YARN_CONF").expect("PS_YARN_CONF is not set: run through scripts/test.sh");
    let site = std::fs::read_to_string(PathBuf::from(conf).join("yarn-site.xml")).unwrap();
    let key = "<name>yarn.web-proxy.address</name><value>";
    let at = site.find(key).expect("the stand-in runs no web proxy") + key.len();
    site[at..site[at..].find('<').unwrap() + at].to_string()
}

#[test]
fn the_tracking_url_is_the_live_page_and_report_html_outlives_the_am() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, input) = ratings("page");
    let stats = dir.join("stats.json");
    let mut args = s(&["--master", "yarn", "--workers", "2", "--threads", "1", "--worker-memory", "256"]);
    args.extend(s(&["--stats", stats.to_str().unwrap(), "mf", "--input", &input, "--passes", "60", "--rank", "4"]));
    // 50 ms a clock: the job runs long enough for the browser to look at it.
    args.extend(s(&[
        "--test-fraction",
        "0.1",
        "--straggler",
        "random",
        "--straggler-p",
        "1",
        "--straggler-delay",
        "0.05",
    ]));
    let Submitted { child, rx, mut log, _guard, app } = submit_app(submit().args(&args));
    let direct = wait_for(&rx, "tracking URL: http://", &mut log).replace("tracking URL: ", "");
    let url = format!("http://{}/proxy/{app}/", web_proxy());
    assert_eq!(status(&direct)["app"], status(&url)["app"], "the proxy serves the AM's status");
    let before = wait_evaluations(&url, 2, Duration::from_secs(90));
    let page = dom(&url);
    let after = status(&url);
    assert_eq!(text_of(&page, r#"id="job-status""#), Some("running"), "the job ended before the browser looked");
    let (c, c0, c1) =
        (clock_of(&page, r#"id="job-clock""#), before["clock"].as_i64().unwrap(), after["clock"].as_i64().unwrap());
    assert!(c0 <= c && c <= c1, "page clock {c} outside status.json's {c0}..={c1}");
    let n = points(&page, "rmse");
    assert!(n >= 2 && n <= after["objective"].as_array().unwrap().len(), "{n} points");
    assert_eq!(after["registered"], 2);
    let status = wait_within(child, JOB_LIMIT, "the job");
    log.extend(rx.try_iter());
    assert!(status.success(), "{}", log.join("\n"));
    // yarn-submit's progress display read the AM's status.json (else it logs "progress N%").
    assert!(log.iter().any(|l| l.contains("[submit] progress: ")), "{}", log.join("\n"));
    let final_page = dom(&format!("file://{}", dir.join("stats.report.html").display()));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let last = v["objective"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(text_of(&final_page, r#"id="job-status""#), Some("succeeded"));
    assert_eq!(Some(last_value(&final_page, "test_rmse")), last["test_rmse"].as_f64());
    assert_eq!(points(&final_page, "rmse"), v["objective"].as_array().unwrap().len());
    let base = input.trim_end_matches("/ratings");
    ps_runtime::storage::storage_for(base).unwrap().delete(base).unwrap();
    std::fs::remove_dir_all(&dir).ok();
}
