//! LDA on raw text (`--text-col`): a table with a document id column and a text column. Each
//! worker tokenizes its rows (Unicode lowercase, words are runs of letters, at least two of them),
//! leaves out stop words (a built-in English list, or `--stop-words FILE`, a word a line), and
//! counts its words; `vocabulary` builds the job's vocabulary from the counts (`--min-count`,
//! `--max-vocab`), and the rows then go to their documents' workers as bag-of-words rows.

use super::dictionary::settle_ids;
use super::lda_table::{gather_docs, put_row, TableCorpus};
use super::options::{CommonArgs, OutputFormat};
use super::output::Output;
use super::vocabulary::{build, Limits};
use arrow_array::{ArrayRef, Int64Array, StringArray};
use ps_runtime::input::{read_rows, read_vocab, Cell, Column, Corpus, InputFormat, KeyColumn, RowSink};
use ps_runtime::Result;
use ps_runtime::Worker;
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

/// Common English function words, left out of the vocabulary unless `--stop-words` replaces
/// the list.
pub const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "either",
    "else",
    "ever",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "however",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "least",
    "less",
    "may",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "my",
    "myself",
    "neither",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "often",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "shall",
    "she",
    "should",
    "since",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "though",
    "through",
    "thus",
    "to",
    "too",
    "under",
    "until",
    "up",
    "upon",
    "us",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "whether",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "within",
    "without",
    "would",
    "yet",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// The raw-text options of `lda`.
pub struct TextColumns<'a> {
    pub doc: &'a str,
    pub text: &'a str,
    /// `--stop-words`: a file of stop words (a word a line) instead of [`STOP_WORDS`].
    pub stop_words: Option<&'a str>,
    pub limits: Limits,
}

/// Calls `f` with each word of `text`: a run of letters (Unicode), lowercased, of at least two
/// characters.
pub fn tokenize(text: &str, mut f: impl FnMut(&str)) {
    let mut word = String::new();
    let mut chars = 0;
    let mut flush = |word: &mut String, chars: &mut usize| {
        if *chars >= 2 {
            f(word);
        }
        word.clear();
        *chars = 0;
    };
    for ch in text.chars() {
        if ch.is_alphabetic() {
            word.extend(ch.to_lowercase());
            chars += 1;
        } else if !word.is_empty() {
            flush(&mut word, &mut chars);
        }
    }
    flush(&mut word, &mut chars);
}

/// Rows read: each row's document (as `docs` read it) and words (as local word indexes), and
/// the local words with their counts.
struct TextRows {
    docs: KeyColumn,
    stop: FxHashSet<String>,
    index: FxHashMap<Box<str>, u32>,
    words: Vec<(Box<str>, u64)>,
    rows: Vec<(u32, Vec<u32>)>,
}

impl RowSink for TextRows {
    fn row(&mut self, c: &[Cell]) -> std::result::Result<(), String> {
        let Cell::Str(text) = c[1] else { return Err("the text column holds no text".into()) };
        let (doc, switched) = self.docs.id(&c[0], "document id")?;
        if switched {
            self.rows.iter_mut().for_each(|r| self.docs.intern_earlier(&mut r.0));
        }
        let mut tokens = Vec::new();
        let TextRows { stop, index, words, .. } = self;
        tokenize(text, |w| {
            if stop.contains(w) {
                return;
            }
            let i = *index.entry(w.into()).or_insert_with(|| {
                words.push((w.into(), 0));
                words.len() as u32 - 1
            });
            words[i as usize].1 += 1;
            tokens.push(i);
        });
        self.rows.push((doc, tokens));
        Ok(())
    }
}

/// The stop words: the file's (a word a line, lowercased) or the built-in list.
fn stop_words(file: Option<&str>) -> Result<FxHashSet<String>> {
    let Some(url) = file else { return Ok(STOP_WORDS.iter().map(|s| s.to_string()).collect()) };
    Ok(read_vocab(url)?.iter().map(|l| l.trim().to_lowercase()).filter(|l| !l.is_empty()).collect())
}

/// This worker's documents of the raw-text table at `c.input`, and on worker 0 the vocabulary's
/// words with their counts, by id (collective).
pub fn read_text_table(w: &mut Worker, c: &CommonArgs, format: InputFormat, cols: &TextColumns) -> Result<TableCorpus> {
    let (gid, n) = (w.global_thread_id(), w.total_threads());
    let columns = [Column { flag: "--id-col", name: cols.doc }, Column { flag: "--text-col", name: cols.text }];
    let stop = stop_words(cols.stop_words)?;
    let docs = KeyColumn::default();
    let mut rows = TextRows { docs, stop, index: FxHashMap::default(), words: Vec::new(), rows: Vec::new() };
    let stats = read_rows(&c.input, gid, n, format, &columns, c.bad_records(), &mut rows)?;
    let TextRows { words, mut rows, index, docs, .. } = rows;
    drop(index);
    let doc_ids = settle_ids(w, docs, &mut |f| rows.iter_mut().for_each(|r| f(&mut r.0)))?;
    let vocab = build(w, &words, cols.limits)?;
    drop(words);
    // Each document's distinct words with their counts, to the document's worker.
    let mut parts = vec![Vec::new(); n];
    let mut ids = Vec::new();
    for (key, tokens) in rows {
        ids.clear();
        ids.extend(tokens.iter().filter_map(|&t| vocab.ids[t as usize]));
        ids.sort_unstable();
        for run in ids.chunk_by(|a, b| a == b) {
            put_row(&mut parts, key as u64, run[0], run.len() as u32);
        }
    }
    let docs = gather_docs(w, parts)?;
    let (names, counts) = match vocab.words {
        Some(words) => {
            let (names, counts): (Vec<String>, Vec<u64>) = words.into_iter().unzip();
            (Some(names), Some(counts))
        }
        None => (None, None),
    };
    let corpus = Corpus { docs, vocab_size: vocab.size, vocab: names };
    Ok(TableCorpus { corpus, stats, doc_ids, vocab_counts: counts })
}

/// `vocab/part-00000`: the vocabulary of a raw-text job, `id<TAB>word<TAB>count` lines (Parquet
/// columns `id`, `word`, `count`), words by id.
pub fn write_vocab(words: &[String], counts: &[u64], format: OutputFormat, out: &Output) -> Result<()> {
    use std::io::Write;
    if format == OutputFormat::Parquet {
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..words.len() as i64));
        let names: ArrayRef = Arc::new(StringArray::from_iter_values(words));
        let counts: ArrayRef = Arc::new(Int64Array::from_iter_values(counts.iter().map(|&n| n as i64)));
        return out.write_file(0, "vocab", "part-00000.snappy.parquet", |f| {
            super::rows_parquet::write_columns(
                vec![("id", ids.clone()), ("word", names.clone()), ("count", counts.clone())],
                f,
            )
        });
    }
    out.write_part(0, "vocab", 0, |f| {
        let mut text = Vec::new();
        for (i, (word, n)) in words.iter().zip(counts).enumerate() {
            writeln!(text, "{i}\t{word}\t{n}")?;
        }
        f.write_all(&text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_lowercased_runs_of_letters_of_two_or_more() {
        let mut got = Vec::new();
        tokenize("Über-GROSSE Straße, l'été 2024: a b3c déjà-vu! Ωmega", |w| got.push(w.to_string()));
        assert_eq!(got, ["über", "grosse", "straße", "été", "déjà", "vu", "ωmega"]);
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]), "the list is sorted and without repeats");
    }
}
