//! Local jobs on a secure (Kerberos) HDFS: the real Hadoop 2.7.3 NameNode and DataNode in secure
//! mode (`PS_SECURE_HDFS_CONF`) and an MIT KDC (`PS_KDC_DIR`, `KRB5_CONFIG`), both started by the
//! test command (scripts/kdc-up.sh, scripts/hdfs-up.sh with PS_HDFS_SECURE=1). hdfs-native does
//! the GSSAPI authentication; these tests check what `yarn-submit` makes of it.

mod common;

use common::{bin, output};
use ps_hadoop::filesystems::{token_sources, TokenSource};
use ps_testkit::{needs, Service};
use std::ops::AsyncFnOnce;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const REALM: &str = "PS.TEST";

fn env(k: &str) -> String {
    std::env::var(k).unwrap_or_else(|_| panic!("{k} is not set: run through scripts/test.sh"))
}

fn keytab(name: &str) -> String {
    format!("{}/keytabs/{name}.keytab", env("PS_KDC_DIR"))
}

fn default_fs() -> String {
    let conf = ps_yarn::conf::HadoopConf::load_dir(std::path::Path::new(&env("PS_SECURE_HDFS_CONF"))).unwrap();
    conf.default_fs().unwrap().trim_end_matches('/').to_string()
}

/// Runs `f` with an HDFS client logged in from `principal`'s keytab.
fn as_principal<T>(principal: &str, kt: &str, f: impl AsyncFnOnce(hdfs_native::Client) -> T) -> T {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = {
        let _g = rt.enter();
        hdfs_native::ClientBuilder::new()
            .with_url(default_fs())
            .with_config_dir(env("PS_SECURE_HDFS_CONF"))
            .with_kerberos_principal(principal)
            .with_kerberos_keytab(kt)
            .build()
            .unwrap()
    };
    rt.block_on(f(client))
}

/// The HA pair's roles: tests that name a NameNode by its own address hold it shared (the
/// active one must stay active meanwhile); the failover test holds it alone while it fails over.
static ROLES: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// The NameNode of the pair that is active, as `localhost:port` (it alone issues tokens).
fn active_namenode(fetch: impl Fn(&TokenSource) -> bool) -> String {
    let TokenSource::NameService { namenodes, .. } = nameservice() else { panic!("the secure HDFS is an HA pair") };
    namenodes
        .iter()
        .map(|a| a.replace("127.0.0.1", "localhost"))
        .find(|a| fetch(&TokenSource::NameNode(a.clone())))
        .expect("one NameNode is active")
}

/// The default file system's token source: the secure test HDFS is an HA nameservice.
fn nameservice() -> TokenSource {
    let conf = ps_yarn::conf::HadoopConf::load_dir(Path::new(&env("PS_SECURE_HDFS_CONF"))).unwrap();
    token_sources(&conf, [default_fs().as_str()]).unwrap().remove(0)
}

/// As the HDFS superuser (the NameNode's principal): a private home directory for `user`.
fn home(user: &str) -> String {
    // Tests run in parallel: one makes the directory and hands it over before another uses it.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = format!("/user/{user}");
    let owner = user.to_string();
    as_principal(&format!("nn/localhost@{REALM}"), &keytab("hdfs"), async move |c| {
        c.mkdirs("/user", 0o755, true).await.unwrap();
        c.set_permission("/user", 0o755).await.unwrap();
        c.mkdirs(&dir, 0o700, true).await.unwrap();
        c.set_owner(&dir, Some(&owner), None).await.unwrap();
        c.set_permission(&dir, 0o700).await.unwrap();
    });
    format!("{}/user/{user}", default_fs())
}

/// Ratings written by alice into her home directory; returns the input URL.
fn alice_input(tag: &str) -> String {
    let base = home("alice");
    let local = std::env::temp_dir().join(format!("ps-secure-{tag}-{}.tsv", std::process::id()));
    let gen = Command::new(bin("ps-runtime"))
        .args(["gen", "ratings", "--ratings", "20000", "--users", "500", "--items", "200", "--rank", "4", "--out"])
        .arg(&local)
        .status()
        .unwrap();
    assert!(gen.success());
    let data = std::fs::read(&local).unwrap();
    std::fs::remove_file(&local).ok();
    let path = format!("/user/alice/secure-{tag}-{}/r.tsv", std::process::id());
    let p = path.clone();
    as_principal(&format!("alice@{REALM}"), &keytab("alice"), async move |c| {
        let mut w = c.create(&p, hdfs_native::WriteOptions::default().create_parent(true)).await.unwrap();
        w.write_bytes(bytes::Bytes::from(data)).await.unwrap();
        w.close().await.unwrap();
    });
    format!("{}{path}", base.trim_end_matches("/user/alice"))
}

