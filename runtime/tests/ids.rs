//! Ids as people have them (strings, 64-bit and negative numbers): numbered job-wide by a
//! distributed dictionary, as a property over job shapes, and mapped back in MF's outputs
//! (text and Parquet, read back with Arrow's own reader).

mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type};
use arrow_array::{ArrayRef, Float32Array, Int64Array, RecordBatch, StringArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use ps_apps as apps;
use ps_apps::dictionary::settle_ids;
use ps_runtime::input::{Cell, Key, KeyColumn};
use ps_runtime::{App, PsContext, PsError, Result, RuntimeConfig, Worker};
use ps_testkit::{needs, Service};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ps-ids-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The job's ids, as cells: strings, small, 64-bit and negative integers, and integers written
/// as text; every worker sees an overlapping share of them.
fn cell(i: usize) -> Cell<'static> {
    const WORDS: [&str; 5] = ["alice", "bob", "carol", "dave", "-17"];
    match i % 4 {
        0 => Cell::Int(i as i64 * 1_000_000_007),
        1 => Cell::Int(-(i as i64)),
        2 => Cell::Str(WORDS[i / 4 % 5]),
        _ => Cell::Int(i as i64 % 13),
    }
}

/// Each worker numbers its share of ids 0..n (overlapping its neighbour's) and records the
/// (key, id) pairs it got, after checking that the dictionary maps its ids back to its keys.
struct Numbering {
    n: usize,
    seen: Arc<Mutex<Vec<(Key, u32)>>>,
}

impl App for Numbering {
    fn initialize(&mut self, _ctx: &mut PsContext) -> Result<()> {
        Ok(())
    }
    fn run_worker(&self, w: &mut Worker) -> Result<()> {
        let (g, nw) = (w.global_thread_id(), w.total_threads());
        let mine: Vec<usize> = (g * self.n / nw..((g + 2) * self.n / nw).min(self.n)).collect();
        let mut col = KeyColumn::default();
        let mut vals = Vec::new();
        for &i in &mine {
            let (v, switched) = col.id(&cell(i), "id").map_err(PsError::Usage)?;
            if switched {
                vals.iter_mut().for_each(|x| col.intern_earlier(x));
            }
            vals.push(v);
        }
        let dict = settle_ids(w, col, &mut |f| vals.iter_mut().for_each(&mut *f))?;
        let dict = dict.ok_or_else(|| PsError::Violation("ids that do not fit u32 kept as read".into()))?;
        let ids: Vec<u64> = vals.iter().map(|&v| v as u64).collect();
        let back = dict.keys_of(w, &ids)?;
        let mut seen = self.seen.lock().unwrap();
        for (&i, (k, &v)) in mine.iter().zip(back.into_iter().zip(&vals)) {
            let want = Key::from_cell(&cell(i), "id").map_err(PsError::Usage)?;
            if k != want {
                return Err(PsError::Violation(format!("id {v} maps back to {k}, not {want}")));
            }
            seen.push((k, v));
        }
        Ok(())
    }
}

fn numbering(procs: usize, threads: usize, n: usize) -> BTreeMap<Key, u32> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let cfg = RuntimeConfig { threads, ..RuntimeConfig::default() };
    for r in common::run_cluster(procs, &cfg, |_| Box::new(Numbering { n, seen: seen.clone() })) {
        r.unwrap();
    }
    let mut map = BTreeMap::new();
    for (k, v) in seen.lock().unwrap().drain(..) {
        let old = map.insert(k.clone(), v);
        assert!(old.is_none() || old == Some(v), "{procs} x {threads}: key {k} got ids {old:?} and {v}");
    }
    map
}

/// A key's id is its rank among the job's distinct keys: dense, in key order, and the same for
/// every job shape (so a resumed or reshaped job numbers alike).
#[test]
fn the_dictionary_numbers_keys_by_rank_whatever_the_shape() {
    let n = 3000;
    let one = numbering(1, 1, n);
    let distinct: BTreeSet<Key> = (0..n).map(|i| Key::from_cell(&cell(i), "id").unwrap()).collect();
    assert_eq!(one.keys().cloned().collect::<BTreeSet<_>>(), distinct);
    // BTreeMap iterates in key order: the ids must be 0, 1, 2, ...
    assert!(one.values().enumerate().all(|(i, &v)| v as usize == i), "ids are not the keys' ranks");
    // "-17" written as text is the integer -17.
    assert!(one.contains_key(&Key::Int(-17)) && !one.contains_key(&Key::Str("-17".into())));
    for (p, t) in [(3, 1), (2, 2)] {
        assert_eq!(numbering(p, t, n), one, "{p} x {t} numbers the keys differently");
    }
}

