//! MF's SGD steps and dot product: the inner loop of `mf` and of the plain baseline (squared
//! error) and of `mf --implicit` (BPR's pairwise logistic loss), each with an AVX2 build chosen
//! at run time that computes exactly what the baseline x86-64 build computes.

/// SGD step for one rating, in place: both rows move along the gradient of the squared error
/// and the regulariser, each computed from the old values. Returns the error before the step.
#[inline]
pub fn sgd_update(l: &mut [f32], r: &mut [f32], x: f32, lr: f32, lambda: f32) -> f32 {
    sgd_body(l, r, x, lr, lambda)
}

/// An SGD step as a function pointer: `sgd_update` compiled for the best vector instructions of
/// this CPU (see [`sgd_step_fn`]).
pub type SgdStep = fn(&mut [f32], &mut [f32], f32, f32, f32) -> f32;

/// `sgd_update` for this CPU: the binary is built for the baseline x86-64 (SSE2, four lanes) so
/// that it runs on every node; with AVX2 the same code runs eight lanes at a time. Both do the
/// same IEEE operations in the same order (eight partial sums in the dot product, no fused
/// multiply-add), so the model does not depend on the CPU.
pub fn sgd_step_fn() -> SgdStep {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked above).
        return |l, r, x, lr, lambda| unsafe { sgd_update_avx2(l, r, x, lr, lambda) };
    }
    sgd_update
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sgd_update_avx2(l: &mut [f32], r: &mut [f32], x: f32, lr: f32, lambda: f32) -> f32 {
    sgd_body(l, r, x, lr, lambda)
}

#[inline(always)]
fn sgd_body(l: &mut [f32], r: &mut [f32], x: f32, lr: f32, lambda: f32) -> f32 {
    let e = x - dot_body(l, r);
    let n = l.len().min(r.len());
    let (l, r) = (&mut l[..n], &mut r[..n]);
    for k in 0..n {
        let (lk, rk) = (l[k], r[k]);
        l[k] = lk + lr * (e * rk - lambda * lk);
        r[k] = rk + lr * (e * lk - lambda * rk);
    }
    e
}

/// A BPR step as a function pointer, for this CPU (see [`bpr_step_fn`]).
pub type BprStep = fn(&mut [f32], &mut [f32], &mut [f32], f32, f32, f32) -> f32;

/// BPR step for user row `u`, an item `i` the user chose and an item `j` it did not, in place:
/// the three rows move along the gradient of `weight * -ln sigmoid(u.(i - j))` and the
/// regulariser, each computed from the old values. Returns the loss before the step (unweighted).
#[inline]
pub fn bpr_update(u: &mut [f32], i: &mut [f32], j: &mut [f32], lr: f32, lambda: f32, weight: f32) -> f32 {
    bpr_body(u, i, j, lr, lambda, weight)
}

/// `bpr_update` for this CPU, as [`sgd_step_fn`] chooses.
pub fn bpr_step_fn() -> BprStep {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked above).
        return |u, i, j, lr, lambda, w| unsafe { bpr_update_avx2(u, i, j, lr, lambda, w) };
    }
    bpr_update
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn bpr_update_avx2(u: &mut [f32], i: &mut [f32], j: &mut [f32], lr: f32, lambda: f32, w: f32) -> f32 {
    bpr_body(u, i, j, lr, lambda, w)
}

#[inline(always)]
fn bpr_body(u: &mut [f32], i: &mut [f32], j: &mut [f32], lr: f32, lambda: f32, weight: f32) -> f32 {
    let x = dot_body(u, i) - dot_body(u, j);
    // weight * sigmoid(-x): no overflow either way (exp(x) = inf gives 0).
    let g = weight / (1.0 + x.exp());
    let n = u.len().min(i.len()).min(j.len());
    let (u, i, j) = (&mut u[..n], &mut i[..n], &mut j[..n]);
    for k in 0..n {
        let (uk, ik, jk) = (u[k], i[k], j[k]);
        u[k] = uk + lr * (g * (ik - jk) - lambda * uk);
        i[k] = ik + lr * (g * uk - lambda * ik);
        j[k] = jk - lr * (g * uk + lambda * jk);
    }
    logistic_loss(x)
}

/// `-ln sigmoid(x) = ln(1 + exp(-x))`, without overflow for large |x|.
#[inline]
pub fn logistic_loss(x: f32) -> f32 {
    if x > 0.0 {
        (-x).exp().ln_1p()
    } else {
        -x + x.exp().ln_1p()
    }
}

/// Dot product with 8 independent partial sums, so the compiler can vectorise it (a single
/// running f32 sum cannot be reordered and runs at one add per FP-add latency).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    dot_body(a, b)
}

#[inline(always)]
fn dot_body(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bpr_step_moves_the_chosen_item_above_the_other() {
        let (mut u, mut i, mut j) = (vec![0.1f32; 8], vec![0.05f32; 8], vec![0.2f32; 8]);
        let before = dot(&u, &i) - dot(&u, &j);
        let loss = bpr_step_fn()(&mut u, &mut i, &mut j, 0.1, 0.0, 1.0);
        assert!((loss - logistic_loss(before)).abs() < 1e-6, "{loss} {before}");
        let after = dot(&u, &i) - dot(&u, &j);
        assert!(after > before, "{before} -> {after}");
        // The same step on the portable build (vector and scalar builds agree exactly).
        let (mut u2, mut i2, mut j2) = (vec![0.1f32; 8], vec![0.05f32; 8], vec![0.2f32; 8]);
        bpr_update(&mut u2, &mut i2, &mut j2, 0.1, 0.0, 1.0);
        assert_eq!((u, i, j), (u2, i2, j2));
        assert!(logistic_loss(-100.0).is_finite() && logistic_loss(100.0) >= 0.0);
        assert!((logistic_loss(0.0) - std::f32::consts::LN_2).abs() < 1e-7);
    }
}
