//! MF's SGD step and dot product: the inner loop of `mf` and of the plain baseline, with an AVX2
//! build chosen at run time that computes exactly what the baseline x86-64 build computes.

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
