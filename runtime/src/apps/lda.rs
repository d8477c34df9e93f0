//! `lda`: latent Dirichlet allocation by collapsed Gibbs sampling with the SparseLDA sampler
//! (`lda_sampler`). A word-topic table of sparse rows (one per word) and a topic-sum row live on
//! the parameter server; document-topic counts stay with the worker that owns the document.
//! Clock 0 adds the random initial assignments; each later clock resamples 1/C of the worker's
//! documents. Quality: the collapsed log-likelihood log p(w, z).

use super::common::{CommonArgs, Objective, Output, SavedState, Tracker};
use super::lda_sampler::{topic_loglik, word_loglik, Sampler, WordTopics};
use crate::config::{mix64, TableConfig};
use crate::error::{PsError, Result};
use crate::input::read_corpus;
use crate::row::{DenseRow, SparseRow};
use crate::{App, PsContext, TableHandle, Worker};
use clap::Parser;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value};
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Parser, Debug, Clone)]
#[command(name = "lda", about = "LDA by collapsed Gibbs sampling (SparseLDA)")]
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
    /// Words listed per topic in the output.
    #[arg(long, default_value_t = 20)]
    pub top_words: usize,
}

pub const WORD_TOPIC: u32 = 0;
pub const TOPIC_SUM: u32 = 1;

struct PsWordTopics<'a>(&'a mut TableHandle<SparseRow<i32>>);

impl WordTopics for PsWordTopics<'_> {
    fn with_row(&mut self, word: u32, f: &mut dyn FnMut(&SparseRow<i32>)) -> Result<()> {
        f(&*self.0.get(word as u64)?);
        Ok(())
    }
    fn add(&mut self, word: u32, topic: u32, delta: i32) -> Result<()> {
        self.0.inc_col(word as u64, topic, delta)
    }
}

fn finish(s: &[f64]) -> Vec<(&'static str, f64)> {
    vec![("loglik", s[0]), ("loglik_per_token", s[0] / s[1].max(1.0))]
}

pub struct Lda {
    args: LdaArgs,
    obj: Arc<Objective>,
    output: Option<Output>,
    vocab: Mutex<Option<Vec<String>>>,
}

impl Lda {
    pub fn from_args(args: &[String]) -> Result<Self> {
        let mut args = LdaArgs::try_parse_from(std::iter::once("lda".to_string()).chain(args.iter().cloned()))
            .map_err(|e| PsError::Config(format!("lda: {e}")))?;
        args.common.validate("lda", 1)?;
        if args.topics == 0 || args.topics > u16::MAX as usize || args.alpha <= 0.0 || args.beta <= 0.0 {
            return Err(PsError::Config("lda: --topics must be in 1..65535, --alpha and --beta positive".into()));
        }
        Ok(Lda { args, obj: Objective::new(finish, false), output: None, vocab: Mutex::new(None) })
    }
}

impl App for Lda {
    fn initialize(&mut self, ctx: &mut PsContext) -> Result<()> {
        let k = self.args.topics;
        ctx.create_table(TableConfig::new(WORD_TOPIC, "word_topic", "sparse_i32", k))?;
        ctx.create_table(TableConfig::new(TOPIC_SUM, "topic_sum", "dense_i64", k))?;
        Objective::create_tables(ctx)?;
        self.output = Output::for_job(ctx, &self.args.common)?;
        Ok(())
    }

    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let a = &self.args;
        let c = &a.common;
        let (gid, nw) = (w.global_thread_id(), w.total_threads());
        let (corpus, _) = read_corpus(&c.input, a.vocab.as_deref(), gid, nw, c.bad_records())?;
        let v = corpus.vocab_size;
        let docs: Vec<Vec<u32>> = corpus.docs.into_iter().map(|d| d.words).collect();
        let tokens: usize = docs.iter().map(Vec::len).sum();
        if gid == 0 {
            *self.vocab.lock().unwrap_or_else(|e| e.into_inner()) = corpus.vocab;
        }
        let mut wt = w.table::<SparseRow<i32>>(WORD_TOPIC)?;
        let mut ts = w.table::<DenseRow<i64>>(TOPIC_SUM)?;
        let mut tracker = Tracker::new(w, self.obj.clone(), c)?;
        let mut sampler = Sampler::new(a.topics, a.alpha, a.beta, v);
        // The RNG is re-seeded from (seed, worker, clock) every clock, so a resumed worker draws
        // the same numbers as an uninterrupted one without saving generator state.
        let rng_at = |clock: i64| {
            rand::rngs::SmallRng::seed_from_u64(mix64(
                c.seed.wrapping_mul(0x9e37_79b9) ^ (gid as u64) << 40 ^ clock as u64,
            ))
        };
        let (start, mut z) = match SavedState::load(w, "lda")? {
            Some(s) => {
                // Resumed: the tables hold the counts of the saved assignments.
                s.restore_tracker(&mut tracker)?;
                (s.clock, unpack_assignments(&s.raw, &docs, a.topics)?)
            }
            None => {
                // Clock 0: random initial assignments.
                let mut rng = rng_at(-1);
                let z: Vec<Vec<u32>> =
                    docs.iter().map(|d| d.iter().map(|_| rng.gen_range(0..a.topics as u32)).collect()).collect();
                for (d, zd) in docs.iter().zip(&z) {
                    for (&word, &t) in d.iter().zip(zd) {
                        wt.inc_col(word as u64, t, 1)?;
                        sampler.nk_delta[t as usize] += 1;
                    }
                }
                flush_totals(&mut ts, &mut sampler)?;
                // Every sweep starts from the complete initial counts.
                w.global_barrier()?;
                (0, z)
            }
        };
        let eval = |wt: &mut TableHandle<SparseRow<i32>>, sampler: &Sampler, z: &[Vec<u32>]| -> Result<Vec<f64>> {
            let mut ll = sampler.doc_loglik(z);
            let mine: Vec<u64> = (gid as u64..v as u64).step_by(nw).collect();
            for &word in &mine {
                wt.refresh(word);
            }
            for &word in &mine {
                ll += word_loglik(&*wt.get(word)?, a.beta);
            }
            if gid == 0 {
                ll += topic_loglik(&sampler.nk, sampler.vbeta);
            }
            Ok(vec![ll, tokens as f64])
        };
        for clock in start..c.total_clocks() {
            if tracker.poll(w)? {
                break;
            }
            let mut rng = rng_at(clock);
            let totals = ts.get(0)?.to_vec();
            sampler.set_totals(&totals);
            if clock == 0 {
                tracker.evaluate(w, 0, || eval(&mut wt, &sampler, &z))?;
            }
            c.straggle(w.process_id(), w.num_processes(), clock);
            let mut store = PsWordTopics(&mut wt);
            for (_, range) in c.segments(clock, docs.len()) {
                for d in range {
                    sampler.sweep_doc(&docs[d], &mut z[d], &mut store, &mut rng)?;
                }
            }
            flush_totals(&mut ts, &mut sampler)?;
            if c.is_sample_clock(clock) {
                tracker.evaluate(w, clock + 1, || eval(&mut wt, &sampler, &z))?;
            }
            w.clock_saving(|buf| {
                let raw: Vec<u8> = z.iter().flatten().flat_map(|t| t.to_le_bytes()).collect();
                SavedState::write(buf, clock + 1, &tracker, Value::Null, &raw)
            })?;
        }
        tracker.finish(w)?;
        if let Some(out) = &self.output {
            self.write_output(w, out, &mut wt, v)?;
        }
        Ok(())
    }

    fn report(&self) -> Map<String, Value> {
        self.obj.report()
    }

    fn total_clocks(&self) -> Option<i64> {
        Some(self.args.common.total_clocks())
    }
}

