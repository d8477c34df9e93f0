//! Offline evaluation of an MF snapshot (`ps-runtime snapshot eval-mf`): the RMSE of the model a
//! checkpoint holds over the job's ratings, split as the job split them.

use super::mf::{dot, held_out, ItemRows, L, MEAN, R};
use ps_runtime::input::{read_ratings, RatingFormat};
use ps_runtime::DenseRow;
use ps_runtime::{PsError, Result};

/// RMSE of a snapshot's model (`mean + L_u . R_i`) over the ratings at `input`: (train RMSE,
/// train count, held-out RMSE, held-out count), split as the job split them. Offline evaluation.
pub fn eval_snapshot(
    store: &ps_runtime::snapshot::CheckpointStore,
    m: &ps_runtime::snapshot::Manifest,
    input: &str,
    format: RatingFormat,
    seed: u64,
    test_fraction: f64,
) -> Result<(f64, u64, f64, u64)> {
    use ps_runtime::snapshot::read::read_table;
    let lt = read_table::<DenseRow<f32>>(store, m, L.id())?;
    let rt = read_table::<DenseRow<f32>>(store, m, R.id())?;
    let mean = read_table::<DenseRow<f64>>(store, m, MEAN.id())?;
    let mu = mean.get(&0).map_or(0.0, |r| r[0] / r[1].max(1.0)) as f32;
    // Items per row: the items table's width over the users table's (the rank).
    let width = |t: &rustc_hash::FxHashMap<u64, DenseRow<f32>>| t.values().next().map(|r| r.len());
    let ir = match (width(&lt), width(&rt)) {
        (Some(k), Some(w)) if k > 0 && w % k == 0 => ItemRows { per_row: (w / k) as u64, rank: k },
        (None, _) | (_, None) => ItemRows { per_row: 1, rank: 0 },
        (Some(k), Some(w)) => {
            return Err(PsError::codec(format!("mf: item rows of {w} values do not hold factors of rank {k}")))
        }
    };
    let (ratings, _) = read_ratings(input, 0, 1, format, ps_runtime::input::BadRecords::Fail)?;
    let mut s = [0f64; 4];
    for r in &ratings {
        // Rows never updated are still at their deterministic initial value on the servers (as
        // the job's own evaluation reads them); an id missing from the snapshot was never seen in
        // training, so it predicts the mean.
        let p = match (lt.get(&(r.user as u64)), rt.get(&ir.row(r.item))) {
            (Some(u), Some(i)) => mu + dot(u, &i[ir.cols(r.item)]),
            _ => mu,
        };
        let k = if held_out(r, seed, test_fraction) { 2 } else { 0 };
        s[k] += ((r.value - p) as f64).powi(2);
        s[k + 1] += 1.0;
    }
    let rmse = |a: f64, n: f64| if n > 0.0 { (a / n).sqrt() } else { f64::NAN };
    Ok((rmse(s[0], s[1]), s[1] as u64, rmse(s[2], s[3]), s[3] as u64))
}
