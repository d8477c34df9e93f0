//! The command line of a runtime binary: `ps-runtime`, or a user's own binary with its apps in
//! the catalog ([`runtime_main`]). `run` is one process of a job, started by `yarn-submit`
//! (locally or in a YARN container); `describe` tells `yarn-submit` about an app before a job
//! starts; `apps`, `gen` and `snapshot` are tools.

use crate::launch;
use clap::{Parser, Subcommand};
use ps_apps::AppCatalog;
use ps_runtime::logging;
use ps_runtime::PsError;
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
        /// Get the hostfile from the YARN application master at HOST:PORT instead (this process
        /// binds a free port and reports it there).
        #[arg(long, value_name = "HOST:PORT")]
        rendezvous: Option<String>,
        /// The launcher's automatic restart K of this job (0: the first run): continue from the
        /// newest resumable checkpoint, if the job has a checkpoint URL.
        #[arg(long, default_value_t = 0, value_name = "K")]
        attempt: u32,
    },
    /// List the applications of this binary: name, a tab, what it does.
    Apps,
    /// Check an application's arguments and print what a submitter needs as JSON: its storage
    /// locations (`[[flag, url], ...]`) and clocks; `APP --help` prints its help. Bad arguments
    /// exit 2 with the reason.
    #[command(disable_help_flag = true)]
    Describe {
        app: String,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Generate synthetic inputs with a fixed seed.
    #[command(subcommand)]
    Gen(GenCmd),
    /// Inspect snapshots written with --checkpoint.
    #[command(subcommand)]
    Snapshot(SnapCmd),
}

#[derive(Subcommand)]
enum SnapCmd {
    /// List the snapshots under a checkpoint URL.
    List { url: String },
    /// Print a snapshot's rows as TSV: table, row id, values (dense) or column:value (sparse).
    Dump {
        /// The checkpoint URL (--checkpoint of the job).
        url: String,
        /// Snapshot clock (default: the newest complete snapshot).
        #[arg(long)]
        clock: Option<i64>,
        /// Only this table id.
        #[arg(long)]
        table: Option<u32>,
        /// Write to this local file instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Offline evaluation of an `mf` snapshot: RMSE of mean + L.R over a ratings input.
    EvalMf {
        url: String,
        #[arg(long)]
        clock: Option<i64>,
        /// Ratings (local path or hdfs:// URL), as given to the job.
        #[arg(long)]
        input: String,
        #[arg(long, default_value = "auto")]
        format: ps_runtime::input::RatingFormat,
        /// The job's --seed and --test-fraction, to split train and held-out ratings the same way.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 0.0)]
        test_fraction: f64,
    },
}

fn snapshot(cmd: SnapCmd, catalog: &AppCatalog) -> Result<(), PsError> {
    use ps_runtime::snapshot::{read, CheckpointStore};
    match cmd {
        SnapCmd::List { url } => {
            let store = CheckpointStore::open(&url)?;
            println!("clock\tstatus\tmode\tresumable\tfinal\tbytes");
            for (t, complete) in store.list()? {
                if !complete {
                    println!("{t}\tincomplete\t-\t-\t-\t-");
                    continue;
                }
                let m = store.read_manifest(t)?;
                let bytes = m.total_bytes();
                println!("{t}\tcomplete\t{}\t{}\t{}\t{bytes}", m.mode, m.resumable, m.is_final);
            }
        }
        SnapCmd::Dump { url, clock, table, out } => {
            let store = CheckpointStore::open(&url)?;
            let m = read::manifest(&store, clock)?;
            let reg = catalog.rows();
            let n = match out {
                Some(p) => {
                    let f =
                        std::fs::File::create(&p).map_err(|e| PsError::io(format!("creating {}", p.display()), e))?;
                    let mut w = std::io::BufWriter::new(f);
                    let n = read::dump_tsv(&store, &m, table, reg, &mut w)?;
                    std::io::Write::flush(&mut w).map_err(|e| PsError::io(format!("writing {}", p.display()), e))?;
                    n
                }
                None => read::dump_tsv(&store, &m, table, reg, &mut std::io::stdout().lock())?,
            };
            log::info!("{n} rows of {} ({} snapshot at clock {})", store.clock_dir(m.clock), m.mode, m.clock);
        }
        SnapCmd::EvalMf { url, clock, input, format, seed, test_fraction } => {
            let store = CheckpointStore::open(&url)?;
            let m = read::manifest(&store, clock)?;
            let (train, n_train, test, n_test) =
                ps_apps::mf::eval_snapshot(&store, &m, &input, format, seed, test_fraction)?;
            println!(
                "{}",
                serde_json::json!({"clock": m.clock, "mode": m.mode, "train_rmse": train, "train_ratings": n_train,
                    "test_rmse": test, "test_ratings": n_test})
            );
        }
    }
    Ok(())
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
        /// Write a directory of this many part files (generated in parallel) instead of one file.
        #[arg(long)]
        parts: Option<usize>,
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
        /// Zipf exponent of the words' overall frequencies (about 1 in English text); 0: flat.
        #[arg(long, default_value_t = 0.0)]
        word_skew: f64,
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
        GenCmd::Ratings { out, ratings, users, items, rank, noise, item_skew, user_skew, seed, parts } => {
            let spec = gen::RatingsSpec { users, items, ratings, rank, noise, item_skew, user_skew, seed };
            match parts {
                Some(p) => gen::ratings_parts(&spec, &out, p),
                None => gen::ratings(&spec, &out),
            }
        }
        GenCmd::Corpus { out, name, docs, vocab, topics, doc_len, alpha, beta, seed, word_skew } => {
            gen::corpus(&gen::CorpusSpec { docs, vocab, topics, doc_len, alpha, beta, seed, word_skew }, &out, &name)
        }
        GenCmd::Graph { out, nodes, degree, skew, seed } => {
            gen::graph(&gen::GraphSpec { nodes, degree, skew, seed }, &out)
        }
    }
}

