//! LDA on a bag-of-words table (Parquet or CSV): rows of (document, word id, count), as a
//! Spark job that counted words writes them. A document's rows may lie in any part of the table,
//! so after reading its share each worker sends every row to the worker that owns its document
//! (by document id) and builds whole documents from what it receives; the vocabulary size is the
//! largest word id of the job plus one (one more exchange), or `--vocab`'s word count if larger.
//! Document ids that are not all integers in 0..2^32 are numbered by a dictionary first, which
//! `doc_topics/` maps back.

use super::dictionary::{settle_ids, Dictionary};
use super::options::CommonArgs;
use ps_runtime::input::{
    column_ids, read_rows, read_vocab, Cell, Column, Corpus, Doc, InputFormat, KeyColumn, ReadStats, RowSink,
};
use ps_runtime::mix64;
use ps_runtime::Worker;
use ps_runtime::{PsError, Result};

/// The columns of a bag-of-words table (`--id-col`, `--word-col`, `--count-col`).
pub struct BowColumns<'a> {
    /// `--vocab`: the words by id, for the topics' output.
    pub vocab: Option<&'a str>,
    pub doc: &'a str,
    pub word: &'a str,
    /// `None`: each row is one token.
    pub count: Option<&'a str>,
}

/// A row: document key, word id, count.
const RECORD: usize = 16;
/// Most tokens one row may stand for: each becomes a token in memory.
const MAX_COUNT: u32 = 1 << 24;

/// Documents read from a table: the corpus, what was skipped, the dictionary of the document ids
/// (when they needed one) and, for raw text, the vocabulary's counts on worker 0.
pub struct TableCorpus {
    pub corpus: Corpus,
    pub stats: ReadStats,
    pub doc_ids: Option<Dictionary>,
    pub vocab_counts: Option<Vec<u64>>,
}

/// Rows read: (document, word id, count), documents as read by `docs`.
struct Rows {
    docs: KeyColumn,
    recs: Vec<(u32, u32, u32)>,
    count: bool,
}

impl RowSink for Rows {
    /// Parquet's fast path: integer columns whose ids fit u32 and counts within `MAX_COUNT`
    /// (else row by row, which names the bad row).
    fn columns(&mut self, c: &[&dyn arrow_array::Array]) -> bool {
        if self.docs.is_keyed() {
            return false;
        }
        let (Some(docs), Some(words)) = (column_ids(c[0]), column_ids(c[1])) else { return false };
        let counts = match self.count {
            true => match column_ids(c[2]) {
                Some(n) if n.iter().all(|&n| n <= MAX_COUNT) => n,
                _ => return false,
            },
            false => vec![1; docs.len()],
        };
        self.recs.extend(docs.into_iter().zip(words).zip(counts).map(|((d, w), n)| (d, w, n)));
        true
    }
    fn row(&mut self, c: &[Cell]) -> std::result::Result<(), String> {
        let word = c[1].to_u32("word id")?;
        let n = if self.count { c[2].to_u32("count")? } else { 1 };
        if n > MAX_COUNT {
            return Err(format!("count {n} is more than {MAX_COUNT} tokens of one word in one document"));
        }
        let (doc, switched) = self.docs.id(&c[0], "document id")?;
        if switched {
            self.recs.iter_mut().for_each(|r| self.docs.intern_earlier(&mut r.0));
        }
        self.recs.push((doc, word, n));
        Ok(())
    }
}

/// This worker's documents of the bag-of-words table at `c.input` (collective: every worker of
/// the job calls it).
pub fn read_bow_table(w: &mut Worker, c: &CommonArgs, format: InputFormat, cols: &BowColumns) -> Result<TableCorpus> {
    let (gid, n) = (w.global_thread_id(), w.total_threads());
    let mut columns = vec![Column { flag: "--id-col", name: cols.doc }, Column { flag: "--word-col", name: cols.word }];
    columns.extend(cols.count.map(|name| Column { flag: "--count-col", name }));
    let mut rows = Rows { docs: KeyColumn::default(), recs: Vec::new(), count: cols.count.is_some() };
    let stats = read_rows(&c.input, gid, n, format, &columns, c.bad_records(), &mut rows)?;
    let Rows { docs, mut recs, .. } = rows;
    let doc_ids = settle_ids(w, docs, &mut |f| recs.iter_mut().for_each(|r| f(&mut r.0)))?;
    let mut parts = vec![Vec::new(); n];
    recs.into_iter().for_each(|(doc, word, count)| put_row(&mut parts, doc as u64, word, count));
    let docs = gather_docs(w, parts)?;
    let max = docs.iter().flat_map(|d| d.words.iter()).max().map_or(0, |&m| m as u64 + 1);
    let all = w.exchange(vec![max.to_le_bytes().to_vec(); n])?;
    let max = all.iter().filter_map(|b| b.get(..8)?.try_into().ok().map(u64::from_le_bytes)).max().unwrap_or(0);
    let vocab = cols.vocab.map(read_vocab).transpose()?;
    let vocab_size = (max as usize).max(vocab.as_ref().map_or(0, Vec::len));
    Ok(TableCorpus { corpus: Corpus { docs, vocab_size, vocab }, stats, doc_ids, vocab_counts: None })
}

/// Adds one row, (document `key`, `word`, `n` tokens of it), to `parts`, for the worker owning
/// the document.
pub(super) fn put_row(parts: &mut [Vec<u8>], key: u64, word: u32, n: u32) {
    let to = (mix64(key) % parts.len() as u64) as usize;
    let p = &mut parts[to];
    p.extend_from_slice(&key.to_le_bytes());
    p.extend_from_slice(&word.to_le_bytes());
    p.extend_from_slice(&n.to_le_bytes());
}

/// Sends the rows of `parts` ([`put_row`]) to their documents' workers and builds this worker's
/// documents from the rows it gets (collective).
pub(super) fn gather_docs(w: &mut Worker, parts: Vec<Vec<u8>>) -> Result<Vec<Doc>> {
    let got = w.exchange(parts)?;
    let mut recs: Vec<(u64, u32, u32)> = Vec::new();
    for (from, b) in got.iter().enumerate() {
        if b.len() % RECORD != 0 {
            return Err(PsError::codec(format!("lda: worker {from} sent {} bytes of document rows", b.len())));
        }
        let word = |c: &[u8], i: usize| u32::from_le_bytes(c[i..i + 4].try_into().expect("4 bytes"));
        recs.extend(
            b.chunks_exact(RECORD)
                .map(|c| (u64::from_le_bytes(c[..8].try_into().expect("8 bytes")), word(c, 8), word(c, 12))),
        );
    }
    // Documents in key order, each with its rows in the order they were read (stable sort).
    recs.sort_by_key(|r| r.0);
    let mut docs: Vec<Doc> = Vec::new();
    for (key, word, count) in recs {
        if docs.last().is_none_or(|d| d.id != key) {
            docs.push(Doc { id: key, words: Vec::new() });
        }
        let d = docs.last_mut().expect("a document");
        d.words.extend(std::iter::repeat_n(word, count as usize));
    }
    Ok(docs)
}
