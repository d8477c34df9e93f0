//! `lda`: latent Dirichlet allocation by collapsed Gibbs sampling with a word-major sampler
//! (`lda_sampler`). A word-topic table of sparse rows (one per word) and a topic-sum row live on
//! the parameter server; document-topic counts stay with the worker that owns the document.
//! Start-up adds the random initial assignments; each clock resamples one `lda_tokens::Block` of
//! the worker's tokens, reading each of its words' rows once: by default a slice of the
//! vocabulary that rotates among the processes (`rotation`), whose threads take turns at its
//! sub-slices (`lda_shared`). What it writes: `lda_output`.
//! Quality: the collapsed log-likelihood log p(w, z).

use super::dictionary::{check_resumed, fingerprints, Dictionary};
use super::driver::Iterative;
use super::lda_rows::{balanced_slices, PsWordTopics, WordRows};
use super::lda_sampler::{topic_loglik, Sampler, WordTopics};
use super::lda_shared::{ProcessSlice, RowWords, ThreadSlice};
use super::lda_table::{read_bow_table, BowColumns, TableCorpus};
use super::lda_text::{read_text_table, TextColumns};
use super::lda_tokens::{doc_order, set_doc_order, token_offsets, unpack_assignments, Block};
use super::options::{parse, CommonArgs};
use super::output::Output;
use super::rotation::{plan_for_worker, size_for_job, Names, Plan, Rotation};
use super::shared_slice::subs_per_thread;
use super::state::SavedState;
use super::vocabulary::Limits;
use clap::Parser;
use ps_runtime::input::{read_corpus, resolve_format, InputFormat};
use ps_runtime::SeededRng;
use ps_runtime::{mix64, TableKey};
use ps_runtime::{DenseRow, SparseRow};
use ps_runtime::{PsContext, TableHandle, Worker};
use ps_runtime::{PsError, Result};
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex, OnceLock};

#[derive(Parser, Debug, Clone)]
#[command(name = "lda", about = "LDA by collapsed Gibbs sampling")]
pub struct LdaArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[arg(long, default_value_t = 100)]
    pub topics: usize,
    /// Document-topic smoothing.
    #[arg(long, default_value_t = 0.1)]
    pub alpha: f64,
    /// Topic-word smoothing.
    #[arg(long, default_value_t = 0.01)]
    pub beta: f64,
    /// Vocabulary file (one word per line; default: beside a docword file, or built from a token file).
    #[arg(long)]
    pub vocab: Option<String>,
    /// A bag-of-words table (Parquet, or CSV with a header): its document id column (default
    /// `doc`; any integer or string id).
    #[arg(long)]
    pub id_col: Option<String>,
    /// The table's word id column (integers from 0; default `word`).
    #[arg(long)]
    pub word_col: Option<String>,
    /// The table's count column; without it each row is one token.
    #[arg(long)]
    pub count_col: Option<String>,
    /// A raw-text column instead of word ids: tokenized (lowercase runs of letters, at least
    /// two), stop words left out, the vocabulary built job-wide and written with the model.
    #[arg(long)]
    pub text_col: Option<String>,
    /// With --text-col: a file of stop words (a word a line) instead of the built-in English list.
    #[arg(long)]
    pub stop_words: Option<String>,
    /// With --text-col: words counted fewer times in the whole input are left out.
    #[arg(long, default_value_t = 1)]
    pub min_count: u64,
    /// With --text-col: keep only the N most frequent words (0: all).
    #[arg(long, default_value_t = 0)]
    pub max_vocab: usize,
    /// Words listed per topic in the output.
    #[arg(long, default_value_t = 20)]
    pub top_words: usize,
    /// Which tokens a clock samples: `words` rotates slices of the vocabulary among the workers
    /// (exact word counts whatever the number of workers, fewer rows on the wire; needs
    /// --clocks-per-pass to be a multiple of processes x (staleness + 1), which is the default;
    /// one process holds the whole vocabulary), `docs` takes a part of the documents with all
    /// their words, `auto` is `words` unless the job runs several passes a clock or has several
    /// processes and no staleness bound (async).
    #[arg(long, value_enum, default_value_t = Schedule::Auto)]
    pub schedule: Schedule,
}

/// `--schedule`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// `words` unless the job cannot rotate (async, several passes a clock).
    Auto,
    /// Rotate slices of the vocabulary among the workers.
    Words,
    /// Every clock takes a part of the documents and all their words.
    Docs,
}

impl Schedule {
    fn rotation(self) -> Rotation {
        match self {
            Schedule::Auto => Rotation::Auto,
            Schedule::Words => Rotation::Rotate,
            Schedule::Docs => Rotation::Data,
        }
    }
}

