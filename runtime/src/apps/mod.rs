//! Built-in applications, written only against the public API. The iterative ones (`mf`, `lda`,
//! `pagerank`) implement [`driver::Iterative`] and share its driver; adding one is a file with
//! that implementation and a line in [`build`].

pub mod bad_rows;
pub mod baseline;
pub mod demo;
pub mod dictionary;
pub mod driver;
pub mod lda;
pub(crate) mod lda_dense;
mod lda_rows;
pub(crate) mod lda_sampler;
mod lda_table;
pub mod lda_text;
pub(crate) mod lda_tokens;
pub mod mf;
mod mf_args;
mod mf_blocks;
mod mf_eval;
mod mf_implicit;
mod mf_kernel;
mod mf_output;
mod mf_recommend;
mod mf_users;
pub(crate) mod objective;
pub mod options;
pub mod output;
pub mod pagerank;
mod pagerank_edges;
mod pagerank_shares;
mod pagerank_table;
pub(crate) mod rotation;
pub(crate) mod rows_out;
mod rows_parquet;
pub mod state;
pub(crate) mod straggler;
pub mod vocabulary;

use crate::error::{PsError, Result};
use crate::App;

/// Names of the built-in applications.
pub const NAMES: &[&str] = &["demo", "mf", "lda", "pagerank"];

/// What each built-in application is, in a line (for `yarn-submit --help`).
pub const DESCRIPTIONS: &[(&str, &str)] = &[
    ("demo", "per-worker counters that check the SSP guarantee on every read"),
    ("mf", "matrix factorization by SGD (ratings: user item rating)"),
    ("lda", "topic model by collapsed Gibbs sampling (UCI bag of words, lda-c, LibSVM or token lines)"),
    ("pagerank", "edge-scheduled PageRank (edge lists)"),
];

/// The application's own `--help` text, or `None` for a name that is not built in.
pub fn help(name: &str) -> Option<String> {
    help_of(name, build)
}

/// The `--help` text of app `name` as `build` makes it, if it has one: clap renders the help as
/// the error of a `--help` parse, and the error names the app in front.
pub(crate) fn help_of(name: &str, build: impl Fn(&str, &[String]) -> Result<Box<dyn App>>) -> Option<String> {
    let e = build(name, &["--help".to_string()]).err()?;
    let PsError::Config(text) = &e else { return None };
    // The names in front ("mf: "), once or more: words without spaces followed by ": ".
    let mut help = text.as_str();
    while let Some((head, rest)) = help.split_once(": ") {
        if head.is_empty() || !head.chars().all(|c| c.is_alphanumeric() || c == '-' || c == '_') {
            break;
        }
        help = rest;
    }
    help.contains("Usage:").then(|| help.to_string())
}

/// The consistency model built-in app `name` with arguments `args` runs under when the job names
/// none (no `--consistency` or `--staleness`, nor those keys in the runtime configuration); `None`
/// keeps the job-wide default (ESSP).
pub fn default_consistency(name: &str, args: &[String]) -> Option<crate::config::Consistency> {
    use driver::Iterative;
    match name {
        // BSP halves the item slices `--implicit` draws its negatives from (see `mf_implicit`).
        "mf" if args.iter().any(|a| a == "--implicit") => Some(crate::config::Consistency::Bsp),
        "mf" => mf::Mf::CONSISTENCY,
        "lda" => lda::Lda::CONSISTENCY,
        "pagerank" => pagerank::PageRank::CONSISTENCY,
        _ => None,
    }
}

/// Builds the application `name` from its command-line arguments.
pub fn build(name: &str, args: &[String]) -> Result<Box<dyn App>> {
    match name {
        "demo" => Ok(Box::new(demo::Demo::from_args(args)?)),
        "mf" => driver::build::<mf::Mf>(args),
        "lda" => driver::build::<lda::Lda>(args),
        "pagerank" => driver::build::<pagerank::PageRank>(args),
        other => Err(PsError::Config(format!("app: unknown application '{other}' (known: {})", NAMES.join(", ")))),
    }
}
