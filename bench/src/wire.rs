//! What wire protection costs, measured the way users run jobs: `yarn-submit --master local[2]
//! --threads 1 mf` (separate processes over TCP, default consistency) on the same ratings with
//! `wire_protection` = authentication (the unprotected baseline), integrity and privacy (the
//! default), interleaved and repeated. Two measures, medians of the repeats: training seconds per
//! pass from the job's stats (load and evaluation excluded), and the CPU seconds the whole job
//! used (every process, from `getrusage(RUSAGE_CHILDREN)`; on a machine where the job keeps every
//! core busy this is its cost, and it is far less noisy than elapsed time).
//! Both vary by ±15% between identical runs on this machine, more than the effect looked for, so
//! the run also times the codec itself (encode + seal, check + decode; 64 KiB frames, one core)
//! per protection and turns it into the share of the job's CPU time it accounts for: bytes sent
//! per job x (seal + open time per byte) / CPU seconds per job.
//! Results: `<out>/bench-wire.{json,csv}`.
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
    /// Runs per protection (interleaved, so drift in the machine's speed hits all alike); 0 times
    /// only the codec.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    #[arg(long, value_delimiter = ',', default_value = "authentication,integrity,privacy")]
    protections: Vec<ps_runtime::WireProtection>,
    #[arg(long, default_value = "results")]
    out: PathBuf,
}

/// Seconds per byte to encode and seal, then check and decode, a stream of 64 KiB oplog frames.
fn codec_s_per_byte(p: ps_runtime::WireProtection) -> f64 {
    use bytes::BytesMut;
    use ps_runtime::wire::frame::{DirectionKey, FrameCodec};
    use ps_runtime::wire::Msg;
    use ps_runtime::WireProtection;
    use ring::aead::{LessSafeKey, UnboundKey, AES_256_GCM, CHACHA20_POLY1305};
    use tokio_util::codec::{Decoder, Encoder};
    let alg = if p == WireProtection::Privacy { &AES_256_GCM } else { &CHACHA20_POLY1305 };
    let key = || {
        (p != WireProtection::Authentication)
            .then(|| DirectionKey::new(LessSafeKey::new(UnboundKey::new(alg, &[5; 32]).expect("key"))))
    };
    let (mut w, mut r) = (FrameCodec::new(1 << 20, p, key()), FrameCodec::new(1 << 20, p, key()));
    let data = bytes::Bytes::from(vec![0x3cu8; 64 << 10]);
    let (frames, mut buf) = (4096, BytesMut::with_capacity(70 << 10));
    let t0 = std::time::Instant::now();
    for _ in 0..frames {
        w.encode(Msg::Oplog { table: 1, data: data.clone() }, &mut buf).expect("encode");
        let f = r.decode(&mut buf).expect("decode").expect("a whole frame");
        std::hint::black_box(Msg::decode(f.freeze()).expect("message"));
    }
    t0.elapsed().as_secs_f64() / (frames as f64 * data.len() as f64)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// CPU seconds (user + system) of every terminated and waited-for descendant so far.
fn children_cpu_s() -> f64 {
    // SAFETY: getrusage writes into the struct we pass; RUSAGE_CHILDREN needs nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
}

/// One job through yarn-submit; returns (train seconds per pass, bytes sent, wall seconds, CPU
/// seconds of all its processes).
fn run_mf(a: &Args, prot: &str, tmp: &Path) -> (f64, u64, f64, f64) {
    let conf = tmp.join(format!("conf-{prot}.json"));
    let stats = tmp.join(format!("stats-{prot}.json"));
    std::fs::write(&conf, json!({"wire_protection": prot}).to_string()).expect("write conf");
    let submit = std::env::current_exe().expect("own path").with_file_name("yarn-submit");
    let (t0, cpu0) = (std::time::Instant::now(), children_cpu_s());
    let out = Command::new(&submit)
        .args(["--master", "local[2]", "--threads", "1", "--properties-file"])
        .arg(&conf)
        .arg("--stats")
        .arg(&stats)
        .args(["mf", "--input"])
        .arg(&a.ratings)
        .args(["--rank", &a.rank.to_string(), "--passes", &a.passes.to_string()])
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e} (build the workspace first)", submit.display()));
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), children_cpu_s() - cpu0);
    assert!(out.status.success(), "mf with {prot} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("stats JSON");
    (v["train_s"].as_f64().expect("train_s") / a.passes as f64, v["bytes_sent"].as_u64().unwrap_or(0), wall, cpu)
}