const NAMES: Names = Names { app: "lda", rotate: "words", data: "docs", by_process: true };

/// Clocks per pass of the data-parallel schedule (the rotating one runs one per slice).
const BASE_CPP: i64 = 4;

pub const WORD_TOPIC: TableKey<SparseRow<i32>> = TableKey::new(0);
pub const TOPIC_SUM: TableKey<DenseRow<i64>> = TableKey::new(1);

pub use super::lda_rows::WORDS_PER_ROW;

pub struct Lda {
    pub(super) args: LdaArgs,
    /// The vocabulary as global thread 0 read it, for naming words in the output (only process 0
    /// has it: the other processes' `word_topic` parts name words by id).
    pub(super) vocab: Mutex<Option<Vec<String>>>,
    /// With --text-col, the words' counts by id (global thread 0), for `vocab/`.
    pub(super) vocab_counts: Mutex<Option<Vec<u64>>>,
    /// Whether the job rotates vocabulary slices (set by `shape`).
    pub(super) rotates: bool,
    /// Rotating: the process's slice, which its threads share (`lda_shared`).
    pub(super) slice: OnceLock<Arc<ProcessSlice<RowWords>>>,
}

/// A worker's documents, their topic assignments and the sampler.
pub struct LdaWorker {
    pub(super) gid: usize,
    /// The job's input rows (documents) skipped at load.
    pub(super) skipped: u64,
    pub(super) nw: usize,
    /// Vocabulary size.
    pub(super) v: usize,
    pub(super) docs: Vec<Vec<u32>>,
    /// The documents' ids (the input's, or numbered by `doc_dict`), for `doc_topics/`.
    pub(super) doc_ids: Vec<u64>,
    pub(super) doc_dict: Option<Dictionary>,
    pub(super) tokens: usize,
    /// The blocks a pass samples (`plan`), their tokens grouped by word, with their topics.
    pub(super) blocks: Vec<Block>,
    pub(super) plan: Plan,
    pub(super) wt: TableHandle<SparseRow<i32>>,
    /// Where each word's counts are in `wt`.
    pub(super) rows: WordRows,
    pub(super) ts: TableHandle<DenseRow<i64>>,
    pub(super) sampler: Sampler,
    /// The generator of the current clock (clock -1: the initial assignments).
    pub(super) rng: SeededRng,
    /// Rotating: this thread's part in the process's slice, and the rows of its sub-slices of
    /// each slice (`slot_rows[slice][k]`: of its `k`-th).
    pub(super) shared: Option<ThreadSlice>,
    pub(super) pid: usize,
    pub(super) slot_rows: Vec<Vec<Vec<u64>>>,
}

impl LdaWorker {
    /// The block this worker samples at `clock` when it does not share its process's slice.
    fn block(&self, clock: i64) -> usize {
        self.plan.block_at(self.gid, clock)
    }
}

impl Lda {
    /// The RNG is re-seeded from (seed, worker, clock) every clock, so a resumed worker draws the
    /// same numbers as an uninterrupted one without saving generator state.
    fn rng_at(&self, gid: usize, clock: i64) -> SeededRng {
        SeededRng::seed_from_u64(mix64(
            self.args.common.seed.wrapping_mul(0x9e37_79b9) ^ (gid as u64) << 40 ^ clock as u64,
        ))
    }

    pub(super) fn word_rows(&self) -> WordRows {
        WordRows { per_row: if self.rotates { WORDS_PER_ROW } else { 1 }, topics: self.args.topics as u32 }
    }
}

impl Iterative for Lda {
    const NAME: &'static str = "lda";
    const LOWER_IS_BETTER: bool = false;
    type State = LdaWorker;

    fn from_args(args: &[String]) -> Result<Self> {
        let mut args: LdaArgs = parse("lda", args)?;
        // Rotating word slices, a sweep is one clock per slice, processes x (staleness + 1), one
        // for one process (`shape`): 4 for the default job (2 workers, staleness 1). On a
        // 3M-token corpus (K = 100, 5 sweeps, 2 workers) it reached -12.05 per token at 1.15
        // s/sweep, 8 clocks -12.03 at 1.61, and document parts at 4 clocks -12.35 at 1.87 (the
        // plain loop: -12.03).
        args.common.validate("lda", BASE_CPP)?;
        if args.topics == 0 || args.topics > u16::MAX as usize || args.alpha <= 0.0 || args.beta <= 0.0 {
            return Err(PsError::Config("lda: --topics must be in 1..65535, --alpha and --beta positive".into()));
        }
        Ok(Lda {
            args,
            vocab: Mutex::new(None),
            vocab_counts: Mutex::new(None),
            rotates: false,
            slice: OnceLock::new(),
        })
    }

