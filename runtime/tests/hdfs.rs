//! Against a real HDFS (Hadoop 2.7.3 NameNode + DataNode started by `scripts/hdfs-up.sh`; the test
//! command starts it and exports HDFS_URL): the storage layer, split reading, and every app reading
//! its input from and writing its output, snapshots and checkpoints to `hdfs://`.

mod common;

use ps_apps as apps;
use ps_runtime::input::{plan_splits, read_edges, BadRecords, LineReader};
use ps_runtime::snapshot::{read, CheckpointStore};
use ps_runtime::storage::{storage_for, Storage};
use ps_runtime::{gen, DenseRow, RuntimeConfig, SparseRow};
use ps_testkit::{needs, Service};
use std::io::Write;

fn hdfs() -> String {
    std::env::var("HDFS_URL").expect(
        "HDFS_URL is not set: these tests need a real HDFS; run them through scripts/test.sh, or start one \
         with scripts/hdfs-up.sh and export the HDFS_URL it prints",
    )
}

fn base(tag: &str) -> String {
    format!("{}/ps-test/{tag}-{}", hdfs(), std::process::id())
}

fn put(st: &dyn Storage, url: &str, data: &[u8]) {
    let mut f = st.create(url).unwrap();
    f.write_all(data).unwrap();
    f.close().unwrap();
}

#[test]
fn storage_roundtrip_and_splits_on_hdfs() {
    if !needs(&[Service::Hdfs]) {
        return;
    }
    let dir = base("storage");
    let st = storage_for(&dir).unwrap();
    st.delete(&dir).unwrap();
    assert!(!st.exists(&dir).unwrap());
    // A directory of part files, as Hadoop writes them, plus a marker that is not input.
    let mut all = Vec::new();
    for p in 0..3 {
        let lines: Vec<String> = (0..5000).map(|i| format!("{p}\t{i}\t{}", i % 7)).collect();
        put(st.as_ref(), &format!("{dir}/part-{p:05}"), (lines.join("\n") + "\n").as_bytes());
        all.extend(lines);
    }
    put(st.as_ref(), &format!("{dir}/_SUCCESS"), b"");
    let files = st.list(&dir).unwrap();
    assert_eq!(files.len(), 3, "{files:?}");
    assert!(files.iter().all(|(u, _)| u.starts_with("hdfs://")));
    // Patterns and nested partition directories, as Hadoop's FileInputFormat and Spark read them.
    put(st.as_ref(), &format!("{dir}/more/dt=1/part-00000"), b"x\n");
    put(st.as_ref(), &format!("{dir}/more/_tmp/part-00000"), b"y\n");
    let names = |url: &str| -> Vec<String> {
        st.list(url).unwrap().into_iter().map(|(u, _)| u.strip_prefix(dir.as_str()).unwrap().to_string()).collect()
    };
    assert_eq!(names(&format!("{dir}/part-0000[02]")), ["/part-00000", "/part-00002"]);
    assert_eq!(names(&format!("{dir}/m*")), ["/more/dt=1/part-00000"]);
    assert_eq!(names(&format!("{dir}/{{part-00001,more}}")), ["/more/dt=1/part-00000", "/part-00001"]);
    assert_eq!(st.list(&dir).unwrap().len(), 4);
    st.delete(&format!("{dir}/more")).unwrap();
    // Ranged reads match, and any number of workers covers every line exactly once.
    let part1 = all[5000..10000].join("\n") + "\n";
    let head = st.read_at(&files[1].0, 6, 10).unwrap();
    assert_eq!(&head[..], &part1.as_bytes()[6..16]);
    for n in [1, 2, 5, 7] {
        let mut got = Vec::new();
        for k in 0..n {
            for s in plan_splits(&files, k, n) {
                let mut r = LineReader::new(st.as_ref(), &s).unwrap();
                while let Some((l, _)) = r.next_line().unwrap() {
                    got.push(l.to_string());
                }
            }
        }
        got.sort();
        let mut want = all.clone();
        want.sort();
        assert_eq!(got, want, "{n} workers");
    }
    st.rename(&format!("{dir}/part-00000"), &format!("{dir}/moved/part-00000")).unwrap();
    assert!(st.exists(&format!("{dir}/moved/part-00000")).unwrap());
    assert_eq!(st.children(&dir).unwrap(), vec!["_SUCCESS", "moved", "part-00001", "part-00002"]);
    // Malformed input on HDFS names the file and line.
    put(st.as_ref(), &format!("{dir}/bad/g.txt"), b"1\t2\n3\tx\n");
    let e = read_edges(&format!("{dir}/bad"), 0, 1, BadRecords::Fail).unwrap_err().to_string();
    assert!(e.contains("g.txt:2"), "{e}");
    // A gzipped part on HDFS reads as its text, whole by one of the workers.
    let text: String = (0..3000).map(|i| format!("{i}\t{}\n", (i * 7) % 3000)).collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(text.as_bytes()).unwrap();
    put(st.as_ref(), &format!("{dir}/gz/part-00000.gz"), &gz.finish().unwrap());
    put(st.as_ref(), &format!("{dir}/gz/part-00001"), b"5000\t1\n");
    let edges: Vec<usize> =
        (0..3).map(|k| read_edges(&format!("{dir}/gz"), k, 3, BadRecords::Fail).unwrap().0.src.len()).collect();
    assert_eq!(edges.iter().sum::<usize>(), 3001, "{edges:?}");
    assert!(edges.contains(&3000) || edges.contains(&3001), "the gzipped part is read whole: {edges:?}");
    st.delete(&dir).unwrap();
}

