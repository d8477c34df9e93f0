//! Corpora: the UCI bag-of-words format (`docword.*.txt`: lines `D`, `W`, `NNZ`, then
//! `doc word count`, 1-based, sorted by doc; vocabulary `vocab.*.txt`, one word per line) and
//! one-document-per-line token files. A document belongs to the split holding its first line, so
//! documents are never cut between workers.

use super::split::find_line_before;
use super::{digits, field, on_bad, plan_spread_splits, BadRecords, Decoded, LineReader, ReadStats};
use crate::error::{PsError, Result};
use crate::storage::{storage_for, Storage};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};

/// A document as a list of word ids, one per token.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Doc {
    pub id: u64,
    pub words: Vec<u32>,
}

#[derive(Clone, Debug, Default)]
pub struct Corpus {
    pub docs: Vec<Doc>,
    /// Vocabulary size (word ids are `0..vocab_size`).
    pub vocab_size: usize,
    /// Words by id, when known (for printing topics).
    pub vocab: Option<Vec<String>>,
}

/// For a docword file, its header `(D, W, NNZ)`.
fn docword_header(storage: &dyn Storage, path: &str) -> Result<Option<[u64; 3]>> {
    Ok(header_and_end(storage, path)?.map(|(h, _)| h))
}

/// The `(D, W, NNZ)` header of a docword file and the byte offset just past it.
fn header_and_end(storage: &dyn Storage, path: &str) -> Result<Option<([u64; 3], u64)>> {
    let head = storage.read_at(path, 0, 256)?;
    let mut h = [0u64; 3];
    let mut pos = 0usize;
    for x in h.iter_mut() {
        let Some(nl) = head[pos..].iter().position(|b| *b == b'\n') else { return Ok(None) };
        match std::str::from_utf8(&head[pos..pos + nl]).ok().and_then(|l| l.trim().parse::<u64>().ok()) {
            Some(v) => *x = v,
            None => return Ok(None),
        }
        pos += nl + 1;
    }
    Ok(Some((h, pos as u64)))
}

fn read_lines(storage: &dyn Storage, url: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for (path, _) in storage.list(url)? {
        for l in BufReader::new(storage.open(&path, 0)?).lines() {
            out.push(l.map_err(|e| PsError::io(format!("reading {path}"), e))?.trim().to_string());
        }
    }
    Ok(out)
}

/// The vocabulary file that goes with a docword file, by the UCI and data-tools naming.
fn sibling_vocab(path: &str) -> Option<String> {
    let p = std::path::Path::new(path);
    let name = p.file_name()?.to_str()?;
    let cand = if let Some(rest) = name.strip_prefix("docword.") {
        format!("vocab.{rest}")
    } else if let Some(stem) = name.strip_suffix(".docword") {
        format!("{stem}.vocab")
    } else {
        return None;
    };
    let v = p.with_file_name(cand);
    v.exists().then(|| v.to_string_lossy().to_string())
}

/// Largest count of one word in one document. Counts are expanded into one token each (4 bytes
/// of word id plus 4 of topic), so `1 1 4000000000` would ask for 32 GB; no real document repeats
/// a word a million times, so a larger count is reported as corrupt instead of allocated.
pub const MAX_WORD_COUNT: u32 = 1 << 20;

/// An entry line as a docword file writes it: three runs of at most 9 ASCII digits separated by
/// spaces or tabs, with valid ids and count. Anything else returns `None` and goes to
/// `parse_triple`, which gives the same values and names what is wrong. Splitting on Unicode
/// whitespace and `str::parse` per field were about a quarter of an LDA sweep's instructions.
fn fast_triple(t: &[u8]) -> Option<(u64, u32, u32)> {
    fn blanks(s: &[u8]) -> Option<&[u8]> {
        let n = s.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
        (n > 0).then(|| &s[n..])
    }
    let (d, rest) = digits(t)?;
    let (w, rest) = digits(blanks(rest)?)?;
    let (c, rest) = digits(blanks(rest)?)?;
    if !rest.is_empty() || d == 0 || c > MAX_WORD_COUNT {
        return None;
    }
    // Word ids are 1-based: 0 goes to the general parser's error.
    Some((d as u64, w.checked_sub(1)?, c))
}

fn parse_triple(t: &str) -> std::result::Result<(u64, u32, u32), String> {
    if let Some(x) = fast_triple(t.as_bytes()) {
        return Ok(x);
    }
    general_triple(t)
}