/// Writes ratings with string users and 64-bit (some negative) items as a Parquet file.
fn write_ratings(path: &Path) -> (BTreeSet<String>, BTreeSet<i64>) {
    let (mut users, mut items, mut stars) = (Vec::new(), Vec::new(), Vec::new());
    for u in 0..120 {
        for j in 0..15 {
            let item = (u * 7 + j * 13) % 40;
            users.push(format!("user:{u:03}"));
            items.push(if item % 2 == 0 { 9_000_000_000_000 + item } else { -item });
            stars.push(1.0 + ((u + item) % 5) as f32);
        }
    }
    let batch = RecordBatch::try_from_iter([
        ("customer", Arc::new(StringArray::from(users.clone())) as ArrayRef),
        ("sku", Arc::new(Int64Array::from(items.clone())) as ArrayRef),
        ("stars", Arc::new(Float32Array::from(stars)) as ArrayRef),
    ])
    .unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    (users.into_iter().collect(), items.into_iter().collect())
}

fn batches(dir: &Path) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    for f in std::fs::read_dir(dir).unwrap() {
        let p = f.unwrap().path();
        let r = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&p).unwrap()).unwrap().build().unwrap();
        out.extend(r.map(|b| b.unwrap()));
    }
    out
}

/// id -> factors of a Parquet factor table whose ids are `K` (strings or int64).
fn factors<K: Ord>(dir: &Path, id: impl Fn(&RecordBatch, usize) -> K) -> BTreeMap<K, Vec<f32>> {
    let mut m = BTreeMap::new();
    for b in batches(dir) {
        let f = b.column_by_name("features").unwrap().as_list::<i32>();
        for r in 0..b.num_rows() {
            m.insert(id(&b, r), f.value(r).as_primitive::<Float32Type>().values().to_vec());
        }
    }
    m
}