#[test]
fn apps_read_and_write_hdfs() {
    if !needs(&[Service::Hdfs]) {
        return;
    }
    let dir = base("apps");
    let st = storage_for(&dir).unwrap();
    st.delete(&dir).unwrap();
    let local = std::env::temp_dir().join(format!("ps-hdfs-apps-{}", std::process::id()));
    std::fs::create_dir_all(&local).unwrap();
    // Inputs generated locally, uploaded to HDFS.
    let r = local.join("r.tsv");
    let spec = gen::RatingsSpec {
        users: 300,
        items: 200,
        ratings: 12_000,
        rank: 3,
        noise: 0.3,
        item_skew: 0.3,
        user_skew: 0.3,
        seed: 9,
    };
    gen::ratings(&spec, &r).unwrap();
    put(st.as_ref(), &format!("{dir}/ratings/part-00000"), &std::fs::read(&r).unwrap());
    gen::corpus(
        &gen::CorpusSpec {
            docs: 100,
            vocab: 200,
            topics: 4,
            doc_len: 40,
            alpha: 0.1,
            beta: 0.05,
            seed: 1,
            word_skew: 0.0,
        },
        &local,
        "t",
    )
    .unwrap();
    put(st.as_ref(), &format!("{dir}/corpus/docword.t.txt"), &std::fs::read(local.join("docword.t.txt")).unwrap());
    let g = local.join("g.tsv");
    gen::graph(&gen::GraphSpec { nodes: 500, degree: 4, skew: 0.8, seed: 2 }, &g).unwrap();
    put(st.as_ref(), &format!("{dir}/graph/edges.tsv"), &std::fs::read(&g).unwrap());
    let mut cfg = RuntimeConfig { threads: 2, ..RuntimeConfig::default() };
    cfg.checkpoint.every = 12;
    // These tests count and resume from particular checkpoints: every due one is written.
    cfg.checkpoint.when_busy = ps_runtime::WhenBusy::Wait;
    cfg.checkpoint.keep = 0;
    let runs = [
        (
            "mf",
            format!("--input {dir}/ratings --output {dir}/out-mf --passes 5 --rank 5"),
            vec!["user_factors", "item_factors", "global_mean"],
        ),
        (
            "lda",
            format!("--input {dir}/corpus/docword.t.txt --output {dir}/out-lda --topics 4 --passes 3"),
            vec!["word_topic", "topics"],
        ),
        ("pagerank", format!("--input {dir}/graph --output {dir}/out-pr --passes 40 --block 64"), vec!["ranks"]),
    ];
    for (app, args, outputs) in runs {
        let a: Vec<String> = args.split_whitespace().map(String::from).collect();
        cfg.checkpoint.url = Some(format!("{dir}/ckpt-{app}"));
        for r in common::run_cluster(2, &cfg, |_| apps::build(app, &a).unwrap()) {
            r.unwrap_or_else(|e| panic!("{app} on HDFS failed: {e}"));
        }
        let out = a[a.iter().position(|x| x == "--output").unwrap() + 1].clone();
        assert!(st.exists(&format!("{out}/_SUCCESS")).unwrap(), "{app}: no _SUCCESS");
        assert!(!st.exists(&format!("{out}/_temporary")).unwrap(), "{app}: _temporary left behind");
        for o in outputs {
            let parts = st.list(&format!("{out}/{o}")).unwrap();
            assert!(parts.iter().map(|p| p.1).sum::<u64>() > 0, "{app}: {o} is empty");
        }
    }
    // Snapshots on HDFS: all complete (manifest last), shards verified (header, CRC-32C) and
    // consistent with the manifest, and the end-of-job tables hold what the apps computed.
    for app in ["mf", "lda", "pagerank"] {
        let store = CheckpointStore::open(&format!("{dir}/ckpt-{app}")).unwrap();
        let list = store.list().unwrap();
        assert!(!list.is_empty() && list.iter().all(|x| x.1), "{app}: {list:?}");
        for (t, _) in &list {
            let m = store.read_manifest(*t).unwrap();
            // (The end-of-job snapshot is flagged final unless it fell on a periodic clock.)
            assert!(m.clock == *t && (!m.is_final || *t == list.last().unwrap().0), "{app} {t}");
            for e in &m.tables {
                for f in &e.shards {
                    let (h, _) = store.read_shard(*t, f.owner as usize, e.config.id).unwrap();
                    assert_eq!((h.rows, h.crc, &h.row_type), (f.rows, f.crc32c, &e.config.row_type), "{app} {t}");
                }
            }
        }
    }
    let last = |app: &str| {
        let store = CheckpointStore::open(&format!("{dir}/ckpt-{app}")).unwrap();
        let m = read::manifest(&store, None).unwrap();
        (store, m)
    };
    // LDA: every token of the corpus is counted exactly once in the word-topic table.
    let tokens: i64 = std::fs::read_to_string(local.join("docword.t.txt"))
        .unwrap()
        .lines()
        .skip(3)
        .map(|l| l.split_whitespace().nth(2).unwrap().parse::<i64>().unwrap())
        .sum();
    let (store, m) = last("lda");
    let wt = read::read_table::<SparseRow<i32>>(&store, &m, apps::lda::WORD_TOPIC.id()).unwrap();
    assert_eq!(wt.values().flat_map(|r| r.iter().map(|(_, v)| v as i64)).sum::<i64>(), tokens);
    let ts = read::read_table::<DenseRow<i64>>(&store, &m, apps::lda::TOPIC_SUM.id()).unwrap();
    assert_eq!(ts[&0].iter().sum::<i64>(), tokens);
    // MF: one factor row per user that has ratings, and (rotating item slices, the default) one
    // per ITEMS_PER_ROW consecutive item ids that have ratings.
    let (store, m) = last("mf");
    let text = std::fs::read_to_string(&r).unwrap();
    let rows = |k: usize, per: u64| {
        text.lines()
            .map(|l| l.split('\t').nth(k).unwrap().parse::<u64>().unwrap() / per)
            .collect::<std::collections::HashSet<_>>()
            .len()
    };
    assert_eq!(read::read_table::<DenseRow<f32>>(&store, &m, apps::mf::L.id()).unwrap().len(), rows(0, 1));
    let items = read::read_table::<DenseRow<f32>>(&store, &m, apps::mf::R.id()).unwrap();
    assert_eq!(items.len(), rows(1, apps::mf::ITEMS_PER_ROW));
    assert!(items.values().all(|r| r.len() == 5 * apps::mf::ITEMS_PER_ROW as usize), "rank 5, 16 items a row");
    // PageRank: 500 nodes in rows of 64.
    let (store, m) = last("pagerank");
    assert_eq!(read::read_table::<DenseRow<f32>>(&store, &m, apps::pagerank::RANK.id()).unwrap().len(), 8);
    // PageRank's output: every node once, scores summing to 1.
    let ranks = st.list(&format!("{dir}/out-pr/ranks")).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut st.open(&ranks[0].0, 0).unwrap(), &mut text).unwrap();
    let scores: Vec<f64> = text.lines().map(|l| l.split('\t').nth(1).unwrap().parse().unwrap()).collect();
    assert_eq!(scores.len(), 500);
    // Ranks start at (1-d)/N in total and approach 1 as the iteration converges.
    assert!((scores.iter().sum::<f64>() - 1.0).abs() < 0.05, "{}", scores.iter().sum::<f64>());
    st.delete(&dir).unwrap();
    let _ = std::fs::remove_dir_all(&local);
}

