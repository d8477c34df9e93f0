//! The collapsed Gibbs sampler for LDA, shared by the parameter-server app and the single-process
//! baseline. It sweeps word by word (the F+LDA / LightLDA order; tokens in `lda_tokens::Block`):
//! the conditional of a token's topic,
//! `(n_dk + a) (n_wk + b) / (n_k + V b)` = `n_dk c_k + a c_k` with `c_k = (n_wk + b) / (n_k + V b)`,
//! splits into a document bucket over the document's few non-zero topics and a smoothing bucket
//! `a c_k` whose sum is kept up to date as counts change. While a word's tokens are drawn, `c` is
//! fixed but for the two topics each token moves between, so a draw costs about the number of
//! topics in the document, and the word's counts are read once per block, not once per token.
//! For small K and long documents (`LayoutKind::for_docs`) documents keep a count per topic
//! instead, and a draw computes all K terms `(n_dk + a) c_k` with vector instructions
//! (`lda_dense`): on K = 100 and 300-token documents that is 1.6x faster than the list walk.
//! Every draw is exact: the sampler is the sequential collapsed Gibbs chain in word-major order.

use super::lda_dense::dense_draw_fn;
use super::lda_tokens::{Block, DenseCounts, DocTopics, Layout, LayoutKind, TopicLists, DENSE_CHUNK};
use ps_runtime::Result;
use rand::Rng;

/// How many tokens ahead the sweep prefetches a document's topic list.
const PREFETCH_AHEAD: usize = 8;

/// A word's `(topic, count)` pairs, handed to a reader as a slice: through an iterator trait
/// object every pair cost a virtual call (8% of LDA's CPU at 1 x 16 on 2 cores).
pub type CountsFn<'a> = dyn FnMut(&[(u32, i32)]) + 'a;

/// A word's changes of one visit, dense: `dw[t]` for the topics in `touched` (which may repeat
/// and whose changes may have come back to zero). Taking a change zeroes it, so each is taken
/// once and `dw` is all zeros again once all are.
pub struct DenseChanges<'a> {
    touched: &'a [u32],
    dw: &'a mut [i32],
}

impl<'a> DenseChanges<'a> {
    pub fn new(touched: &'a [u32], dw: &'a mut [i32]) -> Self {
        DenseChanges { touched, dw }
    }

    /// Takes topic `t`'s change.
    #[inline]
    pub fn take(&mut self, t: u32) -> i32 {
        std::mem::take(&mut self.dw[t as usize])
    }

    /// Takes the changes not taken yet, as `(topic, delta)` pairs without zeros, into `out`.
    pub fn take_rest(&mut self, out: &mut Vec<(u32, i32)>) {
        out.clear();
        for &t in self.touched {
            let d = std::mem::take(&mut self.dw[t as usize]);
            if d != 0 {
                out.push((t, d));
            }
        }
    }
}

