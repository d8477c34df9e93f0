//! `--output-format parquet`: the apps' models as Spark-style tables (`part-*.snappy.parquet`
//! and `_SUCCESS`), read back with Apache Arrow's own Parquet reader and checked value by value
//! against the same job's text output.

mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use ps_apps as apps;
use ps_runtime::RuntimeConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ps-parquet-out-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tables").join(name).to_string_lossy().into_owned()
}

fn run(app: &str, args: String) {
    let a: Vec<String> = args.split_whitespace().map(String::from).collect();
    // One worker: two runs of a job then train the same model bit for bit.
    let cfg = RuntimeConfig { threads: 1, ..RuntimeConfig::default() };
    for r in common::run_cluster(1, &cfg, |_| apps::build(app, &a).unwrap()) {
        r.unwrap();
    }
}

/// Rows of a text dataset: id -> values.
fn text_rows(dir: &Path) -> BTreeMap<i64, Vec<String>> {
    let mut m = BTreeMap::new();
    for f in std::fs::read_dir(dir).unwrap() {
        for l in std::fs::read_to_string(f.unwrap().path()).unwrap().lines() {
            let mut it = l.split('\t');
            m.insert(it.next().unwrap().parse().unwrap(), it.map(String::from).collect());
        }
    }
    m
}

/// Every record batch of every `part-*.parquet` file of `dir` (checking the names as Spark's).
fn batches(dir: &Path) -> Vec<arrow_array::RecordBatch> {
    let mut out = Vec::new();
    for f in std::fs::read_dir(dir).unwrap() {
        let p = f.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("part-") && name.ends_with(".snappy.parquet"), "{name}");
        let r = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&p).unwrap()).unwrap().build().unwrap();
        out.extend(r.map(|b| b.unwrap()));
    }
    out
}

#[test]
fn mf_factors_as_parquet_equal_the_text_ones() {
    let d = tmp("mf");
    let job = |fmt: &str| {
        format!(
            "--input {} --output {} --passes 3 --rank 4 --output-format {fmt}",
            fixture("ratings.tsv"),
            d.join(fmt).display()
        )
    };
    run("mf", job("text"));
    run("mf", job("parquet"));
    let pq = d.join("parquet");
    assert!(pq.join("_SUCCESS").exists() && !pq.join("_temporary").exists());
    for (text, table) in [("user_factors", "userFactors"), ("item_factors", "itemFactors")] {
        let want = text_rows(&d.join("text").join(text));
        let mut got = BTreeMap::new();
        for b in batches(&pq.join(table)) {
            assert_eq!(b.schema().field(0).name(), "id");
            assert_eq!(b.schema().field(1).name(), "features");
            // Spark's ALS takes int32 ids; these ids fit one.
            assert_eq!(b.schema().field(0).data_type(), &arrow_schema::DataType::Int32);
            let (ids, feats) = (b.column(0).as_primitive::<Int32Type>(), b.column(1).as_list::<i32>());
            for i in 0..b.num_rows() {
                let v = feats.value(i);
                let v: Vec<String> = v.as_primitive::<Float32Type>().values().iter().map(|x| x.to_string()).collect();
                got.insert(ids.value(i) as i64, v);
            }
        }
        // Two runs of the same job train the same model: the values as text are the same.
        assert_eq!(got.len(), want.len(), "{table}");
        assert!(got == want, "{table} differs from {text}");
    }
    let meta = std::fs::read_to_string(pq.join("metadata/part-00000")).unwrap();
    let meta: serde_json::Value = serde_json::from_str(&meta).unwrap();
    let mean: f64 = std::fs::read_to_string(d.join("text/global_mean/part-00000")).unwrap().trim().parse().unwrap();
    assert_eq!((meta["rank"].as_u64(), meta["mean"].as_f64().map(|m| m as f32)), (Some(4), Some(mean as f32)));
}

