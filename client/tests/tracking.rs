//! The job's live page and final report, loaded in a real headless browser (Debian's
//! `chromium-headless-shell`, installed by scripts/test.sh; `PS_BROWSER` names it): during a
//! running local job (`yarn-submit --ui`) and from `report.html` after it. The numbers the browser
//! shows must be the ones `status.json` and the job's stats carry.

mod common;

use common::browser::{clock_of, dom, last_value, points, status, text_of, wait_evaluations};
use common::{bin, spawn_lines, wait_for, wait_within, JOB_LIMIT};
use ps_testkit::{needs, Service};
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

#[test]
fn the_live_page_and_the_report_show_the_jobs_numbers_in_a_browser() {
    if !needs(&[Service::Browser]) {
        return;
    }
    let dir = common::tmpdir("tracking", "local");
    let input = common::gen_ratings(&dir, 20000, 800, 200);
    let stats = dir.join("stats.json");
    // Every process sleeps 40 ms a clock: a job of about 16 s that the browser can watch.
    let mut cmd = Command::new(bin("yarn-submit"));
    cmd.env("PS_RUNTIME_BIN", bin("ps-runtime")).args(["--master", "local[2]", "--threads", "1", "--ui", "--stats"]);
    cmd.arg(&stats);
    cmd.arg("--checkpoint").arg(dir.join("ck")).args(["--checkpoint-every", "100"]);
    // 2 workers at staleness 1: 4 rotating item slices, one clock each, 400 clocks.
    cmd.args(["mf", "--input", &input, "--passes", "100", "--rank", "4", "--test-fraction", "0.1"]);
    cmd.args(["--straggler", "random", "--straggler-p", "1", "--straggler-delay", "0.04"]);
    let (child, rx) = spawn_lines(&mut cmd);
    let mut log = Vec::new();
    let url = wait_for(&rx, "job page: http://", &mut log).split_once("job page: ").unwrap().1.to_string();
    // A few evaluations in, look while the job runs.
    let before = wait_evaluations(&url, 3, Duration::from_secs(60));
    let page = dom(&url);
    let after = status(&url);
    assert_eq!(text_of(&page, r#"id="job-status""#), Some("running"), "the job ended before the browser looked");
    assert!(page.contains(r#"<meta http-equiv="refresh""#));
    // What the browser shows lies between two status.json reads around it.
    let c = clock_of(&page, r#"id="job-clock""#);
    let (c0, c1) = (before["clock"].as_i64().unwrap(), after["clock"].as_i64().unwrap());
    assert!(c0 <= c && c <= c1, "page clock {c} outside status.json's {c0}..={c1}");
    for p in 0..2 {
        let pc = clock_of(&page, &format!(r#"class="proc-clock" data-process="{p}""#));
        let (b, a) =
            (before["per_process"][p]["clock"].as_i64().unwrap(), after["per_process"][p]["clock"].as_i64().unwrap());
        assert!(b <= pc && pc <= a, "process {p}: page clock {pc} outside {b}..={a}");
    }
    // The objective plot has a point per evaluation, and its newest value is one status.json has.
    let shown = points(&page, "rmse");
    let (n0, n1) = (before["objective"].as_array().unwrap().len(), after["objective"].as_array().unwrap().len());
    assert!(n0 <= shown && shown <= n1, "{shown} points, status.json had {n0} then {n1} evaluations");
    let last = last_value(&page, "rmse");
    assert!(after["objective"].as_array().unwrap().iter().any(|r| r["rmse"].as_f64() == Some(last)), "{last}");
    assert!(page.contains(r#"class="bar""#), "no staleness histogram");
    assert!(points(&page, "sent") >= 2, "no bytes per clock");

    let st = wait_within(child, JOB_LIMIT, "the job");
    log.extend(rx.try_iter());
    assert!(st.success(), "{}", log.join("\n"));
    // Not on a terminal: plain progress lines (every 10 s) with clock, objective and ETA.
    assert!(
        log.iter().any(|l| l.contains("[submit] progress: clock ") && l.contains("rmse") && l.contains("ETA")),
        "no progress line with clock, objective and ETA:\n{}",
        log.join("\n")
    );
    // The final page, next to the stats, shows the job's own final numbers.
    let report = dir.join("stats.report.html");
    let final_page = dom(&format!("file://{}", report.display()));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let last = v["objective"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(text_of(&final_page, r#"id="job-status""#), Some("succeeded"));
    assert!(!final_page.contains("refresh") && !final_page.contains("status.json"));
    // 100 passes of 4 clocks, all done.
    assert_eq!(clock_of(&final_page, r#"id="job-clock""#), 400);
    assert_eq!(clock_of(&final_page, r#"id="job-total""#), 400);
    for name in ["rmse", "test_rmse"] {
        assert_eq!(Some(last_value(&final_page, name)), last[name].as_f64(), "{name}");
        assert_eq!(points(&final_page, name), v["objective"].as_array().unwrap().len(), "{name}");
    }
    // Every snapshot the name node logged as complete is listed, committed.
    let logged: Vec<&str> =
        log.iter().filter_map(|l| l.split_once("snapshot ")?.1.split_once(" complete").map(|x| x.0)).collect();
    assert!(logged.len() >= 4, "{logged:?}");
    let listed: Vec<&str> =
        final_page.split(r#"<tr class="snapshot"><td>"#).skip(1).map(|r| r.split('<').next().unwrap()).collect();
    assert_eq!(listed, logged);
    assert!(!final_page.contains("writing"));
}
