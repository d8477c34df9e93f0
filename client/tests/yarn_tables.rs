//! Tables on YARN: a Spark-style Parquet directory (pyarrow's files, three codecs, `_SUCCESS`)
//! on the real test HDFS, read by `yarn-submit --master yarn mf` through the YARN stand-in, with
//! the model and recommendations written back to HDFS as Parquet tables; and a table of string
//! and 64-bit ids, numbered by the job's dictionary and written back as the input had them.

mod common;

use common::output;
use common::yarn::{hdfs, s, submit, SERIAL};
use ps_testkit::{needs, Service};

#[test]
fn mf_on_yarn_reads_a_parquet_table_and_writes_parquet() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let base = format!("{}/ps-test/yarn-tables-{}", hdfs(), std::process::id());
    let (input, out) = (format!("{base}/ratings"), format!("{base}/model"));
    let fs = ps_runtime::storage::storage_for(&base).unwrap();
    let local = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtime/tests/data/tables/ratings");
    for f in std::fs::read_dir(&local).unwrap() {
        let f = f.unwrap();
        let mut w = fs.create(&format!("{input}/{}", f.file_name().to_string_lossy())).unwrap();
        std::io::Write::write_all(&mut w, &std::fs::read(f.path()).unwrap()).unwrap();
        w.close().unwrap();
    }
    let stats = std::env::temp_dir().join(format!("ps-yarn-tables-{}.json", std::process::id()));
    let mut args = s(&["--master", "yarn", "--workers", "2", "--threads", "1", "--worker-memory", "256"]);
    args.extend(s(&["--stats", stats.to_str().unwrap(), "mf", "--input", &input, "--output", &out]));
    args.extend(s(&["--passes", "3", "--rank", "4", "--recommend", "3", "--output-format", "parquet"]));
    let o = output(submit().args(&args));
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "yarn-submit failed:\n{stdout}\n{stderr}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(v["rows_skipped"], 3, "the table's three null ratings");
    assert!(fs.exists(&format!("{out}/_SUCCESS")).unwrap());
    for table in ["userFactors", "itemFactors", "recommendations"] {
        let parts = fs.list(&format!("{out}/{table}")).unwrap();
        assert!(!parts.is_empty(), "{table}");
        for (p, len) in parts {
            assert!(p.ends_with(".snappy.parquet") && len > 8, "{p}");
            let (head, tail) = (fs.read_at(&p, 0, 4).unwrap(), fs.read_at(&p, len - 4, 4).unwrap());
            assert!(head == b"PAR1" && tail == b"PAR1", "{p} is not a Parquet file");
        }
    }
    // The output reads back as a table through the same reader the inputs use.
    let cols = [ps_runtime::input::Column { flag: "--id", name: "id" }];
    let mut ids = Vec::new();
    let mut sink = |c: &[ps_runtime::input::Cell]| c[0].to_u32("id").map(|i| ids.push(i));
    let url = format!("{out}/userFactors");
    let fmt = ps_runtime::input::InputFormat::Parquet;
    ps_runtime::input::read_rows(&url, 0, 1, fmt, &cols, ps_runtime::input::BadRecords::Fail, &mut sink).unwrap();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 50, "one factor row per user of the table");
    fs.delete(&base).unwrap();
    std::fs::remove_file(&stats).ok();
}

/// Ratings of string users and 64-bit items (some negative) as one Parquet file in memory.
fn keyed_table() -> (Vec<u8>, std::collections::BTreeSet<String>, std::collections::BTreeSet<i64>) {
    use arrow_array::{ArrayRef, Float32Array, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let (mut users, mut items, mut stars) = (Vec::new(), Vec::new(), Vec::new());
    for u in 0..40i64 {
        for j in 0..10i64 {
            let item = (u * 7 + j * 3) % 30;
            users.push(format!("customer/{u}"));
            items.push(if item % 3 == 0 { -item - 1 } else { 5_000_000_000_000 + item });
            stars.push(1.0 + ((u + j) % 5) as f32);
        }
    }
    let batch = RecordBatch::try_from_iter([
        ("customer", Arc::new(StringArray::from(users.clone())) as ArrayRef),
        ("sku", Arc::new(Int64Array::from(items.clone())) as ArrayRef),
        ("stars", Arc::new(Float32Array::from(stars)) as ArrayRef),
    ])
    .unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(Vec::new(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    (w.into_inner().unwrap(), users.into_iter().collect(), items.into_iter().collect())
}

#[test]
fn string_and_64_bit_ids_on_hdfs_come_back_as_the_input_had_them() {
    if !needs(&[Service::Yarn]) {
        return;
    }
    use ps_runtime::input::{read_rows, BadRecords, Cell, Column, InputFormat};
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let base = format!("{}/ps-test/yarn-ids-{}", hdfs(), std::process::id());
    let (input, out) = (format!("{base}/ratings"), format!("{base}/model"));
    let fs = ps_runtime::storage::storage_for(&base).unwrap();
    let (bytes, users, items) = keyed_table();
    let mut w = fs.create(&format!("{input}/part-00000.snappy.parquet")).unwrap();
    std::io::Write::write_all(&mut w, &bytes).unwrap();
    w.close().unwrap();
    let mut args = s(&["--master", "yarn", "--workers", "2", "--threads", "1", "--worker-memory", "256", "mf"]);
    args.extend(s(&["--input", &input, "--output", &out, "--user-col", "customer", "--item-col", "sku"]));
    args.extend(s(&["--rating-col", "stars", "--passes", "2", "--rank", "3", "--output-format", "parquet"]));
    let o = output(submit().args(&args));
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "yarn-submit failed:\n{stdout}\n{stderr}");
    // The factor tables' ids, read back from HDFS: the users' strings and the items' int64s.
    let ids = |table: &str| {
        let mut got = Vec::new();
        let cols = [Column { flag: "--id", name: "id" }];
        let mut sink = |c: &[Cell]| {
            got.push(match c[0] {
                Cell::Str(s) => s.to_string(),
                Cell::Int(i) => i.to_string(),
                Cell::Float(f) => return Err(format!("a float id {f}")),
            });
            Ok(())
        };
        let url = format!("{out}/{table}");
        read_rows(&url, 0, 1, InputFormat::Parquet, &cols, BadRecords::Fail, &mut sink).unwrap();
        got.into_iter().collect::<std::collections::BTreeSet<String>>()
    };
    assert_eq!(ids("userFactors"), users);
    assert_eq!(ids("itemFactors"), items.iter().map(|i| i.to_string()).collect());
    fs.delete(&base).unwrap();
}
