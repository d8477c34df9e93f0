//! `yarn-submit`: the user's entry point, spark-submit style. `--master local[N]` runs the job as
//! N local processes; `--master yarn` arrives with the YARN integration.

mod app_info;
mod console;
mod error;
mod local;
mod local_ports;
mod paths;
mod placement;
mod preflight;
mod settings;
mod staging;
mod tracker;
mod yarn;

use clap::{CommandFactory, FromArgMatches, Parser};
use error::{ClientError, Result};
use ps_job::AppCatalog;
use ps_runtime::{Consistency, PrefetchPolicy, SnapshotMode};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(name = "yarn-submit", version, about = "Submit a parameter-server job")]
pub struct Cli {
    /// Where to run: local, local[N] (N processes on this machine), local[*] (one worker per
    /// core: one process with a thread per core, or cores / --threads processes), or yarn (the
    /// cluster of HADOOP_CONF_DIR).
    #[arg(long, default_value = "local[2]")]
    pub master: String,
    /// Worker threads per process.
    #[arg(long)]
    pub threads: Option<usize>,
    /// As spark-submit's: the cores of each process, that is --threads and, on YARN,
    /// --worker-vcores (each when not given itself).
    #[arg(long, value_name = "N")]
    pub executor_cores: Option<usize>,
    /// As spark-submit's: only `cluster`, the one mode there is (the application master drives
    /// the job on the cluster; yarn-submit follows it from here).
    #[arg(long, value_name = "MODE", value_parser = ["cluster", "client"])]
    pub deploy_mode: Option<String>,
    /// Consistency model: bsp, ssp, essp (SSP-push, the default; pagerank runs bsp unless this or
    /// --staleness is given) or async.
    #[arg(long, value_parser = parse_consistency)]
    pub consistency: Option<Consistency>,
    /// Staleness (slack) for ssp/essp.
    #[arg(long)]
    pub staleness: Option<u32>,
    /// Automatic prefetch: off, conservative or aggressive.
    #[arg(long, value_parser = parse_prefetch)]
    pub prefetch: Option<PrefetchPolicy>,
    /// Write the job's merged stats JSON here at the end (a local path or an hdfs:// URL); the
    /// job's final page goes next to it, named after it (mf.json: mf.report.html).
    #[arg(long)]
    pub stats: Option<String>,
    /// Local: serve the job's live page (objective, progress, staleness, traffic) from the
    /// launcher and print its URL. On YARN the page is the application's tracking URL.
    #[arg(long)]
    pub ui: bool,
    /// Local: the address the job's page and the processes' progress reports use, HOST:PORT
    /// (default 127.0.0.1 on a free port; 0.0.0.0:8080 to reach it from elsewhere).
    #[arg(long, value_name = "HOST:PORT")]
    pub ui_bind: Option<String>,
    /// Also write per-clock stats lines (JSON lines, `clocks-<K>.jsonl` per process, next to the
    /// --stats file; in the job directory without --stats).
    #[arg(long)]
    pub stats_per_clock: bool,
    /// Where snapshots and checkpoints go (a local path or an hdfs:// URL): `clock-<t>/` directories.
    #[arg(long, value_name = "URL")]
    pub checkpoint: Option<String>,
    /// Snapshot every C clocks (besides the one at the end of the job).
    #[arg(long, value_name = "C")]
    pub checkpoint_every: Option<i64>,
    /// pure (exactly the first t clocks' updates; resumable) or approx (cheaper, not resumable).
    #[arg(long, value_parser = parse_snapshot)]
    pub snapshot: Option<SnapshotMode>,
    /// Continue from the latest complete checkpoint under --checkpoint (from scratch if none).
    #[arg(long)]
    pub resume: bool,
    /// YARN: how many times YARN may start the application master; after the AM dies, a new
    /// attempt continues the job from the newest checkpoint (default 1).
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub am_attempts: u32,
    /// After a runtime process fails, start every process again from the newest resumable
    /// checkpoint (from the start if none), up to N times (default 0).
    #[arg(long, value_name = "N")]
    pub restarts: Option<u32>,
    /// Keep this many complete snapshots, deleting older ones (0: keep all; default 3).
    #[arg(long, value_name = "K")]
    pub keep_checkpoints: Option<usize>,
    /// A runtime setting, KEY=VALUE, repeatable, as spark-submit's --conf: keys of
    /// RuntimeConfig, nested with dots (--conf checkpoint.every=6 --conf wire_protection=privacy).
    /// They override --properties-file; flags override both.
    #[arg(long, value_name = "KEY=VALUE")]
    pub conf: Vec<String>,
    /// Runtime configuration file: JSON, or Spark's `key value` lines, with the keys of
    /// RuntimeConfig (nested with dots: `checkpoint.every 6`).
    #[arg(long, value_name = "FILE")]
    pub properties_file: Option<PathBuf>,
    /// Directory for the hostfile, secret, job config and per-process stats (default: a fresh
    /// temporary directory, removed after a successful run).
    #[arg(long)]
    pub job_dir: Option<PathBuf>,
    /// The ps-runtime binary (default: next to yarn-submit, or $PS_RUNTIME_BIN).
    #[arg(long)]
    pub runtime_bin: Option<PathBuf>,
    /// YARN: runtime processes (one container each).
    #[arg(long, visible_alias = "num-executors")]
    pub workers: Option<usize>,
    /// YARN: memory per runtime container, e.g. 4g or 512m (a plain number is MB): the process's
    /// whole limit (YARN kills a container that exceeds it; there is no separate heap). Size it
    /// from `peak_rss_bytes` of a smaller run plus headroom.
    #[arg(long, visible_alias = "executor-memory", default_value = "1024", value_name = "SIZE", value_parser = parse_mb)]
    pub worker_memory: i64,
    /// YARN: virtual cores per runtime container (default 1, or --executor-cores); also its
    /// worker threads, unless the threads are given (--threads, --conf threads=N).
    #[arg(long)]
    pub worker_vcores: Option<i32>,
    /// YARN: memory of the application master's container, e.g. 512m or 1g (a plain number is MB).
    #[arg(long, visible_alias = "driver-memory", default_value = "512", value_name = "SIZE", value_parser = parse_mb_u64)]
    pub am_memory: u64,
    /// YARN: the Hadoop configuration directory (`*-site.xml`; default: $HADOOP_CONF_DIR).
    #[arg(long, value_name = "DIR")]
    pub conf_dir: Option<std::path::PathBuf>,
    /// YARN: how to reach the ResourceManager: ipc (ApplicationClientProtocol, as you; the
    /// default) or rest (its web API).
    #[arg(long, value_enum, default_value_t = yarn::SubmitVia::Ipc)]
    pub submit_via: yarn::SubmitVia,
    /// YARN: listening ports of the runtime processes and the application master, `A-B` (for
    /// firewalled clusters; default any free port).
    #[arg(long, value_name = "A-B")]
    pub port_range: Option<ps_runtime::ports::PortRange>,
    /// YARN: keep the HDFS staging directory (binaries, job files, per-process stats) after a
    /// successful job; by default the AM and yarn-submit remove it (it is always kept after a
    /// failure).
    #[arg(long)]
    pub keep_staging: bool,
    /// YARN: the queue to submit to.
    #[arg(long, default_value = "default")]
    pub queue: String,
    /// YARN: the application name (default ps-<app>).
    #[arg(long)]
    pub name: Option<String>,
    /// Secure (Kerberos) clusters: log in as this principal from --keytab instead of using the
    /// ticket cache, for scheduled jobs that outlive a `kinit` ticket. On YARN the keytab also
    /// goes to the application master (owner-only in the staging directory, removed when the job
    /// ends), which obtains fresh delegation tokens for the job before they expire; the runtime
    /// containers get tokens only.
    #[arg(long, value_name = "P", requires = "keytab")]
    pub principal: Option<String>,
    /// The keytab file holding --principal's keys.
    #[arg(long, value_name = "FILE", requires = "principal")]
    pub keytab: Option<std::path::PathBuf>,
    /// Secure YARN clusters: more file systems the job reaches besides the default one and those
    /// its flags name (inputs, output, --checkpoint), e.g. hdfs://ns2,viewfs://cluster; the
    /// containers get a delegation token for each (as Spark's
    /// spark.kerberos.access.hadoopFileSystems).
    #[arg(long, value_name = "URLS", value_delimiter = ',')]
    pub access_filesystems: Vec<String>,
    /// Geo-distributed: split the processes evenly into D data centers, in hostfile order.
    #[arg(long, value_name = "D")]
    pub datacenters: Option<u32>,
    /// Geo-distributed: the data center of each process in hostfile order, e.g. 0,0,1,1
    /// (instead of --datacenters).
    #[arg(long, value_name = "LIST", value_delimiter = ',', conflicts_with = "datacenters")]
    pub dc_of: Option<Vec<u32>>,
    /// YARN, geo-distributed: each process's data center is its node's rack, as the
    /// ResourceManager reports it.
    #[arg(long, value_name = "rack", value_parser = ["rack"], conflicts_with_all = ["dc_of", "dc_hosts"])]
    pub dc_by: Option<String>,
    /// YARN, geo-distributed: each process's data center from a file of `node datacenter`
    /// lines (node: host or host:port; `#` comments).
    #[arg(long, value_name = "FILE", conflicts_with = "dc_of")]
    pub dc_hosts: Option<PathBuf>,
    /// How data centers synchronise: asp (Gaia: a model copy per data center, significant
    /// updates mirrored between them) or ssp (Gaia's Baseline: one parameter server over all
    /// data centers, the job's consistency across the WAN; the default).
    #[arg(long, value_parser = parse_inter_dc)]
    pub inter_dc: Option<ps_runtime::InterDc>,
    /// ASP: initial significance threshold v (an accumulated update is mirrored once it changes
    /// its row by more than v / sqrt(clock); default 0.01).
    #[arg(long, value_name = "V")]
    pub significance: Option<f64>,
    /// ASP: how many clocks a data center may run ahead of the slowest other one (DS, default 2).
    #[arg(long, value_name = "DS")]
    pub mirror_clock_bound: Option<u32>,
    /// ASP: also mirror updates above a soft threshold, lowered while the WAN has bandwidth to
    /// spare (faster convergence, more WAN bytes). Default off; the flag alone or
    /// `--soft-significance=on` turns it on.
    #[arg(long, value_name = "on|off", num_args = 0..=1, require_equals = true, default_missing_value = "on", value_parser = parse_on_off)]
    pub soft_significance: Option<bool>,
    /// Emulated WAN: bandwidth of each link between two processes in different data centers,
    /// megabits per second in each direction (traffic inside a data center is not shaped).
    #[arg(long, value_name = "MBPS")]
    pub wan_mbps: Option<f64>,
    /// Emulated WAN: one-way delay of those links, milliseconds.
    #[arg(long, value_name = "MS")]
    pub wan_delay_ms: Option<f64>,
    /// Emulated WAN per pair of data centers, from a JSON file: {"datacenters": [names],
    /// "mbps": [[from i to j]], "delay_ms": [[...]]} (instead of --wan-mbps/--wan-delay-ms).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["wan_mbps", "wan_delay_ms"])]
    pub wan_matrix: Option<PathBuf>,
    /// Debug-level logging of yarn-submit itself (the processes follow PS_LOG, e.g.
    /// PS_LOG=info,ps_runtime::server=debug).
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// The application (demo) followed by its own options.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "APP [APP ARGS]")]
    pub app: Vec<String>,
}