/// Where word-topic counts live: the parameter server, or local arrays for the baseline.
pub trait WordTopics {
    /// Calls `f` with the word's `(topic, count)` pairs (including this worker's own updates).
    fn with_row(&mut self, word: u32, f: &mut CountsFn<'_>) -> Result<()>;
    /// Adds the (topic, delta) changes to the word's counts.
    fn add(&mut self, word: u32, changes: &[(u32, i32)]) -> Result<()>;
    /// Adds a visit's changes, taking all of them (`scratch`: room for pairs). As pairs unless a
    /// store can do better with the dense form.
    fn add_dense(&mut self, word: u32, changes: &mut DenseChanges<'_>, scratch: &mut Vec<(u32, i32)>) -> Result<()> {
        changes.take_rest(scratch);
        if scratch.is_empty() {
            return Ok(());
        }
        self.add(word, scratch)
    }
    /// Makes every change `add`ed so far part of the counts: called at the end of each sweep.
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    /// Starts bringing the counts of the words read next (`ahead`, in order) into the cache.
    fn prefetch(&mut self, _ahead: &[u32]) {}
}

/// Per-worker sampler state: topic totals as this worker sees them, its documents' topic counts
/// and the current word's working arrays.
pub struct Sampler {
    pub k: usize,
    pub alpha: f64,
    pub beta: f64,
    pub vbeta: f64,
    /// n_k as seen by this worker (refreshed each clock, plus own changes).
    pub nk: Vec<i64>,
    /// This worker's changes to n_k since the last flush.
    pub nk_delta: Vec<i64>,
    /// Topic counts of this worker's documents.
    pub docs: DocTopics,
    /// 1 / (n_k + V b) per topic: a division costs as much as a dozen multiplications.
    inv: Vec<f64>,
    /// The current word's counts n_wk, its changes, and c_k = (n_wk + b) inv_k with their sum.
    nw: Vec<i32>,
    dw: Vec<i32>,
    touched: Vec<u32>,
    changes: Vec<(u32, i32)>,
    coef: Vec<f64>,
    coef_sum: f64,
    /// The sum of `b inv_k` over all topics: `coef_sum` of a word with no counts. Between words
    /// `coef` holds exactly `b inv_k` and `nw` zeros, so loading a word touches only its own
    /// topics (`loaded`), not all K: with W workers each worker loads every word of the
    /// vocabulary each sweep, so per-word work grows with W while each word's tokens shrink.
    base_sum: f64,
    loaded: Vec<u32>,
    cum: Vec<f64>,
    /// Chunk sums of the dense layout's draw.
    chunk_sums: Vec<f64>,
    /// lgamma(n + a), lgamma(n + K a) and lgamma(n + b) for the log-likelihood.
    lg: [LgammaTable; 3],
}

impl Sampler {
    /// A sampler for documents of the given lengths over a vocabulary of `vocab` words, with the
    /// documents' counts in the layout `LayoutKind::for_docs` picks.
    pub fn new(k: usize, alpha: f64, beta: f64, vocab: usize, doc_len: Vec<u32>) -> Self {
        let kind = LayoutKind::for_docs(&doc_len, k);
        Self::with_layout(k, alpha, beta, vocab, doc_len, kind)
    }

    /// The same with a given layout (both draw from the same conditional).
    pub fn with_layout(k: usize, alpha: f64, beta: f64, vocab: usize, doc_len: Vec<u32>, kind: LayoutKind) -> Self {
        // `coef` is padded with zeros to the dense layout's stride: padding topics are never drawn.
        let padded = k.div_ceil(DENSE_CHUNK) * DENSE_CHUNK;
        let inv0 = 1.0 / (vocab as f64 * beta);
        let mut s = Sampler {
            k,
            alpha,
            beta,
            vbeta: vocab as f64 * beta,
            nk: vec![0; k],
            nk_delta: vec![0; k],
            docs: DocTopics::new(doc_len, k, kind),
            inv: vec![inv0; k],
            nw: vec![0; k],
            dw: vec![0; k],
            touched: Vec::new(),
            changes: Vec::new(),
            coef: vec![0.0; padded],
            coef_sum: 0.0,
            base_sum: 0.0,
            loaded: Vec::new(),
            lg: [LgammaTable::new(alpha), LgammaTable::new(k as f64 * alpha), LgammaTable::new(beta)],
            cum: vec![0.0; k],
            chunk_sums: vec![0.0; padded / DENSE_CHUNK],
        };
        s.reset_coef();
        s
    }

    /// `coef_k = b inv_k` for every topic (the padding stays 0), and their sum.
    fn reset_coef(&mut self) {
        for t in 0..self.k {
            self.coef[t] = self.beta * self.inv[t];
        }
        self.base_sum = self.coef[..self.k].iter().sum();
    }

    /// Installs fresh topic totals (start of a clock).
    pub fn set_totals(&mut self, nk: &[i64]) {
        self.nk.copy_from_slice(nk);
        for t in 0..self.k {
            self.inv[t] = self.inverse_denom(t);
        }
        self.reset_coef();
    }

    #[inline]
    fn inverse_denom(&self, t: usize) -> f64 {
        1.0 / ((self.nk[t].max(0) as f64) + self.vbeta)
    }

