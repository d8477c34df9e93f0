//! `mf --output-format parquet` writes Spark ALSModel's layout: Apache Spark's own
//! `ALSModel.load` (PySpark, local mode, on the tests' JDK) reads the model, its factors are ours
//! value by value, and its `transform` and `recommendForAllUsers` score with them as ours do.
//! Needs a Python with PySpark: `$PS_SPARK_PYTHON` (scripts/test.sh sets it from
//! scripts/pyspark.sh).

mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int32Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use ps_apps as apps;
use ps_runtime::RuntimeConfig;
use ps_testkit::{needs, Service};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Loads the model with Spark and prints, as JSON, what Spark sees: the rank, both factor
/// tables, `transform` of our recommendations' pairs and Spark's own top 3 per user.
const SPARK: &str = r#"
import json, sys
from pyspark.sql import SparkSession
from pyspark.ml.recommendation import ALSModel
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
path = "file://" + sys.argv[1]
m = ALSModel.load(path)
pairs = spark.read.parquet(path + "/recommendations").select("user", "item")
factors = lambda df: {r.id: list(r.features) for r in df.collect()}
print(json.dumps({
    "rank": m.rank, "users": factors(m.userFactors), "items": factors(m.itemFactors),
    "predicted": [[r.user, r.item, r.prediction] for r in m.transform(pairs).collect()],
    "top": {r.user: [[x.item, x.rating] for x in r.recommendations] for r in m.recommendForAllUsers(3).collect()},
}))
"#;

fn python() -> String {
    std::env::var("PS_SPARK_PYTHON")
        .expect("no Python with PySpark: run through scripts/test.sh (scripts/pyspark.sh) or set PS_SPARK_PYTHON")
}

/// A Parquet dataset's rows: id -> values of the list column.
fn factors(dir: &Path) -> BTreeMap<i64, Vec<f32>> {
    let mut m = BTreeMap::new();
    for f in std::fs::read_dir(dir).unwrap() {
        let r = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(f.unwrap().path()).unwrap()).unwrap();
        for b in r.build().unwrap().map(|b| b.unwrap()) {
            let (ids, feats) = (b.column(0).as_primitive::<Int32Type>(), b.column(1).as_list::<i32>());
            for i in 0..b.num_rows() {
                m.insert(ids.value(i) as i64, feats.value(i).as_primitive::<Float32Type>().values().to_vec());
            }
        }
    }
    m
}

/// Our recommendations: (user, item, score).
fn recommendations(dir: &Path) -> Vec<(i64, i64, f32)> {
    let mut out = Vec::new();
    for f in std::fs::read_dir(dir).unwrap() {
        let r = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(f.unwrap().path()).unwrap()).unwrap();
        for b in r.build().unwrap().map(|b| b.unwrap()) {
            let (u, i) = (b.column(0).as_primitive::<Int32Type>(), b.column(1).as_primitive::<Int32Type>());
            let s = b.column(2).as_primitive::<Float32Type>();
            out.extend((0..b.num_rows()).map(|r| (u.value(r) as i64, i.value(r) as i64, s.value(r))));
        }
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-4 * a.abs().max(1.0)
}

#[test]
fn spark_loads_the_mf_model_and_scores_as_we_do() {
    if !needs(&[Service::PySpark]) {
        return;
    }
    let d = std::env::temp_dir().join(format!("ps-spark-model-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let out: PathBuf = d.join("model");
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tables/ratings.tsv");
    let args = format!(
        "--input {} --output {} --passes 3 --rank 4 --recommend 3 --output-format parquet",
        input.display(),
        out.display()
    );
    let a: Vec<String> = args.split_whitespace().map(String::from).collect();
    let cfg = RuntimeConfig { threads: 2, ..RuntimeConfig::default() };
    for r in common::run_cluster(2, &cfg, |_| apps::build("mf", &a).unwrap()) {
        r.unwrap();
    }
    // Bounded: a JVM that hangs fails the test instead of stalling it.
    let run = std::process::Command::new("timeout")
        .args(["300", &python(), "-c", SPARK, out.to_str().unwrap()])
        .env_remove("HADOOP_CONF_DIR")
        .env_remove("YARN_CONF_DIR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "Spark could not use the model:\n{stderr}");
    let spark: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metadata/part-00000")).unwrap()).unwrap();
    let mean = meta["mean"].as_f64().unwrap();
    assert_eq!(spark["rank"], 4);

    // Spark reads the factors we wrote, value by value.
    let (users, items) = (factors(&out.join("userFactors")), factors(&out.join("itemFactors")));
    for (name, ours) in [("users", &users), ("items", &items)] {
        let theirs = spark[name].as_object().unwrap();
        assert_eq!(theirs.len(), ours.len(), "{name}");
        for (id, v) in ours {
            let t: Vec<f32> =
                theirs[&id.to_string()].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
            assert_eq!(&t, v, "{name} {id}");
        }
    }
    // Spark's prediction is the dot product: ours less the model's mean.
    let ours = recommendations(&out.join("recommendations"));
    let predicted: BTreeMap<(i64, i64), f64> = spark["predicted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| ((p[0].as_i64().unwrap(), p[1].as_i64().unwrap()), p[2].as_f64().unwrap()))
        .collect();
    assert_eq!(predicted.len(), ours.len());
    for (u, i, s) in &ours {
        let p = predicted[&(*u, *i)];
        assert!(close(p + mean, *s as f64), "user {u} item {i}: Spark {p} + mean {mean} vs our score {s}");
    }
    // Spark's own top 3 per user (rated items included) scores with the same factors, and its
    // best is at least as good as our best unrated item.
    let dot = |u: i64, i: i64| users[&u].iter().zip(&items[&i]).map(|(a, b)| (a * b) as f64).sum::<f64>();
    let top = spark["top"].as_object().unwrap();
    assert_eq!(top.len(), users.len(), "a list for every user");
    for (u, list) in top {
        let u: i64 = u.parse().unwrap();
        let list = list.as_array().unwrap();
        assert_eq!(list.len(), 3);
        for x in list {
            let (i, r) = (x[0].as_i64().unwrap(), x[1].as_f64().unwrap());
            assert!(close(r, dot(u, i)), "user {u} item {i}: Spark {r} vs {}", dot(u, i));
        }
        let ours_best = ours.iter().filter(|r| r.0 == u).map(|r| r.2 as f64 - mean).fold(f64::MIN, f64::max);
        assert!(list[0][1].as_f64().unwrap() >= ours_best - 1e-4, "user {u}");
    }
    let _ = std::fs::remove_dir_all(&d);
}
