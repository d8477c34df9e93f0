//! The YARN client against Hadoop's own server code: the stand-in (`scripts/yarn-up.sh`, started
//! by the test command; `PS_YARN_CONF` names its configuration directory) runs Hadoop 2.7.3's IPC
//! server, SASL, token secret managers and PB service wrappers. Every wire fact in `ps-yarn` is
//! checked here against that code, not against our own.

use ps_testkit::{needs, Service};
use ps_yarn::amrm::{ask_anywhere, node_key, AmRmClient};
use ps_yarn::appclient::RmIpc;
use ps_yarn::conf::HadoopConf;
use ps_yarn::credentials::{Credentials, KIND_AMRM};
use ps_yarn::proto::*;
use ps_yarn::rest::RmRest;
use ps_yarn::submit::{ResourceManager, Submission};
use ps_yarn::{nm, YarnError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn conf() -> HadoopConf {
    let dir = std::env::var("PS_YARN_CONF")
        .expect("PS_YARN_CONF is not set: run through scripts/test.sh (it starts the YARN stand-in)");
    HadoopConf::load_dir(Path::new(&dir)).unwrap()
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ps-yarn-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn wait_file(p: &Path) {
    let t0 = Instant::now();
    while !p.exists() {
        assert!(t0.elapsed() < Duration::from_secs(30), "{} never appeared", p.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Submits an "AM" that hands its token file and environment to the test and waits for `stop`.
fn submit_probe_am(rm: &dyn ResourceManager, dir: &Path) -> String {
    let app = rm.new_application().unwrap();
    let d = dir.display();
    let cmd = format!(
        "cp \"$HADOOP_TOKEN_FILE_LOCATION\" {d}/t.tmp && env > {d}/env && mv {d}/t.tmp {d}/tokens; \
         while [ ! -f {d}/stop ]; do sleep 0.1; done"
    );
    let s = Submission {
        app_id: app.clone(),
        name: "probe".into(),
        app_type: "PS-TEST".into(),
        queue: "default".into(),
        memory_mb: 256,
        vcores: 1,
        command: cmd,
        secrets: [("probe.secret".to_string(), b"s3cret".to_vec())].into(),
        ..Default::default()
    };
    rm.submit(&s).unwrap();
    app
}

fn launch_context(cmd: &str) -> ContainerLaunchContextProto {
    ContainerLaunchContextProto { command: vec![cmd.to_string()], ..Default::default() }
}

/// Tells the probe AM to exit when the test ends, passed or not (it would loop forever).
struct StopProbe(PathBuf);

impl Drop for StopProbe {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("stop"), b"");
    }
}

/// The stand-in's test control (not a Hadoop API): `app=ID` moves a running application to the
/// other ResourceManager now.
async fn standin_failover(web: &str, query: &str) {
    let url = format!("http://{web}/ws/v1/psyarn/failover?{query}");
    let r =
        tokio::task::spawn_blocking(move || reqwest::blocking::Client::new().put(&url).send()).await.unwrap().unwrap();
    assert!(r.status().is_success(), "{}", r.text().unwrap_or_default());
}

#[test]
fn am_and_nm_protocols_against_hadoops_own_servers() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    let c = conf();
    let rest = RmRest::new(&c.rm_web_urls().unwrap(), "tester").unwrap();
    let dir = tmp("am");
    let _stop = StopProbe(dir.clone());
    let app = submit_probe_am(&rest, &dir);
    wait_file(&dir.join("tokens"));
    let env = std::fs::read_to_string(dir.join("env")).unwrap();
    for k in ["CONTAINER_ID=container_", "NM_HOST=", "NM_PORT=", "HADOOP_TOKEN_FILE_LOCATION=", "APP_SUBMIT_TIME_ENV="]
    {
        assert!(env.contains(k), "AM environment lacks {k}");
    }
    let creds = Credentials::read_file(&dir.join("tokens")).unwrap();
    let token = creds.find_kind(KIND_AMRM).expect("AMRMToken in the container's token file").clone();
    // rm1 and rm2 (the stand-in's yarn-site.xml enables ResourceManager HA).
    let sched = c.rm_schedulers().unwrap();
    assert_eq!(sched.len(), 2, "{sched:?}");
    let wait = Duration::from_secs(20);
    let web = c.rm_webapp().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // Bounded: a stand-in that stops answering fails the test instead of hanging it.
    let exchange = async {
        // Wrong password: Hadoop's SASL server refuses with a FATAL reply.
        let mut bad = token.clone();
        bad.password[0] ^= 1;
        let e = AmRmClient::connect(&sched, bad, wait).await.err().expect("a wrong password must fail");
        assert!(matches!(e, YarnError::Fatal { .. }) && e.to_string().contains("DIGEST-MD5"), "{e}");

        let mut am = AmRmClient::connect(&sched, token.clone(), wait).await.unwrap();
        let reg = am.register("127.0.0.1", 0, "http://127.0.0.1:1/probe").await.unwrap();
        // The scheduler port runs with hadoop.rpc.protection=privacy: every message after SASL
        // is encrypted and MACed. A 200 KB request crosses several wrapped messages (the server's
        // maxbuf is 64 KB) and is still read whole: the RM answers it ("already registered").
        assert_eq!(am.qop(), "auth-conf");
        let mut second = AmRmClient::connect(&sched, token.clone(), wait).await.unwrap();
        let long_url = format!("http://127.0.0.1:1/{}", "x".repeat(200_000));
        let e = second.register("127.0.0.1", 0, &long_url).await.unwrap_err();
        assert!(e.to_string().contains("already registered"), "{e}");
        assert!(reg.maximum_capability.unwrap().memory.unwrap() >= 256);
        // Containers come on a later heartbeat than the ask, with one NMToken per node.
        let first = am.allocate(vec![ask_anywhere(1, 256, 1, 2)], vec![], 0.1).await.unwrap();
        assert!(first.allocated_containers.is_empty());
        let mut got = Vec::new();
        for _ in 0..50 {
            let r = am.allocate(vec![], vec![], 0.2).await.unwrap();
            got.extend(r.allocated_containers);
            if got.len() >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(got.len(), 2);
        assert_eq!(am.nm_tokens.len(), 2, "one NMToken per node");
        // A repeated response id gets the cached response; any other mismatch is an ERROR that
        // keeps the connection usable.
        let rid = am.response_id();
        am.set_response_id(rid - 1);
        let again = am.allocate(vec![], vec![], 0.2).await.unwrap();
        assert_eq!(again.response_id, Some(rid));
        am.set_response_id(rid + 5);
        let e = am.allocate(vec![], vec![], 0.2).await.unwrap_err();
        assert_eq!(
            e.remote_class(),
            Some("org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException")
        );
        assert!(e.to_string().contains("Invalid responseId"), "{e}");
        am.set_response_id(rid);

        // The other node's NMToken is refused by Hadoop's NM-side check.
        let (a, b) = (&got[0], &got[1]);
        let (ka, kb) = (node_key(a.node_id.as_ref().unwrap()), node_key(b.node_id.as_ref().unwrap()));
        assert_ne!(ka, kb, "round-robin over two nodes");
        let e = nm::start_container(a, &am.nm_tokens[&kb], launch_context("exit 0")).await.unwrap_err();
        assert!(e.to_string().contains("not valid for current node manager"), "{e}");
        // Started properly, they run and their exits come back through allocate.
        nm::start_container(a, &am.nm_tokens[&ka], launch_context("exit 0")).await.unwrap();
        nm::start_container(b, &am.nm_tokens[&kb], launch_context("exit 7")).await.unwrap();
        let mut done = Vec::new();
        for _ in 0..100 {
            done.extend(am.allocate(vec![], vec![], 0.5).await.unwrap().completed_container_statuses);
            if done.len() >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let exit_of = |c: &ContainerProto| {
            done.iter().find(|s| s.container_id == c.id).and_then(|s| s.exit_status).expect("status reported")
        };
        assert_eq!((exit_of(a), exit_of(b)), (0, 7));

        // HA: the application moves to rm2 while an ask is outstanding. rm1 answers
        // StandbyException, the client fails over, rm2 answers ApplicationMasterNotRegistered,
        // the client registers again and re-sends the ask, which rm2 then serves.
        assert_eq!(am.address(), sched[0]);
        let r = am.allocate(vec![ask_anywhere(2, 256, 1, 1)], vec![], 0.6).await.unwrap();
        assert!(r.allocated_containers.is_empty());
        standin_failover(&web, &format!("app={app}")).await;
        let mut more = Vec::new();
        for _ in 0..50 {
            more.extend(am.allocate(vec![], vec![], 0.7).await.unwrap().allocated_containers);
            if !more.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(more.len(), 1, "the re-sent ask is served once by rm2");
        assert_eq!((am.address(), am.reregistrations), (sched[1].as_str(), 1));
        // Back to rm1 before unregistering: finish registers again there first.
        am.allocate(vec![], vec![more[0].id.clone().unwrap()], 0.8).await.unwrap();
        standin_failover(&web, &format!("app={app}")).await;
        am.finish(APP_SUCCEEDED, "probe done", "").await.unwrap();
        assert_eq!((am.address(), am.reregistrations), (sched[0].as_str(), 2));
    };
    rt.block_on(async { tokio::time::timeout(Duration::from_secs(120), exchange).await })
        .expect("the AM/NM protocol exchange did not finish within 120 s");
    std::fs::write(dir.join("stop"), b"").unwrap();
    let rep = rest.report(&app).unwrap();
    assert!(rep.succeeded(), "{rep:?}");
    assert_eq!(rep.diagnostics, "probe done");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn rest_submission_kill_and_errors() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    let c = conf();
    // The first RM's web port is closed (a dead RM): the client moves on to the next.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let urls = [vec![format!("http://{dead}")], c.rm_web_urls().unwrap()].concat();
    let rest = RmRest::new(&urls, "tester").unwrap();
    let dir = tmp("kill");
    let app = submit_probe_am(&rest, &dir);
    wait_file(&dir.join("tokens"));
    assert_eq!(rest.report(&app).unwrap().state, "RUNNING");
    let rep = rest.kill(&app).unwrap();
    assert_eq!((rep.state.as_str(), rep.final_status.as_str()), ("KILLED", "KILLED"));
    let e = rest.report("application_1_9999").unwrap_err();
    assert!(e.to_string().contains("404"), "{e}");
    // Without a user the writable endpoints refuse, as Hadoop's do.
    let anon = reqwest::blocking::Client::new()
        .post(format!("http://{}/ws/v1/cluster/apps/new-application", c.rm_webapp().unwrap()))
        .send()
        .unwrap();
    assert_eq!(anon.status().as_u16(), 403);
    std::fs::remove_dir_all(&dir).ok();
}

/// `ApplicationClientProtocol` over IPC against Hadoop's own IPC server and PB service wrapper: the
/// user is the connection's (SIMPLE), the AM's credentials blob is read by Hadoop's `Credentials`,
/// only the owner may kill, and the RM's own exceptions come back by class.
#[test]
fn ipc_submission_as_the_user_kill_acl_and_errors() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    let c = conf();
    let addr = vec![c.rm_address().unwrap()];
    let rm = RmIpc::connect(&addr, "tester").unwrap();
    let dir = tmp("ipc");
    let _stop = StopProbe(dir.clone());
    let app = submit_probe_am(&rm, &dir);
    wait_file(&dir.join("tokens"));
    let creds = Credentials::read_file(&dir.join("tokens")).unwrap();
    assert!(creds.tokens.iter().any(|(_, t)| t.kind == KIND_AMRM), "{creds:?}");
    assert_eq!(creds.secrets, vec![("probe.secret".to_string(), b"s3cret".to_vec())]);
    let env = std::fs::read_to_string(dir.join("env")).unwrap();
    assert!(env.lines().any(|l| l == "USER=tester"), "{env}");
    let rep = rm.report(&app).unwrap();
    assert_eq!((rep.id.as_str(), rep.user.as_str(), rep.state.as_str()), (app.as_str(), "tester", "RUNNING"));
    assert_eq!((rep.name.as_str(), rep.queue.as_str()), ("probe", "default"));
    let mine = rm.applications(&["tester".into()], &["RUNNING"], &["PS-TEST".into()]).unwrap();
    assert!(mine.iter().any(|a| a.id == app), "{mine:?}");
    assert!(rm.applications(&["nobody".into()], &[], &[]).unwrap().is_empty());
    assert!(rm.applications(&[], &["SLEEPING"], &[]).unwrap_err().to_string().contains("SLEEPING"));
    // Another user may not kill it (ClientRMService's ACL check).
    let other = RmIpc::connect(&addr, "mallory").unwrap();
    let e = other.kill(&app).unwrap_err();
    // On the wire, as from the real RM: a YarnException whose message names the cause's class.
    assert_eq!(e.remote_class(), Some("org.apache.hadoop.yarn.exceptions.YarnException"), "{e}");
    assert!(e.to_string().contains("AccessControlException: User mallory cannot perform operation MODIFY_APP"), "{e}");
    let rep = rm.kill(&app).unwrap();
    assert_eq!((rep.state.as_str(), rep.final_status.as_str()), ("KILLED", "KILLED"));
    let e = rm.report("application_1_9999").unwrap_err();
    assert_eq!(e.remote_class(), Some("org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"), "{e}");
    assert!(e.to_string().contains("doesn't exist in RM"), "{e}");
    // Submitting the same application twice is refused; the connection stays usable.
    let s = Submission { app_id: app.clone(), command: "true".into(), ..Default::default() };
    assert!(rm.submit(&s).unwrap_err().to_string().contains("already present"));
    assert_eq!(rm.report(&app).unwrap().state, "KILLED");
    // A closed port: the error says which address and what it is.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let e = RmIpc::connect(&[dead.to_string()], "tester").err().expect("nothing listens there");
    assert!(e.to_string().contains(&dead.to_string()) && e.to_string().contains("yarn.resourcemanager.address"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// ResourceManager HA on the client side: with `yarn.resourcemanager.ha.rm-ids` the client tries
/// the RMs in order, moving past one whose port is closed (a standby RM runs no client service)
/// and one that answers Hadoop's `StandbyException` (an RM in transition), to the active one.
#[test]
fn ipc_client_fails_over_to_the_active_resourcemanager() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    let mut c = conf();
    let active = c.rm_address().unwrap();
    let standby = c.get("psyarn.standby.address").unwrap().expect("the stand-in's standby port");
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    c.set("yarn.resourcemanager.ha.enabled", "true");
    c.set("yarn.resourcemanager.ha.rm-ids", "rm1,rm2,rm3");
    for (id, a) in [("rm1", &dead), ("rm2", &standby), ("rm3", &active)] {
        c.set(&format!("yarn.resourcemanager.address.{id}"), a);
    }
    let addrs = c.rm_addresses().unwrap();
    assert_eq!(addrs, vec![dead.clone(), standby.clone(), active.clone()]);
    let rm = RmIpc::connect(&addrs, "tester").unwrap();
    let app = rm.new_application().unwrap();
    assert_eq!(rm.report(&app).unwrap().state, "NEW");
    // Only the standby: every attempt fails, and the error is the RM's StandbyException.
    let only = RmIpc::connect(&[standby], "tester").unwrap();
    let e = only.new_application().unwrap_err();
    assert_eq!(e.remote_class(), Some("org.apache.hadoop.ipc.StandbyException"), "{e}");
}
