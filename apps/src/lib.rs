//! # ps-apps: the app framework and the built-in apps
//!
//! Written only against `ps_runtime`'s public API (this crate depends on nothing else of the
//! workspace, so the compiler holds it to that API, as it does a user's app). The framework: the
//! iterative driver ([`driver::Iterative`]: objective sampling, `--target`, checkpoints, resume,
//! committed outputs), the common options ([`options`]), outputs ([`output`]), saved worker state
//! ([`state`]) and the [`AppCatalog`] of apps by name that a runtime binary runs. The built-in
//! apps: [`mf`], [`lda`], [`pagerank`], the [`demo`] and the plain single-process [`baseline`]s.
//! The iterative ones implement [`driver::Iterative`] and share its driver; adding one is a file
//! with that implementation and a line in [`build`].
//!
//! ## The apps, in more detail
//!
//! Apps use only the public API. Before anything else the runtime tells an app the job's shape
//! (`App::shape(JobShape)`: processes, threads, staleness; in `launch` before progress reports start,
//! and in `run_app`), so MF and LDA size their clocks per pass from the workers (`rotation.rs`: the
//! smallest multiple of workers x (staleness + 1), one for a lone worker, or an error naming the
//! values that fit).
//! `driver.rs` holds the one iterative loop (resume state, clocks,
//! stragglers, objective samples, `--target` stop, checkpoints, output commit); an app implements the
//! `Iterative` trait (tables, per-worker state, one clock of work, objective partial sums, saved state,
//! output) in one file and adds a line to `lib.rs`; it may name the consistency model it runs
//! under when the job names none (`Iterative::CONSISTENCY` or `Iterative::consistency`, which
//! `yarn-submit` hears through `App::default_consistency`: PageRank's is BSP). Beside it: `options` (common flags),
//! `straggler`, `objective` (`Tracker`), `state` (`SavedState`), `output` (committed outputs),
//! `rows_out` (model rows as text or `.npy`). Each worker thread reads its byte range of the input (a line belongs
//! to the split holding its first byte; docword documents and Netflix movie blocks are kept whole);
//! `ps_runtime`'s `input/split.rs`'s `LineReader` hands out lines as slices of its own 1 MiB buffer (as bytes for
//! fast paths, as checked text for the general parsers).
//! `ps_runtime`'s `input/compressed.rs`: `.gz`/`.bz2`/`.zst` files go whole to the worker whose share holds their
//! first byte, and readers see them decompressed through `Decoded`, a `Storage` view;
//! `ps_runtime`'s `input/sparse_corpus.rs` reads lda-c and LibSVM corpora (a document per line).
//! Tables: `ps_runtime`'s `input/table.rs` (`read_rows`: columns by name, cells to a `RowSink`; format detection;
//! CSV over the same splits) and `ps_runtime`'s `input/parquet.rs` (arrow-rs's reader over the storage layer's
//! ranged reads, a row range per worker); `bad_rows.rs` settles the job's skipped rows after
//! loading (`rows_skipped`, `--max-bad-fraction`). Outputs as Parquet: `rows_parquet.rs`
//! (`RowsPart` with `--output-format parquet`); `mf --recommend`: `mf_recommend.rs`; mf's
//! options: `mf_args.rs`; its loading: `mf_load.rs`; its outputs: `mf_output.rs`; `mf --implicit` (BPR with negatives
//! from the held item slice, `bpr_loss`/`test_auc`): `mf_implicit.rs`; LDA's bag-of-words tables (rows sent to their document's worker):
//! `lda_table.rs`. Ids that are not all `u32` (strings, 64-bit): `ps_runtime`'s `input/keys.rs` (`KeyColumn`)
//! and `dictionary.rs` (`settle_ids`, `Dictionary::keys_of`, fingerprints checked on resume).
//! LDA on raw text: `lda_text.rs` (tokenizer, stop words, `vocab/` output) and
//! `vocabulary.rs` (word counts summed by range owners, `--min-count`/`--max-vocab` cut agreed
//! from count histograms, ids in word order).
//! - **mf**: tables L (users) and R (items), dense f32 rows of rank K, initialised by the server from
//!   a seeded RNG on first touch; a mean table. Default `--user-factors local` (`mf_users.rs`): at
//!   load, `Worker::exchange` sends each rating to the worker owning its user (hash of the user id);
//!   that worker keeps its users' factors in an array updated in place, so per rating only R goes
//!   through the PS (`get`, SGD step, `inc`); L is written into its table (as the change since the
//!   last write) in clocks ending in a snapshot and at the end, and read back on resume. Training
//!   ratings are in visiting order (users by a seeded hash, each user's ratings shuffled), held-out
//!   ones by item, so an evaluation reads each item row once per run and prefetches user rows.
//!   `--user-factors table`: per rating `get` both rows and `inc` both (the papers' setup).
//!   By default (`--schedule auto`) item slices rotate among the processes (`rotation.rs`, the
//!   DSGD / FPSGD block schedule) and the threads of a process take turns at the sub-slices of its
//!   slice, changing one copy of the item rows in place (`mf_shared.rs` over `shared_slice.rs`,
//!   which LDA uses too): `mf_blocks.rs` sums the job's ratings per item through two exchanges,
//!   assigns items to sub-slices by load (largest first to the least loaded, the same in every
//!   worker) and puts the training ratings in block order (part x slice x sub-slice), so a step
//!   trains one contiguous range; the items table has `announced_reads` and `begin_clock` fetches the next clock's rows
//!   ahead (`TableHandle::fetch_ahead`). The SGD step (`mf_kernel.rs`, shared with the plain
//!   baseline, and its BPR twin for `--implicit`) has an AVX2 build picked at run time, with the
//!   baseline build's results.
//! - **lda**: word-topic table (sparse i32 rows), topic-sum row; doc-topic counts stay in the worker.
//!   Word-major collapsed Gibbs sampler (`lda_sampler.rs`) shared with the baseline through the
//!   `WordTopics` trait: each clock samples one `Block` (`lda_tokens.rs`: a document part x a
//!   vocabulary slice, tokens grouped by word), so a word's row is read once per clock into a dense
//!   working array and a row's changes go out as one update (`lda_rows.rs`). `rotation.rs` picks
//!   the block: by default (`--schedule auto`) vocabulary slices rotate among the processes so no
//!   two processes change a word within the staleness window (exact word counts, each row changes
//!   once per pass), and the threads of a process take turns at the sub-slices of its slice,
//!   changing one copy of the rows in place (`lda_shared.rs`, `shared_slice.rs`); with `docs` (or async) document
//!   parts with all their words. The word table has `announced_reads`: a slice's rows are fetched
//!   one clock ahead (`fetch_ahead`). Per-document
//!   topic counts (`DocTopics`), prefetched a few tokens ahead because documents are visited out of
//!   order, are either short sorted lists (a draw walks the document's topics plus a smoothing
//!   bucket) or, for K <= 256 and documents of at least K/4 tokens on average, a u16 count per
//!   topic whose draw computes all K terms with vector instructions (`lda_dense.rs`, AVX2 picked at
//!   run time, same results as the baseline build).
//! - **pagerank**: rank and out-degree tables in rows of 1024 consecutive nodes. Each worker owns
//!   blocks that live in its own process's server shard (`Placement::Modulo`); at load every edge is
//!   exchanged to its destination's owner, which then alone computes and writes its nodes' ranks
//!   (reads of other workers' ranks are the only rank traffic between processes). The threads of a
//!   process fill one array of their sources' shares together, each its own blocks and a 1/T part
//!   of the other processes' blocks, and meet at a process barrier (`gate.rs`) before summing
//!   (`pagerank_shares.rs`). Ranks are f32 in the table, f64 in the owner, which mirrors what the
//!   table holds so that it reads its own blocks as the others do (`pagerank_table.rs`).
//! - Quality: every worker adds partial sums to an `objective` table row at sampled clocks; worker 0
//!   reads the row once the staleness bound guarantees it is complete, logs it and records it; a
//!   `control` row carries the `--target` stop clock. Outputs go to `_temporary/<task>/` and are moved
//!   into place by worker 0 after a barrier, then `_SUCCESS`.

