//! Storage benchmarks against a real HDFS (`--hdfs`, default `$HDFS_URL`): read throughput of the
//! split reader (the path every app's input takes) vs hdfs-native's plain read of the same bytes,
//! and snapshot write time per GB (encode rows + CRC-32C + write one shard, the writer thread's
//! work). Results: `<out>/bench-storage.{json,csv}`.

use ps_runtime::input::{plan_splits, LineReader};
use ps_runtime::snapshot::crc32c;
use ps_runtime::snapshot::CheckpointStore;
use ps_runtime::snapshot::ShardHeader;
use ps_runtime::storage::{storage_for, Storage};
use ps_runtime::{DenseRow, Row};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// HDFS to use (default: $HDFS_URL, as scripts/hdfs-up.sh prints it).
    #[arg(long)]
    hdfs: Option<String>,
    /// Size of the test file and of the snapshot shard, in MB.
    #[arg(long, default_value_t = 256)]
    mb: usize,
    /// Splits the split reader reads the file as (one after another, as that many workers would).
    #[arg(long, default_value_t = 4)]
    splits: usize,
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    #[arg(long, default_value = "results")]
    out: PathBuf,
}

fn best(repeats: usize, mut f: impl FnMut() -> f64) -> f64 {
    (0..repeats).map(|_| f()).fold(f64::INFINITY, f64::min)
}

/// What one run measured: the inputs of the printed lines and of the result files.
struct Measured {
    /// Size of the test file in MB.
    mb: f64,
    plain_s: f64,
    split_s: f64,
    snap_s: f64,
    /// Bytes of the snapshot shard file and rows in it.
    shard_bytes: usize,
    rows: usize,
}

pub fn run(a: Args) {
    let hdfs =
        a.hdfs.clone().or_else(|| std::env::var("HDFS_URL").ok()).expect("--hdfs or HDFS_URL (scripts/hdfs-up.sh)");
    let dir = format!("{hdfs}/ps-bench-storage");
    let st = storage_for(&dir).expect("connect");
    st.delete(&dir).expect("clean");
    let file = format!("{dir}/input.tsv");
    let bytes = a.mb << 20;
    write_ratings_file(st.as_ref(), &file, bytes);
    let files = st.list(&file).expect("list");
    let size = files[0].1;
    let mb = size as f64 / (1 << 20) as f64;

    // Baseline: hdfs-native's own whole-file read of the same bytes, on its own runtime.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let client = hdfs_native_client(&hdfs, &rt);
    let plain_s = measure_plain_read(&rt, &client, size, a.repeats);
    let split_s = measure_split_read(st.as_ref(), &files, a.splits, a.repeats);
    let (snap_s, shard_bytes, rows) = measure_snapshot_write(&dir, bytes, a.repeats);
    st.delete(&dir).expect("clean up");
    write_results(&a, &Measured { mb, plain_s, split_s, snap_s, shard_bytes, rows });
}

/// Writes `bytes` of ratings-shaped lines to `file`, so the split reader does its real work
/// (finding line boundaries).
fn write_ratings_file(st: &dyn Storage, file: &str, bytes: usize) {
    let mut f = st.create(file).expect("create");
    let mut line = String::new();
    let mut written = 0;
    let mut i = 0u64;
    while written < bytes {
        line.clear();
        line.push_str(&format!("{}\t{}\t{}\n", i % 480_189, (i * 7919) % 17_770, 1 + i % 5));
        f.write_all(line.as_bytes()).expect("write");
        written += line.len();
        i += 1;
    }
    f.close().expect("close");
}

/// An hdfs-native client for the NameNode of `hdfs`, doing its I/O on `rt`.
fn hdfs_native_client(hdfs: &str, rt: &tokio::runtime::Runtime) -> hdfs_native::Client {
    let authority = hdfs.trim_start_matches("hdfs://").split('/').next().unwrap_or("").to_string();
    let _g = rt.enter();
    hdfs_native::ClientBuilder::new()
        .with_url(format!("hdfs://{authority}"))
        .with_io_runtime(rt.handle().clone())
        .build()
        .expect("client")
}

/// Best time of hdfs-native reading the whole test file (`size` bytes) in one range read.
fn measure_plain_read(rt: &tokio::runtime::Runtime, client: &hdfs_native::Client, size: u64, repeats: usize) -> f64 {
    let path = "/ps-bench-storage/input.tsv";
    best(repeats, || {
        let t = Instant::now();
        let n = rt.block_on(async {
            let r = client.read(path).await.expect("open");
            r.read_range(0, r.file_length()).await.expect("read").len()
        });
        assert_eq!(n as u64, size);
        t.elapsed().as_secs_f64()
    })
}

