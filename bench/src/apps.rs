//! Applications through the parameter server (2 local processes) vs the same algorithm as a plain
//! single-process loop, on generated Netflix-, NYTimes- and web-shaped data; time per pass and the
//! ratio, in one run. Results: `<out>/bench-apps.{json,csv}`.

use ps_apps::baseline;
use ps_runtime::input::{read_corpus, read_edges, read_ratings, BadRecords, RatingFormat};
use ps_runtime::run_local_cluster;
use ps_runtime::{gen, Consistency, RowTypeRegistry, RuntimeConfig};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where generated inputs are cached.
    #[arg(long, default_value = "data/bench")]
    data: PathBuf,
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Parameter-server processes (one worker thread each).
    #[arg(long, default_value_t = 2)]
    procs: usize,
    /// Ratings of the Netflix-shaped MF input.
    #[arg(long, default_value_t = 5_000_000)]
    mf_ratings: usize,
    #[arg(long, default_value_t = 100)]
    mf_rank: usize,
    #[arg(long, default_value_t = 3)]
    mf_passes: usize,
    /// Documents of the NYTimes-shaped corpus (about 300 tokens each).
    #[arg(long, default_value_t = 10_000)]
    lda_docs: usize,
    #[arg(long, default_value_t = 100)]
    lda_topics: usize,
    /// Use this corpus (UCI docword) instead of the generated one (e.g. data/nyt/docword.nyt.txt).
    #[arg(long)]
    lda_input: Option<String>,
    #[arg(long, default_value_t = 5)]
    lda_passes: usize,
    /// Nodes of the power-law graph (about 10 edges each).
    #[arg(long, default_value_t = 1_000_000)]
    pr_nodes: usize,
    #[arg(long, default_value_t = 10)]
    pr_passes: usize,
    /// Only these apps (mf, lda, pagerank).
    #[arg(long, value_delimiter = ',', default_value = "mf,lda,pagerank")]
    only: Vec<String>,
}

fn ensure(path: &Path, make: impl FnOnce() -> ps_runtime::Result<()>) {
    if !path.exists() {
        eprintln!("generating {}", path.display());
        make().unwrap_or_else(|e| panic!("generating {}: {e}", path.display()));
    }
}

/// Runs `app` for `passes` passes on the parameter server; returns (seconds per pass, final
/// objective record).
fn ps_run(app: &str, args: Vec<String>, procs: usize, passes: usize) -> (f64, Value) {
    let cfg = RuntimeConfig { threads: 1, consistency: Consistency::Essp, staleness: 1, ..RuntimeConfig::default() };
    let res = run_local_cluster(procs, &cfg, &RowTypeRegistry::with_builtins(), |_| {
        ps_apps::build(app, &args).expect("args")
    })
    .expect("cluster");
    let st = res.into_iter().next().expect("process 0").unwrap_or_else(|e| panic!("{app} failed: {e}"));
    let train_s = st.app["train_s"].as_f64().unwrap_or(f64::NAN);
    let last = st.app["objective"].as_array().and_then(|v| v.last().cloned()).unwrap_or(Value::Null);
    (train_s / passes as f64, last)
}

fn strs(s: String) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// Results gathered app by app: printed as they come, written at the end.
struct Report {
    procs: usize,
    rows: Vec<Value>,
    csv: String,
}

impl Report {
    fn new(procs: usize) -> Self {
        let csv = String::from("app,input,ps_pass_s,baseline_pass_s,ratio,ps_objective,baseline_objective\n");
        Report { procs, rows: Vec::new(), csv }
    }

    fn add(&mut self, app: &str, input: String, ps: f64, base: f64, ps_obj: f64, base_obj: f64) {
        println!(
            "{app:9} {input}: PS ({} procs) {ps:.3} s/pass | plain loop {base:.3} s/pass | ratio {:.2} | objective {ps_obj:.5} vs {base_obj:.5}",
            self.procs,
            ps / base
        );
        self.csv += &format!("{app},{input},{ps:.5},{base:.5},{:.4},{ps_obj},{base_obj}\n", ps / base);
        self.rows.push(
            json!({"app": app, "input": input, "processes": self.procs, "ps_pass_s": ps, "baseline_pass_s": base,
            "ratio": ps / base, "ps_objective": ps_obj, "baseline_objective": base_obj}),
        );
    }

    fn write(&self, out: &Path) {
        std::fs::create_dir_all(out).expect("results dir");
        std::fs::write(out.join("bench-apps.json"), serde_json::to_string_pretty(&self.rows).unwrap_or_default())
            .expect("write");
        std::fs::write(out.join("bench-apps.csv"), &self.csv).expect("write");
        println!("results written to {}/bench-apps.{{json,csv}}", out.display());
    }
}

pub fn run(a: Args) {
    std::fs::create_dir_all(&a.data).expect("data dir");
    let mut report = Report::new(a.procs);
    if a.only.iter().any(|x| x == "mf") {
        measure_mf(&a, &mut report);
    }
    if a.only.iter().any(|x| x == "lda") {
        measure_lda(&a, &mut report);
    }
    if a.only.iter().any(|x| x == "pagerank") {
        measure_pagerank(&a, &mut report);
    }
    report.write(&a.out);
}

