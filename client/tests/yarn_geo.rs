//! Geo-distributed jobs on YARN: data centers from the nodes' racks as the ResourceManager
//! reports them (`getClusterNodes`), or from a file of nodes. Against the YARN stand-in (Hadoop's
//! own IPC server and records; the handlers and the topology, node i on rack `/rack-i`, are ours)
//! and the real test HDFS, both started by the test command.

mod common;

use common::output;
use common::yarn::{s, submit, SERIAL};
use ps_testkit::{needs, Service};

#[test]
fn asp_job_on_yarn_takes_its_data_centers_from_the_racks() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("ps-yarn-geo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stats = dir.join("stats.json");
    let mut args = s(&["--master", "yarn", "--workers", "4", "--threads", "1", "--worker-memory", "256"]);
    // Every change mirrored and DS 0: the demo's exact checks hold across the data centers, and
    // its barriers check the sync.
    args.extend(s(&["--dc-by", "rack", "--inter-dc", "asp", "--significance", "0", "--mirror-clock-bound", "0"]));
    args.extend(s(&["--stats", stats.to_str().unwrap(), "demo", "--clocks", "8", "--shared-rows", "8"]));
    args.extend(s(&["--barrier-every", "3"]));
    let o = output(submit().args(&args));
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "yarn-submit failed:\n{stdout}\n{stderr}");
    assert!(stderr.contains("data centers (--dc-by rack): /rack-0 (1 node), /rack-1 (1 node)"), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let geo = &v["config"]["runtime"]["geo"];
    let labels: Vec<&str> =
        geo["dc_labels"].as_array().expect("dc_labels").iter().map(|l| l.as_str().unwrap()).collect();
    let dc_of: Vec<u64> = geo["dc_of"].as_array().expect("dc_of").iter().map(|d| d.as_u64().unwrap()).collect();
    assert_eq!(labels.len(), 4, "{geo}");
    for (l, d) in labels.iter().zip(&dc_of) {
        assert_eq!(*l, format!("/rack-{d}"), "data centers are numbered in the racks' sorted order: {geo}");
    }
    assert!(dc_of.contains(&0) && dc_of.contains(&1), "both racks hold processes: {geo}");
    assert!(v["wan_bytes_sent"].as_u64().unwrap() > 0 && v["significant_updates"].as_u64().unwrap() > 0, "{v}");
    assert!(v["checks"].as_u64().unwrap() > 0, "the demo checked its reads: {v}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_node_missing_from_dc_hosts_fails_the_job_naming_it() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("ps-yarn-geo-hosts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hosts = dir.join("dc-hosts");
    std::fs::write(&hosts, "# only nodes elsewhere\nnode1.example east\nnode2.example west\n").unwrap();
    let mut args = s(&["--master", "yarn", "--workers", "2", "--threads", "1", "--worker-memory", "256"]);
    args.extend(s(&["--dc-hosts", hosts.to_str().unwrap(), "--inter-dc", "asp", "demo", "--clocks", "3"]));
    let o = output(submit().args(&args));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{stderr}");
    assert!(
        stderr.contains("no data center for node 127.0.0.1:")
            && stderr.contains(&format!("--dc-hosts {}", hosts.display())),
        "the diagnostics name the node and the file: {stderr}"
    );
    // A malformed file is refused before anything is submitted.
    std::fs::write(&hosts, "node1.example\n").unwrap();
    let o = output(submit().args(&args));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && !String::from_utf8_lossy(&o.stdout).contains("application id"), "{stderr}");
    assert!(stderr.contains(":1: expected 'node datacenter'"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