#[test]
fn pagerank_and_lda_write_their_tables() {
    let d = tmp("pr");
    let pr = |fmt: &str| {
        format!("--input {} --output {} --passes 5 --output-format {fmt}", fixture("edges.txt"), d.join(fmt).display())
    };
    run("pagerank", pr("text"));
    run("pagerank", pr("parquet"));
    let want: Vec<(i64, f64)> = std::fs::read_to_string(d.join("text/ranks/part-00000"))
        .unwrap()
        .lines()
        .map(|l| l.split_once('\t').map(|(a, b)| (a.parse().unwrap(), b.parse().unwrap())).unwrap())
        .collect();
    let mut got = Vec::new();
    for b in batches(&d.join("parquet/ranks")) {
        assert_eq!((b.schema().field(0).name().as_str(), b.schema().field(1).name().as_str()), ("id", "rank"));
        let (ids, ranks) = (b.column(0).as_primitive::<Int64Type>(), b.column(1).as_primitive::<Float64Type>());
        got.extend((0..b.num_rows()).map(|i| (ids.value(i), ranks.value(i))));
    }
    assert_eq!(got.len(), want.len());
    for ((gi, gr), (wi, wr)) in got.iter().zip(&want) {
        // Text keeps 13 significant digits, by rank descending.
        assert!(gi == wi && (gr - wr).abs() <= 1e-12 * wr.abs(), "{gi} {gr} / {wi} {wr}");
    }
    // LDA: dense topic counts per word, summing to the corpus's tokens.
    let corpus = d.join("docword.t.txt");
    std::fs::write(&corpus, "3\n4\n6\n1 1 2\n1 3 1\n2 2 4\n2 4 1\n3 1 1\n3 2 2\n").unwrap();
    let out = d.join("lda");
    run(
        "lda",
        format!(
            "--input {} --output {} --topics 3 --passes 2 --output-format parquet",
            corpus.display(),
            out.display()
        ),
    );
    let mut tokens = 0i64;
    for b in batches(&out.join("word_topic")) {
        assert_eq!(b.schema().field(1).name(), "topic_counts");
        let counts = b.column(1).as_list::<i32>();
        tokens += (0..b.num_rows())
            .map(|i| counts.value(i).as_primitive::<Int32Type>().values().iter().map(|&c| c as i64).sum::<i64>())
            .sum::<i64>();
    }
    assert_eq!(tokens, 11);
    // Topics: the text summary's top words, as rows with their probabilities, best first.
    let text_out = d.join("lda-text");
    run("lda", format!("--input {} --output {} --topics 3 --passes 2", corpus.display(), text_out.display()));
    let summary = std::fs::read_to_string(text_out.join("topics/part-00000")).unwrap();
    let mut got: BTreeMap<i32, Vec<(i32, String, f64)>> = BTreeMap::new();
    for b in batches(&out.join("topics")) {
        let names: Vec<String> = b.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["topic", "rank", "word_id", "word", "weight"]);
        let (t, r) = (b.column(0).as_primitive::<Int32Type>(), b.column(1).as_primitive::<Int32Type>());
        let (w, p) = (b.column(3).as_string::<i32>(), b.column(4).as_primitive::<Float64Type>());
        for i in 0..b.num_rows() {
            got.entry(t.value(i)).or_default().push((r.value(i), w.value(i).to_string(), p.value(i)));
        }
    }
    for line in summary.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let rows = &got[&f[0].parse::<i32>().unwrap()];
        let words: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
        assert_eq!(words.join(" "), f.get(2).copied().unwrap_or(""), "topic {}", f[0]);
        assert!(rows.iter().enumerate().all(|(i, r)| r.0 == i as i32 + 1 && r.2 > 0.0 && r.2 < 1.0), "{rows:?}");
        assert!(rows.windows(2).all(|x| x[0].2 >= x[1].2), "{rows:?}");
    }
}

/// `mf --recommend K`: K items per user, best first, none the user rated in training, each
/// scored `mean + dot(user, item)` of the written factors; the same lists as Parquet; and
/// precision@K and recall@K with held-out ratings.
#[test]
fn mf_recommends_unrated_items_by_the_written_factors() {
    let d = tmp("recs");
    let job = |fmt: &str, extra: &str| {
        let out = d.join(fmt);
        let a = format!(
            "--input {} --output {} --passes 3 --rank 4 --recommend 5 --output-format {fmt} {extra}",
            fixture("ratings.tsv"),
            out.display()
        );
        let a: Vec<String> = a.split_whitespace().map(String::from).collect();
        let cfg = RuntimeConfig { threads: 2, ..RuntimeConfig::default() };
        common::run_cluster(1, &cfg, |_| apps::build("mf", &a).unwrap()).pop().unwrap().unwrap()
    };
    job("text", "");
    let f32s = |v: &[String]| v.iter().map(|x| x.parse::<f32>().unwrap()).collect::<Vec<f32>>();
    let users = text_rows(&d.join("text/user_factors"));
    let items = text_rows(&d.join("text/item_factors"));
    let mean: f32 = std::fs::read_to_string(d.join("text/global_mean/part-00000")).unwrap().trim().parse().unwrap();
    let mut rated = std::collections::HashSet::new();
    for l in std::fs::read_to_string(fixture("ratings.tsv")).unwrap().lines() {
        let f: Vec<i64> = l.split('\t').take(2).map(|x| x.parse().unwrap()).collect();
        rated.insert((f[0], f[1]));
    }
    let mut per_user: BTreeMap<i64, Vec<(i64, f32)>> = BTreeMap::new();
    for f in std::fs::read_dir(d.join("text/recommendations")).unwrap() {
        for l in std::fs::read_to_string(f.unwrap().path()).unwrap().lines() {
            let v: Vec<&str> = l.split('\t').collect();
            per_user.entry(v[0].parse().unwrap()).or_default().push((v[1].parse().unwrap(), v[2].parse().unwrap()));
        }
    }
    assert_eq!(per_user.len(), users.len(), "every user gets a list");
    for (u, recs) in &per_user {
        assert_eq!(recs.len(), 5, "user {u}");
        assert!(recs.windows(2).all(|w| w[0].1 >= w[1].1), "user {u}: best first");
        for (i, s) in recs {
            assert!(!rated.contains(&(*u, *i)), "user {u} rated item {i}: no held-out ratings, so it trained on it");
            let dot: f32 = f32s(&users[u]).iter().zip(f32s(&items[i])).map(|(a, b)| a * b).sum();
            assert!((mean + dot - s).abs() <= 1e-4 * s.abs().max(1.0), "user {u} item {i}: {s} vs {}", mean + dot);
        }
    }
    // Held-out ratings: the final objective has precision and recall at 5; Parquet has the lists.
    let st = job("parquet", "--test-fraction 0.2");
    let last = st.app["objective"].as_array().unwrap().last().unwrap().clone();
    let (p, r) = (last["precision_at_k"].as_f64().unwrap(), last["recall_at_k"].as_f64().unwrap());
    assert!((0.0..=1.0).contains(&p) && (0.0..=1.0).contains(&r) && p + r > 0.0, "{last}");
    let mut rows = 0;
    for b in batches(&d.join("parquet/recommendations")) {
        let names: Vec<String> = b.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["user", "item", "score"]);
        rows += b.num_rows();
    }
    assert_eq!(rows, 5 * users.len());
}