// clap prints a value parser's error as `invalid value ...: {e}`; returning the runtime's own
// error (not a copy of its text) keeps that message as it was.
fn parse_consistency(s: &str) -> Result<Consistency, ps_runtime::PsError> {
    s.parse()
}

fn parse_inter_dc(s: &str) -> Result<ps_runtime::InterDc, ps_runtime::PsError> {
    s.parse()
}

/// A memory size in MB, as spark-submit and YARN write them: `4g`, `512m`, `2048` (MB), `1.5g`;
/// k, m, g, t (any case, optionally followed by b), rounded up to whole MB.
fn parse_mb(s: &str) -> Result<i64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t.strip_suffix('b').filter(|r| r.ends_with(['k', 'm', 'g', 't'])).unwrap_or(&t);
    let (num, mb_per_unit) = match t.char_indices().last() {
        Some((i, 'k')) => (&t[..i], 1.0 / 1024.0),
        Some((i, 'm')) => (&t[..i], 1.0),
        Some((i, 'g')) => (&t[..i], 1024.0),
        Some((i, 't')) => (&t[..i], 1024.0 * 1024.0),
        _ => (t, 1.0),
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && (v * mb_per_unit) < 1e12 => Ok((v * mb_per_unit).ceil() as i64),
        _ => Err(format!("'{s}' is not a memory size like 4g, 512m or 2048 (MB)")),
    }
}

