//! The SparseLDA collapsed Gibbs sampler (Yao, Mimno & McCallum, KDD 2009), shared by the
//! parameter-server app and the single-process baseline. The conditional of a token's topic,
//! `(n_dk + a)(n_wk + b) / (n_k + V b)`, splits into a smoothing bucket `a b / (n_k + V b)`, a
//! document bucket `n_dk b / (n_k + V b)` over the document's topics, and a word bucket
//! `(n_dk + a) n_wk / (n_k + V b)` over the word's non-zero topics, so a draw costs about the
//! number of non-zero counts rather than K.

use crate::error::Result;
use crate::row::SparseRow;
use rand::Rng;

/// Where word-topic counts live: the parameter server, or local arrays for the baseline.
pub trait WordTopics {
    /// Calls `f` with the word's topic counts (including this worker's own updates).
    fn with_row(&mut self, word: u32, f: &mut dyn FnMut(&SparseRow<i32>)) -> Result<()>;
    /// Adds `delta` to count (word, topic).
    fn add(&mut self, word: u32, topic: u32, delta: i32) -> Result<()>;
}

/// Per-worker sampler state: topic totals as this worker sees them and the bucket caches.
pub struct Sampler {
    pub k: usize,
    pub alpha: f64,
    pub beta: f64,
    pub vbeta: f64,
    /// n_k as seen by this worker (refreshed each clock, plus own changes).
    pub nk: Vec<i64>,
    /// This worker's changes to n_k since the last flush.
    pub nk_delta: Vec<i64>,
    /// 1 / (n_k + V b) per topic: every bucket term has this factor, and a division costs as
    /// much as a dozen multiplications, so it is kept up to date (two topics change per token).
    inv: Vec<f64>,
    s_sum: f64,
    coef: Vec<f64>,
    ndk: Vec<i32>,
    doc_topics: Vec<u32>,
    q: Vec<(u32, f64)>,
}

impl Sampler {
    pub fn new(k: usize, alpha: f64, beta: f64, vocab: usize) -> Self {
        Sampler {
            k,
            alpha,
            beta,
            vbeta: vocab as f64 * beta,
            nk: vec![0; k],
            nk_delta: vec![0; k],
            inv: vec![1.0 / (vocab as f64 * beta); k],
            s_sum: 0.0,
            coef: vec![0.0; k],
            ndk: vec![0; k],
            doc_topics: Vec::new(),
            q: Vec::new(),
        }
    }

    /// Installs fresh topic totals (start of a clock).
    pub fn set_totals(&mut self, nk: &[i64]) {
        self.nk.copy_from_slice(nk);
        for t in 0..self.k {
            self.inv[t] = self.inverse_denom(t);
        }
        self.s_sum = self.inv.iter().map(|i| self.alpha * self.beta * i).sum();
    }

    #[inline]
    fn change_topic_total(&mut self, t: usize, d: i64) {
        self.s_sum -= self.alpha * self.beta * self.inv[t];
        self.nk[t] += d;
        self.nk_delta[t] += d;
        self.inv[t] = self.inverse_denom(t);
        self.s_sum += self.alpha * self.beta * self.inv[t];
    }

    #[inline]
    fn inverse_denom(&self, t: usize) -> f64 {
        1.0 / ((self.nk[t].max(0) as f64) + self.vbeta)
    }