/// A Spark-style Parquet table (pyarrow's files, three codecs, `_SUCCESS` and a hidden `.crc`)
/// on HDFS reads as it does locally, through the same HDFS client as every other input.
#[test]
fn parquet_table_on_hdfs_reads_as_locally() {
    if !needs(&[Service::Hdfs]) {
        return;
    }
    use ps_runtime::input::{read_rating_table, InputFormat, RatingColumns};
    let local = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tables/ratings");
    let dir = base("parquet");
    let st = storage_for(&dir).unwrap();
    st.delete(&dir).unwrap();
    for f in std::fs::read_dir(&local).unwrap() {
        let f = f.unwrap();
        put(st.as_ref(), &format!("{dir}/{}", f.file_name().to_string_lossy()), &std::fs::read(f.path()).unwrap());
    }
    let cols = RatingColumns::new(None, None, None);
    let read = |url: &str, n: usize| {
        let mut all: Vec<(u32, u32, u32)> = (0..n)
            .flat_map(|k| read_rating_table(url, k, n, InputFormat::Parquet, &cols, BadRecords::Fail).unwrap().0)
            .map(|r| (r.user, r.item, r.value.to_bits()))
            .collect();
        all.sort_unstable();
        all
    };
    let want = read(local.to_str().unwrap(), 1);
    assert_eq!(want.len(), 997);
    for n in [1, 3] {
        assert!(read(&dir, n) == want, "{n} workers on HDFS");
    }
    assert_eq!(ps_runtime::input::resolve_format(&dir, InputFormat::Auto, false).unwrap(), InputFormat::Parquet);
}
