//! `ps-bench`: benchmarks that print ratios against baselines measured in the same run and write
//! CSV/JSON into `results/`.
//! ```text
//!   ps-bench runtime   cache-hit get+inc vs Vec/HashMap; remote row throughput
//!   ps-bench apps      MF / LDA / PageRank through the parameter server vs plain loops
//!   ps-bench experiment [NAME]   the papers' experiments, CSVs for the plots
//!   ps-bench storage   HDFS split reader vs plain hdfs-native read; snapshot write time per GB
//!   ps-bench wire      MF through yarn-submit per wire_protection (cost of integrity/privacy)
//!   ps-bench plain APP one app's plain single-thread loop on an input (bench-e2e.sh)
//! ```

mod apps;
mod experiments;
mod plain;
mod runtime;
mod storage;
mod wire;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Parameter-server benchmarks")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Runtime micro-benchmarks.
    Runtime(runtime::Args),
    /// Applications through the parameter server vs single-process loops.
    Apps(apps::Args),
    /// The papers' experiments (CSV into results/experiments; plot with scripts/plot_experiments.py).
    Experiment(experiments::Args),
    /// HDFS split-reader throughput vs plain hdfs-native reads; snapshot write time per GB.
    Storage(storage::Args),
    /// MF time per pass through yarn-submit with each wire protection.
    Wire(wire::Args),
    /// One app's plain single-thread loop on an input (JSON line; used by bench-e2e.sh).
    Plain(plain::Args),
}

// The runtime's allocator (huge pages for large allocations), so that the plain loops and the
// in-process runs measured here allocate as the jobs do.
#[global_allocator]
static ALLOC: ps_runtime::HugePageAlloc = ps_runtime::HugePageAlloc;

fn main() {
    ps_runtime::init_logging(log::LevelFilter::Warn);
    match Cli::parse().cmd {
        Cmd::Runtime(a) => runtime::run(a),
        Cmd::Apps(a) => apps::run(a),
        Cmd::Experiment(a) => experiments::run(a),
        Cmd::Storage(a) => storage::run(a),
        Cmd::Wire(a) => wire::run(a),
        Cmd::Plain(a) => plain::run(a),
    }
}
