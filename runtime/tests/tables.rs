//! Table inputs: Parquet written by pyarrow (a Spark-style directory in three codecs, made by
//! `scripts/make-table-fixtures.py`) and CSV with a header, read by column name. Every row is
//! read once by any number of workers and equals the same rows read from the text format; nulls
//! are skipped and counted; bad columns, types and files are named in the error; and the apps
//! train on a table exactly as on the same rows in text.

mod common;

use ps_apps as apps;
use ps_runtime::input::{read_edge_table, read_edges, read_rating_table, read_ratings, resolve_format};
use ps_runtime::input::{BadRecords, InputFormat, Rating, RatingColumns, RatingFormat};
use ps_runtime::{ProcessStats, RuntimeConfig};
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tables").join(name).to_string_lossy().into_owned()
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ps-tables-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn sorted(mut v: Vec<Rating>) -> Vec<(u32, u32, u32)> {
    v.sort_by(|a, b| (a.user, a.item, a.value).partial_cmp(&(b.user, b.item, b.value)).unwrap());
    v.iter().map(|r| (r.user, r.item, r.value.to_bits())).collect()
}

fn text_ratings() -> Vec<(u32, u32, u32)> {
    sorted(read_ratings(&fixture("ratings.tsv"), 0, 1, RatingFormat::Auto, BadRecords::Fail).unwrap().0)
}

/// Worker shares of a table for `n` workers, together, and the rows skipped.
fn all_workers(url: &str, format: InputFormat, cols: &RatingColumns, n: usize) -> (Vec<(u32, u32, u32)>, u64) {
    let (mut all, mut skipped) = (Vec::new(), 0);
    for k in 0..n {
        let (r, st) = read_rating_table(url, k, n, format, cols, BadRecords::Fail).unwrap();
        assert_eq!(st.records as usize, r.len());
        all.extend(r);
        skipped += st.skipped;
    }
    (sorted(all), skipped)
}

#[test]
fn parquet_rows_are_read_once_by_any_number_of_workers() {
    let dir = fixture("ratings");
    assert_eq!(resolve_format(&dir, InputFormat::Auto, false).unwrap(), InputFormat::Parquet);
    let want = text_ratings();
    assert_eq!(want.len(), 997);
    let cols = RatingColumns::new(None, None, None);
    for n in [1, 2, 3, 5, 16] {
        let (got, skipped) = all_workers(&dir, InputFormat::Parquet, &cols, n);
        assert!(got == want && skipped == 3, "{n} workers: {} rows, {skipped} skipped (null ratings)", got.len());
    }
    // One file of the directory, and another's columns under other names.
    let one = fixture("ratings/part-00001-5f1c.c000.zstd.parquet");
    let (r, _) = read_rating_table(&one, 0, 1, InputFormat::Parquet, &cols, BadRecords::Fail).unwrap();
    assert_eq!(r.len(), 299, "rows 400..700 but the null rating of row 500");
}

#[test]
fn csv_columns_by_name_or_number_match_the_text_rows() {
    let csv = fixture("ratings.csv");
    let want = text_ratings();
    assert_eq!(resolve_format(&csv, InputFormat::Auto, true).unwrap(), InputFormat::Csv);
    assert_eq!(resolve_format(&csv, InputFormat::Auto, false).unwrap(), InputFormat::Text);
    for n in [1, 2, 4] {
        let (got, skipped) = all_workers(&csv, InputFormat::Csv, &RatingColumns::new(None, None, None), n);
        assert!(got == want && skipped == 3, "{n} workers: {} rows, {skipped} skipped (empty ratings)", got.len());
    }
    // Columns named explicitly (the quoted notes hold commas), and a file without a header.
    let cols = RatingColumns::new(Some("user"), Some("item"), Some("rating"));
    assert!(all_workers(&csv, InputFormat::Csv, &cols, 3).0 == want);
    let tsv = RatingColumns::new(Some("0"), Some("1"), Some("2"));
    assert!(all_workers(&fixture("ratings.tsv"), InputFormat::Csv, &tsv, 2).0 == want);
    // Columns out of order take the general path (the first three in order, a fast one).
    let swapped = RatingColumns::new(Some("1"), Some("0"), Some("2"));
    let mut flipped: Vec<(u32, u32, u32)> = want.iter().map(|&(u, i, v)| (i, u, v)).collect();
    flipped.sort_unstable();
    assert!(all_workers(&fixture("ratings.tsv"), InputFormat::Csv, &swapped, 3).0 == flipped);
}

