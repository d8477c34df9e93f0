//! The job as yarn-submit resolves it before any process starts: a job that cannot run says why
//! once and leaves nothing behind, and spark-submit's flags and properties files work.

mod common;

use common::{bin, gen_ratings, output, tmpdir};
use std::path::Path;
use std::process::{Command, Output};

/// yarn-submit with its temporary files under `tmp`, so a test sees what a job leaves there.
fn submit(tmp: &Path) -> Command {
    let mut c = Command::new(bin("yarn-submit"));
    c.env("PS_RUNTIME_BIN", bin("ps-runtime")).env("TMPDIR", tmp);
    c
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The lines of `o`'s log that contain `pat`.
fn count(o: &Output, pat: &str) -> usize {
    stderr(o).lines().filter(|l| l.contains(pat)).count()
}

fn left_in(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

#[test]
fn a_job_that_cannot_start_says_why_once_and_leaves_nothing() {
    let d = tmpdir("spec", "refused");
    let tmp = d.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let ratings = gen_ratings(&d, 2000, 100, 50);
    let (out, empty, missing) = (d.join("out"), d.join("empty"), d.join("missing.tsv"));
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&empty).unwrap();
    let p = |x: &Path| x.to_string_lossy().into_owned();
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["--input".into(), p(&missing), "--output".into(), p(&d.join("o1"))],
            format!("--input {} does not exist", p(&missing)),
        ),
        (vec!["--input".into(), p(&empty)], format!("--input {}: no input files there", p(&empty))),
        (vec!["--input".into(), format!("{}/part-*", p(&d))], "no input files there".into()),
        (
            vec!["--input".into(), ratings.clone(), "--output".into(), p(&out)],
            format!("--output {} exists (use --overwrite", p(&out)),
        ),
    ];
    for (args, says) in cases {
        let o = output(submit(&tmp).args(["--master", "local[3]", "mf"]).args(&args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(count(&o, &says), 1, "{args:?}: said once:\n{}", stderr(&o));
        assert_eq!(count(&o, "[p"), 0, "{args:?}: no process started:\n{}", stderr(&o));
        assert!(left_in(&tmp).is_empty(), "{args:?} left {:?}", left_in(&tmp));
    }
    // --overwrite replaces it, and --resume may continue it: neither is refused up front.
    let o = output(submit(&tmp).args(["--master", "local[1]", "mf", "--input", &ratings, "--passes", "1"]).args([
        "--output",
        &p(&out),
        "--overwrite",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    // Usage errors exit 2 whatever the master, before any cluster is contacted.
    for (args, says) in [
        (vec!["--master", "yarn", "demo"], "--master yarn needs --workers N"),
        (vec!["--deploy-mode", "client", "demo"], "--deploy-mode client: the job always runs in the cluster"),
    ] {
        let o = output(submit(&tmp).args(&args).env_remove("HADOOP_CONF_DIR"));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(count(&o, says), 1, "{args:?}:\n{}", stderr(&o));
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_failed_job_removes_its_temporary_directory_and_keeps_a_named_one() {
    let d = tmpdir("spec", "failed");
    let tmp = d.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let fail = ["--master", "local[2]", "--threads", "1", "demo", "--clocks", "6", "--fail-at-clock", "2"];
    let o = output(submit(&tmp).args(fail));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        count(&o, "injected failure of worker 0 at clock 2 (--fail-at-clock) (not restarted"),
        1,
        "{}",
        stderr(&o)
    );
    assert_eq!(count(&o, "job directory kept"), 0, "{}", stderr(&o));
    assert!(left_in(&tmp).is_empty(), "left {:?}", left_in(&tmp));
    let kept = d.join("job");
    let o = output(submit(&tmp).arg("--job-dir").arg(&kept).args(fail));
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(count(&o, &format!("(job directory kept: {})", kept.display())), 1, "{}", stderr(&o));
    assert!(kept.join("hostfile").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_job_without_output_is_warned_once_and_reports_sit_beside_their_stats() {
    let d = tmpdir("spec", "nooutput");
    let ratings = gen_ratings(&d, 2000, 100, 50);
    let mut reports = Vec::new();
    for name in ["a.json", "b.json"] {
        let stats = d.join(name);
        let o = output(
            submit(&d)
                .args(["--master", "local[2]", "--threads", "1", "--stats"])
                .arg(&stats)
                .args(["mf", "--input", &ratings, "--passes", "1"]),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(count(&o, "mf: no --output, so the job's model is not written anywhere"), 1, "{}", stderr(&o));
        reports.push(d.join(name.replace(".json", ".report.html")));
    }
    // Two jobs writing their stats to one folder keep one page each.
    assert!(reports.iter().all(|r| r.exists()), "{reports:?}");
    let _ = std::fs::remove_dir_all(&d);
}

/// spark-submit's flags name the same things here, and its properties files read as they are.
#[test]
fn spark_submit_flags_and_properties_files_work() {
    let d = tmpdir("spec", "spark");
    let (props, stats) = (d.join("job.conf"), d.join("stats.json"));
    std::fs::write(&props, "# as spark-defaults.conf\nstaleness 2\ncheckpoint.keep=5\n\nprefetch: off\n").unwrap();
    let o = output(
        submit(&d)
            .args(["--master", "local[2]", "--deploy-mode", "cluster", "--executor-cores", "3"])
            .args(["--num-executors", "2", "--executor-memory", "2g", "--driver-memory", "1g"])
            .arg("--properties-file")
            .arg(&props)
            .arg("--stats")
            .arg(&stats)
            .args(["demo", "--clocks", "4"]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let rt = &v["config"]["runtime"];
    assert_eq!((rt["staleness"].as_u64(), rt["threads"].as_u64()), (Some(2), Some(3)), "{rt}");
    assert_eq!((rt["checkpoint"]["keep"].as_u64(), rt["prefetch"].as_str()), (Some(5), Some("off")), "{rt}");
    // A Spark setting is named, with its line, rather than half-applied.
    std::fs::write(&props, "staleness 2\nspark.executor.memory 4g\n").unwrap();
    let o = output(submit(&d).arg("--properties-file").arg(&props).args(["demo", "--clocks", "4"]));
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(count(&o, "line 2: spark.executor.memory is a Spark setting"), 1, "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&d);
}

/// An app's default consistency model reaches yarn-submit through `describe`, the way a user's
/// own runtime binary (`--runtime-bin`) is asked: PageRank's BSP, mf's BSP under `--implicit`.
#[test]
fn an_apps_default_consistency_is_heard_through_its_runtime_binary() {
    let describe = |args: &[&str]| -> serde_json::Value {
        let o = output(Command::new(bin("ps-runtime")).arg("describe").args(args));
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    assert_eq!(describe(&["pagerank", "--input", "g"])["consistency"], "bsp");
    assert_eq!(describe(&["mf", "--input", "r", "--implicit"])["consistency"], "bsp");
    assert!(describe(&["mf", "--input", "r"])["consistency"].is_null());
    assert_eq!(describe(&["mf", "--input", "r", "--output", "o"])["output_policy"], "must_not_exist");
    let d = tmpdir("spec", "consistency");
    let ratings = gen_ratings(&d, 2000, 100, 50);
    let stats = d.join("stats.json");
    let o = output(
        submit(&d)
            .arg("--runtime-bin")
            .arg(bin("ps-runtime"))
            .args(["--master", "local[2]", "--threads", "1", "--stats"])
            .arg(&stats)
            .args(["mf", "--implicit", "--input", &ratings, "--passes", "1"]),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(v["config"]["runtime"]["consistency"], "bsp");
    let _ = std::fs::remove_dir_all(&d);
}