    fn shape(&mut self, job: &ps_runtime::JobShape) -> Result<()> {
        self.rotates = size_for_job(self.args.schedule.rotation(), NAMES, BASE_CPP, job, &mut self.args.common)?;
        Ok(())
    }

    fn common(&self) -> &CommonArgs {
        &self.args.common
    }

    fn objective(s: &[f64]) -> Vec<(&'static str, f64)> {
        vec![("loglik", s[0]), ("loglik_per_token", s[0] / s[1].max(1.0))]
    }

    fn create_tables(&self, ctx: &mut PsContext) -> Result<()> {
        let k = self.args.topics;
        // Rotating slices: each clock's word rows are asked for ahead (`begin_clock`), when their
        // turn comes, rather than prefetched or pushed after every change.
        let per_row = self.word_rows().per_row as usize;
        ctx.create_table(WORD_TOPIC.config("word_topic", k * per_row).with_announced_reads(self.rotates))?;
        // Under ASP the topic totals are mirrored exactly (significance 0): K numbers a clock, and
        // every sampling step divides by them. Filtered like the word rows, each data center's
        // totals drifted from the sum of its word-topic counts (a token moving between topics
        // barely changes a total relative to its size), and the log-likelihood with them.
        ctx.create_table(TOPIC_SUM.config("topic_sum", k).with_significance(0.0))
    }

