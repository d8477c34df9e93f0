//! Job-wide totals of counts per key (MF's training ratings per item, LDA's tokens per word
//! row), from which the rotating schedules balance their slices (`rotation::balance`): every
//! worker gets the same list, sorted by key, and computes the same assignment from it. Summed
//! through two all-to-all exchanges (each worker totals the keys it is responsible for, then
//! sends its totals to all), so no process ever holds more than the totals themselves.

use ps_runtime::mix64;
use ps_runtime::Worker;
use ps_runtime::{PsError, Result};
use rustc_hash::FxHashMap;

const PAIR: usize = 12;

/// The job's totals of this worker's `local` counts (a key may repeat), `what` naming them in
/// errors. Collective: every worker of the job calls it at the same point.
pub fn job_totals(w: &mut Worker, what: &str, local: impl IntoIterator<Item = (u32, u64)>) -> Result<Vec<(u32, u64)>> {
    let n = w.total_threads();
    let owner = |key: u32| (((mix64(key as u64 ^ 0x6974_656d) >> 32) * n as u64) >> 32) as usize;
    let mut mine: Vec<Vec<u8>> = vec![Vec::new(); n];
    for (key, c) in local {
        encode_one(&mut mine[owner(key)], key, c);
    }
    let got = w.exchange(mine)?;
    let mut total: FxHashMap<u32, u64> = FxHashMap::default();
    for (from, b) in got.iter().enumerate() {
        decode(what, from, b, |key, c| *total.entry(key).or_insert(0) += c)?;
    }
    let mut summed = Vec::with_capacity(total.len() * PAIR);
    total.into_iter().for_each(|(key, c)| encode_one(&mut summed, key, c));
    let got = w.exchange(vec![summed; n])?;
    let mut all = Vec::new();
    for (from, b) in got.iter().enumerate() {
        decode(what, from, b, |key, c| all.push((key, c)))?;
    }
    all.sort_unstable();
    Ok(all)
}

fn encode_one(b: &mut Vec<u8>, key: u32, n: u64) {
    b.extend_from_slice(&key.to_le_bytes());
    b.extend_from_slice(&n.to_le_bytes());
}

fn decode(what: &str, from: usize, b: &[u8], mut f: impl FnMut(u32, u64)) -> Result<()> {
    if !b.len().is_multiple_of(PAIR) {
        return Err(PsError::codec(format!("worker {from} sent {} bytes of {what}", b.len())));
    }
    for c in b.chunks_exact(PAIR) {
        let key = u32::from_le_bytes(c[..4].try_into().expect("4 bytes"));
        f(key, u64::from_le_bytes(c[4..].try_into().expect("8 bytes")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_round_trip_and_a_torn_buffer_names_its_sender() {
        let mut b = Vec::new();
        encode_one(&mut b, 7, 1 << 40);
        encode_one(&mut b, 3, 2);
        let mut got = Vec::new();
        decode("counts", 0, &b, |k, n| got.push((k, n))).unwrap();
        assert_eq!(got, vec![(7, 1 << 40), (3, 2)]);
        let e = decode("item counts", 5, &b[..13], |_, _| {}).unwrap_err().to_string();
        assert!(e.contains("worker 5") && e.contains("item counts"), "{e}");
    }
}
