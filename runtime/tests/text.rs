//! LDA on raw text (`--text-col`): the vocabulary built across workers is the one a plain count
//! of the whole input gives (stop words, `--min-count`, `--max-vocab` with ties in word order),
//! whatever the job's shape, and the planted topics come back.

mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use ps_apps as apps;
use ps_runtime::RuntimeConfig;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ps-text-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const TOPICS: [[&str; 6]; 3] = [
    ["ocean", "wave", "ship", "sailor", "harbor", "storm"],
    ["planet", "orbit", "rocket", "star", "galaxy", "comet"],
    ["bread", "flour", "oven", "baker", "dough", "yeast"],
];

/// Documents drawn mostly from one planted topic, with stop words, capitals, punctuation, digits,
/// one-letter words and a few rare words mixed in (a small fixed generator, no dependency).
fn documents() -> Vec<(String, String)> {
    let mut x = 12345u64;
    let mut next = |n: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    (0..240)
        .map(|d| {
            let t = d % 3;
            let mut words = Vec::new();
            for i in 0..30 {
                let topic = if next(10) < 9 { t } else { next(3) as usize };
                let w = TOPICS[topic][next(6) as usize];
                words.push(if i == 0 { w.to_uppercase() } else { w.to_string() });
                if next(4) == 0 {
                    words.push(["The", "and", "of", "x", "is", "2024,"][next(6) as usize].to_string());
                }
            }
            words.push(format!("rare{}", ["a", "b", "c", "d"][d % 4]));
            (format!("doc/{d}"), words.join(" ") + ".")
        })
        .collect()
}

/// The vocabulary a plain count of the whole input gives: word -> count.
fn expected_vocab(docs: &[(String, String)], min_count: u64, max_vocab: usize) -> BTreeMap<String, u64> {
    let stop: BTreeSet<&str> = apps::lda_text::STOP_WORDS.iter().copied().collect();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for (_, text) in docs {
        for w in text.split(|c: char| !c.is_alphabetic()).map(str::to_lowercase) {
            if w.chars().count() >= 2 && !stop.contains(w.as_str()) {
                *counts.entry(w).or_insert(0) += 1;
            }
        }
    }
    counts.retain(|_, n| *n >= min_count);
    let mut by_count: Vec<(String, u64)> = counts.into_iter().collect();
    // Most frequent first, ties in word order (a stable sort of the word-ordered list).
    by_count.sort_by_key(|w| std::cmp::Reverse(w.1));
    by_count.truncate(if max_vocab == 0 { usize::MAX } else { max_vocab });
    by_count.into_iter().collect()
}

fn write_table(path: &Path, docs: &[(String, String)]) {
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(StringArray::from_iter_values(docs.iter().map(|d| &d.0))) as ArrayRef),
        ("body", Arc::new(StringArray::from_iter_values(docs.iter().map(|d| &d.1))) as ArrayRef),
    ])
    .unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// Every record batch of the Parquet files of `dir`.
fn batches_of(dir: &Path) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    for f in std::fs::read_dir(dir).unwrap() {
        let r = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(f.unwrap().path()).unwrap());
        out.extend(r.unwrap().build().unwrap().map(|b| b.unwrap()));
    }
    out
}

fn run(procs: usize, threads: usize, args: &str) {
    let a: Vec<String> = args.split_whitespace().map(String::from).collect();
    let cfg = RuntimeConfig { threads, ..RuntimeConfig::default() };
    for r in common::run_cluster(procs, &cfg, |_| apps::build("lda", &a).unwrap()) {
        r.unwrap();
    }
}

