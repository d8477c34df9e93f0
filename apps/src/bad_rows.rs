//! The job's skipped input rows, settled once every worker has read its share: rows with a null
//! or empty cell, and bad records under `--skip-bad-records`. Their total is logged and reported
//! (`rows_skipped`), and a job that skipped more than `--max-bad-fraction` of its rows fails on
//! every worker alike instead of training on what is left (all rows bad used to give an empty
//! model and exit 0).

use super::options::CommonArgs;
use ps_runtime::input::ReadStats;
use ps_runtime::Worker;
use ps_runtime::{PsError, Result};

/// Sums every worker's read counts (one exchange; every worker of the job calls it), logs the
/// total at worker 0, and fails when the skipped share is over the limit. Returns the job's
/// skipped rows.
pub fn settle(w: &mut Worker, c: &CommonArgs, app: &str, st: &ReadStats) -> Result<u64> {
    let mine = [st.records.to_le_bytes(), st.skipped.to_le_bytes()].concat();
    let got = w.exchange(vec![mine; w.total_threads()])?;
    let (mut records, mut skipped) = (0u64, 0u64);
    for (from, b) in got.iter().enumerate() {
        let word = |i: usize| b.get(i * 8..i * 8 + 8).and_then(|x| x.try_into().ok()).map(u64::from_le_bytes);
        let (Some(r), Some(s)) = (word(0), word(1)) else {
            return Err(PsError::codec(format!("{app}: worker {from} sent {} bytes of read counts", b.len())));
        };
        (records, skipped) = (records + r, skipped + s);
    }
    let total = records + skipped;
    let share = if total == 0 { 0.0 } else { skipped as f64 / total as f64 };
    if w.global_thread_id() == 0 && skipped > 0 {
        log::info!("{app}: skipped {skipped} of {total} input rows ({:.2}%)", 100.0 * share);
    }
    if share > c.max_bad_fraction {
        return Err(PsError::Config(format!(
            "{app}: {skipped} of {total} input rows ({:.1}%) were skipped (bad records or empty values), more than \
             --max-bad-fraction {}: check the input and the column flags, or raise the limit",
            100.0 * share,
            c.max_bad_fraction
        )));
    }
    Ok(skipped)
}