/// Best time of the split reader reading every line of `files` as `splits` splits, one after another.
fn measure_split_read(st: &dyn Storage, files: &[(String, u64)], splits: usize, repeats: usize) -> f64 {
    best(repeats, || {
        let t = Instant::now();
        let mut lines = 0u64;
        for k in 0..splits {
            for split in plan_splits(files, k, splits) {
                let mut r = LineReader::new(st, &split).expect("open split");
                while r.next_line().expect("read").is_some() {
                    lines += 1;
                }
            }
        }
        assert!(lines > 0);
        t.elapsed().as_secs_f64()
    })
}

/// Snapshot write: rows of 256 f32 (1 KiB), encoded in the shard format and written to HDFS.
/// Returns (best seconds, bytes of the shard file, rows).
fn measure_snapshot_write(dir: &str, bytes: usize, repeats: usize) -> (f64, usize, usize) {
    let cols = 256;
    let rows = bytes / (cols * 4 + 16);
    let store = CheckpointStore::open(&format!("{dir}/ckpt")).expect("store");
    let mut shard_bytes = 0;
    let snap_s = best(repeats, || {
        let t = Instant::now();
        let payload = encode_shard_payload(rows, cols, bytes + rows * 16);
        let h = ShardHeader {
            flags: 0,
            clock: 1,
            server: 0,
            table: 0,
            columns: cols as u64,
            rows: rows as u64,
            payload_len: payload.len() as u64,
            crc: crc32c(&payload),
            row_type: "dense_f32".into(),
        };
        let file = h.file_bytes(&payload);
        shard_bytes = file.len();
        store.write(1, "server-0.table-0", &file, "benchmark shard").expect("write shard");
        t.elapsed().as_secs_f64()
    });
    (snap_s, shard_bytes, rows)
}

/// The shard payload of `rows` random dense rows: per row its id, encoded length and encoding.
fn encode_shard_payload(rows: usize, cols: usize, capacity: usize) -> Vec<u8> {
    let mut payload = Vec::with_capacity(capacity);
    let mut enc = bytes::BytesMut::new();
    let mut row = DenseRow::<f32>::zero(cols);
    for id in 0..rows as u64 {
        row.randomize(id, -1.0, 1.0);
        enc.clear();
        row.encode(&mut enc);
        payload.extend_from_slice(&id.to_le_bytes());
        payload.extend_from_slice(&(enc.len() as u32).to_le_bytes());
        payload.extend_from_slice(&enc);
    }
    payload
}

/// Prints the results and writes `<out>/bench-storage.{json,csv}`.
fn write_results(a: &Args, m: &Measured) {
    let Measured { mb, plain_s, split_s, snap_s, shard_bytes, rows } = *m;
    let gb = shard_bytes as f64 / (1u64 << 30) as f64;
    let plain_mbs = mb / plain_s;
    let split_mbs = mb / split_s;
    println!("HDFS read of {mb:.0} MB (best of {}):", a.repeats);
    println!("  hdfs-native whole-file read     {plain_mbs:8.1} MB/s");
    println!("  split reader, {} splits, lines  {split_mbs:8.1} MB/s   ratio {:.2}", a.splits, split_mbs / plain_mbs);
    println!("snapshot shard write ({:.0} MB, {rows} rows): {:.2} s = {:.2} s/GB", gb * 1024.0, snap_s, snap_s / gb);
    let res = json!({
        "file_mb": mb, "splits": a.splits, "repeats": a.repeats,
        "plain_read_mb_s": plain_mbs, "split_read_mb_s": split_mbs, "split_vs_plain": split_mbs / plain_mbs,
        "snapshot_mb": gb * 1024.0, "snapshot_rows": rows, "snapshot_s": snap_s, "snapshot_s_per_gb": snap_s / gb,
    });
    std::fs::create_dir_all(&a.out).expect("out dir");
    std::fs::write(a.out.join("bench-storage.json"), serde_json::to_string_pretty(&res).unwrap()).expect("json");
    let csv = format!(
        "metric,value\nplain_read_mb_s,{plain_mbs:.1}\nsplit_read_mb_s,{split_mbs:.1}\nsplit_vs_plain,{:.3}\nsnapshot_s_per_gb,{:.3}\n",
        split_mbs / plain_mbs,
        snap_s / gb
    );
    std::fs::write(a.out.join("bench-storage.csv"), csv).expect("csv");
}