#[test]
fn mf_writes_the_inputs_own_ids_and_scores_match_the_factors() {
    let d = tmp("mf");
    let input = d.join("ratings.parquet");
    let (users, items) = write_ratings(&input);
    for (procs, format) in [(2, "parquet"), (1, "text")] {
        let out = d.join(format!("out-{format}"));
        let args = format!(
            "--input {} --user-col customer --item-col sku --rating-col stars --rank 4 --passes 3 \
             --recommend 3 --output {} --output-format {format}",
            input.display(),
            out.display()
        );
        let a: Vec<String> = args.split_whitespace().map(String::from).collect();
        let cfg = RuntimeConfig { threads: 2, ..RuntimeConfig::default() };
        for r in common::run_cluster(procs, &cfg, |_| apps::build("mf", &a).unwrap()) {
            r.unwrap();
        }
        if format == "text" {
            // Text: the input's ids in the first column.
            let mut got = BTreeSet::new();
            for f in std::fs::read_dir(out.join("user_factors")).unwrap() {
                for l in std::fs::read_to_string(f.unwrap().path()).unwrap().lines() {
                    got.insert(l.split('\t').next().unwrap().to_string());
                }
            }
            assert_eq!(got, users);
            continue;
        }
        let u = factors(&out.join("userFactors"), |b, r| {
            b.column_by_name("id").unwrap().as_string::<i32>().value(r).to_string()
        });
        let i = factors(&out.join("itemFactors"), |b, r| {
            b.column_by_name("id").unwrap().as_primitive::<Int64Type>().value(r)
        });
        assert_eq!(u.keys().cloned().collect::<BTreeSet<_>>(), users);
        assert_eq!(i.keys().copied().collect::<BTreeSet<_>>(), items);
        let meta = std::fs::read_to_string(out.join("metadata/part-00000")).unwrap();
        let mean = serde_json::from_str::<serde_json::Value>(&meta).unwrap()["mean"].as_f64().unwrap() as f32;
        let mut recs = 0;
        for b in batches(&out.join("recommendations")) {
            let (us, is) = (b.column_by_name("user").unwrap().as_string::<i32>(), b.column_by_name("item").unwrap());
            let (is, sc) =
                (is.as_primitive::<Int64Type>(), b.column_by_name("score").unwrap().as_primitive::<Float32Type>());
            for r in 0..b.num_rows() {
                let (uf, itf) = (&u[us.value(r)], &i[&is.value(r)]);
                let dot: f32 = uf.iter().zip(itf).map(|(a, b)| a * b).sum();
                assert!(
                    (mean + dot - sc.value(r)).abs() < 1e-4,
                    "{} {}: {} vs {}",
                    us.value(r),
                    is.value(r),
                    mean + dot,
                    sc.value(r)
                );
                recs += 1;
            }
        }
        assert_eq!(recs, 3 * users.len());
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// node -> rank of a text `ranks/` output.
fn ranks(dir: &Path) -> BTreeMap<String, f64> {
    let text = std::fs::read_to_string(dir.join("ranks/part-00000")).unwrap();
    text.lines().map(|l| l.split_once('\t').unwrap()).map(|(n, r)| (n.to_string(), r.parse().unwrap())).collect()
}

/// PageRank on an edge table of page names ranks every page as the same graph with integer ids
/// does, and writes the names.
#[test]
fn pagerank_by_name_ranks_as_by_number() {
    let d = tmp("pr");
    let edges: Vec<(u32, u32)> = (0..3000u32).map(|i| ((i * 7919) % 400, (i * 31 + i / 7) % 120)).collect();
    let named: String = edges.iter().map(|(s, t)| format!("page/{s},page/{t}\n")).collect();
    let plain: String = edges.iter().map(|(s, t)| format!("{s},{t}\n")).collect();
    std::fs::write(d.join("named.csv"), format!("src,dst\n{named}")).unwrap();
    std::fs::write(d.join("plain.csv"), format!("src,dst\n{plain}")).unwrap();
    let run = |input: &str, procs: usize| {
        let out = d.join(format!("out-{input}-{procs}"));
        let args = format!(
            "--input {} --src-col src --dst-col dst --passes 30 --output {}",
            d.join(input).display(),
            out.display()
        );
        let a: Vec<String> = args.split_whitespace().map(String::from).collect();
        let cfg = RuntimeConfig { threads: 2, consistency: ps_runtime::Consistency::Bsp, ..RuntimeConfig::default() };
        for r in common::run_cluster(procs, &cfg, |_| apps::build("pagerank", &a).unwrap()) {
            r.unwrap();
        }
        ranks(&out)
    };
    let by_number = run("plain.csv", 1);
    for procs in [1, 2] {
        let by_name = run("named.csv", procs);
        assert_eq!(by_name.len(), by_number.len());
        for (n, r) in &by_number {
            let got = by_name[&format!("page/{n}")];
            assert!((got - r).abs() <= 1e-9 * r, "{procs} processes: page/{n} ranked {got}, node {n} {r}");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A resumed job rebuilds its dictionaries from the input; their fingerprints in the checkpoint
/// make sure it numbers the ids as the first run did, or it stops with a clear message.
#[test]
fn a_resumed_job_checks_that_its_ids_are_numbered_as_before() {
    let d = tmp("resume");
    let rows = |rename: &str| -> String {
        let mut s = String::from("user,item,rating\n");
        for u in 0..60 {
            for j in 0..8 {
                let name = if u == 7 { rename.to_string() } else { format!("u{u}") };
                s += &format!("{name},item-{},{}\n", (u * 3 + j * 5) % 25, 1 + (u + j) % 5);
            }
        }
        s
    };
    let input = d.join("r.csv");
    let ck = d.join("ck");
    let run = |resume: bool| {
        let args = format!("--input {} --user-col user --passes 4 --rank 3", input.display());
        let a: Vec<String> = args.split_whitespace().map(String::from).collect();
        let mut cfg =
            RuntimeConfig { threads: 1, consistency: ps_runtime::Consistency::Bsp, ..RuntimeConfig::default() };
        cfg.checkpoint.every = 3;
        // These tests count and resume from particular checkpoints: every due one is written.
        cfg.checkpoint.when_busy = ps_runtime::WhenBusy::Wait;
        cfg.checkpoint.url = Some(ck.to_string_lossy().into_owned());
        cfg.checkpoint.resume = resume;
        common::run_cluster(2, &cfg, |_| apps::build("mf", &a).unwrap())
    };
    std::fs::write(&input, rows("u7")).unwrap();
    run(false).into_iter().for_each(|r| drop(r.unwrap()));
    run(true).into_iter().for_each(|r| drop(r.unwrap()));
    // One user renamed: its rank among the keys changes, and so would the ids of the others.
    std::fs::write(&input, rows("zz-renamed")).unwrap();
    let errs: Vec<String> = run(true).into_iter().filter_map(|r| r.err()).map(|e| e.to_string()).collect();
    assert!(errs.iter().any(|e| e.contains("ids are not those of the checkpoint")), "{errs:?}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A Python with pyarrow and numpy: `$PS_PYTHON` (scripts/test.sh sets it), else `python3` when
/// it has both.
fn python() -> String {
    if let Ok(p) = std::env::var("PS_PYTHON") {
        return p;
    }
    let ok = std::process::Command::new("python3").args(["-c", "import pyarrow, numpy"]).status();
    if ok.is_ok_and(|s| s.success()) {
        return "python3".into();
    }
    panic!("no Python with pyarrow and numpy: run through scripts/test.sh (scripts/pyreaders.sh) or set PS_PYTHON");
}

/// Runs `script` (Python) with `args`; returns what it printed, as JSON.
fn py(script: &str, args: &[&Path]) -> serde_json::Value {
    let out = std::process::Command::new(python()).arg("-c").arg(script).args(args).output().unwrap();
    assert!(out.status.success(), "python: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The outputs as other tools read them: pyarrow reads the Parquet model and recommendations
/// (string user ids, int64 item ids) to the same values as Arrow's Rust reader, and numpy loads
/// the `.npy` factors with their int64 ids.
#[test]
fn pyarrow_and_numpy_read_the_outputs() {
    if !needs(&[Service::PyReaders]) {
        return;
    }
    let d = tmp("py");
    let input = d.join("ratings.parquet");
    let (users, items) = write_ratings(&input);
    let job = |format: &str| {
        let out = d.join(format!("out-{format}"));
        let args = format!(
            "--input {} --user-col customer --item-col sku --rating-col stars --rank 3 --passes 2 --recommend 2 \
             --output {} --output-format {format}",
            input.display(),
            out.display()
        );
        let a: Vec<String> = args.split_whitespace().map(String::from).collect();
        let cfg = RuntimeConfig { threads: 2, ..RuntimeConfig::default() };
        for r in common::run_cluster(1, &cfg, |_| apps::build("mf", &a).unwrap()) {
            r.unwrap();
        }
        out
    };
    let out = job("parquet");
    let read = r#"
import json, sys
import pyarrow.parquet as pq
d = sys.argv[1]
u, i, r = (pq.read_table(f"{d}/{t}") for t in ("userFactors", "itemFactors", "recommendations"))
print(json.dumps({
    "types": [str(u.schema.field("id").type), str(i.schema.field("id").type), str(r.schema.field("user").type)],
    "users": dict(zip(u.column("id").to_pylist(), u.column("features").to_pylist())),
    "items": {str(k): v for k, v in zip(i.column("id").to_pylist(), i.column("features").to_pylist())},
    "recs": r.num_rows,
}))
"#;
    let got = py(read, &[&out]);
    assert_eq!(got["types"], serde_json::json!(["string", "int64", "string"]));
    assert_eq!(got["recs"], 2 * users.len());
    let mine = factors(&out.join("userFactors"), |b, r| {
        b.column_by_name("id").unwrap().as_string::<i32>().value(r).to_string()
    });
    let theirs = got["users"].as_object().unwrap();
    assert_eq!(theirs.len(), users.len());
    for (id, f) in &mine {
        let t: Vec<f32> = theirs[id].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
        assert_eq!(&t, f, "user {id}");
    }
    let ids: BTreeSet<i64> = got["items"].as_object().unwrap().keys().map(|k| k.parse().unwrap()).collect();
    assert_eq!(ids, items);
    // .npy: numpy's own loader, the factors beside their int64 (item) and text (user) ids.
    let out = job("binary");
    let load = r#"
import glob, json, sys
import numpy as np
d = sys.argv[1]
items = [(np.load(f), np.load(f.replace(".npy", ".ids.npy"))) for f in sorted(glob.glob(f"{d}/item_factors/part-*[0-9].npy"))]
users = [np.load(f) for f in sorted(glob.glob(f"{d}/user_factors/part-*[0-9].npy"))]
user_ids = [l for f in sorted(glob.glob(f"{d}/user_factors/part-*.ids.txt")) for l in open(f).read().split()]
print(json.dumps({
    "item_ids": [int(x) for _, ids in items for x in ids], "id_dtype": str(items[0][1].dtype),
    "item_shape": [sum(f.shape[0] for f, _ in items), items[0][0].shape[1]],
    "user_rows": sum(u.shape[0] for u in users), "user_ids": user_ids,
}))
"#;
    let got = py(load, &[&out]);
    assert_eq!(got["id_dtype"], "int64");
    assert_eq!(got["item_shape"], serde_json::json!([items.len(), 3]));
    let ids: BTreeSet<i64> = got["item_ids"].as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect();
    assert_eq!(ids, items);
    let user_ids: BTreeSet<String> =
        got["user_ids"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().into()).collect();
    assert_eq!((user_ids, got["user_rows"].as_u64().unwrap() as usize), (users.clone(), users.len()));
    let _ = std::fs::remove_dir_all(&d);
}