fn parse_mb_u64(s: &str) -> Result<u64, String> {
    parse_mb(s).map(|v| v as u64)
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        _ => Err(format!("'{s}' is not one of on, off")),
    }
}

fn parse_snapshot(s: &str) -> Result<SnapshotMode, ps_runtime::PsError> {
    s.parse()
}

fn parse_prefetch(s: &str) -> Result<PrefetchPolicy> {
    match s {
        "off" => Ok(PrefetchPolicy::Off),
        "conservative" => Ok(PrefetchPolicy::Conservative),
        "aggressive" => Ok(PrefetchPolicy::Aggressive),
        _ => Err(ClientError::Prefetch(s.to_string())),
    }
}

/// The end of `--help`: the applications and the other commands.
fn after_help() -> String {
    let apps: String = AppCatalog::builtin().apps().map(|(n, d)| format!("  {n:<10} {d}\n")).collect();
    format!(
        "Applications (`yarn-submit APP --help` for an application's options):\n{apps}\n\
         Commands:\n  yarn-submit status APP_ID   the application's report, as JSON\n  \
         yarn-submit kill APP_ID     kill it and print its final report\n  \
         yarn-submit list [--all]    your applications that are still active (--all: every one)\n  \
         (each takes --submit-via ipc|rest and --conf-dir DIR; `yarn-submit status --help`)\n\n\
         Example: yarn-submit --master local[2] --threads 2 --consistency essp demo --clocks 50"
    )
}