pub fn run(a: Args) {
    if a.repeat == 0 {
        // Only the codec: no jobs.
        for &p in &a.protections {
            let ns = median((0..3).map(|_| codec_s_per_byte(p)).collect()) * 1e9;
            println!("{}: codec {ns:.3} ns/byte (encode + seal, check + decode)", p.name());
        }
        return;
    }
    assert!(a.ratings.exists(), "{} not found: ps-runtime gen ratings --out {0}", a.ratings.display());
    let tmp = std::env::temp_dir().join(format!("ps-bench-wire-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let names: Vec<&str> = a.protections.iter().map(|p| p.name()).collect();
    let mut per: Vec<Vec<(f64, u64, f64, f64)>> = vec![Vec::new(); names.len()];
    for rep in 0..a.repeat {
        for (i, p) in names.iter().enumerate() {
            let r = run_mf(&a, p, &tmp);
            println!(
                "run {}: {p}: {:.3} s/pass of training, {:.1} CPU s, {:.1} s wall, {} MB sent",
                rep + 1,
                r.0,
                r.3,
                r.2,
                r.1 >> 20
            );
            per[i].push(r);
        }
    }
    let base = median(per[0].iter().map(|r| r.0).collect());
    let base_cpu = median(per[0].iter().map(|r| r.3).collect());
    let codec: Vec<f64> =
        a.protections.iter().map(|&p| median((0..3).map(|_| codec_s_per_byte(p)).collect())).collect();
    let mut csv = String::from(
        "protection,median_s_per_pass,ratio_s_per_pass,median_cpu_s,ratio_cpu,runs,bytes_sent_per_run,codec_ns_per_byte,protection_share_of_cpu\n",
    );
    let mut rows = Vec::new();
    for (i, p) in names.iter().enumerate() {
        let m = median(per[i].iter().map(|r| r.0).collect());
        let cpu = median(per[i].iter().map(|r| r.3).collect());
        let bytes = per[i][0].1;
        // What this protection adds over the baseline's framing, as a share of the job's CPU time.
        let extra = (codec[i] - codec[0]).max(0.0) * bytes as f64;
        let share = extra / base_cpu;
        println!(
            "{p}: codec {:.3} ns/byte (seal + open); {} MB sent per job -> {extra:.2} CPU s = {:.2}% of the job's {base_cpu:.1} CPU s",
            codec[i] * 1e9,
            bytes >> 20,
            share * 100.0
        );
        println!(
            "{p}: median {m:.3} s/pass of training = {:.3} x {b}; median {cpu:.1} CPU s per job = {:.3} x {b} ({} runs)",
            m / base,
            cpu / base_cpu,
            a.repeat,
            b = names[0]
        );
        csv += &format!(
            "{p},{m:.4},{:.4},{cpu:.2},{:.4},{},{bytes},{:.4},{share:.4}\n",
            m / base,
            cpu / base_cpu,
            a.repeat,
            codec[i] * 1e9
        );
        rows.push(json!({"protection": p, "median_s_per_pass": m, "ratio_s_per_pass": m / base,
            "median_cpu_s": cpu, "ratio_cpu": cpu / base_cpu, "baseline": names[0],
            "runs_s_per_pass": per[i].iter().map(|r| r.0).collect::<Vec<_>>(),
            "runs_cpu_s": per[i].iter().map(|r| r.3).collect::<Vec<_>>(),
            "wall_s": per[i].iter().map(|r| r.2).collect::<Vec<_>>(), "bytes_sent_per_run": bytes,
            "codec_ns_per_byte": codec[i] * 1e9, "protection_cpu_s_per_job": extra,
            "protection_share_of_job_cpu": share}));
    }
    let doc = json!({"command": format!("yarn-submit --master local[2] --threads 1 --conf wire_protection={{wire_protection}} mf --input {} --rank {} --passes {}",
        a.ratings.display(), a.rank, a.passes), "results": rows});
    std::fs::create_dir_all(&a.out).expect("create out dir");
    std::fs::write(a.out.join("bench-wire.json"), serde_json::to_string_pretty(&doc).unwrap_or_default())
        .expect("write");
    std::fs::write(a.out.join("bench-wire.csv"), csv).expect("write");
    let _ = std::fs::remove_dir_all(&tmp);
    println!("results written to {}/bench-wire.{{json,csv}}", a.out.display());
}