/// `describe APP ARGS...`: exit 0 with JSON or the app's help, 2 on bad arguments.
fn describe(catalog: &AppCatalog, app: &str, args: &[String]) -> i32 {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        if let Some(help) = catalog.help(app) {
            print!("{help}");
            return 0;
        }
    }
    match catalog.build(app, args) {
        Ok(built) => {
            let locations: Vec<[String; 2]> =
                built.locations().into_iter().map(|(flag, url)| [flag.to_string(), url]).collect();
            println!(
                "{}",
                serde_json::json!({
                    "app": app,
                    "locations": locations,
                    "output_policy": built.output_policy().name(),
                    "consistency": built.default_consistency(),
                    "total_clocks": built.total_clocks(),
                })
            );
            0
        }
        Err(e) => {
            eprintln!("{e}");
            2
        }
    }
}

/// The main of a runtime binary: parses the command line and runs it with `catalog`'s apps.
/// A user's binary is `fn main() { ps_job::runtime_main(AppCatalog::builtin().with_app(...)) }`.
pub fn runtime_main(catalog: AppCatalog) -> ! {
    logging::init(log::LevelFilter::Info);
    let cli = Cli::parse();
    let code = match cli.cmd {
        Cmd::Apps => {
            catalog.apps().for_each(|(name, about)| println!("{name}\t{about}"));
            0
        }
        Cmd::Describe { app, args } => describe(&catalog, &app, &args),
        Cmd::Snapshot(s) => report(snapshot(s, &catalog)),
        Cmd::Gen(g) => report(gen(g)),
        Cmd::Run { job, id, rendezvous, attempt } => {
            match launch::run_job_process_with(&catalog, &job, id, rendezvous.as_deref(), attempt) {
                Ok(()) => 0,
                Err(e) => {
                    log::error!("process {id} failed: {e}");
                    1
                }
            }
        }
    };
    std::process::exit(code)
}

fn report(r: Result<(), PsError>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => {
            log::error!("{e}");
            1
        }
    }
}
