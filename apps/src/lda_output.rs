//! `lda`'s output: `word_topic/` (each word's topic counts), `topics/` (totals and top words),
//! `vocab/` (with --text-col) and `doc_topics/` (each document's topic proportions).

use super::dictionary::keys_for;
use super::lda::{Lda, LdaWorker};
use super::lda_text::write_vocab;
use super::options::OutputFormat;
use super::output::Output;
use super::rows_out::RowsPart;
use ps_runtime::{Result, SparseRow, TableHandle, Worker};
use std::io::Write;
use std::sync::Arc;

/// A topic's token total and its best words with their counts.
type TopWords = (i64, Vec<(i32, u64)>);

impl Lda {
    /// `word_topic/part-*`: `word<TAB>topic:count ...` (per worker, the words of the table rows
    /// `gid mod workers`);
    /// `topics/part-00000`: `topic<TAB>total<TAB>top words` from worker 0.
    pub(super) fn write_model(&self, st: &mut LdaWorker, w: &mut Worker, out: &Output) -> Result<()> {
        let (gid, nw, v, wt, rows) = (st.gid, st.nw, st.v, &mut st.wt, st.rows);
        let vocab = self.vocab.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let name = |i: u64| vocab.as_ref().and_then(|v| v.get(i as usize).cloned()).unwrap_or_else(|| i.to_string());
        let mut text = Vec::new();
        let format = self.args.common.output_format;
        // Binary and Parquet: dense counts (words x topics, Parquet's `word` and `topic_counts`);
        // text: sparse `topic:count` pairs.
        let mut part = RowsPart::<i32>::new(format, self.args.topics).named("word", "topic_counts");
        let mut dense = vec![0i32; self.args.topics];
        let mine = rows.rows_of_worker(gid, nw, v);
        wt.refresh_rows(mine.iter().copied());
        for &r in &mine {
            let row = wt.get(r)?;
            for word in rows.words_of(r, v as u64) {
                if rows.counts(&row, word).next().is_none() {
                    continue;
                }
                if format != OutputFormat::Text {
                    dense.fill(0);
                    rows.counts(&row, word).for_each(|(t, n)| dense[t as usize] = n);
                    part.push(word, &dense);
                    continue;
                }
                write!(text, "{}", name(word)).ok();
                for (t, n) in rows.counts(&row, word) {
                    write!(text, "\t{t}:{n}").ok();
                }
                text.push(b'\n');
            }
        }
        match format {
            OutputFormat::Text => out.write_part(gid, "word_topic", gid, |f| f.write_all(&text))?,
            OutputFormat::Binary | OutputFormat::Parquet => part.write(out, gid, "word_topic", gid)?,
        }
        if gid == 0 {
            let top = self.top_words(wt, v)?;
            self.write_topics(&top, v, &name, out)?;
            let counts = self.vocab_counts.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let (Some(words), Some(counts)) = (&vocab, counts) {
                write_vocab(words, &counts, format, out)?;
            }
        }
        self.write_doc_topics(st, w, out)?;
        out.commit_when_all_wrote(w, "topics")
    }

    /// `doc_topics/part-NNNNN`: each of this worker's documents with its topic proportions,
    /// (n_dk + alpha) / (n_d + K alpha), under the input's own document ids.
    fn write_doc_topics(&self, st: &mut LdaWorker, w: &mut Worker, out: &Output) -> Result<()> {
        let (k, alpha) = (self.args.topics, self.args.alpha);
        let mut part = RowsPart::<f32>::new(self.args.common.output_format, k).named("id", "topics");
        let (mut counts, mut theta) = (vec![0u32; k], vec![0f32; k]);
        for (d, &id) in st.doc_ids.iter().enumerate() {
            st.sampler.docs.dense(d, &mut counts);
            let norm = st.docs[d].len() as f64 + k as f64 * alpha;
            theta.iter_mut().zip(&counts).for_each(|(p, &n)| *p = ((n as f64 + alpha) / norm) as f32);
            part.push(id, &theta);
        }
        let keys = keys_for(st.doc_dict.as_ref(), w, &st.doc_ids)?;
        part.with_keys(keys).write(out, st.gid, "doc_topics", st.gid)
    }

    /// Each topic's token total and its `--top-words` words with their counts, best first,
    /// from every word's row.
    fn top_words(&self, wt: &mut TableHandle<SparseRow<i32>>, v: usize) -> Result<Vec<TopWords>> {
        let (k, rows) = (self.args.topics, self.word_rows());
        let mut best: Vec<Vec<(i32, u64)>> = vec![Vec::new(); k];
        let all = rows.rows_of(0..v as u64);
        wt.refresh_rows(all.iter().copied());
        for &r in &all {
            let row = wt.get(r)?;
            for word in rows.words_of(r, v as u64) {
                for (t, n) in rows.counts(&row, word) {
                    best[t as usize].push((n, word));
                }
            }
        }
        Ok(best
            .into_iter()
            .map(|mut list| {
                list.sort_unstable_by(|a, b| b.cmp(a));
                let total: i64 = list.iter().map(|x| x.0 as i64).sum();
                list.truncate(self.args.top_words);
                (total, list)
            })
            .collect())
    }

    /// `topics/`: as text, `topic<TAB>total<TAB>top words` lines; as Parquet, a row per topic
    /// and top word (`topic`, `rank` from 1, `word_id`, `word`, `weight` = the word's probability
    /// in the topic, (n + beta) / (total + V beta)).
    fn write_topics(&self, top: &[TopWords], v: usize, name: &dyn Fn(u64) -> String, out: &Output) -> Result<()> {
        if self.args.common.output_format != OutputFormat::Parquet {
            let mut text = Vec::new();
            for (t, (total, list)) in top.iter().enumerate() {
                let words: Vec<String> = list.iter().map(|x| name(x.1)).collect();
                writeln!(text, "{t}\t{total}\t{}", words.join(" ")).ok();
            }
            return out.write_part(0, "topics", 0, |f| f.write_all(&text));
        }
        let rows = top.iter().enumerate().flat_map(|(t, (total, list))| {
            list.iter().enumerate().map(move |(r, &(n, word))| (t as i32, r as i32 + 1, word, n, *total))
        });
        let rows: Vec<_> = rows.collect();
        let b = self.args.beta;
        let cols: Vec<(&str, arrow_array::ArrayRef)> = vec![
            ("topic", Arc::new(arrow_array::Int32Array::from_iter_values(rows.iter().map(|r| r.0)))),
            ("rank", Arc::new(arrow_array::Int32Array::from_iter_values(rows.iter().map(|r| r.1)))),
            ("word_id", Arc::new(arrow_array::Int64Array::from_iter_values(rows.iter().map(|r| r.2 as i64)))),
            ("word", Arc::new(arrow_array::StringArray::from_iter_values(rows.iter().map(|r| name(r.2))))),
            (
                "weight",
                Arc::new(arrow_array::Float64Array::from_iter_values(
                    rows.iter().map(|r| (r.3 as f64 + b) / (r.4 as f64 + v as f64 * b)),
                )),
            ),
        ];
        out.write_file(0, "topics", "part-00000.snappy.parquet", |f| super::rows_parquet::write_columns(cols, f))
    }
}