    /// Moves one token of the current word into (`d` = 1) or out of (`d` = -1) topic `t`,
    /// keeping n_wk, n_k, inv_k, c_k and (with `SUM`, for the list layout's smoothing bucket) the
    /// sum of c up to date.
    #[inline(always)]
    fn move_token<const SUM: bool>(&mut self, t: usize, d: i32) {
        self.count_move(t, d);
        let old_inv = self.inv[t];
        self.inv[t] = self.inverse_denom(t);
        let c = (self.nw[t].max(0) as f64 + self.beta) * self.inv[t];
        if SUM {
            self.coef_sum += c - self.coef[t];
            self.base_sum += self.beta * (self.inv[t] - old_inv);
        }
        self.coef[t] = c;
    }

    /// The counts' part of a move.
    #[inline(always)]
    fn count_move(&mut self, t: usize, d: i32) {
        self.nw[t] += d;
        if self.dw[t] == 0 {
            self.touched.push(t as u32);
        }
        self.dw[t] += d;
        self.nk[t] += d as i64;
        self.nk_delta[t] += d as i64;
    }

    /// Resamples every token of the block.
    pub fn sweep_block(&mut self, b: &mut Block, store: &mut dyn WordTopics, rng: &mut impl Rng) -> Result<()> {
        // Taken out for the sweep so that the loops can hold it beside `&mut self`.
        let mut layout = std::mem::take(&mut self.docs.layout);
        let r = match &mut layout {
            Layout::Lists(lists) => self.sweep_lists(lists, b, store, rng),
            Layout::Dense(counts) => self.sweep_dense(counts, b, store, rng),
        };
        self.docs.layout = layout;
        r?;
        store.flush()
    }

    /// Reads word `w`'s counts into `nw` and computes `c` and its sum, in one pass over the
    /// word's list: under the shared slice a thread reads every word of its documents each clock,
    /// so this and `flush_word` run once per (thread, word), 10x as often at 1 x 16 as at 1 x 1.
    fn load_word(&mut self, w: u32, store: &mut dyn WordTopics) -> Result<()> {
        let (nw, loaded, coef, inv, beta) =
            (&mut self.nw[..], &mut self.loaded, &mut self.coef[..], &self.inv[..], self.beta);
        let mut sum = self.base_sum;
        store.with_row(w, &mut |counts| {
            loaded.extend(counts.iter().map(|&(t, _)| t));
            for &(t, n) in counts {
                let t = t as usize;
                nw[t] = n;
                let c = (n.max(0) as f64 + beta) * inv[t];
                sum += c - coef[t];
                coef[t] = c;
            }
        })?;
        self.coef_sum = sum;
        Ok(())
    }

    /// Sends word `w`'s changes of this block as one batch.
    fn flush_word(&mut self, w: u32, store: &mut dyn WordTopics) -> Result<()> {
        let mut changes = DenseChanges::new(&self.touched, &mut self.dw);
        let sent = store.add_dense(w, &mut changes, &mut self.changes);
        // Back to no word: the word's topics and those its tokens moved to (two loops: a
        // chained iterator tests which half it is in at every step).
        let (nw, coef, inv, beta) = (&mut self.nw[..], &mut self.coef[..], &self.inv[..], self.beta);
        for list in [&self.touched, &self.loaded] {
            for &t in list.iter() {
                let t = t as usize;
                nw[t] = 0;
                coef[t] = beta * inv[t];
            }
        }
        self.loaded.clear();
        self.touched.clear();
        sent
    }

