//! A vocabulary built from the words the workers counted, distributed as the id dictionaries
//! are (`dictionary`): each worker owns a range of the sorted words, sums their counts from every
//! worker, and keeps those seen at least `--min-count` times; `--max-vocab` then keeps the most
//! frequent ones job-wide. Owners agree on the cut from the histogram of kept counts (a few
//! thousand distinct values even for millions of words), and words tied at the cut are taken in
//! word order, which is owner order, so the result does not depend on the number of workers.
//! Word ids are ranks in word order among the kept words. Worker 0 gathers the kept words (the
//! vocabulary is written with the model and names the topics' words).

use super::dictionary::{answers_back, splitters};
use ps_runtime::input::Key;
use ps_runtime::Worker;
use ps_runtime::{PsError, Result};
use std::collections::BTreeMap;

/// What a worker learns: an id for each of its local words (`None`: dropped) and the size of the
/// vocabulary; worker 0 also gets every kept word with its count, by id.
pub struct Vocabulary {
    pub ids: Vec<Option<u32>>,
    pub size: usize,
    pub words: Option<Vec<(String, u64)>>,
}

/// Limits on the vocabulary (`--min-count`, `--max-vocab`; 0: no limit).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub min_count: u64,
    pub max_vocab: usize,
}

/// Builds the job's vocabulary from each worker's `local` words and counts (collective).
pub fn build(w: &mut Worker, local: &[(Box<str>, u64)], limits: Limits) -> Result<Vocabulary> {
    let nw = w.total_threads();
    let keys: Vec<Key> = local.iter().map(|(s, _)| Key::Str(s.clone())).collect();
    let split = splitters(w, &keys)?;
    drop(keys);
    let owner = |word: &str| {
        split.partition_point(|s| match s {
            Key::Str(x) => &**x <= word,
            Key::Int(_) => true,
        })
    };
    let mut parts = vec![Vec::new(); nw];
    let mut sent: Vec<Vec<u32>> = vec![Vec::new(); nw];
    for (i, (word, n)) in local.iter().enumerate() {
        let o = owner(word);
        put_word(&mut parts[o], word, *n);
        sent[o].push(i as u32);
    }
    // Each owner's words with their job-wide counts, in word order.
    let got = w.exchange(parts)?;
    let mut asked: Vec<Vec<(String, u64)>> = Vec::with_capacity(nw);
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    for p in &got {
        let words = take_words(p)?;
        for (word, n) in &words {
            *totals.entry(word.clone()).or_insert(0) += n;
        }
        asked.push(words);
    }
    drop(got);
    totals.retain(|_, n| *n >= limits.min_count.max(1));
    let keep = cut(w, &totals, limits.max_vocab)?;
    let kept: Vec<(String, u64)> = apply_ties(totals, &keep);
    // Offsets: each owner numbers its kept words after those of the owners before it.
    let counts = w.exchange(vec![(kept.len() as u64).to_le_bytes().to_vec(); nw])?;
    let mut starts = vec![0u64];
    for c in &counts {
        let n = c.get(..8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
        starts
            .push(starts.last().copied().unwrap_or(0) + n.ok_or_else(|| PsError::codec("a word count is cut short"))?);
    }
    let me = w.global_thread_id();
    let first = starts[me];
    let answers = asked
        .iter()
        .map(|ws| {
            ws.iter()
                .flat_map(|(word, _)| {
                    let id = kept
                        .binary_search_by(|(k, _)| k.as_str().cmp(word))
                        .map_or(u32::MAX, |at| (first + at as u64) as u32);
                    id.to_le_bytes()
                })
                .collect()
        })
        .collect();
    drop(asked);
    // u32::MAX: a word left out.
    let ids =
        answers_back(w, answers, &sent, local.len())?.into_iter().map(|id| (id != u32::MAX).then_some(id)).collect();
    // Worker 0 gathers the words, in id order (owner order, then word order).
    let mut mine = Vec::new();
    kept.iter().for_each(|(word, n)| put_word(&mut mine, word, *n));
    let mut parts = vec![Vec::new(); nw];
    parts[0] = mine;
    let got = w.exchange(parts)?;
    let words = if me == 0 {
        Some(got.iter().map(|p| take_words(p)).collect::<Result<Vec<_>>>()?.into_iter().flatten().collect())
    } else {
        None
    };
    let size = starts[nw] as usize;
    if me == 0 {
        log::info!("lda: vocabulary of {size} words (min count {}, max {})", limits.min_count, limits.max_vocab);
    }
    Ok(Vocabulary { ids, size, words })
}

/// Where `--max-vocab` cuts: words counted more than `count` are kept, and of those counted
/// exactly `count`, this owner keeps its first `ties` (in word order).
struct Cut {
    count: u64,
    ties: usize,
}

/// Agrees on the cut from every owner's histogram of kept counts (collective).
fn cut(w: &mut Worker, totals: &BTreeMap<String, u64>, max_vocab: usize) -> Result<Cut> {
    let nw = w.total_threads();
    let mut hist: BTreeMap<u64, u64> = BTreeMap::new();
    totals.values().for_each(|&n| *hist.entry(n).or_insert(0) += 1);
    let bytes: Vec<u8> = hist.iter().flat_map(|(c, m)| c.to_le_bytes().into_iter().chain(m.to_le_bytes())).collect();
    let all = w.exchange(vec![bytes; nw])?;
    if max_vocab == 0 {
        return Ok(Cut { count: 0, ties: usize::MAX });
    }
    let mut job: BTreeMap<u64, u64> = BTreeMap::new();
    let mut ties_before = 0u64;
    let me = w.global_thread_id();
    let mut per_owner: Vec<BTreeMap<u64, u64>> = Vec::with_capacity(nw);
    for p in &all {
        if p.len() % 16 != 0 {
            return Err(PsError::codec("a count histogram is cut short"));
        }
        let h: BTreeMap<u64, u64> = p
            .chunks_exact(16)
            .map(|c| {
                (u64::from_le_bytes(c[..8].try_into().expect("8")), u64::from_le_bytes(c[8..].try_into().expect("8")))
            })
            .collect();
        h.iter().for_each(|(&c, &m)| *job.entry(c).or_insert(0) += m);
        per_owner.push(h);
    }
    // The smallest count whose words, with all more frequent ones, still fit.
    let mut above = 0u64;
    for (&count, &m) in job.iter().rev() {
        if above + m > max_vocab as u64 {
            let room = max_vocab as u64 - above;
            for h in &per_owner[..me] {
                ties_before += h.get(&count).copied().unwrap_or(0);
            }
            let ties = room.saturating_sub(ties_before) as usize;
            return Ok(Cut { count, ties });
        }
        above += m;
    }
    Ok(Cut { count: 0, ties: usize::MAX })
}

/// The kept words in word order: those above the cut, and the first `ties` at it.
fn apply_ties(totals: BTreeMap<String, u64>, cut: &Cut) -> Vec<(String, u64)> {
    let mut ties = cut.ties;
    totals
        .into_iter()
        .filter(|(_, n)| {
            if *n > cut.count || cut.count == 0 {
                return true;
            }
            if *n < cut.count {
                return false;
            }
            let take = ties > 0;
            ties = ties.saturating_sub(1);
            take
        })
        .collect()
}

fn put_word(out: &mut Vec<u8>, word: &str, n: u64) {
    out.extend_from_slice(&(word.len() as u32).to_le_bytes());
    out.extend_from_slice(word.as_bytes());
    out.extend_from_slice(&n.to_le_bytes());
}

fn take_words(mut p: &[u8]) -> Result<Vec<(String, u64)>> {
    let short = || PsError::codec("a word list is cut short");
    let mut out = Vec::new();
    while !p.is_empty() {
        let (len, rest) = p.split_first_chunk::<4>().ok_or_else(short)?;
        let len = u32::from_le_bytes(*len) as usize;
        let word = rest.get(..len).ok_or_else(short)?;
        let word = std::str::from_utf8(word).map_err(|_| PsError::codec("a word is not UTF-8"))?.to_string();
        let (n, rest) = rest[len..].split_first_chunk::<8>().ok_or_else(short)?;
        out.push((word, u64::from_le_bytes(*n)));
        p = rest;
    }
    Ok(out)
}