    fn start(&self, w: &mut Worker, saved: Option<&SavedState>) -> Result<LdaWorker> {
        let (a, c) = (&self.args, &self.args.common);
        let (gid, nw) = (w.global_thread_id(), w.total_threads());
        // Taken first: should this thread stop, the others are not left waiting at the steps.
        // One thread a process samples straight from its table cache.
        let threads = w.threads_per_process();
        let shared = (self.rotates && threads > 1).then(|| {
            let per = subs_per_thread(w.num_processes());
            let slice = self.slice.get_or_init(|| Arc::new(ProcessSlice::new(threads, per))).clone();
            ThreadSlice::new(slice, w.thread_id(), w.wait_meter(), self.word_rows())
        });
        let named = a.id_col.is_some() || a.word_col.is_some() || a.count_col.is_some() || a.text_col.is_some();
        let t = match resolve_format(&c.input, c.input_format, named)? {
            InputFormat::Text | InputFormat::Auto => {
                let (corpus, stats) = read_corpus(&c.input, a.vocab.as_deref(), gid, nw, c.bad_records())?;
                TableCorpus { corpus, stats, doc_ids: None, vocab_counts: None }
            }
            table if a.text_col.is_some() => {
                let (doc, text) = (a.id_col.as_deref().unwrap_or("doc"), a.text_col.as_deref().unwrap_or("text"));
                let limits = Limits { min_count: a.min_count, max_vocab: a.max_vocab };
                read_text_table(w, c, table, &TextColumns { doc, text, stop_words: a.stop_words.as_deref(), limits })?
            }
            table => {
                let doc = a.id_col.as_deref().unwrap_or("doc");
                let (word, count, vocab) =
                    (a.word_col.as_deref().unwrap_or("word"), a.count_col.as_deref(), a.vocab.as_deref());
                read_bow_table(w, c, table, &BowColumns { vocab, doc, word, count })?
            }
        };
        let TableCorpus { corpus, stats: read, doc_ids: doc_dict, vocab_counts } = t;
        if let Some(s) = saved {
            check_resumed("lda", &[doc_dict.as_ref()], s.meta.get("ids"))?;
        }
        if vocab_counts.is_some() {
            *self.vocab_counts.lock().unwrap_or_else(|e| e.into_inner()) = vocab_counts;
        }
        let skipped = super::bad_rows::settle(w, c, "lda", &read)?;
        let v = corpus.vocab_size;
        let doc_ids: Vec<u64> = corpus.docs.iter().map(|d| d.id).collect();
        let docs: Vec<Vec<u32>> = corpus.docs.into_iter().map(|d| d.words).collect();
        let tokens: usize = docs.iter().map(Vec::len).sum();
        if gid == 0 {
            *self.vocab.lock().unwrap_or_else(|e| e.into_inner()) = corpus.vocab;
        }
        let plan = plan_for_worker(a.schedule.rotation(), NAMES, w, WORD_TOPIC.id(), c)?;
        if gid == 0 {
            log::info!("lda: {} document parts x {} word slices per pass", plan.parts, plan.slices);
            if !plan.rotates() && a.schedule == Schedule::Auto && nw > 1 {
                log::warn!(
                    "lda: without a staleness bound or with several passes a clock the vocabulary cannot rotate: every \
                     worker samples every word in every clock (more traffic, staler word counts)"
                );
            }
        }
        if plan.rotates() != self.rotates {
            return Err(PsError::Usage("lda: the job's shape and this worker's table disagree on rotating".into()));
        }
        let n = docs.len();
        let rows = self.word_rows();
        // A slice is made of whole rows; rotating, a slice of `threads x subs_per_thread`
        // sub-slices, and a block per (part, slice, sub-slice).
        let subs = shared.as_ref().map_or(1, |sh| sh.subs());
        let fine = if plan.rotates() { Some(balanced_slices(w, rows, &docs, &plan, subs)?) } else { None };
        // Looked up per word and block below: a table, not a hash lookup each time.
        let places: Vec<(usize, usize)> = (0..v.div_ceil(rows.per_row as usize) as u64)
            .map(|r| fine.as_ref().map_or((0, 0), |f| f.place(r)))
            .collect();
        let place = |row: u64| places[row as usize];
        // Block `(part x slices + slice) x subs + sub`: a part's blocks are its fine slices.
        let fine_of = |w: u32| {
            let (slice, sub) = place(rows.row(w as u64));
            Some(slice * subs + sub)
        };
        let blocks: Vec<Block> = (0..plan.parts)
            .flat_map(|p| Block::split(&docs, plan.part_range(p, n), v, plan.slices * subs, fine_of))
            .collect();
        debug_assert_eq!(blocks.len(), plan.blocks() * subs);
        let mut slot_rows = Vec::new();
        if let Some(sh) = &shared {
            let owned = sh.owned();
            slot_rows = vec![vec![Vec::new(); owned.len()]; plan.slices];
            for r in 0..v.div_ceil(rows.per_row as usize) as u64 {
                let (s, u) = place(r);
                if owned.contains(&u) {
                    slot_rows[s][u - owned.start].push(r);
                }
            }
        }
        let mut st = LdaWorker {
            skipped,
            wt: w.open(WORD_TOPIC)?,
            ts: w.open(TOPIC_SUM)?,
            sampler: Sampler::new(a.topics, a.alpha, a.beta, v, docs.iter().map(|d| d.len() as u32).collect()),
            rng: self.rng_at(gid, -1),
            gid,
            nw,
            v,
            docs,
            doc_ids,
            doc_dict,
            tokens,
            blocks,
            plan,
            rows,
            shared,
            pid: w.process_id(),
            slot_rows,
        };
        let z: Vec<u32> = match saved {
            Some(s) => unpack_assignments(&s.raw, st.tokens, a.topics)?,
            None => {
                let rng = &mut st.rng;
                (0..st.tokens).map(|_| rng.gen_range(0..a.topics as u32)).collect()
            }
        };
        let first = token_offsets(&st.docs);
        for part in st.blocks.chunks_mut(st.plan.slices * subs) {
            let docs = part[0].docs.clone();
            set_doc_order(part, &st.docs, v, &z[first[docs.start]..first[docs.end]])?;
            part.iter().for_each(|b| st.sampler.docs.count(b));
        }
        if saved.is_some() {
            // Resumed: the tables hold the counts of the saved assignments.
            return Ok(st);
        }
        // Add the random initial assignments: a word's tokens one batch, a row's words one update.
        let mut changes = Vec::new();
        let mut store = PsWordTopics::new(&mut st.wt, st.rows);
        for b in &st.blocks {
            for (i, &word) in b.words.iter().enumerate() {
                changes.clear();
                for &t in &b.z[b.of_word(i)] {
                    changes.push((t, 1));
                    st.sampler.nk_delta[t as usize] += 1;
                }
                store.add(word, &changes)?;
            }
        }
        store.flush()?;
        flush_totals(&mut st.ts, &mut st.sampler)?;
        // Every sweep starts from the complete initial counts.
        w.global_barrier()?;
        Ok(st)
    }

