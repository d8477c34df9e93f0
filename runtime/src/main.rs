//! `ps-runtime`: one process of a parameter-server job, started by `yarn-submit` (locally or in a
//! YARN container).

use clap::{Parser, Subcommand};
use ps_runtime::{apps, logging, run_app, Hostfile, JobConfig, ProcessSpec, PsError, RowTypeRegistry};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "ps-runtime", version, about = "One process of a parameter-server job")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run process ID of the job described by a job config file.
    Run {
        /// Job configuration (JSON, written by yarn-submit).
        #[arg(long)]
        job: PathBuf,
        /// This process's id (line of the hostfile).
        #[arg(long)]
        id: usize,
    },
    /// List the built-in applications.
    Apps,
    /// Generate synthetic inputs with a fixed seed.
    #[command(subcommand)]
    Gen(GenCmd),
}

#[derive(Subcommand)]
enum GenCmd {
    /// Netflix-shaped ratings (`user item rating` TSV): power-law items, planted low rank + noise.
    Ratings {
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 5_000_000)]
        ratings: usize,
        #[arg(long, default_value_t = 480_189)]
        users: usize,
        #[arg(long, default_value_t = 17_770)]
        items: usize,
        #[arg(long, default_value_t = 10)]
        rank: usize,
        #[arg(long, default_value_t = 0.5)]
        noise: f64,
        /// Zipf exponent of item popularity.
        #[arg(long, default_value_t = 0.9)]
        item_skew: f64,
        /// Zipf exponent of user activity.
        #[arg(long, default_value_t = 0.6)]
        user_skew: f64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// NYTimes-shaped corpus from the LDA generative process (UCI docword + vocab).
    Corpus {
        /// Output directory (writes docword.NAME.txt and vocab.NAME.txt).
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value = "synth")]
        name: String,
        #[arg(long, default_value_t = 10_000)]
        docs: usize,
        #[arg(long, default_value_t = 10_000)]
        vocab: usize,
        #[arg(long, default_value_t = 50)]
        topics: usize,
        #[arg(long, default_value_t = 300)]
        doc_len: usize,
        #[arg(long, default_value_t = 0.1)]
        alpha: f64,
        #[arg(long, default_value_t = 0.01)]
        beta: f64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Power-law directed graph (SNAP edge list).
    Graph {
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 1_000_000)]
        nodes: usize,
        #[arg(long, default_value_t = 10)]
        degree: usize,
        #[arg(long, default_value_t = 0.8)]
        skew: f64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

fn gen(cmd: GenCmd) -> Result<(), PsError> {
    use ps_runtime::gen;
    match cmd {
        GenCmd::Ratings { out, ratings, users, items, rank, noise, item_skew, user_skew, seed } => {
            let spec = gen::RatingsSpec { users, items, ratings, rank, noise, item_skew, user_skew, seed };
            gen::ratings(&spec, &out)
        }
        GenCmd::Corpus { out, name, docs, vocab, topics, doc_len, alpha, beta, seed } => {
            gen::corpus(&gen::CorpusSpec { docs, vocab, topics, doc_len, alpha, beta, seed }, &out, &name)
        }
        GenCmd::Graph { out, nodes, degree, skew, seed } => {
            gen::graph(&gen::GraphSpec { nodes, degree, skew, seed }, &out)
        }
    }
}

fn run(job: PathBuf, id: usize) -> Result<(), PsError> {
    let job = JobConfig::load(&job)?;
    let hosts = Hostfile::load(&job.hostfile)?;
    let secret = std::fs::read(&job.secret_file)
        .map_err(|e| PsError::io(format!("reading job secret {}", job.secret_file.display()), e))?;
    let app = apps::build(&job.app, &job.app_args)?;
    let echo = serde_json::json!({
        "runtime": job.runtime,
        "app": job.app,
        "app_args": job.app_args,
        "processes": hosts.len(),
    });
    let spec = ProcessSpec {
        cfg: job.runtime.clone(),
        hosts,
        pid: id,
        secret,
        listener: None,
        stats_dir: Some(job.stats_dir.clone()),
    };
    let stats = run_app(spec, RowTypeRegistry::with_builtins(), app, echo)?;
    let path = job.stats_dir.join(format!("stats-{id}.json"));
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(&stats).map_err(|e| PsError::io("encoding stats", e))?;
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| PsError::io(format!("writing {}", path.display()), e))?;
    log::info!(
        "process {id} done: {} clocks in {:.2}s (compute {:.2}s, wait {:.2}s per thread)",
        stats.clocks,
        stats.wall_s,
        stats.compute_s,
        stats.wait_s
    );
    Ok(())
}

fn main() {
    logging::init(log::LevelFilter::Info);
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Apps => println!("{}", apps::NAMES.join("\n")),
        Cmd::Gen(g) => {
            if let Err(e) = gen(g) {
                log::error!("{e}");
                std::process::exit(1);
            }
        }
        Cmd::Run { job, id } => {
            if let Err(e) = run(job, id) {
                log::error!("process {id} failed: {e}");
                std::process::exit(1);
            }
        }
    }
}