    /// The sweep over topic lists: a document bucket over the document's topics and a smoothing
    /// bucket. One loop on purpose: it is the app's hot loop.
    fn sweep_lists(
        &mut self,
        docs: &mut TopicLists,
        b: &mut Block,
        store: &mut dyn WordTopics,
        rng: &mut impl Rng,
    ) -> Result<()> {
        for (i, &w) in b.words.iter().enumerate() {
            store.prefetch(b.words.get(i + 1..).unwrap_or_default());
            self.load_word(w, store)?;
            for j in b.of_word(i) {
                let (d, old) = (b.doc[j] as usize, b.z[j]);
                if let Some(&ahead) = b.doc.get(j + PREFETCH_AHEAD) {
                    docs.prefetch(ahead as usize);
                }
                self.move_token::<true>(old as usize, -1);
                // Document bucket: n_dk c_k over the document's topics, cumulatively, with this
                // token taken out of its topic's count. One pass also finds that topic's entry.
                // (Locals, not fields: stores to `cum` would otherwise make the compiler reload
                // every field of `self` per entry.)
                let (list, coef, cum) = (docs.topics(d), &self.coef[..self.k], &mut self.cum[..]);
                let (mut sum, mut old_at) = (0.0, 0);
                for (e, (c, &(t, n))) in cum.iter_mut().zip(list).enumerate() {
                    let own = t == old;
                    old_at = if own { e } else { old_at };
                    sum += (n - u32::from(own)) as f64 * coef[t as usize];
                    *c = sum;
                }
                let u = rng.gen::<f64>() * (sum + self.alpha * self.coef_sum);
                let (new, at) = if u < sum {
                    let e = cum[..list.len()].iter().position(|&c| u < c).unwrap_or(list.len() - 1);
                    (list[e].0, Some(e))
                } else {
                    // Smoothing bucket, scaled by 1/a.
                    let mut u = (u - sum) / self.alpha;
                    let mut pick = self.k - 1;
                    for (t, &c) in coef.iter().enumerate() {
                        if u < c {
                            pick = t;
                            break;
                        }
                        u -= c;
                    }
                    (pick as u32, None)
                };
                if new != old {
                    // Bump before the removal (which may shift entries), but remove before adding
                    // a new entry: a document's list has room for min(K, length) topics only.
                    if let Some(e) = at {
                        docs.bump(d, e);
                        docs.drop_one(d, old_at);
                    } else {
                        docs.drop_one(d, old_at);
                        docs.inc(d, new);
                    }
                    b.z[j] = new;
                }
                self.move_token::<true>(new as usize, 1);
            }
            self.flush_word(w, store)?;
        }
        Ok(())
    }

    /// The sweep over dense counts: each draw computes (n_dk + a) c_k for every topic in chunks of
    /// `DENSE_CHUNK` (`lda_dense`: AVX2 where the CPU has it), then walks the chunk sums and one
    /// chunk's terms.
    fn sweep_dense(
        &mut self,
        docs: &mut DenseCounts,
        b: &mut Block,
        store: &mut dyn WordTopics,
        rng: &mut impl Rng,
    ) -> Result<()> {
        let draw = dense_draw_fn();
        for (i, &w) in b.words.iter().enumerate() {
            store.prefetch(b.words.get(i + 1..).unwrap_or_default());
            self.load_word(w, store)?;
            for j in b.of_word(i) {
                let (d, old) = (b.doc[j] as usize, b.z[j] as usize);
                if let Some(&ahead) = b.doc.get(j + PREFETCH_AHEAD) {
                    docs.prefetch(ahead as usize);
                }
                let (inv, coef) = (self.inv[old], self.coef[old]);
                self.move_token::<false>(old, -1);
                let row = docs.row_mut(d);
                row[old] -= 1;
                let new = draw(row, &self.coef, self.alpha, &mut self.chunk_sums, rng.gen::<f64>());
                row[new] += 1;
                if new == old {
                    // Back as it was: the saved values, without a division.
                    self.count_move(old, 1);
                    (self.inv[old], self.coef[old]) = (inv, coef);
                } else {
                    b.z[j] = new as u32;
                    self.move_token::<false>(new, 1);
                }
            }
            self.flush_word(w, store)?;
        }
        Ok(())
    }

    /// The document part of the collapsed log-likelihood of this worker's documents:
    /// sum_d [sum_k lgamma(n_dk + a) - lgamma(n_d + K a)] + D [lgamma(K a) - K lgamma(a)].
    pub fn doc_loglik(&mut self) -> f64 {
        let [la, lka, _] = &mut self.lg;
        let (lg_a, lg_ka) = (la.get(0), lka.get(0));
        let mut ll = 0.0;
        for (d, &n) in self.docs.doc_len.iter().enumerate() {
            self.docs.for_each_count(d, |c| ll += la.get(c as usize) - lg_a);
            ll -= lka.get(n as usize) - lg_ka;
        }
        ll
    }