fn table_error(url: &str, format: InputFormat, cols: RatingColumns) -> String {
    read_rating_table(url, 0, 1, format, &cols, BadRecords::Fail).unwrap_err().to_string()
}

#[test]
fn bad_columns_types_and_files_are_named() {
    let dir = fixture("ratings");
    let e = table_error(&dir, InputFormat::Parquet, RatingColumns::new(Some("uid"), None, None));
    assert!(e.contains("no column 'uid' (--user-col uid)") && e.contains("user, item, rating, note, tags"), "{e}");
    let e = table_error(&fixture("ratings.csv"), InputFormat::Csv, RatingColumns::new(None, Some("movie"), None));
    assert!(e.contains("ratings.csv: no column 'movie' (--item-col movie)") && e.contains("user, item"), "{e}");
    let e = table_error(&dir, InputFormat::Parquet, RatingColumns::new(None, None, Some("tags")));
    assert!(e.contains("column 'tags' (--rating-col) is of type List"), "{e}");
    let e = table_error(&dir, InputFormat::Parquet, RatingColumns::new(None, None, Some("note")));
    assert!(e.contains("part-00000-5f1c.c000.snappy.parquet: row 1: rating 'row 0, user 20' is not a number"), "{e}");
    let e = table_error(&fixture("ratings.csv"), InputFormat::Csv, RatingColumns::new(None, None, Some("note")));
    assert!(e.contains("ratings.csv:2: rating 'row 0, user 20' is not a number"), "{e}");
    let e = table_error(&fixture("ratings.csv"), InputFormat::Csv, RatingColumns::new(Some("0"), None, None));
    assert!(e.contains("--user-col 0 is a column number but other columns are named"), "{e}");
    // Skipping bad rows counts them.
    let cols = RatingColumns::new(None, Some("rating"), None);
    let (r, st) = read_rating_table(&dir, 0, 1, InputFormat::Parquet, &cols, BadRecords::Skip).unwrap();
    assert_eq!((r.len() as u64, st.records, st.skipped), (0, 0, 1000), "ratings like 2.5 are not item ids");
    // A damaged file is named; Parquet handed to a text reader says what it is.
    let d = tmp("damaged");
    let part = std::fs::read(fixture("ratings/part-00001-5f1c.c000.zstd.parquet")).unwrap();
    let cut = d.join("part-0.parquet");
    std::fs::write(&cut, &part[..part.len() - 100]).unwrap();
    let e = table_error(cut.to_str().unwrap(), InputFormat::Parquet, RatingColumns::new(None, None, None));
    assert!(e.contains("reading Parquet file") && e.contains("part-0.parquet"), "{e}");
    let e = read_ratings(&dir, 0, 1, RatingFormat::Auto, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("is a Parquet file, not text") && e.contains("--input-format parquet"), "{e}");
    let e = table_error(&dir, InputFormat::Csv, RatingColumns::new(None, None, None));
    assert!(e.contains("is a Parquet file, not CSV"), "{e}");
}

#[test]
fn parquet_edges_match_the_edge_list() {
    let (want, _) = read_edges(&fixture("edges.txt"), 0, 1, BadRecords::Fail).unwrap();
    let mut got = (Vec::new(), Vec::new());
    for k in 0..3 {
        let (e, _) =
            read_edge_table(&fixture("edges.parquet"), k, 3, InputFormat::Parquet, ("src", "dst"), BadRecords::Fail)
                .unwrap();
        got.0.extend(e.src);
        got.1.extend(e.dst);
    }
    assert!(got.0 == want.src && got.1 == want.dst, "row ranges in file order");
}

fn run(app: &str, args: String) -> Vec<ProcessStats> {
    let a: Vec<String> = args.split_whitespace().map(String::from).collect();
    let cfg = RuntimeConfig { threads: 1, ..RuntimeConfig::default() };
    common::run_cluster(1, &cfg, |_| apps::build(app, &a).unwrap()).into_iter().map(|r| r.unwrap()).collect()
}

