//! The plain single-thread loop of one app on a given input (no parameter server), with the app's
//! default hyper-parameters: the "plain loop" column of `scripts/bench-e2e.sh`. Prints one JSON
//! line: seconds per pass (load excluded) and the objective after each pass.

use ps_apps::baseline;
use ps_runtime::input::{read_corpus, read_edges, read_ratings, BadRecords, RatingFormat};
use serde_json::json;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// mf, lda or pagerank.
    app: String,
    #[arg(long)]
    input: String,
    #[arg(long, default_value_t = 3)]
    passes: usize,
    /// mf: factor rank.
    #[arg(long, default_value_t = 100)]
    rank: usize,
    /// lda: topics.
    #[arg(long, default_value_t = 100)]
    topics: usize,
}

pub fn run(a: Args) {
    let t0 = std::time::Instant::now();
    let (run, size) = match a.app.as_str() {
        "mf" => {
            let (ratings, _) = read_ratings(&a.input, 0, 1, RatingFormat::Auto, BadRecords::Fail).expect("read");
            // The mf app's defaults (MfArgs).
            let p = baseline::MfParams {
                rank: a.rank,
                lr: 0.015,
                decay: 0.95,
                lambda: 0.05,
                passes: a.passes,
                init_scale: 0.5,
                seed: 1,
            };
            (baseline::mf(&ratings, &p), json!({"ratings": ratings.len()}))
        }
        "lda" => {
            let (c, _) = read_corpus(&a.input, None, 0, 1, BadRecords::Fail).expect("read");
            let tokens: usize = c.docs.iter().map(|d| d.words.len()).sum();
            let docs: Vec<Vec<u32>> = c.docs.into_iter().map(|d| d.words).collect();
            let run = baseline::lda(&docs, c.vocab_size, a.topics, 0.1, 0.01, a.passes, 1).expect("lda");
            (run, json!({"tokens": tokens}))
        }
        "pagerank" => {
            let (edges, _) = read_edges(&a.input, 0, 1, BadRecords::Fail).expect("read");
            let n = edges.src.iter().chain(&edges.dst).map(|&x| x as usize + 1).max().unwrap_or(0);
            (baseline::pagerank(&edges, n, 0.85, a.passes), json!({"nodes": n, "edges": edges.src.len()}))
        }
        other => panic!("ps-bench plain: unknown app '{other}' (mf, lda, pagerank)"),
    };
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({"app": a.app, "pass_s": run.pass_s, "objective": run.objective, "wall_s": wall, "size": size})
    );
}