    /// The word part for one word's row: sum_{k: n_wk > 0} [lgamma(n_wk + b) - lgamma(b)].
    pub fn word_loglik(&mut self, counts: impl Iterator<Item = (u32, i32)>) -> f64 {
        let lb = &mut self.lg[2];
        let lg_b = lb.get(0);
        counts.filter(|(_, n)| *n > 0).map(|(_, n)| lb.get(n as usize) - lg_b).sum()
    }
}

/// lgamma(n + offset) for counts n, each computed once. The log-likelihood takes one per non-zero
/// count (millions per evaluation), and the Lanczos formula's nine divisions and logarithm made
/// LDA's evaluations cost as much as a sweep; counts are small integers, so a table answers
/// nearly all of them with the very same values.
pub struct LgammaTable {
    offset: f64,
    values: Vec<f64>,
}

impl LgammaTable {
    /// Counts from here on are computed each time (the table would cost more than it saves).
    const CAP: usize = 1 << 22;

    pub fn new(offset: f64) -> Self {
        LgammaTable { offset, values: Vec::new() }
    }

    #[inline]
    pub fn get(&mut self, n: usize) -> f64 {
        if let Some(&v) = self.values.get(n) {
            return v;
        }
        if n >= Self::CAP {
            return lgamma(n as f64 + self.offset);
        }
        let (start, offset) = (self.values.len(), self.offset);
        let end = (n + 1).max(2 * start).clamp(1024, Self::CAP);
        self.values.extend((start..end).map(|i| lgamma(i as f64 + offset)));
        self.values[n]
    }
}

/// The topic part: K lgamma(V b) - sum_k lgamma(n_k + V b).
pub fn topic_loglik(nk: &[i64], vbeta: f64) -> f64 {
    nk.iter().map(|&n| lgamma(vbeta) - lgamma(n.max(0) as f64 + vbeta)).sum()
}

/// ln Gamma(x) for x > 0 (Lanczos approximation, g = 7, n = 9; |error| < 1e-13).
pub fn lgamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Gamma(x) Gamma(1-x) = pi / sin(pi x).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - lgamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::LocalCounts;
    use ps_runtime::ColumnAdd;

    /// Between words the sampler holds no word: `nw` all zero and `coef_k = b inv_k` exactly, so
    /// that loading a word may touch only its own topics; and a loaded word's `coef_sum` (kept
    /// from the running sum of `b inv_k`) is the sum of its `coef`. Several sweeps over many
    /// words and documents, in both layouts.
    #[test]
    fn between_words_no_word_is_left_behind() {
        use rand::{Rng, SeedableRng};
        for kind in [LayoutKind::Lists, LayoutKind::Dense] {
            let (k, v) = (20usize, 50usize);
            let mut rng = ps_runtime::SeededRng::seed_from_u64(3);
            let docs: Vec<Vec<u32>> = (0..40).map(|_| (0..30).map(|_| rng.gen_range(0..v as u32)).collect()).collect();
            let z: Vec<u32> = docs.iter().flatten().map(|_| rng.gen_range(0..k as u32)).collect();
            let mut block = Block::new(&docs, 0..docs.len(), v, |_| true);
            block.set_doc_order(&docs, v, &z).unwrap();
            let mut store = LocalCounts::new(v);
            let mut nk = vec![0i64; k];
            for (w, &t) in docs.iter().flatten().zip(&z) {
                store.0[*w as usize].add(t, 1);
                nk[t as usize] += 1;
            }
            let mut s = Sampler::with_layout(k, 0.1, 0.01, v, docs.iter().map(|d| d.len() as u32).collect(), kind);
            s.docs.count(&block);
            s.set_totals(&nk);
            for _ in 0..5 {
                s.sweep_block(&mut block, &mut store, &mut rng).unwrap();
                assert!(s.nw.iter().all(|&n| n == 0), "{kind:?}");
                for t in 0..k {
                    assert_eq!(s.coef[t], s.beta * s.inv[t], "{kind:?}, topic {t}");
                }
                s.load_word(7, &mut store).unwrap();
                let fresh: f64 = s.coef[..k].iter().sum();
                assert!((s.coef_sum - fresh).abs() <= 1e-9 * fresh || kind == LayoutKind::Dense, "{kind:?}");
                s.flush_word(7, &mut store).unwrap();
            }
        }
    }