/// Rebuilds per-document topic assignments from a saved state (one u32 per token, in order).
fn unpack_assignments(raw: &[u8], docs: &[Vec<u32>], k: usize) -> Result<Vec<Vec<u32>>> {
    let tokens: usize = docs.iter().map(Vec::len).sum();
    if raw.len() != tokens * 4 {
        return Err(PsError::codec(format!(
            "lda: saved state has {} assignments, this worker's documents have {tokens} tokens",
            raw.len() / 4
        )));
    }
    let mut it = raw.chunks_exact(4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
    let z: Vec<Vec<u32>> = docs.iter().map(|d| it.by_ref().take(d.len()).collect()).collect();
    if z.iter().flatten().any(|&t| t as usize >= k) {
        return Err(PsError::codec(format!("lda: saved state has a topic >= {k}")));
    }
    Ok(z)
}

/// Ships this worker's topic-total changes to the topic-sum row.
fn flush_totals(ts: &mut TableHandle<DenseRow<i64>>, s: &mut Sampler) -> Result<()> {
    let upd: Vec<(u32, i64)> =
        s.nk_delta.iter().enumerate().filter(|(_, d)| **d != 0).map(|(t, d)| (t as u32, *d)).collect();
    ts.batch_inc(0, &upd)?;
    s.nk_delta.iter_mut().for_each(|d| *d = 0);
    Ok(())
}

impl Lda {
    /// `word_topic/part-*`: `word<TAB>topic:count ...` (word ids `w mod workers` per worker);
    /// `topics/part-00000`: `topic<TAB>total<TAB>top words` from worker 0.
    fn write_output(&self, w: &mut Worker, out: &Output, wt: &mut TableHandle<SparseRow<i32>>, v: usize) -> Result<()> {
        let (gid, nw) = (w.global_thread_id(), w.total_threads());
        let vocab = self.vocab.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let name = |i: u64| vocab.as_ref().and_then(|v| v.get(i as usize).cloned()).unwrap_or_else(|| i.to_string());
        let mut text = Vec::new();
        for word in (gid as u64..v as u64).step_by(nw) {
            wt.refresh(word);
        }
        for word in (gid as u64..v as u64).step_by(nw) {
            let row = wt.get(word)?;
            if row.nnz() == 0 {
                continue;
            }
            write!(text, "{}", name(word)).ok();
            for (t, n) in row.iter() {
                write!(text, "\t{t}:{n}").ok();
            }
            text.push(b'\n');
        }
        out.write_part(gid, "word_topic", gid, |f| f.write_all(&text))?;
        if gid == 0 {
            let k = self.args.topics;
            let mut best: Vec<Vec<(i32, u64)>> = vec![Vec::new(); k];
            for word in 0..v as u64 {
                wt.refresh(word);
            }
            for word in 0..v as u64 {
                for (t, n) in wt.get(word)?.iter() {
                    best[t as usize].push((n, word));
                }
            }
            let mut text = Vec::new();
            for (t, list) in best.iter_mut().enumerate() {
                list.sort_unstable_by(|a, b| b.cmp(a));
                let total: i64 = list.iter().map(|x| x.0 as i64).sum();
                let top: Vec<String> = list.iter().take(self.args.top_words).map(|x| name(x.1)).collect();
                writeln!(text, "{t}\t{total}\t{}", top.join(" ")).ok();
            }
            out.write_part(0, "topics", 0, |f| f.write_all(&text))?;
        }
        w.global_barrier()?;
        if gid == 0 {
            out.commit()?;
            log::info!("topics written to {}", out.url);
        }
        Ok(())
    }
}
