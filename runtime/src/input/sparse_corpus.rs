//! Corpora with one document per line as sparse word counts: lda-c (Blei's `N id:count ...`) and
//! LibSVM (`label id:count ...`). The first field is ignored unless it is itself a pair. Word ids
//! are used as written: 0-based in lda-c; LibSVM's 1-based ids leave word 0 unused.

use super::corpus::{Corpus, Doc, MAX_WORD_COUNT};
use super::{on_bad, plan_spread_splits, BadRecords, LineReader, ReadStats};
use crate::error::{PsError, Result};
use crate::storage::Storage;
use std::io::{BufRead, BufReader};

/// True if the first non-empty line of `path` holds `id:count` pairs (after an optional first
/// field).
pub(crate) fn is_sparse(st: &dyn Storage, path: &str) -> Result<bool> {
    let head = st.read_at(path, 0, 1 << 16)?;
    let text = String::from_utf8_lossy(&head);
    let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty()) else { return Ok(false) };
    let mut fields = line.split_whitespace().peekable();
    if fields.peek().is_some_and(|f| !f.contains(':')) {
        fields.next();
    }
    let pairs: Vec<&str> = fields.collect();
    Ok(!pairs.is_empty() && pairs.iter().all(|p| p.split_once(':').is_some_and(|(a, b)| is_num(a) && is_num(b))))
}

fn is_num(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// The (word, count) pairs of one line.
fn parse_line(line: &str) -> std::result::Result<Vec<(u32, u32)>, String> {
    let mut fields = line.split_whitespace().peekable();
    if fields.peek().is_some_and(|f| !f.contains(':')) {
        fields.next();
    }
    fields
        .map(|p| {
            let (w, c) = p.split_once(':').ok_or_else(|| format!("'{p}' is not word:count"))?;
            let w = w.parse::<u32>().map_err(|_| format!("word id '{w}' is not a valid number"))?;
            let c = c.parse::<u32>().map_err(|_| format!("count '{c}' is not a valid number"))?;
            if c > MAX_WORD_COUNT {
                return Err(format!("count {c} is larger than any real document can hold (at most {MAX_WORD_COUNT})"));
            }
            Ok((w, c))
        })
        .collect()
}

/// Reads worker `k`'s share (of `n`) of the documents. The vocabulary size is that of `words`
/// when given, else one more than the largest word id of the whole input (every process reads
/// all of it to agree on the size, so pass --vocab for large inputs).
#[allow(clippy::too_many_arguments)]
pub(crate) fn read(
    st: &dyn Storage,
    files: &[(String, u64)],
    words: Option<Vec<String>>,
    k: usize,
    n: usize,
    bad: BadRecords,
    corpus: &mut Corpus,
    stats: &mut ReadStats,
) -> Result<()> {
    let vocab_size = match &words {
        Some(w) => w.len(),
        None => {
            let mut max = None;
            for (path, _) in files {
                for l in BufReader::new(st.open(path, 0)?).lines() {
                    let l = l.map_err(|e| PsError::io(format!("reading {path}"), e))?;
                    // Bad lines are reported by the reading pass below, with their line numbers.
                    max = parse_line(&l).ok().into_iter().flatten().map(|p| p.0).chain(max).max();
                }
            }
            max.map_or(0, |m| m as usize + 1)
        }
    };
    for split in plan_spread_splits(files, k, n, super::corpus::SPREAD) {
        let mut r = LineReader::new(st, &split)?;
        while let Some((line, at)) = r.next_line()? {
            if line.trim().is_empty() {
                continue;
            }
            match parse_line(line) {
                Ok(pairs) if pairs.iter().all(|p| (p.0 as usize) < vocab_size) => {
                    let mut doc = Doc { id: (split.path.len() as u64) << 48 | at, words: Vec::new() };
                    for (w, c) in pairs {
                        doc.words.extend(std::iter::repeat_n(w, c as usize));
                    }
                    if !doc.words.is_empty() {
                        corpus.docs.push(doc);
                        stats.records += 1;
                    }
                }
                Ok(_) => on_bad(
                    bad,
                    stats,
                    st,
                    &split.path,
                    at,
                    &format!("a word id is not below the vocabulary size {vocab_size}"),
                )?,
                Err(why) => on_bad(bad, stats, st, &split.path, at, &why)?,
            }
        }
        stats.bytes += split.bytes_read(&r);
    }
    corpus.vocab_size = vocab_size;
    corpus.vocab = words;
    Ok(())
}