/// `yarn-submit --master local[2]` against the secure HDFS, with `ccache` as the ticket cache.
fn local_job(ccache: &Path, extra: &[&str], input: &str, output_url: &str) -> std::process::Output {
    let mut c = Command::new(bin("yarn-submit"));
    c.env("HADOOP_CONF_DIR", env("PS_SECURE_HDFS_CONF"))
        .env("KRB5CCNAME", format!("FILE:{}", ccache.display()))
        .env_remove("HADOOP_USER_NAME")
        .env_remove("PS_KERBEROS_PRINCIPAL")
        .env_remove("PS_KERBEROS_KEYTAB")
        .args(["--master", "local[2]", "--threads", "1"])
        .args(extra)
        .args(["mf", "--input", input, "--output", output_url, "--passes", "2", "--rank", "4"]);
    output(&mut c)
}

fn owner_of(url: &str) -> String {
    // The path on whichever address of the HA pair `url` names.
    let rest = url.strip_prefix("hdfs://").expect("an hdfs:// URL");
    let path = rest[rest.find('/').unwrap_or(rest.len())..].to_string();
    as_principal(&format!("alice@{REALM}"), &keytab("alice"), async move |c| {
        c.get_file_info(&path).await.unwrap().owner
    })
}

#[test]
fn a_local_job_runs_with_a_kinit_ticket_and_writes_as_that_user() {
    if !needs(&[Service::SecureHadoop]) {
        return;
    }
    let input = alice_input("ticket");
    let out = input.replace("/r.tsv", "/out");
    let dir = std::env::temp_dir().join(format!("ps-secure-cc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ccache = dir.join("alice");
    let kinit = Command::new("kinit")
        .env("KRB5CCNAME", format!("FILE:{}", ccache.display()))
        .args(["-kt", &keytab("alice"), &format!("alice@{REALM}")])
        .status()
        .expect("kinit (krb5-user)");
    assert!(kinit.success());
    let o = local_job(&ccache, &[], &input, &out);
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{text}");
    assert_eq!(owner_of(&format!("{out}/_SUCCESS")), "alice");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn without_a_ticket_the_job_stops_before_starting_saying_to_run_kinit() {
    if !needs(&[Service::SecureHadoop]) {
        return;
    }
    let input = alice_input("noticket");
    let none = std::env::temp_dir().join(format!("ps-secure-none-{}", std::process::id()));
    let o = local_job(&none, &[], &input, &input.replace("/r.tsv", "/out"));
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{text}");
    assert!(text.contains("--input") && text.contains("run `kinit`"), "{text}");
    assert!(!text.contains("starting 2 processes"), "no process may start: {text}");
}

#[test]
fn principal_and_keytab_log_in_without_a_ticket_and_permissions_hold() {
    if !needs(&[Service::SecureHadoop]) {
        return;
    }
    let input = alice_input("keytab");
    let none = std::env::temp_dir().join(format!("ps-secure-kt-{}", std::process::id()));
    let alice = ["--principal", "alice@PS.TEST", "--keytab"];
    let o =
        local_job(&none, &[&alice[..], &[keytab("alice").as_str()]].concat(), &input, &input.replace("/r.tsv", "/out"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // bob is authenticated too, but alice's home directory is hers alone.
    let bob = ["--principal", "bob@PS.TEST", "--keytab"];
    let bob_out = format!("{}/out-{}", home("bob"), std::process::id());
    let o = local_job(&none, &[&bob[..], &[keytab("bob").as_str()]].concat(), &input, &bob_out);
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{text}");
    assert!(text.contains("--input") && text.contains("Permission denied") && text.contains("user=bob"), "{text}");
    // A keytab that does not exist is refused before anything runs.
    let o = local_job(&none, &["--principal", "bob@PS.TEST", "--keytab", "/nonexistent.keytab"], &input, &bob_out);
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && text.contains("--keytab /nonexistent.keytab"), "{text}");
}

/// What YARN containers get on a secure cluster: no ticket, only HDFS delegation tokens that
/// the gateway fetched over Kerberos (our GSSAPI SASL against the real NameNodes), in the
/// credentials file named by `HADOOP_TOKEN_FILE_LOCATION`. hdfs-native authenticates with them:
/// the nameservice's logical token (`ha-hdfs:ns1`, from whichever NameNode is active) for
/// `hdfs://ns1`, and the active NameNode's own token, named by host name, for its address.
#[test]
fn a_delegation_token_alone_lets_a_job_read_and_write_as_its_owner() {
    if !needs(&[Service::SecureHadoop]) {
        return;
    }
    use ps_yarn::credentials::{Credentials, KIND_HDFS};
    use ps_yarn::gssapi::Login;
    let input = alice_input("token");
    let login = Login::Keytab { principal: format!("alice@{REALM}"), keytab: keytab("alice") };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let fetch =
        |s: &TokenSource| rt.block_on(ps_yarn::hdfs_token::fetch_for(s, &format!("rm/localhost@{REALM}"), &login));
    let _roles = ROLES.read().unwrap_or_else(|e| e.into_inner());
    let ns = nameservice();
    let TokenSource::NameService { name, namenodes } = &ns else { panic!("the secure HDFS is an HA pair: {ns:?}") };
    let logical = fetch(&ns).expect("a delegation token over Kerberos");
    assert_eq!(logical.len(), 1);
    assert_eq!((logical[0].kind.as_str(), logical[0].service.clone()), (KIND_HDFS, format!("ha-hdfs:{name}")));
    // The active NameNode by host name: its token also carries `localhost:port`.
    let (active, physical) = namenodes
        .iter()
        .map(|a| a.replace("127.0.0.1", "localhost"))
        .find_map(|a| fetch(&TokenSource::NameNode(a.clone())).ok().map(|t| (a, t)))
        .expect("one NameNode is active");
    let services: Vec<_> = physical.iter().map(|t| t.service.clone()).collect();
    assert_eq!(services, [active.replace("localhost", "127.0.0.1"), active.clone()]);
    // A standby NameNode refuses, and the error says which.
    let standby = namenodes.iter().find(|a| a.replace("127.0.0.1", "localhost") != active).unwrap();
    let e = fetch(&TokenSource::NameService { name: name.clone(), namenodes: vec![standby.clone()] }).unwrap_err();
    assert!(
        e.to_string().contains(&format!("no NameNode of nameservice {name}")) && e.to_string().contains("standby"),
        "{e}"
    );
    let dir = std::env::temp_dir().join(format!("ps-secure-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("container_tokens");
    let tokens = logical.into_iter().chain(physical).map(|t| (t.service.clone(), t)).collect();
    std::fs::write(&file, Credentials { tokens, secrets: vec![] }.to_bytes()).unwrap();
    // Read through the nameservice, written through the NameNode's own address.
    let out = input.replace("/r.tsv", "/out").replace(&format!("hdfs://{name}"), &format!("hdfs://{active}"));
    let mut c = Command::new(bin("yarn-submit"));
    c.env("HADOOP_CONF_DIR", env("PS_SECURE_HDFS_CONF"))
        .env("KRB5CCNAME", format!("FILE:{}/no-ticket", dir.display()))
        .env("HADOOP_TOKEN_FILE_LOCATION", &file)
        .env_remove("HADOOP_USER_NAME")
        .args(["--master", "local[2]", "--threads", "1"])
        .args(["mf", "--input", &input, "--output", &out, "--passes", "2", "--rank", "4"]);
    let o = output(&mut c);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(owner_of(&format!("{out}/_SUCCESS")), "alice");
    // A wrong keytab cannot get a token, and says who could not log in.
    let bad = Login::Keytab { principal: format!("alice@{REALM}"), keytab: keytab("bob") };
    let e = rt.block_on(ps_yarn::hdfs_token::fetch(&active, "rm", &bad)).unwrap_err();
    assert!(e.to_string().contains("alice@PS.TEST"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `yarn-submit --master yarn` with a Kerberos ticket; `PS_RUNTIME_BIN`/`PS_APP_MASTER_BIN` as
/// the other YARN tests.
fn yarn_job(ccache: &Path, args: &[&str]) -> std::process::Output {
    output(yarn_cmd(ccache).args(args))
}

/// The command of a YARN job of 2 workers on the secure stand-in, with the ticket cache `ccache`
/// (which need not exist).
fn yarn_cmd(ccache: &Path) -> Command {
    let mut c = Command::new(bin("yarn-submit"));
    c.env("HADOOP_CONF_DIR", env("PS_SECURE_YARN_CONF"))
        .env("KRB5CCNAME", format!("FILE:{}", ccache.display()))
        .env("PS_RUNTIME_BIN", bin("ps-runtime"))
        .env("PS_APP_MASTER_BIN", bin("ps-app-master"))
        .env_remove("HADOOP_USER_NAME")
        .env_remove("PS_KERBEROS_PRINCIPAL")
        .env_remove("PS_KERBEROS_KEYTAB")
        .args(["--master", "yarn", "--workers", "2", "--threads", "1", "--worker-memory", "256"]);
    c
}

fn kinit(dir: &Path, user: &str) -> std::path::PathBuf {
    let cc = dir.join(user);
    let st = Command::new("kinit")
        .env("KRB5CCNAME", format!("FILE:{}", cc.display()))
        .args(["-kt", &keytab(user), &format!("{user}@{REALM}")])
        .status()
        .expect("kinit (krb5-user)");
    assert!(st.success());
    cc
}

/// The secure stand-in (`PS_SECURE_YARN_CONF`: its RM client port takes Kerberos) on the secure
/// HDFS. The client authenticates to the RM and the NameNode with alice's ticket and ships an
/// HDFS delegation token; the containers run without any ticket (the stand-in points their
/// KRB5CCNAME nowhere), so the job's reads and writes as alice prove the token path. bob's job,
/// with bob's token, cannot read alice's staging directory. Without a ticket nothing is submitted.
#[test]
fn a_yarn_job_on_the_secure_cluster_runs_on_delegation_tokens_only() {
    if !needs(&[Service::SecureHadoop]) {
        return;
    }
    let input = alice_input("yarn");
    let dir = std::env::temp_dir().join(format!("ps-secure-yarn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let alice = kinit(&dir, "alice");
    // The output on a second file system, the active NameNode by its own address (and the same
    // by host name listed for access): the containers need a token for each.
    let _roles = ROLES.read().unwrap_or_else(|e| e.into_inner());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let login = ps_yarn::gssapi::Login::Keytab { principal: format!("alice@{REALM}"), keytab: keytab("alice") };
    let active = active_namenode(|s| rt.block_on(ps_yarn::hdfs_token::fetch_for(s, "rm", &login)).is_ok());
    let by_ip = active.replace("localhost", "127.0.0.1");
    let out = input.replace("/r.tsv", "/out").replace(&default_fs(), &format!("hdfs://{by_ip}"));
    let access = format!("hdfs://{active}");
    let o = yarn_job(
        &alice,
        &[
            "--keep-staging",
            "--access-filesystems",
            &access,
            "mf",
            "--input",
            &input,
            "--output",
            &out,
            "--passes",
            "2",
            "--rank",
            "4",
        ],
    );
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("submitting as alice@PS.TEST"), "{stderr}");
    let ns = nameservice();
    for fs in [ns.authority(), &by_ip, &active] {
        assert!(stderr.contains(&format!("HDFS delegation token for {fs} owned by alice@PS.TEST")), "{fs}: {stderr}");
    }
    // The secure HDFS runs hadoop.rpc.protection=privacy: GSSAPI sealed every message.
    assert!(stderr.contains("Kerberos authenticated, qop auth-conf"), "{stderr}");
    assert_eq!(owner_of(&format!("{out}/_SUCCESS")), "alice");
    let app = stdout.lines().find_map(|l| l.strip_prefix("application id: ")).expect("an application id").to_string();
    let staged = format!("{}/user/alice/.ps-staging/{app}/job.json", default_fs());
    assert_eq!(owner_of(&staged), "alice");

    home("bob");
    let bob = kinit(&dir, "bob");
    let o = yarn_job(&bob, &["mf", "--input", &staged, "--passes", "1", "--rank", "4"]);
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{text}");
    assert!(text.contains("Permission denied") && text.contains("user=bob"), "{text}");

    let o = yarn_job(&dir.join("nobody"), &["mf", "--input", &input, "--passes", "1"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(!o.status.success() && stderr.contains("run `kinit`"), "{stderr}");
    assert!(!stdout.contains("application id"), "nothing may be submitted: {stdout}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Hadoop's own `DFSHAAdmin` on the secure pair, as the HDFS superuser (the script hdfs-up.sh
/// wrote next to the configuration).
fn haadmin(args: &[&str]) -> String {
    let script = Path::new(&env("PS_SECURE_HDFS_CONF")).join("../haadmin.sh");
    let o = output(Command::new(script).args(args));
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "haadmin {args:?}: {text}");
    text
}

/// The complete checkpoints under `ck` (an `hdfs://ns1` URL), read as alice.
fn complete_checkpoints(ck: &str) -> Vec<i64> {
    let rest = ck.strip_prefix(&default_fs()).unwrap().to_string();
    as_principal(&format!("alice@{REALM}"), &keytab("alice"), async move |c| {
        let mut done = Vec::new();
        for st in c.list_status(&rest, false).await.unwrap_or_default() {
            let name = st.path.rsplit('/').next().unwrap_or_default().to_string();
            let Some(t) = name.strip_prefix("clock-").and_then(|t| t.parse().ok()) else { continue };
            if c.get_file_info(&format!("{rest}/{name}/MANIFEST.json")).await.is_ok() {
                done.push(t);
            }
        }
        done.sort_unstable();
        done
    })
}

/// Issue 41's secure HA case: a YARN job on the secure stand-in, on delegation tokens alone (the
/// nameservice's `ha-hdfs:ns1` token), reads, writes and checkpoints on `hdfs://ns1` while
/// Hadoop's `DFSHAAdmin -failover` hands the nameservice to the other NameNode in the middle of
/// it. The job succeeds, checkpoints complete after the failover, and the other NameNode is the
/// active one at the end.
#[test]
fn a_yarn_job_on_tokens_alone_survives_a_namenode_failover() {
    if !needs(&[Service::SecureHadoop]) {
        return;
    }
    let input = alice_input("failover");
    let base = input.trim_end_matches("/r.tsv").to_string();
    let (out, ck) = (format!("{base}/out"), format!("{base}/ckpt"));
    let dir = std::env::temp_dir().join(format!("ps-secure-failover-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let alice = kinit(&dir, "alice");
    let mut c = yarn_cmd(&alice);
    c.args(["--checkpoint", &ck, "--checkpoint-every", "8"])
        .args(["mf", "--input", &input, "--output", &out, "--passes", "50", "--clocks-per-pass", "4", "--rank", "4"])
        // At least 50 ms a clock (every worker a straggler): 10 s of job to fail over in.
        .args(["--straggler", "random", "--straggler-p", "1", "--straggler-delay", "0.05"]);
    let (mut child, rx) = common::spawn_lines(&mut c);
    let deadline = std::time::Instant::now() + common::JOB_LIMIT;
    let before = loop {
        let done = complete_checkpoints(&ck);
        if done.len() >= 2 {
            break done;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!(
                "the job ended ({st}) before its second checkpoint: {}",
                rx.try_iter().collect::<Vec<_>>().join("\n")
            );
        }
        assert!(std::time::Instant::now() < deadline, "no two checkpoints within {:?}", common::JOB_LIMIT);
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let (from, to) = {
        let _roles = ROLES.write().unwrap_or_else(|e| e.into_inner());
        let nn1_active = haadmin(&["-getServiceState", "nn1"]).contains("active");
        let (from, to) = if nn1_active { ("nn1", "nn2") } else { ("nn2", "nn1") };
        haadmin(&["-failover", from, to]);
        (from, to)
    };
    let status = common::wait_within(child, common::JOB_LIMIT, "the job whose NameNodes failed over");
    let log: Vec<String> = rx.iter().collect();
    assert!(status.success(), "the job must survive the failover {from} -> {to}:\n{}", log.join("\n"));
    assert!(haadmin(&["-getServiceState", to]).contains("active"), "{to} is active after the failover");
    assert_eq!(owner_of(&format!("{out}/_SUCCESS")), "alice");
    let after = complete_checkpoints(&ck);
    let last_before = *before.last().unwrap();
    // Older checkpoints are pruned as newer ones complete; the last is the end of the job's 200+ clocks.
    assert!(after.iter().any(|&t| t > last_before + 8), "checkpoints after the failover: {before:?} then {after:?}");
    assert!(after.last().is_some_and(|&t| t >= 200), "the final snapshot: {after:?}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue 41's long job: the secure test HDFS issues tokens that expire 50 s after issue unless
/// renewed and live 150 s at most (test.sh sets `PS_HDFS_TOKEN_RENEW_MS`/`_MAX_MS`; the stand-in
/// renews nothing). A YARN job submitted with `--principal`/`--keytab` and no ticket runs
/// past three renew intervals and the maximum lifetime: its AM logs in from the shipped keytab,
/// obtains fresh tokens and sends them to the processes, so the output written at the end (a new
/// HDFS connection, which an expired token could not open) lands as alice. The keytab is gone
/// from the staging directory afterwards.
#[test]
fn a_yarn_job_outlives_its_tokens_on_the_keytab_it_shipped_to_the_am() {
    if !needs(&[Service::SecureHadoop]) {
        return;
    }
    let conf = ps_yarn::conf::HadoopConf::load_dir(Path::new(&env("PS_SECURE_HDFS_CONF"))).unwrap();
    let ms = |k: &str| conf.get(k).unwrap().and_then(|v| v.parse::<u64>().ok());
    let (Some(renew), Some(max)) =
        (ms("dfs.namenode.delegation.token.renew-interval"), ms("dfs.namenode.delegation.token.max-lifetime"))
    else {
        panic!("the secure test HDFS must issue short-lived tokens (PS_HDFS_TOKEN_RENEW_MS, PS_HDFS_TOKEN_MAX_MS)");
    };
    let input = alice_input("long");
    let out = input.replace("/r.tsv", "/out");
    let dir = std::env::temp_dir().join(format!("ps-secure-long-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 400 clocks of at least `delay` each: the job outlives three renew intervals and the lifetime.
    let job_ms = (3 * renew).max(max) + renew / 3;
    let delay = format!("{:.3}", job_ms as f64 / 400.0 / 1000.0);
    let started = std::time::Instant::now();
    let mut c = yarn_cmd(&dir.join("no-ticket"));
    c.arg("--keep-staging")
        .args(["--principal", &format!("alice@{REALM}"), "--keytab", &keytab("alice")])
        .args(["mf", "--input", &input, "--output", &out, "--passes", "100", "--clocks-per-pass", "4", "--rank", "4"])
        .args(["--straggler", "random", "--straggler-p", "1", "--straggler-delay", &delay]);
    let (child, rx) = common::spawn_lines(&mut c);
    let mut log = Vec::new();
    let app = common::wait_for(&rx, "application id: ", &mut log);
    let app = app.split("application id: ").nth(1).expect("an application id").trim().to_string();
    let staging = format!("/user/alice/.ps-staging/{app}");
    // While the job runs (staged before it was submitted), the keytab is alice's alone.
    common::wait_for(&rx, ": RUNNING", &mut log);
    let k = format!("{staging}/ps.keytab");
    let mode = as_principal(&format!("alice@{REALM}"), &keytab("alice"), async move |c| {
        c.get_file_info(&k).await.map(|st| (st.owner, st.permission)).ok()
    });
    assert_eq!(mode, Some(("alice".to_string(), 0o400)), "the staged keytab's owner and mode");
    let status = common::wait_within(child, common::JOB_LIMIT + Duration::from_millis(job_ms), "the long secure job");
    log.extend(rx.iter());
    let text = log.join("\n");
    assert!(status.success(), "{text}");
    let took = started.elapsed();
    assert!(took > Duration::from_millis((3 * renew).max(max)), "the job took only {took:?}");
    assert_eq!(owner_of(&format!("{out}/_SUCCESS")), "alice");
    let (has_keytab, has_job) = as_principal(&format!("alice@{REALM}"), &keytab("alice"), async move |c| {
        (
            c.get_file_info(&format!("{staging}/ps.keytab")).await.is_ok(),
            c.get_file_info(&format!("{staging}/job.json")).await.is_ok(),
        )
    });
    assert!(has_job && !has_keytab, "the staging directory is kept (--keep-staging) but not the keytab");
    std::fs::remove_dir_all(&dir).ok();
}