fn last(st: &[ProcessStats], key: &str) -> f64 {
    let recs = st[0].app["objective"].as_array().unwrap();
    recs.last().unwrap()[key].as_f64().unwrap()
}

/// The same rows in the same order train the same model: one worker, so the order is the files'.
#[test]
fn apps_train_on_tables_as_on_the_same_rows_in_text() {
    let d = tmp("apps");
    let mf = |input: String, tag: &str| {
        let out = d.join(tag);
        let st = run("mf", format!("--input {input} --output {} --passes 3 --rank 4 --samples 1", out.display()));
        last(&st, "rmse")
    };
    let text = mf(fixture("ratings.tsv"), "text");
    assert!(text.is_finite() && text > 0.0);
    assert_eq!(mf(fixture("ratings"), "parquet"), text);
    assert_eq!(
        mf(format!("{} --user-col user --item-col item --rating-col rating", fixture("ratings.csv")), "csv"),
        text
    );
    let pr = |input: String, tag: &str| {
        let out = d.join(tag);
        last(&run("pagerank", format!("--input {input} --output {} --passes 5 --samples 1", out.display())), "l1_delta")
    };
    assert_eq!(pr(fixture("edges.parquet"), "pr-parquet"), pr(fixture("edges.txt"), "pr-text"));
}

#[test]
fn skipped_rows_are_counted_for_the_job_and_too_many_fail_it() {
    let d = tmp("skipped");
    let out = d.join("out");
    let args = |extra: &str| {
        format!("--input {} --output {} --passes 1 --rank 2 --samples 1 {extra}", fixture("ratings"), out.display())
    };
    let st = run("mf", args(""));
    assert_eq!(st[0].app["rows_skipped"], 3, "the null ratings");
    // Every rating taken for an item id (2.5 is not one): all rows bad, and the job says so.
    let a: Vec<String> =
        args("--overwrite --skip-bad-records --item-col rating").split_whitespace().map(String::from).collect();
    let cfg = RuntimeConfig { threads: 2, ..RuntimeConfig::default() };
    let r = common::run_cluster(2, &cfg, |_| apps::build("mf", &a).unwrap());
    for e in r {
        let e = e.unwrap_err().to_string();
        assert!(e.contains("of 1000 input rows") && e.contains("--max-bad-fraction 0.1"), "{e}");
    }
}

/// Damaged Parquet never panics out of the reader (the decoder's own asserts included: two were
/// found by fuzzing, see fuzz/regressions/input/parquet-*): every byte of a pyarrow file flipped in
/// turn, and the file cut short, gives rows or an error that names the file.
#[test]
fn damaged_parquet_gives_an_error_naming_the_file() {
    let d = tmp("flips");
    let good = std::fs::read(fixture("ratings/part-00001-5f1c.c000.zstd.parquet")).unwrap();
    let path = d.join("flipped.parquet");
    let url = path.to_str().unwrap();
    let cols = RatingColumns::new(None, None, None);
    let mut errors = 0;
    let mut check = |bytes: &[u8]| {
        std::fs::write(&path, bytes).unwrap();
        if let Err(e) = read_rating_table(url, 0, 1, InputFormat::Parquet, &cols, BadRecords::Skip) {
            assert!(e.to_string().contains("flipped.parquet"), "{e}");
            errors += 1;
        }
    };
    for at in (0..good.len()).step_by(3) {
        let mut b = good.clone();
        b[at] ^= 0x5a;
        check(&b);
    }
    for cut in (0..good.len()).step_by(good.len() / 20) {
        check(&good[..cut]);
    }
    for crash in ["parquet-negative-column-start", "parquet-page-header-without-data-page"] {
        let b = std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions/input").join(crash))
            .unwrap();
        check(&b[2..]);
    }
    assert!(errors > 100, "{errors} of the damaged files were refused");
}

