//! Local jobs on a secure (Kerberos) HDFS: the real Hadoop 2.7.3 NameNode and DataNode in secure
//! mode (`PS_SECURE_HDFS_CONF`) and an MIT KDC (`PS_KDC_DIR`, `KRB5_CONFIG`), both started by the
//! test command (scripts/kdc-up.sh, scripts/hdfs-up.sh with PS_HDFS_SECURE=1). hdfs-native does
//! the GSSAPI authentication; these tests check what `yarn-submit` makes of it.

mod common;

use common::{bin, output};
use ps_testkit::{needs, Service};
use std::ops::AsyncFnOnce;
use std::path::Path;
use std::process::Command;

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
    let path = url.trim_start_matches(&default_fs()).to_string();
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

/// What YARN containers get on a secure cluster: no ticket, only an HDFS delegation token that
/// the gateway fetched over Kerberos (our GSSAPI SASL against the real NameNode), in the
/// credentials file named by `HADOOP_TOKEN_FILE_LOCATION`. hdfs-native authenticates with it.
#[test]
fn a_delegation_token_alone_lets_a_job_read_and_write_as_its_owner() {
    if !needs(&[Service::SecureHadoop]) {
        return;
    }
    use ps_yarn::credentials::{Credentials, KIND_HDFS};
    use ps_yarn::gssapi::Login;
    let input = alice_input("token");
    let nn = default_fs().trim_start_matches("hdfs://").to_string();
    let login = Login::Keytab { principal: format!("alice@{REALM}"), keytab: keytab("alice") };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let token = rt
        .block_on(ps_yarn::hdfs_token::fetch(&nn, &format!("rm/localhost@{REALM}"), &login))
        .expect("a delegation token over Kerberos");
    assert_eq!(token.kind, KIND_HDFS);
    assert_eq!(token.service, nn, "the service is the NameNode's ip:port");
    let dir = std::env::temp_dir().join(format!("ps-secure-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("container_tokens");
    let creds = Credentials { tokens: vec![(token.service.clone(), token)], secrets: vec![] };
    std::fs::write(&file, creds.to_bytes()).unwrap();
    let out = input.replace("/r.tsv", "/out");
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
    let e = rt.block_on(ps_yarn::hdfs_token::fetch(&nn, "rm", &bad)).unwrap_err();
    assert!(e.to_string().contains("alice@PS.TEST"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `yarn-submit --master yarn` with a Kerberos ticket; `PS_RUNTIME_BIN`/`PS_APP_MASTER_BIN` as
/// the other YARN tests.
fn yarn_job(ccache: &Path, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(bin("yarn-submit"));
    c.env("HADOOP_CONF_DIR", env("PS_SECURE_YARN_CONF"))
        .env("KRB5CCNAME", format!("FILE:{}", ccache.display()))
        .env("PS_RUNTIME_BIN", bin("ps-runtime"))
        .env("PS_APP_MASTER_BIN", bin("ps-app-master"))
        .env_remove("HADOOP_USER_NAME")
        .env_remove("PS_KERBEROS_PRINCIPAL")
        .env_remove("PS_KERBEROS_KEYTAB")
        .args(["--master", "yarn", "--workers", "2", "--threads", "1", "--worker-memory", "256"])
        .args(args);
    output(&mut c)
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
    let out = input.replace("/r.tsv", "/out");
    let dir = std::env::temp_dir().join(format!("ps-secure-yarn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let alice = kinit(&dir, "alice");
    let o = yarn_job(
        &alice,
        &["--keep-staging", "mf", "--input", &input, "--output", &out, "--passes", "2", "--rank", "4"],
    );
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("submitting as alice@PS.TEST"), "{stderr}");
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
