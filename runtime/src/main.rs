//! `ps-runtime`: one process of a parameter-server job, started by `yarn-submit` (locally or in a
//! YARN container).

use clap::{Parser, Subcommand};
use ps_runtime::{
    apps, logging, run_app, Hostfile, JobConfig, ProcessSpec, PsError, RowTypeRegistry,
};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "ps-runtime",
    version,
    about = "One process of a parameter-server job"
)]
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
}

fn run(job: PathBuf, id: usize) -> Result<(), PsError> {
    let job = JobConfig::load(&job)?;
    let hosts = Hostfile::load(&job.hostfile)?;
    let secret = std::fs::read(&job.secret_file).map_err(|e| {
        PsError::io(
            format!("reading job secret {}", job.secret_file.display()),
            e,
        )
    })?;
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
    let text =
        serde_json::to_string_pretty(&stats).map_err(|e| PsError::io("encoding stats", e))?;
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
        Cmd::Run { job, id } => {
            if let Err(e) = run(job, id) {
                log::error!("process {id} failed: {e}");
                std::process::exit(1);
            }
        }
    }
}