fn general_triple(t: &str) -> std::result::Result<(u64, u32, u32), String> {
    let mut f = t.split_whitespace();
    let d = field::<u64>(f.next(), "doc id")?;
    let w = field::<u32>(f.next(), "word id")?;
    let c = field::<u32>(f.next(), "count")?;
    if d == 0 || w == 0 {
        return Err("doc and word ids are 1-based".into());
    }
    if c > MAX_WORD_COUNT {
        return Err(format!("count {c} is larger than any real document can hold (at most {MAX_WORD_COUNT})"));
    }
    Ok((d, w - 1, c))
}

/// Checks a docword header against what the file can hold. Every entry line takes at least 6
/// bytes (`1 1 1\n`), which bounds NNZ by the file size. The vocabulary size `W` drives the topic
/// model's `V` and the output's loop over word ids, so it must not exceed what the entries or the
/// vocabulary file can justify; samples of a corpus keep the full `W` of the original, so some
/// slack beyond the entries is allowed.
fn check_header(path: &str, len: u64, h: [u64; 3], body_start: u64, vocab_lines: usize) -> Result<()> {
    let max_entries = len.saturating_sub(body_start) / 6 + 1;
    let [_, w, nnz] = h;
    let bad = |line: u32, why: String| PsError::Config(format!("{path}:{line}: {why}"));
    if nnz > max_entries {
        return Err(bad(3, format!("NNZ {nnz} entries cannot fit in the file's {len} bytes (at most {max_entries})")));
    }
    let justified = (vocab_lines as u64).max(nnz.saturating_mul(16).saturating_add(1 << 20));
    if w > justified {
        return Err(bad(
            2,
            format!(
                "vocabulary size {w} is more than the {nnz} entries and the {vocab_lines} words of the vocabulary \
                 file can justify (at most {justified})"
            ),
        ));
    }
    Ok(())
}

/// The words of a vocabulary file (`--vocab`), one per line, by id.
pub fn read_vocab(url: &str) -> Result<Vec<String>> {
    read_lines(&Decoded(storage_for(url)?.as_ref()), url)
}

/// Pieces of the input per worker (`plan_spread_splits`): documents' tokens per byte drift along
/// a file.
pub(super) const SPREAD: usize = 8;

/// Reads worker `k`'s share (of `n`) of the corpus at `url`. `vocab` overrides the vocabulary
/// file (docword) or supplies one (token files; otherwise it is built from the whole input).
pub fn read_corpus(url: &str, vocab: Option<&str>, k: usize, n: usize, bad: BadRecords) -> Result<(Corpus, ReadStats)> {
    let storage = storage_for(url)?;
    let st: &dyn crate::storage::Storage = &Decoded(storage.as_ref());
    let files = st.list(url)?;
    let mut stats = ReadStats::default();
    let header = docword_header(st, &files[0].0)?;
    let docword = header.is_some();
    let words = match (vocab, docword) {
        (Some(v), _) => Some(read_vocab(v)?),
        (None, true) => match sibling_vocab(&files[0].0) {
            Some(v) => Some(read_lines(st, &v)?),
            None => None,
        },
        (None, false) => None,
    };
    let mut corpus = Corpus::default();
    if docword {
        if let Some((h, end)) = header_and_end(st, &files[0].0)? {
            // Compressed sizes bound nothing about the entries they hold.
            let compressed = files.iter().any(|f| super::Codec::of(&f.0).is_some());
            let len = if compressed { u64::MAX } else { files.iter().map(|f| f.1).sum() };
            check_header(&files[0].0, len, h, end, words.as_ref().map_or(0, Vec::len))?;
        }
        let limits = header.map(|h| (h[0], h[1]));
        let mut max_w = 0usize;
        for split in plan_spread_splits(&files, k, n, SPREAD) {
            read_docword_split(st, &split, bad, limits, &mut corpus, &mut stats, &mut max_w)?;
        }
        let declared = header.map(|h| h[1] as usize).unwrap_or(0);
        corpus.vocab_size = words.as_ref().map(|w| w.len()).unwrap_or(0).max(max_w).max(declared);
        corpus.vocab = words;
    } else if super::sparse_corpus::is_sparse(st, &files[0].0)? {
        super::sparse_corpus::read(st, &files, words, k, n, bad, &mut corpus, &mut stats)?;
    } else {
        // Token files: ids from the given vocabulary, else from every word of the input (every
        // process builds the same sorted vocabulary).
        let vocab: Vec<String> = match words {
            Some(w) => w,
            None => {
                let mut set = BTreeSet::new();
                for (path, _) in &files {
                    for l in BufReader::new(st.open(path, 0)?).lines() {
                        let l = l.map_err(|e| PsError::io(format!("reading {path}"), e))?;
                        set.extend(l.split_whitespace().map(str::to_string));
                    }
                }
                set.into_iter().collect()
            }
        };
        let index: std::collections::HashMap<&str, u32> =
            vocab.iter().enumerate().map(|(i, w)| (w.as_str(), i as u32)).collect();
        for split in plan_spread_splits(&files, k, n, SPREAD) {
            let mut r = LineReader::new(st, &split)?;
            while let Some((line, at)) = r.next_line()? {
                let mut doc = Doc { id: (split.path.len() as u64) << 48 | at, words: Vec::new() };
                for w in line.split_whitespace() {
                    match index.get(w) {
                        Some(&id) => doc.words.push(id),
                        None => {
                            on_bad(bad, &mut stats, st, &split.path, at, &format!("word '{w}' not in the vocabulary"))?
                        }
                    }
                }
                if !doc.words.is_empty() {
                    corpus.docs.push(doc);
                    stats.records += 1;
                }
            }
            stats.bytes += split.bytes_read(&r);
        }
        corpus.vocab_size = vocab.len();
        corpus.vocab = Some(vocab);
    }
    Ok((corpus, stats))
}