/// The application and its options, checked before anything starts, the same way for every
/// master: `APP --help` prints the application's options (exit 0); an option yarn-submit does
/// not know, an unknown application or bad application options are usage errors (exit 2).
/// With `--runtime-bin` that binary checks them (it may hold the user's own applications).
fn check_app(cli: &Cli) -> Option<i32> {
    let (name, _) = cli.app.split_first()?;
    if name.starts_with('-') {
        log::error!(
            "unknown option '{name}' (yarn-submit's own options come before the application: {}; see --help)",
            AppCatalog::builtin().apps().map(|a| a.0).collect::<Vec<_>>().join(", ")
        );
        return Some(2);
    }
    match app_info::check(cli) {
        Ok(app_info::Check::Good(_)) => None,
        Ok(app_info::Check::Help(help)) => {
            print!("{help}");
            Some(0)
        }
        Ok(app_info::Check::Bad(why)) => {
            log::error!("{why}");
            Some(2)
        }
        Err(e) => {
            log::error!("{e}");
            Some(1)
        }
    }
}

/// `--principal`/`--keytab`: every HDFS client of this job (here and, locally, in the processes
/// it starts, which inherit the environment) logs in from the keytab, through hdfs-native's own
/// keytab support. The keytab must be readable; it is never copied or shipped.
fn kerberos_login(cli: &Cli) -> Result<(), i32> {
    let (Some(principal), Some(keytab)) = (&cli.principal, &cli.keytab) else { return Ok(()) };
    if let Err(e) = std::fs::File::open(keytab) {
        log::error!("--keytab {}: {e}", keytab.display());
        return Err(2);
    }
    let keytab = std::fs::canonicalize(keytab).unwrap_or_else(|_| keytab.clone());
    // Before any other thread exists: nothing reads the environment concurrently.
    std::env::set_var(ps_runtime::storage::KERBEROS_PRINCIPAL_ENV, principal);
    std::env::set_var(ps_runtime::storage::KERBEROS_KEYTAB_ENV, &keytab);
    log::info!("HDFS: logging in as {principal} from {}", keytab.display());
    Ok(())
}

