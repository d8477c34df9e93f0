//! Single-process baselines: the same algorithms as the apps as plain loops over in-memory arrays
//! (no parameter server), sharing the apps' numerical kernels. Used by `ps-bench apps` to price the
//! parameter server, and as the single-process reference runs of the experiments.

use super::lda_sampler::{topic_loglik, Sampler, WordTopics};
use super::lda_tokens::Block;
use super::mf::{dot, sgd_update};
use super::pagerank::Csr;
use ps_runtime::input::{Edges, Rating};
use ps_runtime::Result;
use ps_runtime::{ColumnAdd, DenseRow, Row, SparseRow};
use rand::{Rng, SeedableRng};
use std::time::Instant;

/// Outcome of a baseline run.
#[derive(Clone, Debug)]
pub struct BaselineRun {
    /// Seconds per pass (mean over passes).
    pub pass_s: f64,
    /// The objective after each pass.
    pub objective: Vec<f64>,
}

/// Hyper-parameters of SGD matrix factorization.
#[derive(Clone, Debug)]
pub struct MfParams {
    pub rank: usize,
    pub lr: f32,
    pub decay: f32,
    pub lambda: f32,
    pub passes: usize,
    pub init_scale: f64,
    pub seed: u64,
}

/// Plain SGD matrix factorization; objective: training RMSE after each pass.
pub fn mf(ratings: &[Rating], p: &MfParams) -> BaselineRun {
    let MfParams { rank, lr, decay, lambda, passes, init_scale, seed } = *p;
    let users = ratings.iter().map(|r| r.user as usize + 1).max().unwrap_or(0);
    let items = ratings.iter().map(|r| r.item as usize + 1).max().unwrap_or(0);
    let hi = init_scale / (rank as f64).sqrt();
    let init = |n: usize, s: u64| -> Vec<f32> {
        let mut v = Vec::with_capacity(n * rank);
        for i in 0..n {
            let mut r = <DenseRow<f32> as Row>::zero(rank);
            r.randomize(ps_runtime::mix64(s ^ (i as u64).wrapping_mul(0x2545f4914f6cdd1d)), -hi, hi);
            v.extend_from_slice(&r);
        }
        v
    };
    let (mut l, mut r) = (init(users, seed), init(items, seed ^ 1));
    let mu = (ratings.iter().map(|r| r.value as f64).sum::<f64>() / ratings.len().max(1) as f64) as f32;
    let mut order = ratings.to_vec();
    super::mf::sgd_order(&mut order, seed);
    let mut objective = Vec::new();
    let mut secs = 0.0;
    for pass in 0..passes {
        let t0 = Instant::now();
        let step = lr * decay.powi(pass as i32);
        for (n, x) in order.iter().enumerate() {
            // The same prefetch as the PS loop's hints (rows in no order the hardware follows),
            // so the baseline is as good a plain loop as the PS job is a PS job.
            if let Some(y) = order.get(n + 8) {
                let (u, v) = (y.user as usize * rank, y.item as usize * rank);
                ps_runtime::prefetch(&l[u..u + rank]);
                ps_runtime::prefetch(&r[v..v + rank]);
            }
            let (u, v) = (x.user as usize * rank, x.item as usize * rank);
            sgd_update(&mut l[u..u + rank], &mut r[v..v + rank], x.value - mu, step, lambda);
        }
        secs += t0.elapsed().as_secs_f64();
        let sse: f64 = ratings
            .iter()
            .map(|x| {
                let (u, v) = (x.user as usize * rank, x.item as usize * rank);
                ((x.value - mu - dot(&l[u..u + rank], &r[v..v + rank])) as f64).powi(2)
            })
            .sum();
        objective.push((sse / ratings.len().max(1) as f64).sqrt());
    }
    BaselineRun { pass_s: secs / passes.max(1) as f64, objective }
}

/// Word-topic counts in local rows (the baseline's store; also the sampler's unit tests'), and
/// the word being read as pairs.
pub(crate) struct LocalCounts(pub(crate) Vec<SparseRow<i32>>, Vec<(u32, i32)>);

impl LocalCounts {
    pub(crate) fn new(vocab: usize) -> Self {
        LocalCounts(vec![SparseRow::new(); vocab], Vec::new())
    }
}

impl WordTopics for LocalCounts {
    fn with_row(&mut self, word: u32, f: &mut super::lda_sampler::CountsFn<'_>) -> Result<()> {
        self.1.clear();
        self.1.extend(self.0[word as usize].iter());
        f(&self.1);
        Ok(())
    }
    fn add(&mut self, word: u32, changes: &[(u32, i32)]) -> Result<()> {
        changes.iter().for_each(|&(t, d)| self.0[word as usize].add(t, d));
        Ok(())
    }
}

/// Plain LDA (the app's word-major sampler on local counts); objective: collapsed log-likelihood after each sweep (initial one first).
pub fn lda(
    docs: &[Vec<u32>],
    vocab: usize,
    k: usize,
    alpha: f64,
    beta: f64,
    passes: usize,
    seed: u64,
) -> Result<BaselineRun> {
    let mut rng = ps_runtime::SeededRng::seed_from_u64(seed);
    let mut counts = LocalCounts::new(vocab);
    let mut s = Sampler::new(k, alpha, beta, vocab, docs.iter().map(|d| d.len() as u32).collect());
    let mut block = Block::new(docs, 0..docs.len(), vocab, |_| true);
    let z: Vec<u32> = docs.iter().flatten().map(|_| rng.gen_range(0..k as u32)).collect();
    block.set_doc_order(docs, vocab, &z)?;
    let mut nk = vec![0i64; k];
    for (i, &w) in block.words.iter().enumerate() {
        for &t in &block.z[block.of_word(i)] {
            counts.0[w as usize].add(t, 1);
            nk[t as usize] += 1;
        }
    }
    s.docs.count(&block);
    s.set_totals(&nk);
    let ll = |s: &mut Sampler, c: &LocalCounts| {
        s.doc_loglik() + c.0.iter().map(|r| s.word_loglik(r.iter())).sum::<f64>() + topic_loglik(&s.nk, s.vbeta)
    };
    let mut objective = vec![ll(&mut s, &counts)];
    let mut secs = 0.0;
    for _ in 0..passes {
        let t0 = Instant::now();
        s.sweep_block(&mut block, &mut counts, &mut rng)?;
        secs += t0.elapsed().as_secs_f64();
        objective.push(ll(&mut s, &counts));
    }
    Ok(BaselineRun { pass_s: secs / passes.max(1) as f64, objective })
}

/// Plain CSR PageRank (pull); objective: L1 change per iteration.
pub fn pagerank(edges: &Edges, n: usize, d: f64, passes: usize) -> BaselineRun {
    let csr = Csr::new(n, &edges.src, &edges.dst);
    let mut r = vec![1.0 / n as f64; n];
    let mut next = vec![0.0; n];
    let mut objective = Vec::new();
    let t0 = Instant::now();
    for _ in 0..passes {
        objective.push(csr.step(&r, &mut next, d));
        std::mem::swap(&mut r, &mut next);
    }
    BaselineRun { pass_s: t0.elapsed().as_secs_f64() / passes.max(1) as f64, objective }
}
