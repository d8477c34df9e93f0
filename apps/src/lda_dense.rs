//! The dense layout's draw (`lda_tokens::Layout::Dense`): topic k with probability proportional to
//! (n_dk + a) c_k over all K topics, in chunks of `DENSE_CHUNK` terms that run as vector
//! operations, with an AVX2 build chosen at run time.

use super::lda_tokens::DENSE_CHUNK;

/// A dense draw: `(counts, coef, alpha, chunk prefix sums, uniform in [0, 1)) -> topic`.
pub type DenseDraw = fn(&[u16], &[f64], f64, &mut [f64], f64) -> usize;

/// The dense draw for the best vector instructions this CPU has. The binary is built for the
/// baseline x86-64 (SSE2) so that it runs on every node of a cluster; with AVX2 a chunk's terms
/// are two 4-lane operations. Both compute the same IEEE operations in the same order (no fused
/// multiply-add), so the draws do not depend on the CPU.
pub fn dense_draw_fn() -> DenseDraw {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return |n, c, a, prefix, u01| {
            // SAFETY: the CPU has AVX2 (checked above).
            let total = unsafe { chunk_prefix_avx2(n, c, a, prefix) };
            pick(n, c, a, prefix, u01 * total)
        };
    }
    dense_draw
}

/// Draws topic k with probability proportional to (counts_k + alpha) coef_k. `counts` and `coef`
/// have the same length, a multiple of `DENSE_CHUNK`; `prefix` has one slot per chunk.
fn dense_draw(counts: &[u16], coef: &[f64], alpha: f64, prefix: &mut [f64], u01: f64) -> usize {
    let total = chunk_prefix(counts, coef, alpha, prefix);
    pick(counts, coef, alpha, prefix, u01 * total)
}

/// Fills `prefix` with the running sums of the chunks' terms and returns the total. A chunk's
/// eight terms add as a tree (lane l holds terms l and l + 4; then lanes (0 + 2) + (1 + 3)), not
/// as a chain: a draw's latency is most of its cost.
#[inline(always)]
fn chunk_prefix(counts: &[u16], coef: &[f64], alpha: f64, prefix: &mut [f64]) -> f64 {
    const _: () = assert!(DENSE_CHUNK == 8, "the tree adds eight terms");
    let mut acc = 0.0;
    for ((n, c), s) in counts.chunks_exact(8).zip(coef.chunks_exact(8)).zip(prefix.iter_mut()) {
        let mut q = [0.0f64; 4];
        for l in 0..4 {
            q[l] = (n[l] as f64 + alpha) * c[l] + (n[l + 4] as f64 + alpha) * c[l + 4];
        }
        acc += (q[0] + q[2]) + (q[1] + q[3]);
        *s = acc;
    }
    acc
}

/// `chunk_prefix` in AVX2, operation for operation.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn chunk_prefix_avx2(counts: &[u16], coef: &[f64], alpha: f64, prefix: &mut [f64]) -> f64 {
    use std::arch::x86_64::*;
    let chunks = prefix.len().min(counts.len() / 8).min(coef.len() / 8);
    let a = _mm256_set1_pd(alpha);
    let mut acc = 0.0;
    for (i, s) in prefix[..chunks].iter_mut().enumerate() {
        // SAFETY: chunk i's eight counts and coefficients are in bounds (`chunks` above).
        let (n, c0, c1) = unsafe {
            (
                _mm_loadu_si128(counts.as_ptr().add(8 * i).cast()),
                _mm256_loadu_pd(coef.as_ptr().add(8 * i)),
                _mm256_loadu_pd(coef.as_ptr().add(8 * i + 4)),
            )
        };
        let lo = _mm256_add_pd(_mm256_cvtepi32_pd(_mm_cvtepu16_epi32(n)), a);
        let hi = _mm256_add_pd(_mm256_cvtepi32_pd(_mm_cvtepu16_epi32(_mm_srli_si128::<8>(n))), a);
        let q = _mm256_add_pd(_mm256_mul_pd(lo, c0), _mm256_mul_pd(hi, c1));
        let h = _mm_add_pd(_mm256_castpd256_pd128(q), _mm256_extractf128_pd::<1>(q));
        acc += _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
        *s = acc;
    }
    acc
}

/// The topic where `u` (in [0, total]) falls: the chunk is found by counting the prefix sums at
/// or below u (no branch per chunk), then the chunk's terms are walked. Rounding can leave u just
/// past the last chunk's terms; the draw then takes its last topic with a non-zero term (padding
/// topics have none).
#[inline(always)]
fn pick(counts: &[u16], coef: &[f64], alpha: f64, prefix: &[f64], u: f64) -> usize {
    let last = prefix.len() - 1;
    let chunk: usize = prefix[..last].iter().map(|&p| usize::from(p <= u)).sum();
    let mut u = if chunk > 0 { u - prefix[chunk - 1] } else { u };
    let base = chunk * DENSE_CHUNK;
    let mut pick = base;
    for l in 0..DENSE_CHUNK {
        let p = (counts[base + l] as f64 + alpha) * coef[base + l];
        if p > 0.0 {
            pick = base + l;
            if u < p {
                break;
            }
        }
        u -= p;
    }
    pick
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// The dense draw picks topics in proportion over chunk boundaries, never a padding topic
    /// (zero coefficient), and the CPU-specific build draws exactly what the baseline one does.
    #[test]
    fn dense_draw_covers_chunks_and_skips_padding() {
        // 11 topics padded to 16: topic t has weight (n_t + 0.5) * 1.
        let mut counts = vec![0u16; 16];
        let mut coef = vec![0.0; 16];
        for t in 0..11 {
            counts[t] = t as u16;
            coef[t] = 1.0;
        }
        let total: f64 = (0..11).map(|t| t as f64 + 0.5).sum();
        let mut sums = vec![0.0; 2];
        let fast = dense_draw_fn();
        let mut before = 0.0;
        for t in 0..11 {
            // A uniform just inside topic t's interval, and one at its start.
            for u in [(before + 0.25) / total, before / total] {
                assert_eq!(dense_draw(&counts, &coef, 0.5, &mut sums, u), t, "u = {u}");
                assert_eq!(fast(&counts, &coef, 0.5, &mut sums, u), t);
            }
            before += t as f64 + 0.5;
        }
        // Random rows: the CPU-specific draw and its prefix sums are the baseline's, bit for bit.
        use rand::SeedableRng;
        let mut rng = ps_runtime::SeededRng::seed_from_u64(3);
        let (mut p1, mut p2) = (vec![0.0; 13], vec![0.0; 13]);
        for _ in 0..2000 {
            let counts: Vec<u16> = (0..104).map(|t| if t < 100 { rng.gen_range(0..40) } else { 0 }).collect();
            let coef: Vec<f64> = (0..104).map(|t| if t < 100 { rng.gen::<f64>() * 1e-3 } else { 0.0 }).collect();
            let u = rng.gen::<f64>();
            let t = dense_draw(&counts, &coef, 0.1, &mut p1, u);
            assert_eq!(fast(&counts, &coef, 0.1, &mut p2, u), t);
            assert!(t < 100);
            assert_eq!(
                p1.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                p2.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            );
        }
        // The top of the range lands on the last real topic, not on padding.
        assert_eq!(dense_draw(&counts, &coef, 0.5, &mut sums, 1.0 - f64::EPSILON / 2.0), 10);
        assert_eq!(dense_draw(&counts, &coef, 0.5, &mut sums, 1.0), 10);
    }
}