pub mod bad_rows;
pub mod baseline;
mod catalog;
pub mod demo;
pub mod dictionary;
pub mod driver;
mod gate;
mod job_totals;
pub mod lda;
pub(crate) mod lda_dense;
mod lda_output;
mod lda_rows;
pub(crate) mod lda_sampler;
mod lda_shared;
mod lda_table;
pub mod lda_text;
pub(crate) mod lda_tokens;
pub mod mf;
mod mf_args;
mod mf_blocks;
mod mf_eval;
mod mf_implicit;
mod mf_kernel;
mod mf_load;
mod mf_output;
mod mf_recommend;
mod mf_shared;
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
mod shared_slice;
pub mod state;
pub(crate) mod straggler;
pub mod vocabulary;

pub use catalog::{AppCatalog, BuildApp};
use ps_runtime::App;
use ps_runtime::{PsError, Result};

/// Builds an app from its arguments (as `catalog::BuildApp`).
pub(crate) type Build = fn(&[String]) -> Result<Box<dyn App>>;

/// The built-in applications: name, what it is in a line (for `yarn-submit --help`), and how it
/// is built from its arguments. Their only list: `AppCatalog::builtin` serves them, and a user's
/// runtime binary adds its own apps to that catalog.
pub(crate) const BUILTIN: &[(&str, &str, Build)] = &[
    ("demo", "per-worker counters that check the SSP guarantee on every read", |a| {
        Ok(Box::new(demo::Demo::from_args(a)?))
    }),
    ("mf", "matrix factorization by SGD (ratings: user item rating)", driver::build::<mf::Mf>),
    (
        "lda",
        "topic model by collapsed Gibbs sampling (UCI bag of words, lda-c, LibSVM or token lines)",
        driver::build::<lda::Lda>,
    ),
    ("pagerank", "edge-scheduled PageRank (edge lists)", driver::build::<pagerank::PageRank>),
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

/// Builds the built-in application `name` from its command-line arguments.
pub fn build(name: &str, args: &[String]) -> Result<Box<dyn App>> {
    match BUILTIN.iter().find(|(n, _, _)| *n == name) {
        Some((_, _, build)) => build(args),
        None => {
            let known: Vec<&str> = BUILTIN.iter().map(|b| b.0).collect();
            Err(PsError::Config(format!("app: unknown application '{name}' (known: {})", known.join(", "))))
        }
    }
}