/// LDA on a bag-of-words table (CSV with a header; a document's rows split among workers are
/// gathered by the exchange) trains as on the same counts as a UCI docword file.
#[test]
fn lda_on_a_bag_of_words_table_matches_the_docword_file() {
    let d = tmp("bow");
    let spec = ps_runtime::gen::CorpusSpec {
        docs: 60,
        vocab: 40,
        topics: 3,
        doc_len: 30,
        alpha: 0.5,
        beta: 0.1,
        seed: 4,
        word_skew: 0.0,
    };
    ps_runtime::gen::corpus(&spec, &d, "t").unwrap();
    let docword = std::fs::read_to_string(d.join("docword.t.txt")).unwrap();
    let mut csv = String::from("doc,word,count,note\n");
    for l in docword.lines().skip(3) {
        let f: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
        csv.push_str(&format!("{},{},{},\"d{} w{}\"\n", f[0], f[1] - 1, f[2], f[0], f[1]));
    }
    let table = d.join("bow.csv");
    std::fs::write(&table, csv).unwrap();
    let lda = |input: String, tag: &str| {
        let out = d.join(tag);
        let st = run("lda", format!("--input {input} --output {} --topics 3 --passes 3 --samples 1", out.display()));
        last(&st, "loglik_per_token")
    };
    let text = lda(d.join("docword.t.txt").display().to_string(), "text");
    let cols = "--word-col word --count-col count";
    let vocab = d.join("vocab.t.txt");
    assert_eq!(lda(format!("{} {cols} --vocab {}", table.display(), vocab.display()), "table"), text);
    // With the vocabulary the topics are named as from the docword file (its sibling vocab).
    let topics = |tag: &str| std::fs::read_to_string(d.join(tag).join("topics/part-00000")).unwrap();
    assert_eq!(topics("table"), topics("text"));
    assert!(topics("table").contains("\tw"), "{}", topics("table"));
    // Several workers, a document's rows gathered from other workers: the likelihood is as good.
    let a: Vec<String> = format!(
        "--input {} {cols} --output {} --topics 3 --passes 3 --samples 1",
        table.display(),
        d.join("t4").display()
    )
    .split_whitespace()
    .map(String::from)
    .collect();
    let cfg = RuntimeConfig { threads: 2, ..RuntimeConfig::default() };
    let st: Vec<ProcessStats> =
        common::run_cluster(2, &cfg, |_| apps::build("lda", &a).unwrap()).into_iter().map(|r| r.unwrap()).collect();
    let four = last(&st, "loglik_per_token");
    assert!((four - text).abs() < 0.05 * text.abs(), "4 workers {four} vs 1 worker {text}");
}

/// Parquet batches of plain integer ids are taken whole (`RowSink::columns`); a batch with a
/// value the fast path does not take goes row by row: a NaN rating is skipped and named, and an
/// id beyond u32 switches the column to keys, the rows read before included. 20,000 rows are
/// three of the reader's batches: the first fast, the second with the NaN, the last with the id.
#[test]
fn parquet_batches_taken_whole_or_row_by_row_give_the_same_rows() {
    use arrow_array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch};
    use std::sync::Arc;
    let d = tmp("batches");
    let path = d.join("r.parquet");
    let n = 20_000usize;
    let big = 5_000_000_000i64;
    let users: Vec<i64> = (0..n).map(|i| if i == n - 1 { big } else { (i % 500) as i64 }).collect();
    let items: Vec<i32> = (0..n).map(|i| (i % 37) as i32).collect();
    let values: Vec<f64> = (0..n).map(|i| if i == 10_000 { f64::NAN } else { (i % 5 + 1) as f64 }).collect();
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("user", Arc::new(Int64Array::from(users.clone()))),
        ("item", Arc::new(Int32Array::from(items.clone()))),
        ("rating", Arc::new(Float64Array::from(values.clone()))),
    ];
    let batch = RecordBatch::try_from_iter(cols).unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let url = path.to_str().unwrap();
    let cols = RatingColumns::new(None, None, None);
    let t =
        ps_runtime::input::read_rating_table_keyed(url, 0, 1, InputFormat::Parquet, &cols, BadRecords::Skip).unwrap();
    assert_eq!((t.stats.records, t.stats.skipped), (n as u64 - 1, 1));
    assert!(t.users.is_keyed() && !t.items.is_keyed());
    let keys = t.users.into_keys();
    let want = (0..n).filter(|&i| i != 10_000);
    assert_eq!(t.ratings.len(), n - 1);
    for (r, i) in t.ratings.iter().zip(want) {
        assert_eq!(keys[r.user as usize], ps_runtime::input::Key::Int(users[i]), "row {i}");
        assert_eq!((r.item, r.value), (items[i] as u32, values[i] as f32), "row {i}");
    }
}