    fn begin_clock(&self, st: &mut LdaWorker, clock: i64) -> Result<()> {
        // The block's words are known in advance: ask for all rows not cached at once, so the
        // sweep does not wait one round trip per word (in the first pass that took most of a
        // clock); rotating, also the next clock's, which arrive while this one samples.
        let ahead = if st.plan.rotates() { 1 } else { 0 };
        for ahead in (0..=ahead).filter(|a| clock + a < self.args.common.total_clocks()) {
            let rows = match st.shared {
                // This thread loads its sub-slice for the whole process.
                Some(_) => st.slot_rows[st.plan.block_at(st.pid, clock + ahead) % st.plan.slices].concat(),
                None => st.rows.rows_of(st.blocks[st.block(clock + ahead)].words.iter().map(|&w| w as u64)),
            };
            if st.plan.rotates() {
                // What the previous clock asked for ahead is not asked for again.
                st.wt.fetch_ahead_rows(rows, ahead);
            } else {
                st.wt.refresh_rows(rows);
            }
        }
        st.rng = self.rng_at(st.gid, clock);
        let totals = st.ts.get(0)?.to_vec();
        st.sampler.set_totals(&totals);
        Ok(())
    }

    fn rows_skipped(st: &LdaWorker) -> Option<u64> {
        Some(st.skipped)
    }

    fn run_clock(&self, st: &mut LdaWorker, clock: i64) -> Result<()> {
        if st.shared.is_some() {
            Self::run_steps(st, clock)?;
            return flush_totals(&mut st.ts, &mut st.sampler);
        }
        let b = st.block(clock);
        let mut store = PsWordTopics::new(&mut st.wt, st.rows);
        // With several passes per clock there is one block, all documents and words.
        for _ in self.args.common.segments(clock, st.docs.len()) {
            let b = &mut st.blocks[b];
            st.sampler.sweep_block(b, &mut store, &mut st.rng)?;
        }
        flush_totals(&mut st.ts, &mut st.sampler)
    }

    /// The collapsed log-likelihood: this worker's documents, the words of the table rows
    /// `gid mod workers`, and (worker 0) the topic totals; and the token count.
    fn evaluate(&self, st: &mut LdaWorker, _full: bool) -> Result<Vec<f64>> {
        let mut ll = st.sampler.doc_loglik();
        let rows = st.rows;
        let mine = rows.rows_of_worker(st.gid, st.nw, st.v);
        st.wt.refresh_rows(mine.iter().copied());
        for &r in &mine {
            let row = st.wt.get(r)?;
            for word in rows.words_of(r, st.v as u64) {
                ll += st.sampler.word_loglik(rows.counts(&row, word));
            }
        }
        if st.gid == 0 {
            ll += topic_loglik(&st.sampler.nk, st.sampler.vbeta);
        }
        Ok(vec![ll, st.tokens as f64])
    }

    fn save(&self, st: &LdaWorker) -> (Value, Vec<u8>) {
        let mut z = vec![0u32; st.tokens];
        let first = token_offsets(&st.docs);
        for part in st.blocks.chunks(st.blocks.len() / st.plan.parts.max(1)) {
            let docs = part[0].docs.clone();
            doc_order(part, &st.docs, st.v, &mut z[first[docs.start]..first[docs.end]]);
        }
        (json!({"ids": fingerprints(&[st.doc_dict.as_ref()])}), z.iter().flat_map(|t| t.to_le_bytes()).collect())
    }

    /// `lda_output`.
    fn write_output(&self, st: &mut LdaWorker, w: &mut Worker, out: &Output) -> Result<()> {
        self.write_model(st, w, out)
    }
}

impl Lda {
    /// A rotating clock: load this thread's sub-slice, sample one sub-slice a step (the
    /// process's threads in step), send this thread's sub-slice's changes.
    fn run_steps(st: &mut LdaWorker, clock: i64) -> Result<()> {
        let Some(sh) = st.shared.as_ref() else { return Ok(()) };
        let (t, base) = (sh.subs(), st.plan.block_at(st.pid, clock));
        for (sub, rows) in sh.owned().zip(&st.slot_rows[base % st.plan.slices]) {
            sh.load(sub, rows, &mut st.wt, clock)?;
        }
        for sub in sh.visits() {
            let mut counts = sh.take(sub, clock)?;
            st.sampler.sweep_block(&mut st.blocks[base * t + sub], &mut counts, &mut st.rng)?;
        }
        sh.flush(&mut st.wt)
    }
}

/// Ships this worker's topic-total changes to the topic-sum row.
fn flush_totals(ts: &mut TableHandle<DenseRow<i64>>, s: &mut Sampler) -> Result<()> {
    let upd: Vec<(u32, i64)> =
        s.nk_delta.iter().enumerate().filter(|(_, d)| **d != 0).map(|(t, d)| (t as u32, *d)).collect();
    ts.batch_inc(0, &upd)?;
    s.nk_delta.iter_mut().for_each(|d| *d = 0);
    Ok(())
}