/// MF on Netflix-shaped ratings: the PS run, then the plain loop on the same input.
fn measure_mf(a: &Args, report: &mut Report) {
    let path = a.data.join(format!("netflix-{}.tsv", a.mf_ratings));
    ensure(&path, || gen::ratings(&gen::RatingsSpec::netflix(a.mf_ratings, 1), &path));
    let p = path.display().to_string();
    let (ps, last) = ps_run(
        "mf",
        strs(format!("--input {p} --rank {} --passes {} --samples 1", a.mf_rank, a.mf_passes)),
        a.procs,
        a.mf_passes,
    );
    let (ratings, _) = read_ratings(&p, 0, 1, RatingFormat::Auto, BadRecords::Fail).expect("read");
    let params = baseline::MfParams {
        rank: a.mf_rank,
        lr: 0.01,
        decay: 0.95,
        lambda: 0.05,
        passes: a.mf_passes,
        init_scale: 0.5,
        seed: 1,
    };
    let b = baseline::mf(&ratings, &params);
    let input = format!("{} ratings rank {}", a.mf_ratings, a.mf_rank);
    report.add(
        "mf",
        input,
        ps,
        b.pass_s,
        last["rmse"].as_f64().unwrap_or(f64::NAN),
        *b.objective.last().unwrap_or(&f64::NAN),
    );
}

/// The LDA input: `--lda-input` if given, else a generated NYTimes-shaped corpus.
fn lda_input(a: &Args) -> String {
    match &a.lda_input {
        Some(p) => p.clone(),
        None => {
            let dir = a.data.join(format!("nyt-{}", a.lda_docs));
            let spec = gen::CorpusSpec {
                docs: a.lda_docs,
                vocab: 20_000,
                topics: 100,
                doc_len: 300,
                alpha: 0.1,
                beta: 0.01,
                seed: 1,
                word_skew: 0.0,
            };
            ensure(&dir.join("docword.synth.txt"), || gen::corpus(&spec, &dir, "synth"));
            dir.join("docword.synth.txt").display().to_string()
        }
    }
}

/// LDA: the PS run, then the plain loop; also prints tokens/s and the log-likelihood gap.
fn measure_lda(a: &Args, report: &mut Report) {
    let p = lda_input(a);
    let (ps, last) = ps_run(
        "lda",
        strs(format!("--input {p} --topics {} --passes {} --samples 1", a.lda_topics, a.lda_passes)),
        a.procs,
        a.lda_passes,
    );
    let (c, _) = read_corpus(&p, None, 0, 1, BadRecords::Fail).expect("read");
    let tokens: usize = c.docs.iter().map(|d| d.words.len()).sum();
    let docs: Vec<Vec<u32>> = c.docs.into_iter().map(|d| d.words).collect();
    let b = baseline::lda(&docs, c.vocab_size, a.lda_topics, 0.1, 0.01, a.lda_passes, 1).expect("lda");
    println!(
        "lda tokens/s: PS {:.2} M, plain loop {:.2} M ({tokens} tokens)",
        tokens as f64 / ps / 1e6,
        tokens as f64 / b.pass_s / 1e6
    );
    let input = format!("{tokens} tokens K={}", a.lda_topics);
    let (ps_ll, base_ll) = (last["loglik"].as_f64().unwrap_or(f64::NAN), *b.objective.last().unwrap_or(&f64::NAN));
    println!(
        "lda final log-likelihood after {} sweeps: PS {ps_ll:.0}, single process {base_ll:.0}, difference {:.2}%",
        a.lda_passes,
        100.0 * (ps_ll - base_ll) / base_ll.abs()
    );
    report.add("lda", input, ps, b.pass_s, ps_ll, base_ll);
}

/// PageRank on a power-law graph: the PS run, then the plain loop on the same edges.
fn measure_pagerank(a: &Args, report: &mut Report) {
    let path = a.data.join(format!("graph-{}.tsv", a.pr_nodes));
    ensure(&path, || gen::graph(&gen::GraphSpec { nodes: a.pr_nodes, degree: 10, skew: 0.8, seed: 1 }, &path));
    let p = path.display().to_string();
    let (ps, last) =
        ps_run("pagerank", strs(format!("--input {p} --passes {} --samples 1", a.pr_passes)), a.procs, a.pr_passes);
    let (edges, _) = read_edges(&p, 0, 1, BadRecords::Fail).expect("read");
    let n = edges.src.iter().chain(&edges.dst).map(|&x| x as usize + 1).max().unwrap_or(0);
    let b = baseline::pagerank(&edges, n, 0.85, a.pr_passes);
    let input = format!("{n} nodes {} edges", edges.src.len());
    report.add(
        "pagerank",
        input,
        ps,
        b.pass_s,
        last["l1_delta"].as_f64().unwrap_or(f64::NAN),
        *b.objective.last().unwrap_or(&f64::NAN),
    );
}