fn main() {
    let console = console::Console::new();
    let argv: Vec<String> = std::env::args().collect();
    // Logging starts before the arguments are parsed (so parse errors are logged): --verbose is
    // looked for among yarn-submit's own options, before the application's name.
    let builtin = AppCatalog::builtin();
    let own = argv.iter().skip(1).take_while(|a| !builtin.apps().any(|(n, _)| n == a.as_str()));
    let verbose = own.into_iter().any(|a| a == "--verbose" || a == "-v");
    local::init_logging(console.clone(), verbose);
    // `yarn-submit status APP_ID`, `kill APP_ID` and `list` (with their own options).
    if matches!(argv.get(1).map(String::as_str), Some("status" | "kill" | "list")) {
        std::process::exit(yarn::command(&yarn::AppCommand::parse()));
    }
    let matches = Cli::command().after_help(after_help()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let Some(code) = check_app(&cli) {
        std::process::exit(code);
    }
    if cli.deploy_mode.as_deref() == Some("client") {
        log::error!("{}", ClientError::DeployModeClient);
        std::process::exit(2);
    }
    if let Err(code) = kerberos_login(&cli) {
        std::process::exit(code);
    }
    let code = if cli.master == "local" || cli.master.starts_with("local[") {
        local::run(&cli, &console)
    } else if cli.master == "yarn" {
        yarn::run(&cli, &console)
    } else {
        log::error!("--master: '{}' is not local, local[N], local[*] or yarn", cli.master);
        2
    };
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::{parse_mb, Cli};
    use clap::Parser;
    use ps_runtime::Consistency;

    fn consistency(args: &[&str]) -> (Consistency, u32) {
        let cli = Cli::try_parse_from([&["yarn-submit"], args].concat()).unwrap();
        let cfg = cli.runtime_config().unwrap();
        (cfg.consistency, cfg.staleness)
    }

    /// PageRank runs under BSP unless the job names a model or a staleness; other apps keep the
    /// job-wide default, ESSP with staleness 1.
    #[test]
    fn an_app_default_consistency_applies_only_when_the_job_names_none() {
        let essp = Consistency::Essp;
        assert_eq!(consistency(&["pagerank", "--input", "g"]), (Consistency::Bsp, 0));
        assert_eq!(consistency(&["mf", "--input", "r"]), (essp, 1));
        assert_eq!(consistency(&["mf", "--implicit", "--input", "r"]), (Consistency::Bsp, 0));
        assert_eq!(consistency(&["--staleness", "1", "mf", "--implicit"]), (essp, 1));
        assert_eq!(consistency(&["--consistency", "essp", "pagerank"]), (essp, 1));
        assert_eq!(consistency(&["--staleness", "2", "pagerank"]), (essp, 2));
        assert_eq!(consistency(&["--conf", "consistency=ssp", "pagerank"]), (Consistency::Ssp, 1));
        assert_eq!(consistency(&["--conf", "staleness=3", "pagerank"]), (essp, 3));
        assert_eq!(consistency(&["--datacenters", "2", "pagerank"]).0, essp);
    }

    /// A container's vcores are its worker threads unless the threads are given.
    #[test]
    fn worker_vcores_are_the_threads_unless_they_are_given() {
        let threads = |args: &[&str]| {
            let cli =
                Cli::try_parse_from([&["yarn-submit", "--master", "yarn", "--workers", "2"], args, &["demo"]].concat())
                    .unwrap();
            let mut cfg = cli.runtime_config().unwrap();
            cli.container_threads(&mut cfg).unwrap();
            cfg.threads
        };
        let default = ps_runtime::RuntimeConfig::default().threads;
        assert_eq!(threads(&[]), default);
        assert_eq!(threads(&["--worker-vcores", "8"]), 8);
        assert_eq!(threads(&["--worker-vcores", "8", "--threads", "3"]), 3);
        assert_eq!(threads(&["--worker-vcores", "8", "--conf", "threads=4"]), 4);
        assert_eq!(threads(&["--executor-cores", "6"]), 6, "sets both");
        assert_eq!(threads(&["--executor-cores", "6", "--worker-vcores", "8"]), 6, "--executor-cores sets the threads");
    }

    #[test]
    fn memory_sizes_read_as_spark_writes_them() {
        for (s, mb) in [("2048", 2048), ("4g", 4096), ("4G", 4096), ("512m", 512), ("512MB", 512), ("1.5g", 1536)] {
            assert_eq!(parse_mb(s), Ok(mb), "{s}");
        }
        assert_eq!(parse_mb("1t"), Ok(1 << 20));
        assert_eq!(parse_mb("100k"), Ok(1), "rounded up to whole MB");
        for bad in ["", "g", "-1g", "0", "4x", "lots"] {
            assert!(parse_mb(bad).unwrap_err().contains("is not a memory size"), "{bad}");
        }
    }
}