    /// Resamples every token of one document; `z` holds its current assignments. One function on
    /// purpose: it is the app's hot loop, and the per-token steps share the bucket sums and caches,
    /// which split-out helpers would have to pass around for every token.
    pub fn sweep_doc(
        &mut self,
        words: &[u32],
        z: &mut [u32],
        store: &mut dyn WordTopics,
        rng: &mut impl Rng,
    ) -> Result<()> {
        self.ndk.iter_mut().for_each(|c| *c = 0);
        self.doc_topics.clear();
        for &t in z.iter() {
            if self.ndk[t as usize] == 0 {
                self.doc_topics.push(t);
            }
            self.ndk[t as usize] += 1;
        }
        for t in 0..self.k {
            self.coef[t] = (self.alpha + self.ndk[t] as f64) * self.inv[t];
        }
        let mut r_sum: f64 =
            self.doc_topics.iter().map(|&t| self.ndk[t as usize] as f64 * self.beta * self.inv[t as usize]).sum();
        for (i, &w) in words.iter().enumerate() {
            let old = z[i] as usize;
            // Remove the token.
            r_sum -= self.ndk[old] as f64 * self.beta * self.inv[old];
            self.ndk[old] -= 1;
            self.change_topic_total(old, -1);
            r_sum += self.ndk[old] as f64 * self.beta * self.inv[old];
            self.coef[old] = (self.alpha + self.ndk[old] as f64) * self.inv[old];
            if self.ndk[old] == 0 {
                if let Some(p) = self.doc_topics.iter().position(|&t| t as usize == old) {
                    self.doc_topics.swap_remove(p);
                }
            }
            // Word bucket over the word's non-zero topics. The token's own count is left out here
            // instead of being removed from the store first: most tokens keep their topic once the
            // chain has mixed, and then the store is not touched at all.
            self.q.clear();
            let mut q_sum = 0.0;
            {
                let (coef, q) = (&self.coef, &mut self.q);
                store.with_row(w, &mut |row| {
                    // A local sum stays in a register (the captured one is written back per entry).
                    let mut sum = 0.0;
                    q.reserve(row.nnz());
                    for (t, n) in row.iter() {
                        let n = n - i32::from(t as usize == old);
                        if n > 0 {
                            let v = coef[t as usize] * n as f64;
                            sum += v;
                            q.push((t, v));
                        }
                    }
                    q_sum = sum;
                })?;
            }
            let mut u = rng.gen::<f64>() * (self.s_sum + r_sum + q_sum);
            let new = if u < q_sum {
                let mut pick = self.q.last().map(|x| x.0).unwrap_or(0);
                for &(t, v) in &self.q {
                    if u < v {
                        pick = t;
                        break;
                    }
                    u -= v;
                }
                pick as usize
            } else if u < q_sum + r_sum {
                u -= q_sum;
                let mut pick = self.doc_topics.last().copied().unwrap_or(0) as usize;
                for &t in &self.doc_topics {
                    let v = self.ndk[t as usize] as f64 * self.beta * self.inv[t as usize];
                    if u < v {
                        pick = t as usize;
                        break;
                    }
                    u -= v;
                }
                pick
            } else {
                u -= q_sum + r_sum;
                let mut pick = self.k - 1;
                for t in 0..self.k {
                    let v = self.alpha * self.beta * self.inv[t];
                    if u < v {
                        pick = t;
                        break;
                    }
                    u -= v;
                }
                pick
            };
            // Add it back with its new topic.
            r_sum -= self.ndk[new] as f64 * self.beta * self.inv[new];
            if self.ndk[new] == 0 {
                self.doc_topics.push(new as u32);
            }
            self.ndk[new] += 1;
            self.change_topic_total(new, 1);
            r_sum += self.ndk[new] as f64 * self.beta * self.inv[new];
            self.coef[new] = (self.alpha + self.ndk[new] as f64) * self.inv[new];
            if new != old {
                store.add(w, old as u32, -1)?;
                store.add(w, new as u32, 1)?;
                z[i] = new as u32;
            }
        }
        Ok(())
    }

    /// The document part of the collapsed log-likelihood of this worker's documents:
    /// sum_d [sum_k lgamma(n_dk + a) - lgamma(n_d + K a)] + D [lgamma(K a) - K lgamma(a)].
    pub fn doc_loglik(&self, docs: &[Vec<u32>]) -> f64 {
        let (a, k) = (self.alpha, self.k as f64);
        let mut counts = vec![0u32; self.k];
        let mut ll = 0.0;
        for z in docs {
            counts.iter_mut().for_each(|c| *c = 0);
            for &t in z {
                counts[t as usize] += 1;
            }
            for &c in counts.iter().filter(|c| **c > 0) {
                ll += lgamma(c as f64 + a) - lgamma(a);
            }
            ll -= lgamma(z.len() as f64 + k * a) - lgamma(k * a);
        }
        ll
    }
}

/// The word part for some words' rows: sum_{w,k: n_wk > 0} [lgamma(n_wk + b) - lgamma(b)].
pub fn word_loglik(row: &SparseRow<i32>, beta: f64) -> f64 {
    row.iter().filter(|(_, n)| *n > 0).map(|(_, n)| lgamma(n as f64 + beta) - lgamma(beta)).sum()
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

    #[test]
    fn lgamma_matches_known_values() {
        assert!((lgamma(1.0)).abs() < 1e-12);
        assert!((lgamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((lgamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
        assert!((lgamma(100.5) - 361.435_540_467_777_6).abs() < 1e-9);
        assert!((lgamma(0.01) - 4.599_479_878_042_022).abs() < 1e-10);
    }
}