fn read_docword_split(
    st: &dyn Storage,
    split: &super::Split,
    bad: BadRecords,
    limits: Option<(u64, u64)>,
    corpus: &mut Corpus,
    stats: &mut ReadStats,
    max_w: &mut usize,
) -> Result<()> {
    // The D, W, NNZ header belongs to nobody: a split starting inside it starts after it.
    let body = header_and_end(st, &split.path)?.map(|(_, end)| end).unwrap_or(0);
    if split.end <= body {
        return Ok(());
    }
    let split = &super::Split { path: split.path.clone(), start: split.start.max(body), end: split.end };
    let mut r = LineReader::new(st, split)?;
    // A document whose first line lies in the previous split is skipped here.
    let mut skip_doc = None;
    if split.start > 0 && !r.past_end() {
        if let Some((_, prev)) = find_line_before(st, &split.path, r.position(), |_| true)? {
            skip_doc = parse_triple(prev.trim()).ok().map(|t| t.0);
        }
    }
    let mut cur: Option<Doc> = None;
    loop {
        let past = r.past_end();
        let Some((line, at)) = r.next_line_unbounded()? else {
            break;
        };
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let parsed = parse_triple(t).and_then(|(d, w, c)| match limits {
            Some((docs, _)) if d > docs => Err(format!("doc id {d} exceeds the header's {docs} documents")),
            Some((_, v)) if w as u64 >= v => Err(format!("word id {} exceeds the header's {v} words", w as u64 + 1)),
            _ => Ok((d, w, c)),
        });
        let (d, w, c) = match parsed {
            Ok(x) => x,
            Err(why) => {
                if past {
                    break;
                }
                on_bad(bad, stats, st, &split.path, at, &why)?;
                continue;
            }
        };
        if Some(d) == skip_doc {
            continue;
        }
        skip_doc = None;
        if cur.as_ref().is_some_and(|doc| doc.id != d) {
            if past {
                break; // the next document starts past our end: it belongs to the next split
            }
            corpus.docs.push(cur.take().expect("checked"));
        } else if cur.is_none() && past {
            break;
        }
        let doc = cur.get_or_insert_with(|| Doc { id: d, words: Vec::new() });
        doc.words.extend(std::iter::repeat_n(w, c as usize));
        *max_w = (*max_w).max(w as usize + 1);
        stats.records += 1;
    }
    if let Some(doc) = cur {
        corpus.docs.push(doc);
    }
    stats.bytes += split.bytes_read(&r);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the fast path accepts, the general parser reads the same way.
        #[test]
        fn fast_path_agrees_with_the_general_parser(
            d in "[0-9]{1,10}", w in "[0-9]{1,10}", c in "[0-9]{1,8}", sep in "[ \t]{1,2}", tail in "[ x0-9]{0,2}",
        ) {
            let line = format!("{d}{sep}{w}{sep}{c}{tail}");
            if let Some(fast) = fast_triple(line.as_bytes()) {
                prop_assert_eq!(Ok(fast), general_triple(&line), "{}", line);
            }
        }
    }

    #[test]
    fn fast_path_takes_common_lines_and_declines_the_rest() {
        assert_eq!(fast_triple(b"12 7 3"), Some((12, 6, 3)));
        assert_eq!(fast_triple(b"1\t2\t1"), Some((1, 1, 1)));
        for declined in [&b"0 2 1"[..], b"1 0 1", b"1 2", b"1 2 3 4", b"1,2,3", b"+1 2 3", b"1 2 2000000", b"1 2 x"] {
            assert_eq!(fast_triple(declined), None, "{}", String::from_utf8_lossy(declined));
        }
        // The general parser then names what is wrong.
        assert!(parse_triple("0 2 1").unwrap_err().contains("1-based"));
        assert!(parse_triple("1 2 2000000").unwrap_err().contains("larger than any real document"));
    }
}