#[test]
fn the_vocabulary_is_the_inputs_whatever_the_shape_and_topics_come_back() {
    let d = tmp("lda");
    let docs = documents();
    let input = d.join("docs.parquet");
    write_table(&input, &docs);
    // The 18 topic words pass the minimum count, and the cut falls among the four rare words
    // (60 each), of which the first two in word order are kept.
    let (min_count, max_vocab) = (30, 20);
    let want = expected_vocab(&docs, min_count, max_vocab);
    assert_eq!(want.len(), 20);
    assert!(want.contains_key("rareb") && !want.contains_key("rarec"), "{want:?}");
    for (procs, threads) in [(1, 1), (2, 2), (3, 1)] {
        let out = d.join(format!("out-{procs}x{threads}"));
        run(
            procs,
            threads,
            &format!(
                "--input {} --id-col id --text-col body --min-count {min_count} --max-vocab {max_vocab} --topics 3 \
                 --passes 15 --top-words 6 --output {} --output-format parquet",
                input.display(),
                out.display()
            ),
        );
        let f = std::fs::File::open(out.join("vocab/part-00000.snappy.parquet")).unwrap();
        let mut got = BTreeMap::new();
        for b in ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap() {
            let b = b.unwrap();
            let (ids, words) = (b.column(0).as_primitive::<Int64Type>(), b.column(1).as_string::<i32>());
            let counts = b.column(2).as_primitive::<Int64Type>();
            for r in 0..b.num_rows() {
                assert_eq!(ids.value(r) as usize, got.len(), "ids are 0, 1, 2, ... in word order");
                got.insert(words.value(r).to_string(), counts.value(r) as u64);
            }
        }
        assert_eq!(got, want, "{procs} x {threads}");
        assert!(got.keys().collect::<Vec<_>>().windows(2).all(|w| w[0] < w[1]));
        // Each planted topic is one learned topic's top words.
        let mut top: BTreeMap<i32, BTreeSet<String>> = BTreeMap::new();
        for b in batches_of(&out.join("topics")) {
            let t = b.column_by_name("topic").unwrap().as_primitive::<Int32Type>();
            let w = b.column_by_name("word").unwrap().as_string::<i32>();
            for r in 0..b.num_rows() {
                top.entry(t.value(r)).or_default().insert(w.value(r).to_string());
            }
        }
        let mut learned = Vec::new();
        for planted in TOPICS {
            let planted: BTreeSet<String> = planted.iter().map(|s| s.to_string()).collect();
            let t = top.iter().find(|(_, t)| t.intersection(&planted).count() >= 5).map(|(&t, _)| t);
            learned.push(t.unwrap_or_else(|| panic!("{procs} x {threads}: {top:?}")));
        }
        // doc_topics/: every document under its own id, its proportions summing to 1, and most
        // documents mostly of their planted topic.
        let mut right = 0;
        let mut ids = BTreeSet::new();
        for b in batches_of(&out.join("doc_topics")) {
            let (id, theta) = (b.column_by_name("id").unwrap().as_string::<i32>(), b.column_by_name("topics").unwrap());
            let theta = theta.as_list::<i32>();
            for r in 0..b.num_rows() {
                let p = theta.value(r).as_primitive::<arrow_array::types::Float32Type>().values().to_vec();
                assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-4, "{p:?}");
                let d: usize = id.value(r).strip_prefix("doc/").unwrap().parse().unwrap();
                let best = (0..3).max_by(|&a, &b| p[a].total_cmp(&p[b])).unwrap() as i32;
                right += (best == learned[d % 3]) as usize;
                ids.insert(d);
            }
        }
        assert_eq!(ids, (0..docs.len()).collect::<BTreeSet<_>>());
        assert!(right * 10 >= docs.len() * 9, "{procs} x {threads}: {right} of {} documents", docs.len());
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `--stop-words FILE` replaces the built-in list; the text output names words by line.
#[test]
fn a_stop_word_file_replaces_the_built_in_list() {
    let d = tmp("stop");
    let docs = documents();
    let input = d.join("docs.parquet");
    write_table(&input, &docs);
    std::fs::write(d.join("stop.txt"), "Ocean\nthe\n\n").unwrap();
    let out = d.join("out");
    let args = format!(
        "--input {} --id-col id --text-col body --stop-words {} --topics 3 --passes 2 --output {}",
        input.display(),
        d.join("stop.txt").display(),
        out.display()
    );
    run(2, 1, &args);
    let text = std::fs::read_to_string(out.join("vocab/part-00000")).unwrap();
    let words: BTreeSet<&str> = text.lines().map(|l| l.split('\t').nth(1).unwrap()).collect();
    assert!(!words.contains("ocean") && !words.contains("the"), "{words:?}");
    assert!(words.contains("and") && words.contains("of") && words.contains("is") && words.contains("rarec"));
    let _ = std::fs::remove_dir_all(&d);
}
