//! What wire protection costs, measured the way users run jobs: `yarn-submit --master local[2]
//! --threads 1 mf` (separate processes over TCP, default consistency) on the same ratings with
//! `wire_protection` = authentication (the unprotected baseline), integrity (the default) and
//! privacy, interleaved and repeated; training seconds per pass from the job's stats (load and
//! evaluation excluded), median of the repeats. Results: `<out>/bench-wire.{json,csv}`.
//! The in-process remote-row benchmark (`ps-bench runtime`) measures the same per protection.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Ratings to train on (generate with `ps-runtime gen ratings`, 5M by default).
    #[arg(long, default_value = "data/bench/ratings-5m.tsv")]
    ratings: PathBuf,
    #[arg(long, default_value_t = 100)]
    rank: usize,
    #[arg(long, default_value_t = 2)]
    passes: usize,
    /// Runs per protection (interleaved, so drift in the machine's speed hits all alike).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[arg(long, value_delimiter = ',', default_value = "authentication,integrity,privacy")]
    protections: Vec<ps_runtime::wire::WireProtection>,
    #[arg(long, default_value = "results")]
    out: PathBuf,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// One job through yarn-submit; returns (train seconds per pass, bytes sent, wall seconds).
fn run_mf(a: &Args, prot: &str, tmp: &Path) -> (f64, u64, f64) {
    let conf = tmp.join(format!("conf-{prot}.json"));
    let stats = tmp.join(format!("stats-{prot}.json"));
    std::fs::write(&conf, json!({"wire_protection": prot}).to_string()).expect("write conf");
    let submit = std::env::current_exe().expect("own path").with_file_name("yarn-submit");
    let t0 = std::time::Instant::now();
    let out = Command::new(&submit)
        .args(["--master", "local[2]", "--threads", "1", "--conf"])
        .arg(&conf)
        .arg("--stats")
        .arg(&stats)
        .args(["mf", "--input"])
        .arg(&a.ratings)
        .args(["--rank", &a.rank.to_string(), "--passes", &a.passes.to_string()])
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e} (build the workspace first)", submit.display()));
    let wall = t0.elapsed().as_secs_f64();
    assert!(out.status.success(), "mf with {prot} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("stats JSON");
    (v["train_s"].as_f64().expect("train_s") / a.passes as f64, v["bytes_sent"].as_u64().unwrap_or(0), wall)
}

pub fn run(a: Args) {
    assert!(a.ratings.exists(), "{} not found: ps-runtime gen ratings --out {0}", a.ratings.display());
    let tmp = std::env::temp_dir().join(format!("ps-bench-wire-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let names: Vec<&str> = a.protections.iter().map(|p| p.name()).collect();
    let mut per: Vec<Vec<(f64, u64, f64)>> = vec![Vec::new(); names.len()];
    for rep in 0..a.repeat {
        for (i, p) in names.iter().enumerate() {
            let r = run_mf(&a, p, &tmp);
            println!("run {}: {p}: {:.3} s/pass of training ({:.1} s wall, {} MB sent)", rep + 1, r.0, r.2, r.1 >> 20);
            per[i].push(r);
        }
    }
    let base = median(per[0].iter().map(|r| r.0).collect());
    let mut csv = String::from("protection,median_s_per_pass,baseline_s_per_pass,ratio,runs,bytes_sent_per_run\n");
    let mut rows = Vec::new();
    for (i, p) in names.iter().enumerate() {
        let m = median(per[i].iter().map(|r| r.0).collect());
        let bytes = per[i][0].1;
        println!("{p}: median {m:.3} s/pass = {:.3} x {} ({} runs)", m / base, names[0], a.repeat);
        csv += &format!("{p},{m:.4},{base:.4},{:.4},{},{bytes}\n", m / base, a.repeat);
        rows.push(json!({"protection": p, "median_s_per_pass": m, "ratio_vs_baseline": m / base,
            "baseline": names[0], "runs_s_per_pass": per[i].iter().map(|r| r.0).collect::<Vec<_>>(),
            "wall_s": per[i].iter().map(|r| r.2).collect::<Vec<_>>(), "bytes_sent_per_run": bytes}));
    }
    let doc = json!({"command": format!("yarn-submit --master local[2] --threads 1 --conf {{wire_protection}} mf --input {} --rank {} --passes {}",
        a.ratings.display(), a.rank, a.passes), "results": rows});
    std::fs::create_dir_all(&a.out).expect("create out dir");
    std::fs::write(a.out.join("bench-wire.json"), serde_json::to_string_pretty(&doc).unwrap_or_default())
        .expect("write");
    std::fs::write(a.out.join("bench-wire.csv"), csv).expect("write");
    let _ = std::fs::remove_dir_all(&tmp);
    println!("results written to {}/bench-wire.{{json,csv}}", a.out.display());
}
