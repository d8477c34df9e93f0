//! `yarn-submit --master yarn` around the job itself, against the YARN stand-in and the test HDFS:
//! what the staging directory holds and who may read it, who cleans it, the shipped binaries,
//! paths refused before submission, and the AM's rendezvous port under hostile input.

mod common;

use common::yarn::{hdfs, hdfs_as, s, staging_of, submit, submit_app, whoami, Submitted, SERIAL};
use common::{output, wait_for, wait_within, JOB_LIMIT};
use ps_testkit::{needs, Service};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// With HDFS permissions on (the test HDFS has them), a job's staging directory is private to the
/// submitting user and holds no job secret: another user is refused even a listing.
#[test]
fn staging_directory_is_private_and_holds_no_secret() {
    if !needs(&[Service::Yarn]) {
        return;
    }
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
    if !needs(&[Service::Yarn]) {
        return;
    }
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
            let Some(get) = send(b"GET /status.json HTTP/1.1\r\n\r\n") else { break };
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

/// Under `--master yarn` a `file:` path would name a different disk in every container: inputs,
/// outputs and checkpoints given as explicit local paths are refused before anything is
/// submitted (paths without a scheme are on fs.defaultFS: `mf_on_yarn_reads_hdfs_...`).
#[test]
fn local_paths_are_refused_before_submission() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    for (extra, named) in [
        (&["mf", "--input", "file:data/r.tsv"][..], "--input file:data/r.tsv"),
        (&["mf", "--input", "hdfs:///r", "--output", "file:///tmp/out"], "--output file:///tmp/out"),
        (&["--checkpoint", "file:///tmp/ck", "mf", "--input", "/r"], "--checkpoint file:///tmp/ck"),
    ] {
        let o = output(submit().args(["--master", "yarn", "--workers", "1"]).args(extra));
        let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(!o.status.success(), "{extra:?} was accepted");
        assert!(stderr.contains(&format!("{named}: a local path under --master yarn")), "{stderr}");
        assert!(!stdout.contains("application id"), "submitted anyway: {stdout}");
    }
}

/// The AM removes the job's files from its staging directory after it unregisters, even when
/// nobody follows the job (the client was killed): only `stats/` stays (with the job's final
/// page), for `yarn-submit` to merge. With `--keep-staging` everything stays.
#[test]
fn am_cleans_staging_without_the_client_and_keep_staging_keeps_it() {
    if !needs(&[Service::Yarn]) {
        return;
    }
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
    let mut kept = fs.children(&format!("{staging}/stats")).unwrap();
    kept.sort();
    assert_eq!(kept, ["report.html", "stats-0.json"], "the process's stats and the job's page are kept");
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
    if !needs(&[Service::Yarn]) {
        return;
    }
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

/// A user's own runtime binary on YARN: shipped to the containers like `ps-runtime` (through the
/// content-hash cache) and asked about its app by yarn-submit before submission; its app runs in
/// every container and the job's stats carry the app's own key.
#[test]
fn a_user_runtime_binary_runs_its_own_app_on_yarn() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rt = common::bin("examples/custom_runtime");
    assert!(rt.exists(), "{} is missing: cargo build --release -p ps-job --example custom_runtime", rt.display());
    let dir = std::env::temp_dir().join(format!("ps-yarn-user-rt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stats = dir.join("s.json");
    let mut c = submit();
    c.args(["--master", "yarn", "--workers", "2", "--threads", "2", "--worker-memory", "256"]);
    c.arg("--runtime-bin").arg(&rt).args(["--stats", stats.to_str().unwrap(), "tally", "--clocks", "20"]);
    let o = output(&mut c);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!((v["tally"].as_i64(), v["processes_count"].as_i64()), (Some(2 * 20 * 4), Some(2)));
    std::fs::remove_dir_all(&dir).ok();
}