    /// The first token a sweep visits is drawn from the exact collapsed conditional
    /// p(z = k) ~ (n_dk + a)(n_wk + b) / (n_k + V b), all counts without the token, in both
    /// layouts; both of the list layout's buckets (document and smoothing) carry probability here.
    #[test]
    fn draws_follow_the_collapsed_conditional() {
        draws_follow_the_collapsed_conditional_in(LayoutKind::Lists);
        draws_follow_the_collapsed_conditional_in(LayoutKind::Dense);
    }

    fn draws_follow_the_collapsed_conditional_in(kind: LayoutKind) {
        use rand::SeedableRng;
        let (k, v, a, beta) = (3usize, 2usize, 0.5, 0.1);
        // Other documents' counts of word 0 and word 1.
        let others = [[3, 0, 1], [1, 2, 0]];
        // The swept document: word 0 (topic 0) then word 1 (topic 1).
        let docs = vec![vec![0u32, 1]];
        let mut rng = ps_runtime::SeededRng::seed_from_u64(7);
        let trials = 20_000;
        let mut seen = [0usize; 3];
        for _ in 0..trials {
            let mut store = LocalCounts::new(v);
            let mut nk = vec![0i64; k];
            for (w, row) in others.iter().enumerate() {
                for (t, &n) in row.iter().enumerate() {
                    store.0[w].add(t as u32, n);
                    nk[t] += n as i64;
                }
            }
            for (w, t) in [(0usize, 0u32), (1, 1)] {
                store.0[w].add(t, 1);
                nk[t as usize] += 1;
            }
            let mut block = Block::new(&docs, 0..1, v, |_| true);
            block.set_doc_order(&docs, v, &[0, 1]).unwrap();
            let mut s = Sampler::with_layout(k, a, beta, v, vec![2], kind);
            s.docs.count(&block);
            s.set_totals(&nk);
            s.sweep_block(&mut block, &mut store, &mut rng).unwrap();
            seen[block.z[0] as usize] += 1;
            // Every count stays consistent with the assignments.
            let total: i32 = store.0.iter().flat_map(|r| r.iter().map(|(_, n)| n)).sum();
            assert_eq!(total, 9);
            assert_eq!(s.nk.iter().sum::<i64>(), 9);
        }
        // Without the token: doc [0, 1, 0], word 0 = others[0], totals = others + word 1's token.
        let nd = [0.0, 1.0, 0.0];
        let nk_minus = [4.0, 3.0, 1.0];
        let p: Vec<f64> =
            (0..k).map(|t| (nd[t] + a) * (others[0][t] as f64 + beta) / (nk_minus[t] + v as f64 * beta)).collect();
        let sum: f64 = p.iter().sum();
        for t in 0..k {
            let freq = seen[t] as f64 / trials as f64;
            // Six standard deviations of a binomial frequency.
            let tol = 6.0 * (p[t] / sum * (1.0 - p[t] / sum) / trials as f64).sqrt();
            assert!((freq - p[t] / sum).abs() < tol, "{kind:?}, topic {t}: drawn {freq}, exact {}", p[t] / sum);
        }
    }

    #[test]
    fn lgamma_table_gives_the_formula_s_values_as_it_grows() {
        let mut t = LgammaTable::new(0.01);
        for n in [5usize, 0, 1023, 1024, 3000, 2, 70_000, LgammaTable::CAP + 7] {
            assert_eq!(t.get(n).to_bits(), lgamma(n as f64 + 0.01).to_bits(), "n = {n}");
        }
        assert!(t.values.len() < LgammaTable::CAP, "counts past the cap are not tabled");
    }

    #[test]
    fn lgamma_matches_known_values() {
        assert!((lgamma(1.0)).abs() < 1e-12);
        assert!((lgamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((lgamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
        assert!((lgamma(100.5) - 361.435_540_467_777_6).abs() < 1e-9);
        assert!((lgamma(0.01) - 4.599_479_878_042_022).abs() < 1e-10);
    }
}
