//! The options every iterative application takes, and what they imply: how many clocks a run has,
//! which part of the data a clock works on, and at which clocks the objective is sampled.

use super::straggler::StragglerArgs;
use ps_runtime::input::{BadRecords, InputFormat};
use ps_runtime::{PsError, Result};

/// How outputs are written (`--output-format`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Text,
    Binary,
    /// Parquet tables as Spark writes them (snappy part files).
    Parquet,
}

/// Parses an application's arguments (`args` without the program name); errors name the app.
pub fn parse<P: clap::Parser>(app: &str, args: &[String]) -> Result<P> {
    P::try_parse_from(std::iter::once(app.to_string()).chain(args.iter().cloned()))
        .map_err(|e| PsError::Config(format!("{app}: {e}")))
}

/// Options every application takes (interface contract: names are fixed).
#[derive(clap::Args, Debug, Clone)]
pub struct CommonArgs {
    /// Input URL (a file or a directory of part files).
    #[arg(long)]
    pub input: String,
    /// How the input is laid out: `auto` (Parquet when its first file is Parquet, a CSV/TSV
    /// table when the app's column flags are given, otherwise the app's text format), `text`,
    /// `csv` or `parquet`.
    #[arg(long, value_enum, default_value_t = InputFormat::Auto)]
    pub input_format: InputFormat,
    /// Output URL (a directory; refused if it exists unless --overwrite).
    #[arg(long)]
    pub output: Option<String>,
    #[arg(long)]
    pub overwrite: bool,
    /// Output format: text (tab-separated, one row per line), binary (NumPy `.npy` files that
    /// `numpy.load(path, mmap_mode="r")` maps) or parquet (tables as Spark writes them: an
    /// `id` column and the row's values); layouts in docs/APPS.md.
    #[arg(long, default_value = "text")]
    pub output_format: OutputFormat,
    /// Passes over the data.
    #[arg(long, default_value_t = 10)]
    pub passes: i64,
    /// Clocks per pass (work per clock = 1/C of a pass; C > 1 is A-BSP-style minibatching).
    /// Default: the app's (mf 2, lda 4, pagerank 1).
    #[arg(long)]
    pub clocks_per_pass: Option<i64>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Stop once the objective reaches this value.
    #[arg(long)]
    pub target: Option<f64>,
    /// Objective evaluations per run, evenly spaced.
    #[arg(long, default_value_t = 16)]
    pub samples: i64,
    /// Count and skip malformed input lines instead of failing.
    #[arg(long)]
    pub skip_bad_records: bool,
    /// Fail the job when more than this share of the input rows was skipped (bad records under
    /// --skip-bad-records, and rows with an empty or null value).
    #[arg(long, default_value_t = 0.1)]
    pub max_bad_fraction: f64,
    /// Passes per clock (W > 1 makes a clock several passes: LazyTable's wpc > 1).
    #[arg(long, default_value_t = 1)]
    pub passes_per_clock: i64,
    #[command(flatten)]
    pub stragglers: StragglerArgs,
    /// Whether `--clocks-per-pass` was left to the app (set by `validate`): an app whose schedule
    /// depends on the job's shape may then size it (`size_clocks`).
    #[arg(skip)]
    pub cpp_from_app: bool,
}

impl CommonArgs {
    pub fn bad_records(&self) -> BadRecords {
        if self.skip_bad_records {
            BadRecords::Skip
        } else {
            BadRecords::Fail
        }
    }
    pub fn total_clocks(&self) -> i64 {
        if self.passes_per_clock > 1 {
            (self.passes + self.passes_per_clock - 1) / self.passes_per_clock
        } else {
            self.passes * self.cpp()
        }
    }

    /// The work of clock `clock` over `n` items: (pass, item range) segments.
    pub fn segments(&self, clock: i64, n: usize) -> Vec<(i64, std::ops::Range<usize>)> {
        if self.passes_per_clock > 1 {
            let first = clock * self.passes_per_clock;
            (first..(first + self.passes_per_clock).min(self.passes)).map(|p| (p, 0..n)).collect()
        } else {
            let cpp = self.cpp();
            let per = n.div_ceil(cpp as usize);
            let part = (clock % cpp) as usize;
            vec![(clock / cpp, (part * per).min(n)..((part + 1) * per).min(n))]
        }
    }

    /// Injected straggling for clock `clock` of process `pid` of `nprocs` (see `StragglerArgs`).
    pub fn straggle(&self, pid: usize, nprocs: usize, clock: i64) {
        self.stragglers.straggle(self.seed, pid, nprocs, clock);
    }
    /// Whether a clock is several passes (`--passes-per-clock` > 1).
    pub fn multi_pass(&self) -> bool {
        self.passes_per_clock > 1
    }

    /// Sets the clocks per pass when the user left them to the app.
    pub fn size_clocks(&mut self, cpp: i64) {
        if self.cpp_from_app {
            self.clocks_per_pass = Some(cpp);
        }
    }

    /// Clocks per pass.
    pub fn cpp(&self) -> i64 {
        self.clocks_per_pass.unwrap_or(1)
    }
    /// Fills in the app's default clocks per pass and checks ranges.
    pub fn validate(&mut self, app: &str, default_cpp: i64) -> Result<()> {
        if self.passes_per_clock > 1 && self.clocks_per_pass.is_some_and(|c| c > 1) {
            return Err(PsError::Config(format!("{app}: use either --clocks-per-pass or --passes-per-clock")));
        }
        self.cpp_from_app = self.clocks_per_pass.is_none();
        self.clocks_per_pass.get_or_insert(if self.passes_per_clock > 1 { 1 } else { default_cpp });
        if self.passes_per_clock <= 0 || self.stragglers.out_of_range() {
            return Err(PsError::Config(format!(
                "{app}: --passes-per-clock must be positive, --straggler-delay >= 0, --straggler-p in [0, 1]"
            )));
        }
        if self.passes <= 0 || self.cpp() <= 0 || self.samples < 0 {
            return Err(PsError::Config(format!("{app}: --passes and --clocks-per-pass must be positive")));
        }
        Ok(())
    }
    /// True if the objective should be evaluated at the end of clock `c` (0-based).
    pub fn is_sample_clock(&self, c: i64) -> bool {
        let t = self.total_clocks();
        let s = self.samples.min(t).max(1);
        (0..s).any(|i| (i + 1) * t / s - 1 == c)
    }
}
